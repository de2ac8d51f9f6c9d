//! Root tests: conntrack over netlink against the `conntrack` binary as an
//! oracle, in a throwaway namespace. UDP flows are made for real (a nat
//! table makes the namespace track connections, a DNAT rule rewrites some
//! of them); our listing must show what `conntrack -L` shows, and our
//! deletes must remove exactly the chosen entries.

use std::fs::File;
use std::net::{IpAddr, SocketAddr};

use cni_net::Netlink;
use cni_net::conntrack::{Entry, UDP};
use testsupport::TestNetns;
use testsupport::traffic::{Server, udp_ask};

/// A namespace with lo and a veth end `d0` up (10.240.7.1/24, fd40:7::1/64),
/// connection tracking on, and DNAT of UDP port 5000 to port 6000.
fn tracked_ns() -> TestNetns {
    let ns = TestNetns::new("ct");
    ns.exec(&["ip", "link", "set", "lo", "up"]);
    ns.exec(&["ip", "link", "add", "d0", "type", "veth", "peer", "d1"]);
    ns.exec(&["ip", "link", "set", "d1", "up"]);
    ns.exec(&["ip", "addr", "add", "10.240.7.1/24", "dev", "d0"]);
    ns.exec(&["ip", "addr", "add", "fd40:7::1/64", "dev", "d0", "nodad"]);
    ns.exec(&["ip", "link", "set", "d0", "up"]);
    ns.nft_f(
        "table inet cnirs_ct {\n chain out { type nat hook output priority -100 ; udp dport 5000 redirect to :6000 ; }\n}\n",
    );
    ns
}

fn sock(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// `conntrack -L -p udp` of one family, as (src, dst, sport, dport) of the
/// original direction.
fn oracle(ns: &TestNetns, family: &str) -> Vec<(String, String, u16, u16)> {
    let out = ns.exec_output(&["conntrack", "-L", "-f", family, "-p", "udp"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let mut v: Vec<_> = text
        .lines()
        .filter_map(|l| {
            let field = |k: &str| {
                l.split_whitespace()
                    .find_map(|w| w.strip_prefix(k))
                    .map(str::to_string)
            };
            Some((
                field("src=")?,
                field("dst=")?,
                field("sport=")?.parse().ok()?,
                field("dport=")?.parse().ok()?,
            ))
        })
        .collect();
    v.sort();
    v
}

fn ours(entries: &[Entry]) -> Vec<(String, String, u16, u16)> {
    let mut v: Vec<_> = entries
        .iter()
        .filter(|e| e.orig.proto == UDP)
        .map(|e| {
            let o = e.orig;
            (o.src.to_string(), o.dst.to_string(), o.sport, o.dport)
        })
        .collect();
    v.sort();
    v
}

#[test]
fn listing_matches_the_conntrack_tool_and_deletes_are_exact() {
    let ns = tracked_ns();
    let _server = Server::start(&ns, 6000, "s");
    let _other = Server::start(&ns, 7000, "o");
    // Three flows per family: two redirected 5000 -> 6000, one plain.
    for (to, from) in [
        ("10.240.7.1:5000", 41000),
        ("127.0.0.1:5000", 41001),
        ("10.240.7.1:7000", 41002),
        ("[fd40:7::1]:5000", 41003),
        ("[::1]:5000", 41004),
        ("[fd40:7::1]:7000", 41005),
    ] {
        assert!(
            udp_ask(&ns, from, sock(to)).is_some(),
            "no answer from {to}"
        );
    }
    let nl = Netlink::in_netns(&File::open(ns.path()).unwrap()).unwrap();
    for (v6, family) in [(false, "ipv4"), (true, "ipv6")] {
        let listed = nl.conntrack_list(v6).unwrap();
        assert_eq!(ours(&listed), oracle(&ns, family), "{family}");
        assert!(listed.iter().all(|e| e.orig.src.is_ipv6() == v6));
        // Redirected flows show the rewritten port in the reply tuple.
        let redirected: Vec<&Entry> = listed.iter().filter(|e| e.orig.dport == 5000).collect();
        assert_eq!(redirected.len(), 2, "{listed:?}");
        assert!(
            redirected
                .iter()
                .all(|e| e.is_dnat() && e.reply.sport == 6000)
        );
        let n = nl
            .conntrack_delete_where(v6, |e| e.orig.proto == UDP && e.orig.dport == 5000)
            .unwrap();
        assert_eq!(n, 2);
        // Exactly the chosen entries are gone.
        let before = ours(&listed);
        let kept: Vec<_> = before.iter().filter(|t| t.3 != 5000).cloned().collect();
        assert!(kept.iter().any(|t| t.3 == 7000), "{before:?}");
        assert_eq!(oracle(&ns, family), kept, "{family}");
        // Deleting what is gone already succeeds.
        for e in &redirected {
            nl.conntrack_delete(std::slice::from_ref(*e)).unwrap();
        }
    }
    let none = nl.conntrack_delete_where(false, |_| false).unwrap();
    assert_eq!(none, 0);
}

#[test]
fn a_namespace_without_tracking_lists_nothing() {
    let ns = TestNetns::new("ct0");
    let nl = Netlink::in_netns(&File::open(ns.path()).unwrap()).unwrap();
    assert_eq!(nl.conntrack_list(false).unwrap(), vec![]);
    assert_eq!(nl.conntrack_list(true).unwrap(), vec![]);
}

#[test]
fn route_get_names_the_output_link() {
    let ns = tracked_ns();
    let nl = Netlink::in_netns(&File::open(ns.path()).unwrap()).unwrap();
    let d0 = nl.link_by_name("d0").unwrap();
    let r = nl.route_get("10.240.7.9".parse().unwrap()).unwrap();
    assert_eq!(r.oif, Some(d0.index));
    let r6 = nl.route_get("fd40:7::9".parse().unwrap()).unwrap();
    assert_eq!(r6.oif, Some(d0.index));
    let unreachable: IpAddr = "192.0.2.1".parse().unwrap();
    assert!(nl.route_get(unreachable).is_err());
}

/// Thousands of entries chosen at once are all deleted: the deletes'
/// acknowledgements would overflow the socket's receive buffer if every
/// delete were sent before any answer was read (the kernel drops what does
/// not fit, and waiting for a dropped answer never ends).
#[test]
fn thousands_of_entries_are_deleted() {
    let ns = tracked_ns();
    let n = 3000;
    let script = format!(
        "for i in $(seq 1 {n}); do conntrack -I -p udp -s 10.240.7.2 -d 10.240.7.1 \
         --sport $((10000 + i)) --dport 5353 --timeout 300 2>/dev/null || exit 1; done"
    );
    let out = ns.exec_output(&["sh", "-c", &script]);
    assert!(out.status.success(), "{out:?}");
    let nl = Netlink::in_netns(&File::open(ns.path()).unwrap()).unwrap();
    let chosen = |e: &Entry| e.orig.proto == UDP && e.orig.dport == 5353;
    assert_eq!(
        nl.conntrack_list(false)
            .unwrap()
            .iter()
            .filter(|e| chosen(e))
            .count(),
        n
    );
    assert_eq!(nl.conntrack_delete_where(false, chosen).unwrap(), n);
    assert!(oracle(&ns, "ipv4").iter().all(|t| t.3 != 5353));
}
