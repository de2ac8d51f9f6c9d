//! Another tool's qdisc in the way is named in the error, and the failed
//! ADD leaves everything as it was (reference #894 answered "file
//! exists"); objects that are exactly ours make a retried ADD succeed.
//! And a failed ADD removes what it made whatever step failed
//! (failpoints, debug builds).

mod common;

use common::*;
use serde_json::{Value, json};
use testsupport::Failpoints;

fn limits() -> Value {
    json!({"ingressRate": 1_000_000, "ingressBurst": 100_000,
           "egressRate": 2_000_000, "egressBurst": 200_000})
}

fn in_the_way(step: &str, dev: &str, what: &str) -> String {
    format!(
        "{step}: device {dev} already has {what}, which bandwidth did not make; \
         remove it or leave traffic shaping of this device to its owner"
    )
}

#[test]
fn a_clsact_qdisc_in_the_way_is_named_and_nothing_is_left() {
    let pod = Pod::new("bwc");
    pod.tc(&format!("qdisc add dev {} clsact", pod.veth));
    let before = pod.state();
    let e = pod.call("ADD", &pod.conf("1.0.0", limits())).err(999);
    assert_eq!(
        e["msg"],
        in_the_way(
            "create ingress qdisc",
            &pod.veth,
            "qdisc clsact ffff: parent ffff:fff1"
        )
    );
    assert_eq!(pod.state(), before);
    assert!(pod.ifbs().is_empty());
}

#[test]
fn a_foreign_root_qdisc_is_named_and_kept() {
    let pod = Pod::new("bwr");
    pod.tc(&format!("qdisc add dev {} root handle 5: htb", pod.veth));
    let before = pod.state();
    let e = pod.call("ADD", &pod.conf("1.0.0", limits())).err(999);
    assert_eq!(
        e["msg"],
        in_the_way("create qdisc", &pod.veth, "qdisc htb 5: root")
    );
    assert_eq!(pod.state(), before);
    // A tbf 1: with other numbers is not ours either.
    pod.tc(&format!("qdisc del dev {} root", pod.veth));
    pod.tc(&format!(
        "qdisc add dev {} root handle 1: tbf rate 1mbit burst 5kb latency 50ms",
        pod.veth
    ));
    let e = pod.call("ADD", &pod.conf("1.0.0", limits())).err(999);
    assert_eq!(
        e["msg"],
        in_the_way("create qdisc", &pod.veth, "qdisc tbf 1: root")
    );
}

#[test]
fn foreign_filters_on_an_ingress_qdisc_are_named() {
    let pod = Pod::new("bwf");
    pod.tc(&format!("qdisc add dev {} ingress", pod.veth));
    pod.tc(&format!(
        "filter add dev {} parent ffff: protocol ip prio 3 u32 match ip dst 10.240.77.1/32 classid 1:2",
        pod.veth
    ));
    let before = pod.state();
    let e = pod.call("ADD", &pod.conf("1.0.0", limits())).err(999);
    let msg = e["msg"].as_str().unwrap();
    let prefix = format!(
        "add filter: device {} already has ingress qdisc ffff: with filter u32 pref 3",
        pod.veth
    );
    assert!(msg.starts_with(&prefix), "{msg}");
    assert_eq!(pod.state(), before, "the ADD's tbf and IFB were undone");
}

#[test]
fn an_empty_ingress_qdisc_is_used() {
    let pod = Pod::new("bwq");
    pod.tc(&format!("qdisc add dev {} ingress", pod.veth));
    let conf = pod.conf("1.0.0", limits());
    pod.call("ADD", &conf).ok();
    pod.call("CHECK", &conf).ok();
    assert_eq!(pod.filters(&pod.veth).len(), 3, "our redirect");
    pod.call("DEL", &conf).ok();
    assert_eq!(pod.state(), pristine());
}

#[test]
fn a_retried_add_succeeds_and_makes_nothing_twice() {
    let pod = Pod::new("bwa");
    let conf = pod.conf("1.0.0", limits());
    let first = pod.call("ADD", &conf).ok();
    let state = pod.state();
    let second = pod.call("ADD", &conf).ok();
    assert_eq!(first, second);
    assert_eq!(pod.state(), state);
    pod.call("CHECK", &conf).ok();
    pod.call("DEL", &conf).ok();
    assert_eq!(pod.state(), pristine());
}

/// DEL returns once the ifb device is gone (the kernel's final wait for it
/// is left to a child), so an ADD of the same attachment right after it
/// makes the device again.
#[test]
fn an_add_right_after_del_makes_the_ifb_again() {
    let pod = Pod::new("bwr");
    let conf = pod.conf("1.0.0", limits());
    for _ in 0..3 {
        pod.call("ADD", &conf).ok();
        assert!(pod.has_link(&pod.ifb()));
        pod.call("DEL", &conf).ok();
        assert!(!pod.has_link(&pod.ifb()));
        assert_eq!(pod.state(), pristine());
    }
}

/// The steps of an ADD with both limits, in order.
const STEPS: &[&str] = &[
    "bandwidth/ingress-shaped",
    "bandwidth/ifb-created",
    "bandwidth/ifb-shaped",
    "bandwidth/ifb-up",
    "bandwidth/ingress-qdisc",
    "bandwidth/redirected",
];

#[cfg(debug_assertions)]
#[test]
fn a_failed_add_leaves_nothing_whatever_step_fails() {
    let pod = Pod::new("bwz");
    let conf = pod.conf("1.0.0", limits());
    let points = Failpoints::new();
    points
        .record(pod.request("ADD", &conf))
        .run_in(pod.host.name(), bin())
        .ok();
    assert_eq!(points.passed("bandwidth/"), STEPS);
    pod.call("DEL", &conf).ok();
    assert_eq!(pod.state(), pristine());
    for step in STEPS {
        let run = pod
            .request("ADD", &conf)
            .fail_at(step)
            .run_in(pod.host.name(), bin());
        assert_eq!(run.err(999)["msg"], format!("injected failure at {step}"));
        assert_eq!(pod.state(), pristine(), "after failing at {step}");
    }
    // A retried ADD whose objects were there already removes nothing of
    // them when it fails.
    pod.call("ADD", &conf).ok();
    let state = pod.state();
    for step in STEPS {
        let run = pod
            .request("ADD", &conf)
            .fail_at(step)
            .run_in(pod.host.name(), bin());
        run.err(999);
        assert_eq!(pod.state(), state, "after failing at {step}");
    }
    pod.call("DEL", &conf).ok();
    assert_eq!(pod.state(), pristine());
}

/// One container attached twice to the network (multus, two ifnames),
/// or two attachments whose network name and container ID join to the
/// same text (`ab`+`c`, `a`+`bc`): both hash to one IFB name. The second
/// ADD used the first's IFB as its own (a "retried ADD"), and the DEL of
/// either removed it under the other, whose redirect then led nowhere.
/// Now the second ADD is refused and its DEL leaves the first's IFB (the
/// reference's ADD fails with `file exists`, and its DEL removes the
/// first's IFB).
#[test]
fn a_second_attachment_never_takes_the_first_ones_ifb() {
    for same_container in [true, false] {
        let first = Pod::new("bwtw");
        let mut second = if same_container {
            first.sibling("bwtw2", &first.net)
        } else {
            let (head, tail) = first.cid.split_at(1);
            let mut p = first.sibling("bwtw2", &format!("{}{head}", first.net));
            p.cid = tail.to_string();
            p
        };
        if same_container {
            second.cid = first.cid.clone();
        }
        assert_eq!(first.ifb(), second.ifb());
        first.call("ADD", &first.conf("1.0.0", limits())).ok();
        let ifb = first.ifb();
        let redirect = first.filters(&first.veth);
        let before = second.state();
        let e = second.call("ADD", &second.conf("1.0.0", limits())).err(999);
        assert_eq!(
            e["msg"],
            format!(
                "adding link: {ifb} is the ifb device of another attachment (container {} again, or a network name and container ID that join to the same text): traffic from {} is redirected to it",
                second.cid, first.veth
            )
        );
        assert_eq!(second.state(), before);
        second.call("DEL", &second.conf("1.0.0", limits())).ok();
        second
            .request("DEL", &second.conf("1.0.0", limits()))
            .netns("")
            .run_in(first.host.name(), bin())
            .ok();
        assert!(first.has_link(&ifb));
        assert_eq!(first.filters(&first.veth), redirect);
        first.call("CHECK", &first.conf("1.0.0", limits())).ok();
        first.call("DEL", &first.conf("1.0.0", limits())).ok();
        assert!(!first.has_link(&ifb));
    }
}
