//! Host sysctls of attachments: forwarding, which every routed attachment
//! needs, and router advertisements off on the host's links.

use cni_net::sysctl;

use crate::error::Error;

/// `ip_forward` / `ipv6 all.forwarding` to 1, written only when needed.
/// The error is the sysctl's; callers word the context as their reference
/// plugin does.
pub fn enable_forwarding(ipv6: bool) -> Result<(), Error> {
    let key = if ipv6 {
        "net/ipv6/conf/all/forwarding"
    } else {
        "net/ipv4/ip_forward"
    };
    if sysctl::get(key).map(|v| v == "1").unwrap_or(false) {
        return Ok(());
    }
    Ok(sysctl::set(key, "1")?)
}

/// Router advertisements off on the host link `name` (a bridge, a host
/// veth): we own its routes, and a container must not change the host's.
/// Best effort, like the reference (IPv6 may be disabled).
pub fn refuse_router_advertisements(name: &str) {
    let _ = sysctl::set(&format!("net/ipv6/conf/{name}/accept_ra"), "0");
}
