//! Replies leave by the interface their request came in on. A request
//! from beyond each network's gateway reaches the pod on that network's
//! interface; without sbr the reply follows the pod's default route (via
//! `eth0`) and is lost for `net1`; with sbr on both interfaces each reply
//! leaves by its own, IPv4 and IPv6 (nft counters per interface and
//! destination). The reference loses `net1`'s IPv6 replies: the default
//! route via a link-local router does not reach the table (openshift/
//! containernetworking-plugins#222).

mod common;

use common::*;
use testsupport::ping_with;

#[test]
fn each_reply_leaves_by_the_interface_its_request_came_in_on() {
    let pod = Pod::new("sbrp");
    pod.count_replies();
    let net1 = &pod.nets[1];
    // Without sbr, net1's replies go out by eth0 and are lost.
    let lost = {
        let cmd = [
            "ping", "-4", "-c", "2", "-i", "0.3", "-W", "1", "-I", net1.far4, net1.v4.0,
        ];
        !net1.ns.exec_output(&cmd).status.success()
    };
    assert!(lost, "answered without sbr");
    assert!(
        pod.counted("eth0", net1.far4) > 0 && pod.counted("net1", net1.far4) == 0,
        "{}",
        pod.ns.stdout(&["nft", "list", "ruleset"])
    );

    pod.run("ADD", 0).ok();
    pod.run("ADD", 1).ok();
    let wrong_before = pod.counted("eth0", net1.far4);
    for n in &pod.nets {
        assert!(
            ping_with(&n.ns, &["-I", n.far4], n.v4.0),
            "{} IPv4",
            n.ifname
        );
        assert!(
            ping_with(&n.ns, &["-I", n.far6], n.v6.0),
            "{} IPv6",
            n.ifname
        );
    }
    let [eth0, net1] = &pod.nets;
    for (n, other) in [(eth0, net1), (net1, eth0)] {
        for far in [n.far4, n.far6] {
            assert!(pod.counted(n.ifname, far) > 0, "{} {far}", n.ifname);
            let wrong = pod.counted(other.ifname, far);
            let expected = if far == net1.far4 { wrong_before } else { 0 };
            assert_eq!(wrong, expected, "replies to {far} left by {}", other.ifname);
        }
    }
    pod.run("DEL", 1).ok();
    pod.run("DEL", 0).ok();
}

#[test]
fn the_references_ipv6_replies_are_lost_ours_are_not() {
    let pod = Pod::new("sbrg");
    let net1 = &pod.nets[1];
    pod.run_go("ADD", 1).ok();
    assert!(ping_with(&net1.ns, &["-I", net1.far4], net1.v4.0));
    assert!(ping_unanswered_from(&net1.ns, net1.far6, net1.v6.0));
    pod.run_go("DEL", 1).ok();
    // The reference leaves its tables behind, and took the routes out of
    // main: start again from a fresh pod.
    let pod = Pod::new("sbrg");
    let net1 = &pod.nets[1];
    pod.run("ADD", 1).ok();
    assert!(ping_with(&net1.ns, &["-I", net1.far6], net1.v6.0));
    pod.run("DEL", 1).ok();
}

fn ping_unanswered_from(ns: &testsupport::TestNetns, from: &str, to: &str) -> bool {
    let cmd = [
        "ping", "-6", "-c", "3", "-i", "0.3", "-W", "1", "-I", from, to,
    ];
    !ns.exec_output(&cmd).status.success()
}
