//! Root tests of traffic control: what we create is compared, through
//! `tc -j` (the oracle), with what the `tc` binary creates from the same
//! parameters on a twin device; listings, conflicts, IFB devices and veth
//! peers are read back from the kernel. Each test has its own namespace.

mod common;

use std::fs::File;

use cni_net::tc::filter::{ACT_STOLEN, EGRESS_REDIRECT, ETH_P_ALL};
use cni_net::tc::{self, QdiscSpec, Tbf, U32Redirect};
use cni_net::{Link, Netlink, VethPeer};
use serde_json::Value;
use testsupport::{TestNetns, unique_name};

fn open(ns: &TestNetns) -> File {
    File::open(ns.path()).unwrap()
}

/// `tc ARGS` in `ns` (split at whitespace); panics when it fails.
fn tc(ns: &TestNetns, args: &str) {
    let mut cmd = vec!["tc"];
    cmd.extend(args.split_whitespace());
    ns.exec(&cmd);
}

fn tc_json(ns: &TestNetns, args: &[&str]) -> Value {
    let mut cmd = vec!["tc", "-j"];
    cmd.extend_from_slice(args);
    let out = ns.stdout(&cmd);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{cmd:?}: {e}: {out}"))
}

/// Two fresh devices, up (IFBs, which take any qdisc): ours and the one
/// `tc` configures.
fn twins(nl: &Netlink) -> (Link, Link) {
    let up = |tag: &str| {
        let l = nl
            .create_link_get(&common::ifb(&unique_name(tag), 1500))
            .unwrap();
        nl.set_up_with_alias(&l, None).unwrap();
        l
    };
    (up("cnirstco"), up("cnirstct"))
}

/// `tc -j qdisc show dev D`, with what differs between devices by nature
/// (the reference count) removed.
fn qdiscs_of(ns: &TestNetns, dev: &str) -> Value {
    let mut v = tc_json(ns, &["qdisc", "show", "dev", dev]);
    for q in v.as_array_mut().unwrap() {
        q.as_object_mut().unwrap().remove("refcnt");
    }
    v
}

/// `tc qdisc add dev D root handle 1: tbf rate R burst B limit L` (bytes).
fn tc_tbf(ns: &TestNetns, dev: &str, rate: u64, burst: u64, limit: u32) {
    let (r, b, l) = (
        format!("{rate}bps"),
        format!("{burst}b"),
        format!("{limit}b"),
    );
    tc(
        ns,
        &format!(
            "qdisc add dev {} root handle 1: tbf rate {} burst {} limit {}",
            dev, r, b, l
        ),
    );
}

/// (rate bits/s, burst bits): the reference's example values, rates and
/// bursts not divisible by 8, a slow rate with a large burst, and rates
/// beyond 32 bits of bytes/s (TCA_TBF_RATE64).
const CASES: [(u64, u64); 6] = [
    (1_000_000, 100_000),
    (2_000_000, 200_000),
    (123_457, 98_765),
    (8_000, 8_000_000),
    (40_000_000_000, 80_000_000),
    (64_000_000_000, 8_000_000),
];

/// With the burst given in bytes (TCA_TBF_BURST), as iproute2 sends it,
/// our qdisc is tc's in every case.
#[test]
fn tbf_with_burst_matches_tc() {
    let ns = TestNetns::new("tct");
    let nl = Netlink::in_netns(&open(&ns)).unwrap();
    let tick = tc::tbf::psched_tick().unwrap();
    for (rate, burst) in CASES {
        let (ours, theirs) = twins(&nl);
        let t = Tbf {
            burst: Some((burst / 8) as u32),
            ..Tbf::reference(rate, burst, tick)
        };
        nl.add_qdisc(&ours, tc::ROOT, tc::handle(1, 0), &QdiscSpec::Tbf(t))
            .unwrap();
        tc_tbf(&ns, &theirs.name, t.rate, burst / 8, t.limit);
        assert_eq!(
            qdiscs_of(&ns, &ours.name),
            qdiscs_of(&ns, &theirs.name),
            "rate {rate} burst {burst}"
        );
    }
}

/// The reference's way (buffer in ticks, no TCA_TBF_BURST): the kernel
/// keeps our numbers exactly (the Go plugin's CHECK compares them), and
/// for the reference's own example values tc makes the very same qdisc.
/// Elsewhere tc's byte burst rounds to a tick or two apart.
#[test]
fn tbf_of_the_reference_is_kept_exactly() {
    let ns = TestNetns::new("tcr");
    let nl = Netlink::in_netns(&open(&ns)).unwrap();
    let tick = tc::tbf::psched_tick().unwrap();
    for (i, (rate, burst)) in CASES.into_iter().enumerate() {
        let (ours, theirs) = twins(&nl);
        let t = Tbf::reference(rate, burst, tick);
        nl.add_qdisc(&ours, tc::ROOT, tc::handle(1, 0), &QdiscSpec::Tbf(t))
            .unwrap();
        let listed = nl.qdisc_at(&ours, tc::ROOT).unwrap().unwrap();
        assert_eq!(
            (listed.kind.as_str(), listed.handle),
            ("tbf", tc::handle(1, 0))
        );
        assert!(listed.tbf.unwrap().same_shape(&t), "{listed:?} vs {t:?}");
        assert!(listed.is(&QdiscSpec::Tbf(t)));
        if i < 2 {
            tc_tbf(&ns, &theirs.name, t.rate, burst / 8, t.limit);
            assert_eq!(qdiscs_of(&ns, &ours.name), qdiscs_of(&ns, &theirs.name));
        }
    }
}

#[test]
fn ingress_redirect_filter_matches_tc() {
    let ns = TestNetns::new("tcf");
    let nl = Netlink::in_netns(&open(&ns)).unwrap();
    let (ours, theirs) = twins(&nl);
    let target = nl
        .create_link_get(&common::ifb(&unique_name("cnirstcr"), 1500))
        .unwrap();
    nl.add_qdisc(
        &ours,
        tc::INGRESS_PARENT,
        tc::INGRESS_HANDLE,
        &QdiscSpec::Ingress,
    )
    .unwrap();
    let f = U32Redirect {
        parent: tc::INGRESS_HANDLE,
        prio: 1,
        protocol: ETH_P_ALL,
        classid: tc::handle(1, 1),
        to: target.index,
    };
    nl.add_u32_redirect(&ours, &f).unwrap();
    tc(&ns, &format!("qdisc add dev {} ingress", theirs.name));
    tc(
        &ns,
        &format!(
            "filter add dev {} parent ffff: protocol all prio 1 u32 match u32 0 0 classid 1:1 action mirred egress redirect dev {}",
            theirs.name, target.name
        ),
    );
    assert_eq!(qdiscs_of(&ns, &ours.name), qdiscs_of(&ns, &theirs.name));
    let filters = |dev: &str| {
        let mut v = tc_json(&ns, &["filter", "show", "dev", dev, "parent", "ffff:"]);
        // Action indexes are global per kind: ours and theirs differ.
        strip(&mut v, "index");
        v
    };
    let (a, b) = (filters(&ours.name), filters(&theirs.name));
    assert_eq!(a, b);
    assert!(a.to_string().contains(&target.name), "{a}");

    let listed = nl.filters(&ours, tc::INGRESS_HANDLE).unwrap();
    let nodes: Vec<_> = listed.iter().filter(|f| !f.is_bare()).collect();
    assert_eq!(nodes.len(), 1, "{listed:?}");
    assert!(nodes[0].redirects_all_to(target.index));
    let m = nodes[0].actions[0].mirred.unwrap();
    assert_eq!((m.eaction, m.verdict), (EGRESS_REDIRECT, ACT_STOLEN));
    assert_eq!(
        (nodes[0].prio, nodes[0].protocol, nodes[0].classid),
        (1, ETH_P_ALL, Some(tc::handle(1, 1)))
    );
    // tc's filter is read the same way.
    let theirs_listed = nl.filters(&theirs, tc::INGRESS_HANDLE).unwrap();
    assert!(
        theirs_listed
            .iter()
            .any(|f| f.redirects_all_to(target.index))
    );

    // Deleting the priority removes the whole filter.
    nl.delete_filters(&ours, tc::INGRESS_HANDLE, 1, ETH_P_ALL)
        .unwrap();
    assert!(nl.filters(&ours, tc::INGRESS_HANDLE).unwrap().is_empty());
}

fn strip(v: &mut Value, key: &str) {
    match v {
        Value::Object(m) => {
            m.remove(key);
            m.values_mut().for_each(|v| strip(v, key));
        }
        Value::Array(a) => a.iter_mut().for_each(|v| strip(v, key)),
        _ => {}
    }
}

#[test]
fn conflicts_are_seen_and_listed() {
    let ns = TestNetns::new("tcc");
    let nl = Netlink::in_netns(&open(&ns)).unwrap();
    let (dev, other) = twins(&nl);
    let t = Tbf::reference(1_000_000, 100_000, 15.625);
    // The device's default qdisc gives way; a second tbf does not.
    let default = nl.qdisc_at(&dev, tc::ROOT).unwrap().unwrap();
    assert!(default.is_default(), "{default:?}");
    nl.add_qdisc(&dev, tc::ROOT, tc::handle(1, 0), &QdiscSpec::Tbf(t))
        .unwrap();
    let e = nl
        .add_qdisc(&dev, tc::ROOT, tc::handle(1, 0), &QdiscSpec::Tbf(t))
        .unwrap_err();
    assert!(e.is_exists(), "{e}");
    assert_eq!(
        e.to_string(),
        format!("add tbf qdisc 1: root on {}: file exists", dev.name)
    );
    let other_tbf = Tbf { limit: 1000, ..t };
    nl.replace_qdisc(&dev, tc::ROOT, tc::handle(1, 0), &QdiscSpec::Tbf(other_tbf))
        .unwrap();
    let now = nl.qdisc_at(&dev, tc::ROOT).unwrap().unwrap();
    assert!(now.is(&QdiscSpec::Tbf(other_tbf)) && !now.is(&QdiscSpec::Tbf(t)));

    // Someone else's clsact is in the way of an ingress qdisc.
    tc(&ns, &format!("qdisc add dev {} clsact", other.name));
    let e = nl
        .add_qdisc(
            &other,
            tc::INGRESS_PARENT,
            tc::INGRESS_HANDLE,
            &QdiscSpec::Ingress,
        )
        .unwrap_err();
    assert!(e.is_exists(), "{e}");
    let found = nl.qdisc_at(&other, tc::INGRESS_PARENT).unwrap().unwrap();
    assert!(found.is(&QdiscSpec::Clsact), "{found:?}");
    assert_eq!(found.describe(), "clsact ffff: parent ffff:fff1");
    // A filter that matches something is listed, and is no catch-all.
    tc(
        &ns,
        &format!(
            "filter add dev {} ingress protocol ip prio 3 u32 match ip dst 10.240.0.1/32 action mirred egress redirect dev {}",
            other.name, dev.name
        ),
    );
    let listed = nl.filters(&other, tc::handle(0xffff, 0xfff2)).unwrap();
    let node = listed.iter().find(|f| !f.is_bare()).unwrap();
    assert_eq!((node.prio, node.protocol), (3, 0x0800));
    assert_eq!(node.keys, Some(vec![(0xffff_ffff, 0x0af0_0001, 16)]));
    assert!(!node.redirects_all_to(dev.index));

    // No ingress qdisc: no filters, and nothing to delete.
    assert!(nl.filters(&dev, tc::INGRESS_HANDLE).unwrap().is_empty());
    let e = nl
        .delete_qdisc(&dev, tc::INGRESS_PARENT, tc::INGRESS_HANDLE)
        .unwrap_err();
    assert!(e.is_not_found() || e.is(cni_net::Errno::EINVAL), "{e}");
    nl.delete_qdisc(&dev, tc::ROOT, tc::handle(1, 0)).unwrap();
    assert!(nl.qdisc_at(&dev, tc::ROOT).unwrap().unwrap().is_default());
}

#[test]
fn ifb_is_created_without_queue_and_goes_up_with_alias() {
    let ns = TestNetns::new("tci");
    let nl = Netlink::in_netns(&open(&ns)).unwrap();
    let name = unique_name("cnirstci");
    let ifb = nl.create_link_get(&common::ifb(&name, 1400)).unwrap();
    assert_eq!((ifb.kind.name(), ifb.mtu, ifb.up), ("ifb", 1400, false));
    nl.set_up_with_alias(&ifb, Some("cni test alias")).unwrap();
    let ifb = nl.link_by_index(ifb.index).unwrap();
    assert!(ifb.up);
    assert_eq!(ifb.mac.len(), 6);
    assert_eq!(nl.link_by_name(&name).unwrap(), ifb);
    let j: Value =
        serde_json::from_str(&ns.stdout(&["ip", "-j", "-d", "link", "show", &name])).unwrap();
    let qlen = ns.stdout(&["cat", &format!("/sys/class/net/{name}/tx_queue_len")]);
    assert_eq!(qlen.trim(), "0");
    assert_eq!(j[0]["ifalias"], "cni test alias");
    assert_eq!(j[0]["linkinfo"]["info_kind"], "ifb");
    let e = nl.create_link_get(&common::ifb(&name, 1400)).unwrap_err();
    assert!(e.is_exists(), "{e}");
    assert_eq!(e.to_string(), format!("create ifb {name}: file exists"));
    assert_eq!(
        nl.link_by_name(&name).unwrap().alias.as_deref(),
        Some("cni test alias")
    );
    let plain = nl
        .create_link_get(&common::ifb(&unique_name("cnirstci"), 0))
        .unwrap();
    nl.set_up_with_alias(&plain, None).unwrap();
    let plain = nl.link_by_index(plain.index).unwrap();
    assert_eq!((plain.mtu, plain.alias, plain.up), (1500, None, true));
}

/// An IFB made with an alias ([`cni_net::LinkSpec::alias`]) has it as
/// soon as it exists (one datagram: no kill can come between); a name
/// already taken leaves the alias of the device that has it as it was.
#[test]
fn ifb_is_created_with_its_alias() {
    let ns = TestNetns::new("tca");
    let nl = Netlink::in_netns(&open(&ns)).unwrap();
    let aliased = |name, alias| cni_net::LinkSpec {
        alias: Some(alias),
        ..common::ifb(name, 0)
    };
    let name = unique_name("cnirstca");
    let ifb = nl
        .create_link_get(&aliased(&name, "cni bandwidth: mine"))
        .unwrap();
    assert_eq!(ifb.alias.as_deref(), Some("cni bandwidth: mine"));
    assert!(!ifb.up);
    let e = nl
        .create_link_get(&aliased(&name, "cni bandwidth: theirs"))
        .unwrap_err();
    assert!(e.is_exists(), "{e}");
    let now = nl.link_by_name(&name).unwrap();
    assert_eq!(now.alias.as_deref(), Some("cni bandwidth: mine"));
    let bare = unique_name("cnirstca");
    ns.exec(&["ip", "link", "add", &bare, "type", "ifb"]);
    let e = nl
        .create_link(&aliased(&bare, "cni bandwidth: mine"))
        .unwrap_err();
    assert!(e.is_exists(), "{e}");
    assert_eq!(nl.link_by_name(&bare).unwrap().alias, None);
}

#[test]
fn veth_peer_is_found_from_the_other_namespace() {
    let (host_ns, cont_ns) = (TestNetns::new("tcvh"), TestNetns::new("tcvc"));
    let host = Netlink::in_netns(&open(&host_ns)).unwrap();
    let cont_file = open(&cont_ns);
    let name = unique_name("cnirstcv");
    host.create_link(
        &common::VethPair {
            host_name: &name,
            container_name: "eth0",
            container_ns: &cont_file,
            container_mac: None,
            mtu: None,
            host_master: None,
        }
        .spec(),
    )
    .unwrap();
    let inside = Netlink::in_netns(&cont_file).unwrap();
    let VethPeer::Found(peer) = host.veth_peer(&inside, "eth0").unwrap() else {
        panic!("no peer");
    };
    assert_eq!(peer.name, name);
    assert_eq!(host.veth_peer(&inside, "lo").unwrap(), VethPeer::NotVeth);
    let e = host.veth_peer(&inside, "eth9").unwrap_err();
    assert!(e.is_not_found(), "{e}");
    // Seen from a namespace that does not hold the peer.
    let elsewhere = Netlink::in_netns(&open(&TestNetns::new("tcve"))).unwrap();
    assert!(matches!(
        elsewhere.veth_peer(&inside, "eth0").unwrap(),
        VethPeer::Elsewhere(_)
    ));
}
