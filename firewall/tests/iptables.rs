//! Root tests of the iptables transport and the ipmasq iptables rule set,
//! run in throwaway namespaces (the tools are started from a thread
//! switched into the namespace, so they act there): the rules are exactly
//! the reference's, and teardown, GC and CHECK find them without
//! addresses.

use std::fs::File;

use cni_firewall::ipmasq::{self, Owner};
use cni_firewall::iptables::{self, Batch, Family};
use cni_firewall::{Backend, Scope};
use cni_net::{IpNetwork, Netlink, netns};
use testsupport::TestNetns;

fn nets(list: &[&str]) -> Vec<IpNetwork> {
    list.iter().map(|s| s.parse().unwrap()).collect()
}

/// Run `f` with the calling thread (and the tools it starts) in `ns`.
fn inside<T>(ns: &TestNetns, f: impl FnOnce(&Netlink) -> T) -> T {
    let file = File::open(ns.path()).unwrap();
    let nl = Netlink::in_netns(&file).unwrap();
    netns::run(&file, || f(&nl)).unwrap()
}

fn nat(ns: &TestNetns, family: Family) -> String {
    ns.stdout(&[family.save_tool(), "-t", "nat"])
}

const OWNER: Owner<'static> = Owner {
    network: "mq",
    ifname: "eth0",
    container_id: "c1",
};

#[test]
fn ipmasq_rules_are_the_references_and_go_without_addresses() {
    let ns = TestNetns::new("fwi");
    let addrs = nets(&["10.33.0.2/24", "fd40::2/64"]);
    let ipt = Scope::Only(Backend::Iptables);
    inside(&ns, |nl| {
        ipmasq::setup(nl, Backend::Iptables, &addrs, &OWNER)
            .unwrap()
            .wait()
            .unwrap();
        ipmasq::check(nl, ipt, &addrs, &OWNER).unwrap();
    });
    let v4 = nat(&ns, Family::V4);
    // The lines iptables-save printed for the reference plugin (§5.3).
    for line in [
        ":CNI-fb21b640fde7fb73bc20647d - [0:0]",
        "-A POSTROUTING -s 10.33.0.2/32 -m comment --comment \"name: \\\"mq\\\" id: \\\"c1\\\"\" -j CNI-fb21b640fde7fb73bc20647d",
        "-A CNI-fb21b640fde7fb73bc20647d -d 10.33.0.0/24 -m comment --comment \"name: \\\"mq\\\" id: \\\"c1\\\"\" -j ACCEPT",
        "-A CNI-fb21b640fde7fb73bc20647d ! -d 224.0.0.0/4 -m comment --comment \"name: \\\"mq\\\" id: \\\"c1\\\"\" -j MASQUERADE",
    ] {
        assert!(v4.lines().any(|l| l == line), "missing {line}\n{v4}");
    }
    let v6 = nat(&ns, Family::V6);
    assert!(v6.contains("-A POSTROUTING -s fd40::2/128"), "{v6}");
    assert!(v6.contains("! -d ff00::/8"), "{v6}");
    inside(&ns, |nl| {
        // CHECK notices a missing jump.
        let mut b = Batch::new();
        b.delete_saved(
            "nat",
            iptables::save(Family::V4, "nat")
                .unwrap()
                .rules("nat", "POSTROUTING")[0],
        );
        iptables::restore(Family::V4, &b).unwrap();
        let e = ipmasq::check(nl, ipt, &addrs, &OWNER).unwrap_err();
        assert_eq!(e.to_string(), "ip masquerade rule for 10.33.0.2 not found");
        // Teardown needs no addresses, and runs twice.
        ipmasq::teardown(nl, ipt, &[], &OWNER).unwrap();
        ipmasq::teardown(nl, Scope::Every, &[], &OWNER).unwrap();
    });
    for f in [Family::V4, Family::V6] {
        let left = nat(&ns, f);
        assert!(!left.contains("CNI-") && !left.contains("c1"), "{left}");
    }
}

/// CHECK finds the jump of an address `iptables-save` prints otherwise
/// than Rust (`::a00:2` as `::10.0.0.2`): it never passed for such a
/// container; and still notices a missing one.
#[test]
fn ipmasq_check_compares_addresses_not_spellings() {
    let ns = TestNetns::new("fwi6");
    let ipt = Scope::Only(Backend::Iptables);
    let addrs = nets(&["::a00:2/120", "::ffff:a00:2/120"]);
    inside(&ns, |nl| {
        ipmasq::setup(nl, Backend::Iptables, &addrs, &OWNER)
            .unwrap()
            .wait()
            .unwrap();
        let v6 = iptables::save(Family::V6, "nat").unwrap();
        assert!(v6.text().contains("-s ::10.0.0.2/128"), "{}", v6.text());
        ipmasq::check(nl, ipt, &addrs, &OWNER).unwrap();
        let other = nets(&["::a00:3/120"]);
        assert!(ipmasq::check(nl, ipt, &other, &OWNER).is_err());
        ipmasq::teardown(nl, ipt, &addrs, &OWNER).unwrap();
    });
}

/// A teardown planned from a table another DEL has since emptied (two
/// DELs of one attachment at once, not under one lock: ours with another
/// dataDir, or the Go plugin's) succeeds: the batch failed on the chain
/// already gone; now the table is read again and nothing is left to do.
#[test]
fn ipmasq_teardown_after_another_succeeds() {
    let ns = TestNetns::new("fwi2");
    let addrs = nets(&["10.33.0.2/24"]);
    let chain = vec![ipmasq::iptables_chain(OWNER.network, OWNER.container_id)];
    inside(&ns, |nl| {
        ipmasq::setup(nl, Backend::Iptables, &addrs, &OWNER)
            .unwrap()
            .wait()
            .unwrap();
        let stale = iptables::save(Family::V4, "nat").unwrap();
        assert!(stale.chain_declared("nat", &chain[0]));
        ipmasq::iptables::teardown(Family::V4, &chain).unwrap();
        ipmasq::iptables::teardown_from(Family::V4, &stale, &chain).unwrap();
    });
    let left = nat(&ns, Family::V4);
    assert!(!left.contains("CNI-"), "{left}");
}

/// Two attachments of one container to one network (multus: eth0, eth1)
/// share the reference's chain (`CNI-<hash(net + cid)>`). Removing one's
/// rules removes only its own jumps: the other's masquerade stays, and
/// the chain goes with the last attachment (it went with the first, and
/// the other container interface lost its masquerade).
#[test]
fn ipmasq_teardown_keeps_the_chain_of_another_ifname() {
    let ns = TestNetns::new("fwi3");
    let eth1 = Owner {
        ifname: "eth1",
        ..OWNER
    };
    let (a0, a1) = (nets(&["10.33.0.2/24"]), nets(&["10.33.0.3/24"]));
    let ipt = Scope::Only(Backend::Iptables);
    inside(&ns, |nl| {
        for (addrs, o) in [(&a0, &OWNER), (&a1, &eth1)] {
            ipmasq::setup(nl, Backend::Iptables, addrs, o)
                .unwrap()
                .wait()
                .unwrap();
        }
        ipmasq::teardown(nl, ipt, &a1, &eth1).unwrap();
        ipmasq::check(nl, ipt, &a0, &OWNER).unwrap();
        assert!(ipmasq::check(nl, ipt, &a1, &eth1).is_err());
    });
    let left = nat(&ns, Family::V4);
    assert!(left.contains("MASQUERADE"), "{left}");
    assert!(!left.contains("-s 10.33.0.3/32"), "{left}");
    inside(&ns, |nl| ipmasq::teardown(nl, ipt, &a0, &OWNER).unwrap());
    let left = nat(&ns, Family::V4);
    assert!(!left.contains("CNI-"), "{left}");
}

#[test]
fn gc_removes_chains_of_invalid_attachments_of_the_network() {
    let ns = TestNetns::new("fwj");
    let c2 = Owner {
        container_id: "c2",
        ..OWNER
    };
    let other = Owner {
        network: "net2",
        ..OWNER
    };
    let ipt = Scope::Only(Backend::Iptables);
    inside(&ns, |nl| {
        for (o, a) in [
            (OWNER, "10.33.0.2/24"),
            (c2, "10.33.0.3/24"),
            (other, "10.34.0.2/24"),
        ] {
            ipmasq::setup(nl, Backend::Iptables, &nets(&[a]), &o)
                .unwrap()
                .wait()
                .unwrap();
        }
        let valid = [("c2".to_string(), "eth0".to_string())];
        ipmasq::gc(nl, ipt, "mq", &valid).unwrap();
        ipmasq::check(nl, ipt, &nets(&["10.33.0.3/24"]), &c2).unwrap();
        ipmasq::check(nl, ipt, &nets(&["10.34.0.2/24"]), &other).unwrap();
        assert!(ipmasq::check(nl, ipt, &nets(&["10.33.0.2/24"]), &OWNER).is_err());
    });
    let v4 = nat(&ns, Family::V4);
    assert!(!v4.contains(&ipmasq::iptables_chain("mq", "c1")), "{v4}");
}
