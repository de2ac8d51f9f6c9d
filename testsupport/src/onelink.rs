//! What the root tests of the plugins that make one link on a parent
//! (macvlan, ipvlan, vlan, dummy) share: a [`PluginHost`] whose parent is
//! one end of a veth pair (`master0`), the other end (`peer0`) in the host
//! or moved into a "lan" namespace on the parent's segment ([`segment`]);
//! configs naming it; the fail-each-step and kill checks of such a plugin
//! (nothing but `lo` in the container, no lease); the differential check
//! against the reference binary of the same plugin ([`same_as_reference`]).

use std::path::Path;

use serde_json::{Value, json};

use crate::{Failpoints, PluginHost, TestNetns, links};

/// The parent every test config names.
pub const MASTER: &str = "master0";

/// A host running `bin`, with `master0` (MTU 1500) and its peer `peer0`
/// up, host-local and static on its `CNI_PATH`.
pub fn host(tag: &str, bin: &Path) -> PluginHost {
    let h = PluginHost::new(tag, bin, &["host-local", "static"]);
    let add = [
        "ip", "link", "add", MASTER, "type", "veth", "peer", "name", "peer0",
    ];
    h.ns.exec(&add);
    h.ns.exec(&["ip", "link", "set", MASTER, "up"]);
    h.ns.exec(&["ip", "link", "set", "peer0", "up"]);
    h
}

/// A "lan" namespace on the master's segment: `peer0` moved there, up,
/// with `addr` (`10.240.50.1/24`) when not empty.
pub fn segment(h: &PluginHost, addr: &str) -> TestNetns {
    let lan = TestNetns::new("lan");
    h.ns.exec(&["ip", "link", "set", "peer0", "netns", lan.name()]);
    if !addr.is_empty() {
        lan.exec(&["ip", "addr", "add", addr, "dev", "peer0"]);
    }
    lan.exec(&["ip", "link", "set", "peer0", "up"]);
    lan
}

/// A config of `plugin` on `master0` in `version`, host-local on
/// `subnets`; `extra` keys merged on top (`"master": null` removes it).
pub fn conf(h: &PluginHost, plugin: &str, version: &str, subnets: &[&str], extra: Value) -> Value {
    let mut keys = json!({"master": MASTER});
    if let (Some(k), Some(more)) = (keys.as_object_mut(), extra.as_object()) {
        for (name, v) in more {
            k.insert(name.clone(), v.clone());
        }
    }
    let mut c = h.conf(plugin, version, subnets, keys);
    if let Some(obj) = c.as_object_mut() {
        obj.retain(|_, v| !v.is_null());
    }
    c
}

/// Whether `c` has nothing but `lo`.
pub fn is_empty(c: &TestNetns) -> bool {
    links(c).iter().all(|(name, _)| name == "lo")
}

/// `ip -d -j link show <ifname>` in `ns`, parsed.
pub fn link_json(ns: &TestNetns, ifname: &str) -> Value {
    ns.link_json(ifname)
        .unwrap_or_else(|| panic!("no link {ifname} in {}", ns.name()))
}

/// The steps of an ADD with IPAM, each one's `onelink/` point.
pub const IPAM_STEPS: &[&str] = &[
    "onelink/ipam-started",
    "onelink/link-created",
    "onelink/ipam-done",
    "onelink/configured",
];

/// ADD of `conf` failed at each of `steps` in turn (after checking that a
/// clean ADD passes exactly those `onelink/` points): the injected error,
/// no cleanup failure, nothing in the container, no lease; then ADD and
/// DEL of the same attachment work and leave nothing.
pub fn fail_each_step(h: &PluginHost, conf: &Value, steps: &[&str]) {
    let points = Failpoints::new();
    let c = TestNetns::new("fpd");
    h.run(points.record(h.request("ADD", conf, "clean", c.path(), "eth0")))
        .ok();
    h.del(conf, "clean", c.path());
    assert_eq!(
        points.passed("onelink/"),
        steps,
        "failpoints of a clean ADD"
    );
    for (i, step) in steps.iter().enumerate() {
        let c = TestNetns::new("fpc");
        let cid = format!("fp{i}");
        let add = h.request("ADD", conf, &cid, c.path(), "eth0");
        let r = h.run(add.fail_at(step));
        let e = r.err(999);
        assert_eq!(e["msg"], format!("injected failure at {step}"), "{e}");
        assert!(!r.stderr.contains("cleanup"), "{step}: {}", r.stderr);
        assert!(is_empty(&c), "{step}: {:?}", links(&c));
        assert!(h.leases().is_empty(), "{step}: {:?}", h.leases());
        h.add(conf, &cid, &c);
        h.del(conf, &cid, c.path());
        assert!(is_empty(&c), "{step}: {:?}", links(&c));
        assert!(h.leases().is_empty(), "{step}: {:?}", h.leases());
    }
}

/// `command` (ADD, DEL) of `conf` killed anywhere ([`crate::kill`]): DEL
/// and GC afterwards leave no container link and no lease.
pub fn kill(h: &PluginHost, command: &str, conf: &Value) {
    let c = TestNetns::new("kpc");
    let leftovers = || {
        let mut left = Vec::new();
        if !is_empty(&c) {
            left.push(format!("container links {:?}", links(&c)));
        }
        left.extend(h.leases().into_iter().map(|l| format!("lease {l}")));
        left
    };
    crate::kill::main_plugin(h, command, conf, "kill1", &c, &leftovers);
}

/// Multus: a pod's secondary networks `net1` (host-local on `subnet`) and
/// `net2` (static `fixed`) of `plugin` (with `extra` keys, and for `net2`
/// `more` on top: two VLAN links on one master need two IDs) on one
/// master, added, CHECKed and deleted one after the other.
pub fn two_secondary_attachments(
    h: &PluginHost,
    plugin: &str,
    extra: Value,
    more: Value,
    subnet: &str,
    fixed: &str,
) {
    let c = TestNetns::new("muc");
    let add = [
        "ip", "link", "add", "eth0", "type", "veth", "peer", "name", "eth0p",
    ];
    c.exec(&add);
    let dynamic = conf(h, plugin, "1.0.0", &[subnet], extra.clone());
    let mut keys = extra;
    keys["ipam"] = json!({"type": "static", "addresses": [{"address": fixed}]});
    for (k, v) in more.as_object().into_iter().flatten() {
        keys[k] = v.clone();
    }
    let fixed_conf = conf(h, plugin, "1.0.0", &[], keys);
    let r1 = h.call("ADD", &dynamic, "pod", c.path(), "net1").ok();
    let r2 = h.call("ADD", &fixed_conf, "pod", c.path(), "net2").ok();
    assert_eq!(r1["interfaces"][0]["name"], "net1");
    assert_eq!(r2["interfaces"][0]["name"], "net2");
    assert_eq!(r2["ips"][0]["address"], fixed);
    let prev1 = crate::with_prev(&dynamic, &r1);
    let prev2 = crate::with_prev(&fixed_conf, &r2);
    h.call("CHECK", &prev1, "pod", c.path(), "net1").ok();
    h.call("CHECK", &prev2, "pod", c.path(), "net2").ok();
    h.call("DEL", &prev1, "pod", c.path(), "net1").ok();
    assert!(crate::has_link(&c, "net2") && !crate::has_link(&c, "net1"));
    h.call("DEL", &prev2, "pod", c.path(), "net2").ok();
    assert!(!crate::has_link(&c, "net2"));
    assert!(h.leases().is_empty());
}

/// The reference plugins (Debian's v1.1.1 `containernetworking-plugins`),
/// also at this path in the VM image (`scripts/vm-test.sh`).
pub const REFERENCE: &str = "/usr/lib/cni";

/// `cmd` of the reference `plugin` on `h`'s host with its own IPAM
/// plugins (`CNI_PATH` [`REFERENCE`]), `net1` in `c`.
pub fn reference(
    h: &PluginHost,
    plugin: &str,
    cmd: &str,
    conf: &Value,
    cid: &str,
    c: &TestNetns,
) -> crate::PluginRun {
    let call = h.request(cmd, conf, cid, c.path(), "net1").path(REFERENCE);
    call.run_in(h.ns.name(), &Path::new(REFERENCE).join(plugin))
}

/// A result without what names one attachment rather than its settings:
/// the MAC, the sandbox, and the empty `dns` the reference prints.
pub fn comparable(mut r: Value) -> Value {
    r["interfaces"][0]["mac"] = json!("-");
    r["interfaces"][0]["sandbox"] = json!("-");
    if r["dns"] == json!({}) {
        r.as_object_mut().map(|o| o.remove("dns"));
    }
    r
}

/// What `c`'s `net1` has, read back: kind and the kind's settings (mode,
/// VLAN ID and protocol), MTU, flags (up), parent index, IPv4
/// addresses and routes (not the MAC, not the queue length: v1.1.1's is
/// 0, fixed in v1.6.0).
pub fn settings(c: &TestNetns) -> Value {
    let l = link_json(c, "net1");
    let addrs = c.stdout(&["ip", "-4", "-o", "addr", "show", "dev", "net1"]);
    let addrs: Vec<String> = addrs
        .lines()
        .map(|l| l.split_whitespace().nth(3).unwrap_or("").to_string())
        .collect();
    json!({
        "kind": l["linkinfo"]["info_kind"],
        "data": l["linkinfo"]["info_data"],
        "mtu": l["mtu"],
        // Flags, not `operstate`: the kernel settles that a moment after
        // the link came up (linkwatch), so a read right after ADD may see
        // `UNKNOWN` for either.
        "flags": l["flags"],
        "parent": l["link_index"],
        "addrs": addrs,
        "routes": c.stdout(&["ip", "-4", "route", "show", "dev", "net1"]),
    })
}

/// `conf` (of `h`'s plugin, `plugin` in the reference's name) added by
/// the reference into one container, CHECKed and DELed by ours; then
/// added by ours into another, CHECKed and DELed by the reference (one
/// after the other: a VLAN ID or an ipvlan address is the master's
/// once). Both results agree but for [`comparable`]'s fields, and the
/// links' [`settings`] are the same, the parent being `master0`.
pub fn same_as_reference(h: &PluginHost, plugin: &str, conf: &Value) {
    let (a, b) = (TestNetns::new("dfa"), TestNetns::new("dfb"));
    let theirs = reference(h, plugin, "ADD", conf, "a", &a).ok();
    let their_link = settings(&a);
    let master = link_json(&h.ns, MASTER)["ifindex"].clone();
    assert_eq!(their_link["parent"], master, "{their_link}");
    let theirs_prev = crate::with_prev(conf, &theirs);
    h.call("CHECK", &theirs_prev, "a", a.path(), "net1").ok();
    h.call("DEL", &theirs_prev, "a", a.path(), "net1").ok();
    assert!(is_empty(&a), "{:?}", links(&a));

    let mine = h.call("ADD", conf, "b", b.path(), "net1").ok();
    assert_eq!(mine["interfaces"][0]["sandbox"], b.path());
    assert_eq!(comparable(mine.clone()), comparable(theirs));
    assert_eq!(settings(&b), their_link);
    let mine_prev = crate::with_prev(conf, &mine);
    reference(h, plugin, "CHECK", &mine_prev, "b", &b).ok();
    reference(h, plugin, "DEL", &mine_prev, "b", &b).ok();
    assert!(is_empty(&b), "{:?}", links(&b));
    assert!(h.leases().is_empty(), "{:?}", h.leases());
}

/// The error of ADD of `conf` into `c`'s `net1`, ours and the
/// reference's (`(ours, theirs)`, each the whole error JSON). Ours runs
/// first: the reference may leave a link behind (README, "Where we
/// deliberately differ").
pub fn both_refuse(h: &PluginHost, plugin: &str, conf: &Value, c: &TestNetns) -> (Value, Value) {
    let mine = h.call("ADD", conf, "r", c.path(), "net1");
    assert_ne!(mine.code, 0, "ours accepted {conf}");
    let theirs = reference(h, plugin, "ADD", conf, "r", c);
    assert_eq!(theirs.code, 1, "the reference: {theirs:?}");
    (mine.json(), theirs.json())
}
