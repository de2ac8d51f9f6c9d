//! The firewalld backend: each container address (`/32` or `/128`) a
//! source of zone `firewalldZone` in firewalld's runtime configuration,
//! through firewalld's D-Bus API (`org.fedoraproject.FirewallD1`), as
//! the reference. The D-Bus client belongs in `cni-firewall`; until it is
//! there this backend is chosen only when configured, and then ADD and
//! CHECK refuse clearly ([`unavailable`]). Auto never picks it
//! ([`running`] is false), so auto means iptables, then nftables.

use std::net::IpAddr;

use skel::Error;

/// Whether firewalld is running (auto picks it then).
pub fn running() -> bool {
    false
}

fn unavailable() -> Error {
    Error::internal(
        "firewalld backend is not available: this build has no firewalld D-Bus client; \
         configure backend \"iptables\" or \"nftables\"",
    )
}

/// The source a container address becomes.
pub fn source(ip: &IpAddr) -> String {
    let len = if ip.is_ipv6() { 128 } else { 32 };
    format!("{ip}/{len}")
}

/// ADD: the addresses into `zone`.
pub fn add(_zone: &str, _ips: &[IpAddr]) -> Result<(), Error> {
    Err(unavailable())
}

/// Undo of a failed ADD, and DEL: nothing can have been added.
pub fn del(_zone: &str, _ips: &[IpAddr]) -> Result<(), Error> {
    Ok(())
}

/// CHECK: every address a source of `zone`.
pub fn check(_zone: &str, _ips: &[IpAddr]) -> Result<(), Error> {
    Err(unavailable())
}

/// STATUS.
pub fn status() -> Result<(), Error> {
    Err(unavailable())
}
