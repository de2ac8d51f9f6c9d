//! Container side: the bridge's own sysctls of the container interface.
//! Addresses, routes and the IPv6 sysctls are `cni_attach::iface`.

use std::fs::File;

use cni_net::{netns, sysctl};

use crate::error::Error;

/// Sysctls of the container interface that do not depend on the
/// addresses, written in one namespace switch (while IPAM runs). Best
/// effort, like the reference.
pub fn set_sysctls(ns: &File, ifname: &str, enable_dad: bool) -> Result<(), Error> {
    netns::run(ns, || {
        let v6 = |k: &str| format!("net/ipv6/conf/{ifname}/{k}");
        if enable_dad {
            let _ = sysctl::set(&v6("enhanced_dad"), "1");
            let _ = sysctl::set(&v6("accept_dad"), "1");
        } else {
            let _ = sysctl::set(&v6("accept_dad"), "0");
        }
        let _ = sysctl::set(&format!("net/ipv4/conf/{ifname}/arp_notify"), "1");
    })?;
    Ok(())
}
