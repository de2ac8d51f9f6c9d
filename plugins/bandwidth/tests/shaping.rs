//! Real effects: a TCP transfer through a 1 Mbit/s limit takes the time
//! the limit implies, in each direction, and is far faster without it; the
//! qdiscs, the filter and the IFB device are there after ADD, as `tc` and
//! `ip` read them, and gone after DEL.

mod common;

use common::*;
use serde_json::{Value, json};

/// 1 Mbit/s with a 10 kB bucket, and 250 kB to send: about two seconds.
const RATE: u64 = 1_000_000;
const BURST: u64 = 80_000;
const BYTES: usize = 250_000;

/// Seconds the transfer should take: every 1448 bytes of payload (MSS
/// with TCP timestamps on a 1500-byte MTU) cost a 1514-byte frame, the
/// bucket's worth goes at once.
fn expected() -> f64 {
    let wire_bits = BYTES as f64 * 1514.0 / 1448.0 * 8.0;
    (wire_bits - BURST as f64) / RATE as f64
}

fn assert_limited(took: f64, what: &str) {
    let want = expected();
    eprintln!("{what}: {took:.3} s, expected {want:.3} s");
    assert!(
        (0.9 * want..1.3 * want).contains(&took),
        "{what}: {took:.2} s, expected about {want:.2} s"
    );
}

fn assert_unlimited(took: f64, what: &str) {
    assert!(
        took < 0.25 * expected(),
        "{what} without a limit took {took:.2} s"
    );
}

#[test]
fn egress_transfer_takes_the_time_the_limit_implies() {
    let pod = Pod::new("bwe");
    let unlimited = transfer(&pod.cont, &pod.host, HOST_IP, BYTES).as_secs_f64();
    assert_unlimited(unlimited, "egress");
    let conf = pod.conf("1.0.0", json!({"egressRate": RATE, "egressBurst": BURST}));
    pod.call("ADD", &conf).ok();
    let took = transfer(&pod.cont, &pod.host, HOST_IP, BYTES).as_secs_f64();
    assert_limited(took, "egress");
    // The other direction is not shaped.
    assert_unlimited(
        transfer(&pod.host, &pod.cont, CONT_IP, BYTES).as_secs_f64(),
        "ingress",
    );
    pod.call("DEL", &conf).ok();
    assert!(!pod.has_link(&pod.ifb()));
}

#[test]
fn ingress_transfer_takes_the_time_the_limit_implies() {
    let pod = Pod::new("bwi");
    let unlimited = transfer(&pod.host, &pod.cont, CONT_IP, BYTES).as_secs_f64();
    assert_unlimited(unlimited, "ingress");
    let conf = pod.conf(
        "1.0.0",
        json!({"runtimeConfig": {"bandwidth": {"ingressRate": RATE, "ingressBurst": BURST}}}),
    );
    let result = pod.call("ADD", &conf).ok();
    // No IFB for ingress alone.
    assert_eq!(result["interfaces"].as_array().unwrap().len(), 2);
    let took = transfer(&pod.host, &pod.cont, CONT_IP, BYTES).as_secs_f64();
    assert_limited(took, "ingress");
    assert_unlimited(
        transfer(&pod.cont, &pod.host, HOST_IP, BYTES).as_secs_f64(),
        "egress",
    );
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
