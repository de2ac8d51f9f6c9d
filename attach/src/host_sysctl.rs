//! Host sysctls of attachments: forwarding, which every routed attachment
//! needs, and router advertisements off on the host's links.

use cni_net::sysctl;

use crate::error::Error;

/// The forwarding switch of a family: `ip_forward`, `ipv6 all.forwarding`.
fn forwarding_key(ipv6: bool) -> &'static str {
    if ipv6 {
        "net/ipv6/conf/all/forwarding"
    } else {
        "net/ipv4/ip_forward"
    }
}

/// Whether forwarding of a family is on (an unreadable switch counts as
/// off, so it gets written).
pub fn forwarding_on(ipv6: bool) -> bool {
    sysctl::get(forwarding_key(ipv6)).is_ok_and(|v| v == "1")
}

/// `ip_forward` / `ipv6 all.forwarding` to 1, written only when needed.
/// The error is the sysctl's; callers word the context as their reference
/// plugin does.
pub fn enable_forwarding(ipv6: bool) -> Result<(), Error> {
    if forwarding_on(ipv6) {
        return Ok(());
    }
    Ok(sysctl::set(forwarding_key(ipv6), "1")?)
}

/// Router advertisements off on the host link `name` (a bridge, a host
/// veth): we own its routes, and a container must not change the host's.
/// Best effort, like the reference (IPv6 may be disabled).
pub fn refuse_router_advertisements(name: &str) {
    let _ = sysctl::set(&format!("net/ipv6/conf/{name}/accept_ra"), "0");
}
