//! Real effects: a TCP transfer through a 1 Mbit/s limit is held back by
//! the tbf (its kernel counters say so) and takes at least the time the
//! limit implies, in each direction, while the other direction's data
//! passes no tbf; the qdiscs, the filter and the IFB device are there
//! after ADD, as `tc` and `ip` read them, and gone after DEL.
//!
//! No test here asserts that anything was fast: a busy machine slows any
//! transfer. The one duration asserted is a minimum that only the limit
//! can impose (the clock starts before the connection, so a receiver
//! scheduled late never shortens it), which load can only lengthen.

mod common;

use std::net::Ipv4Addr;

use common::*;
use serde_json::{Value, json};
use testsupport::TestNetns;

/// 1 Mbit/s with a 10 kB bucket, and 250 kB to send: about two seconds.
const RATE: u64 = 1_000_000;
const BURST: u64 = 80_000;
const BYTES: usize = 250_000;

/// Seconds the transfer needs at least: every 1448 bytes of payload (MSS
/// with TCP timestamps on a 1500-byte MTU) cost a 1514-byte frame, the
/// bucket's worth goes at once.
fn minimum() -> f64 {
    let wire_bits = BYTES as f64 * 1514.0 / 1448.0 * 8.0;
    (wire_bits - BURST as f64) / RATE as f64
}

/// A transfer from `from` to `to_ip` through the tbf on `dev`: the tbf
/// sent all of it, held packets back, and the transfer took at least the
/// time the rate implies (a little less for rounding).
fn assert_limited(pod: &Pod, dev: &str, from: &TestNetns, to: &TestNetns, to_ip: Ipv4Addr) {
    let (bytes, held) = tbf_counters(pod, dev);
    let took = transfer(from, to, to_ip, BYTES).as_secs_f64();
    let (bytes_after, held_after) = tbf_counters(pod, dev);
    eprintln!("{dev}: {took:.3} s, at least {:.3} s", minimum());
    assert!(
        bytes_after - bytes >= BYTES as u64,
        "the tbf on {dev} sent too little"
    );
    assert!(held_after > held, "the tbf on {dev} held nothing back");
    assert!(
        took >= 0.9 * minimum(),
        "{dev}: {took:.2} s, faster than the limit allows ({:.2} s)",
        minimum()
    );
}

/// A transfer from `from` to `to_ip` (the other direction) passes no tbf:
/// the one on `dev` sees its acknowledgements only.
fn assert_unlimited(pod: &Pod, dev: &str, from: &TestNetns, to: &TestNetns, to_ip: Ipv4Addr) {
    let (bytes, _) = tbf_counters(pod, dev);
    transfer(from, to, to_ip, BYTES);
    let (bytes_after, _) = tbf_counters(pod, dev);
    assert!(
        bytes_after - bytes < BYTES as u64 / 10,
        "the other direction's data went through the tbf on {dev}"
    );
}

#[test]
fn egress_transfer_is_held_to_the_limit() {
    let pod = Pod::new("bwe");
    let conf = pod.conf("1.0.0", json!({"egressRate": RATE, "egressBurst": BURST}));
    pod.call("ADD", &conf).ok();
    let ifb = pod.ifb();
    assert_limited(&pod, &ifb, &pod.cont, &pod.host, HOST_IP);
    assert_unlimited(&pod, &ifb, &pod.host, &pod.cont, CONT_IP);
    pod.call("DEL", &conf).ok();
    assert!(!pod.has_link(&pod.ifb()));
}

#[test]
fn ingress_transfer_is_held_to_the_limit() {
    let pod = Pod::new("bwi");
    let conf = pod.conf(
        "1.0.0",
        json!({"runtimeConfig": {"bandwidth": {"ingressRate": RATE, "ingressBurst": BURST}}}),
    );
    let result = pod.call("ADD", &conf).ok();
    // No IFB for ingress alone.
    assert_eq!(result["interfaces"].as_array().unwrap().len(), 2);
    assert_limited(&pod, &pod.veth, &pod.host, &pod.cont, CONT_IP);
    assert_unlimited(&pod, &pod.veth, &pod.cont, &pod.host, HOST_IP);
    pod.call("DEL", &conf).ok();
}

/// `tc -j`'s view of the reference's tbf for (rate, burst) bits: bytes
/// per second, the burst in bytes, 25 ms of latency.
fn tbf_json(rate: u64, burst: u64) -> Value {
    json!({"rate": rate / 8, "burst": burst / 8, "lat": 25000})
}

#[test]
fn objects_are_there_after_add_and_gone_after_del() {
    let pod = Pod::new("bwo");
    let keys = json!({
        "ingressRate": 1_000_000, "ingressBurst": 100_000,
        "egressRate": 2_000_000, "egressBurst": 200_000,
    });
    for version in ["1.0.0", "0.4.0", "0.3.1"] {
        let conf = pod.conf(version, keys.clone());
        let result = pod.call("ADD", &conf).ok();
        assert_eq!(result["cniVersion"], version);
        let ifb = pod.ifb();
        let ifaces = result["interfaces"].as_array().unwrap();
        assert_eq!(ifaces.len(), 3, "{result}");
        let link = pod.link(&ifb);
        assert_eq!(ifaces[2], json!({"name": ifb, "mac": link["address"]}));
        assert_eq!(link["linkinfo"]["info_kind"], "ifb");
        assert_eq!(link["mtu"], pod.link(&pod.veth)["mtu"]);
        assert!(
            link["flags"].as_array().unwrap().contains(&json!("UP")),
            "{link}"
        );
        let qlen = pod
            .host
            .stdout(&["cat", &format!("/sys/class/net/{ifb}/tx_queue_len")]);
        assert_eq!(qlen.trim(), "0");
        assert_eq!(
            link["ifalias"],
            format!("cni bandwidth: name: \"{}\" id: \"{}\"", pod.net, pod.cid)
        );

        let veth_q = pod.qdiscs(&pod.veth);
        assert_eq!(veth_q.len(), 2, "{veth_q:?}");
        assert_eq!(
            (&veth_q[0]["kind"], &veth_q[0]["handle"], &veth_q[0]["root"]),
            (&json!("tbf"), &json!("1:"), &json!(true))
        );
        assert_eq!(veth_q[0]["options"], tbf_json(1_000_000, 100_000));
        assert_eq!(
            (&veth_q[1]["kind"], &veth_q[1]["handle"]),
            (&json!("ingress"), &json!("ffff:"))
        );
        let ifb_q = pod.qdiscs(&ifb);
        assert_eq!(ifb_q.len(), 1, "{ifb_q:?}");
        assert_eq!(
            (&ifb_q[0]["kind"], &ifb_q[0]["handle"]),
            (&json!("tbf"), &json!("1:"))
        );
        assert_eq!(ifb_q[0]["options"], tbf_json(2_000_000, 200_000));

        let filters = pod.filters(&pod.veth);
        let node = filters
            .iter()
            .find(|f| f["options"]["actions"].is_array())
            .unwrap_or_else(|| panic!("no redirect: {filters:?}"));
        assert_eq!(
            (&node["protocol"], &node["pref"], &node["kind"]),
            (&json!("all"), &json!(1), &json!("u32"))
        );
        assert_eq!(node["options"]["flowid"], "1:1");
        assert_eq!(
            node["options"]["match"],
            json!({"value": "0", "mask": "0", "offmask": "", "off": 0})
        );
        let action = &node["options"]["actions"][0];
        assert_eq!(
            (
                &action["kind"],
                &action["mirred_action"],
                &action["direction"]
            ),
            (&json!("mirred"), &json!("redirect"), &json!("egress"))
        );
        assert_eq!(action["to_dev"], ifb);

        if version != "0.3.1" {
            pod.call("CHECK", &conf).ok();
        }
        // DEL leaves the veth as it found it, and is idempotent.
        pod.call("DEL", &conf).ok();
        assert!(!pod.has_link(&ifb));
        assert_eq!(pod.state(), pristine());
        pod.call("DEL", &conf).ok();
        assert_eq!(pod.state(), pristine());
    }
}
