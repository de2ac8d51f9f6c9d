//! Root tests of the nftables rule sets, each in throwaway namespaces,
//! with the `nft` binary as the oracle:
//!
//! - what our code creates lists (`nft -j list table`, handles aside)
//!   exactly as what `nft -f` creates from the reference's text form
//!   (`testdata/*.nft`): ipmasq and spoof check after two ADDs each, and
//!   the bridge's full ADD state (both in one transaction per ADD);
//! - a Go plugin v1.6+ (knftables) finds and deletes our rules by
//!   comment, done here exactly as it does it, with `nft --json` and
//!   `nft -f`;
//! - teardown, GC and CHECK find what they must, and only that.

use std::fs::File;

use cni_firewall::ipmasq::{self, Owner};
use cni_firewall::{Backend, Probe, Scope, System, spoofchk};
use cni_net::nftables::Transaction;
use cni_net::{IpNetwork, Netlink, netns};
use serde_json::Value;
use testsupport::TestNetns;

const MASQ: (&str, &str) = ("inet", "cni_plugins_masquerade");
const SPOOF: (&str, &str) = ("bridge", "nat");

/// A namespace with a netlink handle in it.
struct Ns {
    ns: TestNetns,
    file: File,
    nl: Netlink,
}

impl Ns {
    fn new(tag: &str) -> Ns {
        let ns = TestNetns::new(tag);
        let file = File::open(ns.path()).unwrap();
        let nl = Netlink::in_netns(&file).unwrap();
        Ns { ns, file, nl }
    }

    fn json(&self, (family, table): (&str, &str)) -> Value {
        self.ns.nft_json(family, table)
    }

    fn listing(&self, (family, table): (&str, &str)) -> String {
        self.ns.stdout(&["nft", "list", "table", family, table])
    }
}

fn fixture(name: &str) -> String {
    let path = format!("{}/testdata/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path}: {e}"))
}

fn nets(list: &[&str]) -> Vec<IpNetwork> {
    list.iter().map(|s| s.parse().unwrap()).collect()
}

fn owner(cid: &'static str) -> Owner<'static> {
    Owner {
        network: "mq",
        ifname: "eth0",
        container_id: cid,
    }
}

/// An attachment of the fixtures: owner, addresses, host veth, MAC.
type Attachment = (Owner<'static>, Vec<IpNetwork>, &'static str, [u8; 6]);

fn attachments() -> [Attachment; 2] {
    [
        (
            owner("c1"),
            nets(&["10.240.0.2/24", "fd40::2/64"]),
            "veth00000001",
            [2, 0, 0, 0, 0, 1],
        ),
        (
            owner("c2"),
            nets(&["10.240.0.3/24"]),
            "veth00000002",
            [2, 0, 0, 0, 0, 2],
        ),
    ]
}

fn assert_same(ours: &Ns, theirs: &Ns, table: (&str, &str)) {
    let (a, b) = (ours.json(table), theirs.json(table));
    assert_eq!(
        a,
        b,
        "nft -j list table {table:?} differs\nours:\n{}\ntheirs:\n{}",
        ours.listing(table),
        theirs.listing(table)
    );
    assert!(a["nftables"].as_array().unwrap().len() > 3, "{a}");
}

/// The masquerade rules of an ADD through nftables.
fn add(ns: &Ns, addrs: &[IpNetwork], o: &Owner<'_>) {
    ipmasq::setup(&ns.nl, Backend::Nftables, addrs, o)
        .unwrap()
        .wait()
        .unwrap();
}

/// `ours` makes each attachment's objects in one namespace, `nft -f` of
/// the fixtures in another; every table of `tables` must list the same.
fn oracle(fixtures: &[&str], tables: &[(&str, &str)], ours: impl Fn(&Ns, Attachment)) {
    let (a, b) = (Ns::new("fwo"), Ns::new("fwr"));
    for att in attachments() {
        ours(&a, att);
    }
    let text: String = fixtures.iter().map(|f| fixture(f)).collect();
    b.ns.nft_f(&text);
    for t in tables {
        assert_same(&a, &b, *t);
    }
}

#[test]
fn ipmasq_after_two_adds_matches_the_reference() {
    oracle(&["ipmasq-two.nft"], &[MASQ], |ns, (o, addrs, ..)| {
        add(ns, &addrs, &o)
    });
}

#[test]
fn spoofchk_after_two_adds_matches_the_reference() {
    oracle(&["spoofchk-two.nft"], &[SPOOF], |ns, (o, _, veth, mac)| {
        let id = spoofchk::id(o.container_id, o.ifname);
        spoofchk::setup(&ns.nl, &id, veth, mac).unwrap();
    });
}

/// The bridge's ADD: masquerade and spoof check planned into one
/// transaction per attachment.
#[test]
fn bridge_add_state_after_two_attachments_matches_the_reference() {
    let fixtures = ["ipmasq-two.nft", "spoofchk-two.nft"];
    oracle(&fixtures, &[MASQ, SPOOF], |ns, (o, addrs, veth, mac)| {
        let mut tx = Transaction::new();
        ipmasq::nft::plan_setup(&ns.nl, &mut tx, &addrs, &o).unwrap();
        spoofchk::plan_setup(&mut tx, &spoofchk::id(o.container_id, o.ifname), veth, mac);
        ns.nl.nft_apply(tx).unwrap();
    });
}

fn handles(ns: &Ns, chain: &str) -> Vec<u64> {
    let t = ipmasq::nft::TABLE;
    let rules = ns.nl.nft_list_rules(t, Some(chain)).unwrap();
    rules.iter().map(|r| r.handle).collect()
}

/// ADD leaves an intact `postrouting` alone (same handles: nothing was
/// flushed) and rebuilds one that was altered.
#[test]
fn postrouting_is_rebuilt_only_when_altered() {
    let ns = Ns::new("fwp");
    let [(o1, a1, ..), (o2, a2, ..)] = attachments();
    add(&ns, &a1, &o1);
    let before = handles(&ns, "postrouting");
    assert_eq!(before.len(), 3);
    add(&ns, &a2, &o2);
    assert_eq!(handles(&ns, "postrouting"), before);
    let last = before[2].to_string();
    let del = ["nft", "delete", "rule", "inet", "cni_plugins_masquerade"];
    ns.ns
        .exec(&[&del[..], &["postrouting", "handle", &last]].concat());
    add(&ns, &a2, &o2);
    let after = handles(&ns, "postrouting");
    assert_eq!(after.len(), 3);
    assert!(after.iter().all(|h| !before.contains(h)), "{after:?}");
    assert!(ns.listing(MASQ).contains("goto masq_checks"));
}

/// A repeated ADD of an attachment replaces its rules (as the reference
/// does), leaving other attachments alone.
#[test]
fn readd_replaces_the_attachments_stale_rules() {
    let ns = Ns::new("fwr");
    let [(o1, a1, ..), (o2, a2, ..)] = attachments();
    add(&ns, &a1, &o1);
    add(&ns, &a2, &o2);
    let moved = nets(&["10.240.0.9/24"]);
    add(&ns, &moved, &o1);
    let l = ns.listing(MASQ);
    assert!(!l.contains("10.240.0.2") && !l.contains("fd40::2"), "{l}");
    assert_eq!(l.matches("id: c1").count(), 1, "{l}");
    assert!(l.contains("ip saddr 10.240.0.9 ip daddr != 10.240.0.0/24 masquerade"));
    assert!(l.contains("ip saddr 10.240.0.3"), "{l}");
}

/// What knftables does for a Go plugin v1.6+ (`findRules`, then a
/// transaction of `delete rule ... handle`): list the chain with `nft
/// --json`, keep every rule whose comment starts with `prefix`.
fn knftables_delete(ns: &Ns, prefix: &str) -> usize {
    let out = ns.ns.stdout(&[
        "nft",
        "--json",
        "list",
        "chain",
        "inet",
        "cni_plugins_masquerade",
        "masq_checks",
    ]);
    let v: Value = serde_json::from_str(&out).unwrap();
    let mut tx = String::new();
    for item in v["nftables"].as_array().unwrap() {
        let Some(rule) = item.get("rule") else {
            continue;
        };
        if rule["comment"]
            .as_str()
            .is_some_and(|c| c.starts_with(prefix))
        {
            tx.push_str(&format!(
                "delete rule inet cni_plugins_masquerade masq_checks handle {}\n",
                rule["handle"]
            ));
        }
    }
    let n = tx.lines().count();
    if n > 0 {
        ns.ns.nft_f(&tx);
    }
    n
}

#[test]
fn knftables_finds_and_deletes_our_rules_by_comment() {
    let ns = Ns::new("fwk");
    let [(o1, a1, ..), (o2, a2, ..)] = attachments();
    add(&ns, &a1, &o1);
    add(&ns, &a2, &o2);
    // teardownIPMasqNFTables: the attachment's prefix.
    assert_eq!(knftables_delete(&ns, &ipmasq::instance_hash(&o1)), 2);
    assert_eq!(ipmasq::nft::missing(&ns.nl, &a1, &o1).unwrap(), a1);
    ipmasq::check(&ns.nl, Scope::Only(Backend::Nftables), &a2, &o2).unwrap();
    // Our DEL after theirs finds nothing left and succeeds.
    ipmasq::teardown(&ns.nl, Scope::Only(Backend::Nftables), &[], &o1).unwrap();
    // gcIPMasqNFTables: the network's prefix.
    let prefix = format!("{}-", ipmasq::network_hash("mq"));
    assert_eq!(knftables_delete(&ns, &prefix), 1);
    assert_eq!(ipmasq::nft::missing(&ns.nl, &a2, &o2).unwrap(), a2);
}

#[test]
fn teardown_gc_and_check_find_their_rules_only() {
    let ns = Ns::new("fwg");
    let only = Scope::Only(Backend::Nftables);
    let [(o1, a1, ..), (o2, a2, ..)] = attachments();
    let other = Owner {
        network: "net2",
        ..o1
    };
    for (o, a) in [(&o1, &a1), (&o2, &a2), (&other, &a1)] {
        add(&ns, a, o);
    }
    ipmasq::check(&ns.nl, only, &a1, &o1).unwrap();
    let e = ipmasq::check(&ns.nl, only, &nets(&["10.240.0.7/24"]), &o1).unwrap_err();
    assert_eq!(e.to_string(), "ip masquerade rule for 10.240.0.7 not found");
    // GC of mq keeping c2: c1's rules go, net2's stay.
    let valid = [("c2".to_string(), "eth0".to_string())];
    ipmasq::gc(&ns.nl, only, "mq", &valid).unwrap();
    assert_eq!(ipmasq::nft::missing(&ns.nl, &a1, &o1).unwrap(), a1);
    ipmasq::check(&ns.nl, only, &a2, &o2).unwrap();
    ipmasq::check(&ns.nl, only, &a1, &other).unwrap();
    // Teardown with every backend, in the namespace (iptables is looked
    // at there too, and holds nothing).
    netns::run(&ns.file, || {
        ipmasq::teardown(&ns.nl, Scope::Every, &[], &o2).unwrap();
        ipmasq::teardown(&ns.nl, Scope::Every, &[], &o2).unwrap();
    })
    .unwrap();
    let l = ns.listing(MASQ);
    assert!(!l.contains("id: c2"), "{l}");
    assert_eq!(l.matches("net: net2").count(), 2, "{l}");
}

#[test]
fn spoofchk_teardown_gc_and_check() {
    let ns = Ns::new("fwx");
    let ids: Vec<String> = attachments()
        .iter()
        .map(|(o, _, veth, mac)| {
            let id = spoofchk::id(o.container_id, o.ifname);
            spoofchk::setup(&ns.nl, &id, veth, *mac).unwrap();
            id
        })
        .collect();
    for id in &ids {
        spoofchk::check(&ns.nl, id).unwrap();
    }
    // Only c1's veth is gone; nothing is kept by id.
    let exists = |v: &str| v == "veth00000002";
    spoofchk::gc(&ns.nl, &[], &exists).unwrap();
    let e = spoofchk::check(&ns.nl, &ids[0]).unwrap_err();
    assert_eq!(e.to_string(), "spoof-check rules for c1-eth0 not found");
    spoofchk::check(&ns.nl, &ids[1]).unwrap();
    // A kept id stays even when its veth is gone.
    spoofchk::gc(&ns.nl, &ids[1..], &|_| false).unwrap();
    spoofchk::check(&ns.nl, &ids[1]).unwrap();
    spoofchk::teardown(&ns.nl, &ids[1]).unwrap();
    spoofchk::teardown(&ns.nl, &ids[1]).unwrap();
    let l = ns.listing(SPOOF);
    assert!(
        !l.contains("cni-br-iface") && !l.contains("macspoofchk"),
        "{l}"
    );
    assert!(l.contains("chain PREROUTING"), "the base chain stays: {l}");
}

/// The nf_tables probe answers without creating anything; iptables is
/// usable here (the test machine has it on PATH).
#[test]
fn probes_create_nothing() {
    let ns = Ns::new("fwq");
    let probe = System::new(&ns.nl);
    probe.nftables().unwrap();
    probe.iptables().unwrap();
    assert!(!probe.firewalld());
    let tables = ns.ns.stdout(&["nft", "list", "tables"]);
    assert!(tables.trim().is_empty(), "{tables}");
    assert_eq!(
        cni_firewall::select::ipmasq(None, &probe),
        Ok(Backend::Iptables)
    );
}

/// Rules deleted by someone else between our listing and our delete (two
/// DELs of one attachment at once: ours with another dataDir, or the Go
/// plugin's) do not fail the delete: the second DEL failed with "no such
/// file or directory", forever racing; now the rules still there go and
/// the delete succeeds, also when none is left.
#[test]
fn rules_gone_since_listed_are_not_an_error() {
    let ns = Ns::new("fwgone");
    let o = owner("c1");
    add(
        &ns,
        &nets(&["10.240.0.2/24", "fd40::2/64", "10.240.1.2/24"]),
        &o,
    );
    add(&ns, &nets(&["10.240.0.3/24"]), &owner("c2"));
    let t = ipmasq::nft::TABLE;
    let prefix = ipmasq::instance_hash(&o);
    let listed = cni_firewall::nft::find_by_comment_prefix(&ns.nl, t, None, &prefix).unwrap();
    assert_eq!(listed.len(), 3);
    cni_firewall::nft::delete(&ns.nl, t, &listed[1..2]).unwrap();
    cni_firewall::nft::delete(&ns.nl, t, &listed).unwrap();
    let left = cni_firewall::nft::find_by_comment_prefix(&ns.nl, t, None, &prefix).unwrap();
    assert!(left.is_empty(), "{left:?}");
    cni_firewall::nft::delete(&ns.nl, t, &listed).unwrap();
    // The other attachment's rule stays.
    let all = ns.listing(MASQ);
    assert!(all.contains("10.240.0.3"), "{all}");
}
