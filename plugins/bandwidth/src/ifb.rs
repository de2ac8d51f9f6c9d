//! The IFB device of an attachment: its name, the reference's, and the
//! alias that records whose it is, so GC can tell this network's devices
//! from other networks' (the name alone is a one-way hash).
//!
//! Ownership is proven only when the alias names this network *and* the
//! device's name is the hash of that network and the container ID in the
//! alias. IFBs made by the Go plugin (no alias) or whose alias does not fit
//! (network name and container ID of over 225 bytes together) are never
//! taken for this network's: they are removed by DEL only, as with the
//! reference.

use cni_net::{Kind, LinkSpec};
use skel::sha512::hex_prefix;

/// The reference's prefix, and its 12 hex digits of
/// `sha512(network + containerID)` (15 bytes in all).
const PREFIX: &str = "bwp";
const HEX_LEN: usize = 12;

/// What every alias we write starts with.
const ALIAS_PREFIX: &str = "cni bandwidth: ";
/// `IFALIASZ` less the terminating NUL.
const ALIAS_MAX: usize = 255;

/// The IFB device name of (network, containerID), as the reference's.
pub fn name(network: &str, container_id: &str) -> String {
    format!(
        "{PREFIX}{}",
        hex_prefix(&format!("{network}{container_id}"), HEX_LEN)
    )
}

/// The device as the reference makes it (`ip link add NAME mtu M
/// txqueuelen 0 type ifb`), down: a qdisc put on a device that is down
/// spares the kernel waiting for it to go quiet (`dev_deactivate`). No
/// queue: the qdisc put on the device is the only one (the reference sets
/// 0 too, see its PR #1097). The kernel's MTU when `mtu` is 0. With
/// `alias` (see [`alias`]), the device has it from its creation on (set in
/// the creation's datagram, [`LinkSpec::alias`]), so that GC knows it for
/// this network's even when the ADD is killed right after.
pub fn spec<'a>(name: &'a str, mtu: u32, alias: Option<&'a str>) -> LinkSpec<'a> {
    LinkSpec {
        mtu: (mtu > 0).then_some(mtu),
        txqlen: Some(0),
        alias,
        ..LinkSpec::new(name, Kind::Ifb)
    }
}

/// Whether `name` has the shape of an IFB name we (or the reference) give.
pub fn is_ifb_name(name: &str) -> bool {
    name.strip_prefix(PREFIX).is_some_and(|h| {
        h.len() == HEX_LEN && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// The alias of the device of (network, containerID), or `None` when it
/// does not fit. Network names and container IDs never hold `"`, so the
/// quoting needs no escapes.
pub fn alias(network: &str, container_id: &str) -> Option<String> {
    let a = format!("{ALIAS_PREFIX}name: \"{network}\" id: \"{container_id}\"");
    (a.len() <= ALIAS_MAX).then_some(a)
}

/// The (network, containerID) an alias names, when it is one of ours.
pub fn owner(alias: &str) -> Option<(&str, &str)> {
    let rest = alias.strip_prefix(ALIAS_PREFIX)?.strip_prefix("name: \"")?;
    let (network, rest) = rest.split_once("\" id: \"")?;
    let id = rest.strip_suffix('"')?;
    if network.contains('"') || id.contains('"') {
        return None;
    }
    Some((network, id))
}

/// Whether the device `dev_name` with alias `dev_alias` provably belongs
/// to `network`; the attachment's container ID when it does.
pub fn of_network<'a>(dev_name: &str, dev_alias: &'a str, network: &str) -> Option<&'a str> {
    let (net, id) = owner(dev_alias)?;
    (net == network && name(net, id) == dev_name).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_is_the_references() {
        // Observed from the Go plugin (reference §10.2).
        assert_eq!(name("bwnet", "c1"), "bwp459546d14214");
        assert!(is_ifb_name("bwp459546d14214"));
        assert!(!is_ifb_name("bwp459546d1421"));
        assert!(!is_ifb_name("bwp459546d1421G"));
        assert!(!is_ifb_name("eth0"));
    }

    #[test]
    fn alias_proves_the_network() {
        let a = alias("bwnet", "c1").unwrap();
        assert_eq!(a, r#"cni bandwidth: name: "bwnet" id: "c1""#);
        assert_eq!(owner(&a), Some(("bwnet", "c1")));
        assert_eq!(of_network("bwp459546d14214", &a, "bwnet"), Some("c1"));
        // Another network, a renamed device, a foreign alias.
        assert_eq!(of_network("bwp459546d14214", &a, "other"), None);
        assert_eq!(of_network(&name("bwnet", "c2"), &a, "bwnet"), None);
        assert_eq!(of_network("bwp459546d14214", "my ifb", "bwnet"), None);
        assert_eq!(owner(r#"cni bandwidth: name: "a" id: "b"" x"#), None);
        assert_eq!(owner(r#"cni bandwidth: name: "a"#), None);
    }

    #[test]
    fn too_long_an_alias_is_none() {
        assert_eq!(alias(&"n".repeat(161), &"c".repeat(65)), None);
        assert_eq!(alias(&"n".repeat(161), &"c".repeat(64)).unwrap().len(), 255);
    }
}
