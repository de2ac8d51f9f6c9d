//! Which table an address's routes go into, and which of the interface's
//! routes belong there.

use std::net::IpAddr;

use cni_net::{RouteInfo, Rule};
use skel::types::IpConfig;

/// The first id from `from` on that no rule points to and no route (in
/// any table, of either family) sits in. The reference looks at `main`'s
/// routes only (its route listing is filtered), so it can take a table
/// that holds routes without a rule; so can the Go plugin still, when our
/// ADD interleaves with its: the rules are what both see.
pub fn free_table(from: u32, rules: &[Rule], routes: &[RouteInfo]) -> u32 {
    let mut t = from;
    while rules.iter().any(|r| r.table == t) || routes.iter().any(|r| r.table == t) {
        t += 1;
    }
    t
}

/// Whether the route `r` (of the interface, from `main`) goes into the
/// table of `ip`, one of the interface's addresses `all`. As the
/// reference: its source or gateway is in `ip`'s subnet, or it has
/// neither (a subnet route). Fixed: only routes of `ip`'s family, and a
/// route via a gateway in none of the addresses' subnets (a link-local
/// IPv6 router, an off-link gateway) goes into every table of its family
/// instead of being dropped (openshift/containernetworking-plugins#222).
pub fn belongs(r: &RouteInfo, ip: &IpConfig, all: &[IpConfig]) -> bool {
    let net = ip.address.0;
    if r.dst.is_ipv4() != net.is_ipv4() || !r.is_unicast() {
        return false;
    }
    let inside = |a: Option<IpAddr>| a.is_some_and(|a| net.contains(a));
    if inside(r.src) || inside(r.gw) {
        return true;
    }
    if r.src.is_some() {
        return false;
    }
    match r.gw {
        None => true,
        Some(gw) => !all.iter().any(|o| o.address.0.contains(gw)),
    }
}

/// Whether `r` matches the source of exactly `ip` (the reference compares
/// the rule's source address whatever its length).
pub fn rule_from(r: &Rule, ip: IpAddr) -> bool {
    r.src.is_some_and(|s| s.ip() == ip)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cni_net::RouteSpec;

    fn route(dst: &str, gw: Option<&str>, src: Option<&str>, table: u32) -> RouteInfo {
        RouteInfo {
            dst: dst.parse().unwrap(),
            gw: gw.map(|g| g.parse().unwrap()),
            oif: Some(2),
            priority: None,
            table,
            scope: 0,
            src: src.map(|s| s.parse().unwrap()),
            kind: 1,
            protocol: 3,
        }
    }

    fn ip(a: &str) -> IpConfig {
        serde_json::from_str(&format!(r#"{{"address":"{a}"}}"#)).unwrap()
    }

    #[test]
    fn the_first_table_nothing_uses() {
        let rule = Rule::from_source("10.240.0.2/32".parse().unwrap(), 100);
        assert_eq!(free_table(100, &[], &[]), 100);
        assert_eq!(free_table(100, std::slice::from_ref(&rule), &[]), 101);
        let in_101 = route("10.240.0.0/24", None, None, 101);
        assert_eq!(free_table(100, &[rule], &[in_101]), 102);
        let _ = RouteSpec::new("0.0.0.0/0".parse().unwrap());
    }

    #[test]
    fn routes_go_to_the_table_of_their_family_and_subnet() {
        let all = [ip("10.240.0.5/24"), ip("fd40::5/64"), ip("10.240.1.5/24")];
        let (v4, v6, other) = (&all[0], &all[1], &all[2]);
        let subnet = route("10.240.0.0/24", None, Some("10.240.0.5"), 254);
        let default4 = route("0.0.0.0/0", Some("10.240.0.1"), None, 254);
        let ll = route("fe80::/64", None, None, 254);
        let default6 = route("::/0", Some("fe80::1"), None, 254);
        let off_link = route("10.250.0.0/16", Some("10.99.0.1"), None, 254);
        assert!(belongs(&subnet, v4, &all) && !belongs(&subnet, other, &all));
        assert!(belongs(&default4, v4, &all) && !belongs(&default4, other, &all));
        // The reference put these into the IPv4 table, and dropped the
        // IPv6 default route via a link-local router.
        assert!(!belongs(&ll, v4, &all) && belongs(&ll, v6, &all));
        assert!(!belongs(&default6, v4, &all) && belongs(&default6, v6, &all));
        assert!(belongs(&off_link, v4, &all) && belongs(&off_link, other, &all));
        let mut local = subnet.clone();
        local.kind = 2;
        assert!(!belongs(&local, v4, &all));
    }
}
