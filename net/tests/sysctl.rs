//! Root tests: sysctls written inside a namespace stay there.

use std::fs::File;

use cni_net::sysctl;
use testsupport::TestNetns;

#[test]
fn sysctl_in_netns_does_not_touch_the_host() {
    let ns = TestNetns::new("sya");
    let f = File::open(ns.path()).unwrap();
    let key = "net/ipv4/conf/lo/arp_notify";
    let host_before = sysctl::get(key).unwrap();
    let flipped = if sysctl::get_in(&f, key).unwrap() == "1" {
        "0"
    } else {
        "1"
    };
    sysctl::set_in(&f, key, flipped).unwrap();
    assert_eq!(sysctl::get_in(&f, key).unwrap(), flipped);
    let seen = ns.stdout(&["cat", "/proc/sys/net/ipv4/conf/lo/arp_notify"]);
    assert_eq!(seen.trim(), flipped);
    assert_eq!(sysctl::get(key).unwrap(), host_before);

    let e = sysctl::set_in(&f, "net/ipv4/conf/cnirsnone/arp_notify", "1").unwrap_err();
    assert!(e.is_not_found(), "{e}");
}
