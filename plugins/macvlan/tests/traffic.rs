//! Traffic on macvlan: in bridge mode two containers on one master reach
//! each other and a namespace on the master's segment; in private mode
//! they do not reach each other, and still reach the segment.

mod common;

use common::*;
use serde_json::json;
use testsupport::TestNetns;

fn two_containers(mode: &str, subnet: &str, lan_addr: &str) -> (bool, bool, bool) {
    let h = host("tr");
    let lan = segment(&h, lan_addr);
    let conf = conf(&h, "1.0.0", &[subnet], json!({"mode": mode}));
    let (a, b) = (TestNetns::new("tra"), TestNetns::new("trb"));
    let ra = h.add(&conf, "a", &a);
    let rb = h.add(&conf, "b", &b);
    let lan_ip = lan_addr.split('/').next().unwrap();
    let to_lan = ping(&a, lan_ip) && ping(&b, lan_ip);
    let from_lan = ping(&lan, &ip_of(&ra, false));
    let (ip_b, ip_a) = (ip_of(&rb, false), ip_of(&ra, false));
    let between = if mode == "private" {
        !(ping_unanswered(&a, &ip_b) && ping_unanswered(&b, &ip_a))
    } else {
        ping(&a, &ip_b) && ping(&b, &ip_a)
    };
    h.del(&conf, "a", a.path());
    h.del(&conf, "b", b.path());
    (to_lan, from_lan, between)
}

#[test]
fn bridge_mode_containers_reach_each_other_and_the_segment() {
    let (to_lan, from_lan, between) =
        two_containers("bridge", "10.240.62.0/24", "10.240.62.250/24");
    assert!(
        to_lan && from_lan && between,
        "{to_lan} {from_lan} {between}"
    );
}

#[test]
fn private_mode_isolates_containers_but_not_the_segment() {
    let (to_lan, from_lan, between) =
        two_containers("private", "10.240.63.0/24", "10.240.63.250/24");
    assert!(to_lan && from_lan, "{to_lan} {from_lan}");
    assert!(!between, "private mode containers reached each other");
}
