//! Differential tests against the reference (Debian's v1.1.1
//! `/usr/lib/cni/macvlan`), both run in the same throwaway host on the
//! same master: the same result but for the random MAC (and the empty
//! `dns` the reference prints), the same link settings and addresses in
//! the container (but for the reference's `txqueuelen` 0, a bug fixed in
//! v1.6.0), the same messages for bad input (with code 7 where the
//! reference says 999); and each one's DEL removes the other's
//! attachment.

mod common;

use common::*;
use serde_json::{Value, json};
use testsupport::onelink::{self, comparable};
use testsupport::{PluginHost, PluginRun, TestNetns};

fn reference(h: &PluginHost, cmd: &str, conf: &Value, cid: &str, c: &TestNetns) -> PluginRun {
    onelink::reference(h, "macvlan", cmd, conf, cid, c)
}

fn ours(h: &PluginHost, cmd: &str, conf: &Value, cid: &str, c: &TestNetns) -> PluginRun {
    h.call(cmd, conf, cid, c.path(), "net1")
}

/// What the container has of `net1` ([`onelink::settings`]: kind, mode,
/// MTU, flags, parent, addresses and routes; not the MAC, not the queue
/// length), and its `arp_notify`.
fn settings(c: &TestNetns) -> Value {
    let mut s = onelink::settings(c);
    s["arp_notify"] = json!(c.stdout(&["sysctl", "-n", "net.ipv4.conf.net1.arp_notify"]));
    s
}

fn static_conf(h: &PluginHost, extra: Value) -> Value {
    let ipam = json!({"type": "static",
        "addresses": [{"address": "10.240.64.5/24", "gateway": "10.240.64.1"}],
        "routes": [{"dst": "10.240.0.0/12", "gw": "10.240.64.254"}]});
    let mut keys = json!({"ipam": ipam});
    for (k, v) in extra.as_object().unwrap() {
        keys[k] = v.clone();
    }
    conf(h, "1.0.0", &[], keys)
}

/// One attachment made by the reference, then (the reference's gone: the
/// MAC may be the config's) the same made by us; each CHECKed and DELed
/// by the other.
fn same_attachment(extra: Value) {
    let h = host("io");
    let conf = static_conf(&h, extra);
    let (a, b) = (TestNetns::new("ioa"), TestNetns::new("iob"));
    let theirs = reference(&h, "ADD", &conf, "a", &a).ok();
    let their_link = settings(&a);
    let theirs_prev = with_prev(&conf, &theirs);
    ours(&h, "CHECK", &theirs_prev, "a", &a).ok();
    ours(&h, "DEL", &theirs_prev, "a", &a).ok();
    assert!(is_empty(&a));

    let mine = ours(&h, "ADD", &conf, "b", &b).ok();
    assert_eq!(mine["interfaces"][0]["sandbox"], b.path());
    assert_eq!(comparable(mine.clone()), comparable(theirs));
    assert_eq!(settings(&b), their_link);
    let mine_prev = with_prev(&conf, &mine);
    reference(&h, "CHECK", &mine_prev, "b", &b).ok();
    reference(&h, "DEL", &mine_prev, "b", &b).ok();
    assert!(is_empty(&b));
}

#[test]
fn same_result_and_link_as_the_reference() {
    same_attachment(json!({}));
}

#[test]
fn same_result_and_link_as_the_reference_private_mtu_mac() {
    same_attachment(json!({"mode": "private", "mtu": 1400, "mac": "02:00:00:00:00:09"}));
}

#[test]
fn same_l2_result_as_the_reference() {
    let h = host("iol");
    let mut conf = conf(&h, "1.0.0", &[], json!({}));
    conf.as_object_mut().unwrap().remove("ipam");
    let (a, b) = (TestNetns::new("ioa"), TestNetns::new("iob"));
    let theirs = reference(&h, "ADD", &conf, "a", &a).ok();
    let mine = ours(&h, "ADD", &conf, "b", &b).ok();
    assert_eq!(mine["interfaces"][0]["sandbox"], b.path());
    assert_eq!(comparable(mine), comparable(theirs));
    assert_eq!(settings(&b)["flags"], settings(&a)["flags"]);
    ours(&h, "DEL", &conf, "a", &a).ok();
    ours(&h, "DEL", &conf, "b", &b).ok();
}

#[test]
fn same_messages_for_bad_input() {
    let h = host("iob");
    let c = TestNetns::new("iobc");
    let cases = [
        json!({"mode": "source"}),
        json!({"mode": "x"}),
        json!({"mac": "zz"}),
        json!({"mac": "02:00:00:00:00"}),
        json!({"mtu": 9000}),
        json!({"master": "nosuch0"}),
    ];
    for keys in cases {
        let conf = static_conf(&h, keys.clone());
        let theirs = reference(&h, "ADD", &conf, "a", &c).err(999);
        let r = ours(&h, "ADD", &conf, "a", &c);
        let mine = r.json();
        assert_eq!(mine["msg"], theirs["msg"], "{keys}");
        assert!(mine["code"] == 7 || mine["code"] == 999, "{keys}: {mine}");
        assert!(is_empty(&c), "{keys}");
    }
    // The container already has the name.
    let conf = static_conf(&h, json!({}));
    ours(&h, "ADD", &conf, "a", &c).ok();
    let theirs = reference(&h, "ADD", &conf, "b", &c).err(999);
    let mine = ours(&h, "ADD", &conf, "b", &c).err(999);
    assert_eq!(mine["msg"], theirs["msg"]);
    ours(&h, "DEL", &conf, "a", &c).ok();
}
