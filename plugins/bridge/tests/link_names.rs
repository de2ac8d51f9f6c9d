//! Names the kernel would rewrite or refuse are refused before ADD does
//! anything: `CNI_IFNAME="%d"` is a template the kernel turns into `0`
//! (the reference creates the veth, fails to find `%d` and leaves the host
//! end behind), and the same holds for the `bridge` key.

mod common;

use common::*;
use serde_json::{Value, json};
use testsupport::TestNetns;

/// ADD changed nothing: no link on the host (not even the bridge) or in
/// the container, IPAM never ran, no firewall rule.
fn assert_untouched(host: &Host, c: &TestNetns, cid: &str) {
    let names = |ns: &TestNetns| -> Vec<String> { links(ns).into_iter().map(|(n, _)| n).collect() };
    assert_eq!(names(&host.ns), vec!["lo"]);
    assert_eq!(names(c), vec!["lo"]);
    assert!(!host.data.join(&host.net).exists(), "IPAM ran");
    assert!(rules_of(host, cid).is_empty());
}

fn conf(host: &Host) -> Value {
    host.conf(
        "1.0.0",
        &["10.240.32.0/24"],
        json!({"isGateway": true, "ipMasq": true, "macspoofchk": true}),
    )
}

#[test]
fn template_ifname_is_refused_before_any_side_effect() {
    let host = Host::new("nmi");
    let c = TestNetns::new("nmic");
    for ifname in ["%d", "eth%d", "a%s"] {
        let e = host
            .call("ADD", &conf(&host), "c1", c.path(), ifname)
            .err(4);
        assert_eq!(
            e["msg"], "interface name contains %, which the kernel reads as a name template",
            "{ifname}"
        );
    }
    assert_untouched(&host, &c, "c1");
    // The same attachment with a proper name works.
    host.add(&conf(&host), "c1", &c);
}

#[test]
fn bad_bridge_names_are_refused_before_any_side_effect() {
    let host = Host::new("nmb");
    let c = TestNetns::new("nmbc");
    let cases = [
        (
            "cnirs%d",
            "bridge name \"cnirs%d\" contains %, which the kernel reads as a name template",
        ),
        (
            "cnirs br",
            "bridge name \"cnirs br\" contains / or : or whitespace characters",
        ),
        (
            "cnirs0123456789a",
            "bridge name \"cnirs0123456789a\" is too long",
        ),
    ];
    for (bridge, msg) in cases {
        let mut conf = conf(&host);
        conf["bridge"] = json!(bridge);
        let e = host.call("ADD", &conf, "c1", c.path(), "eth0").err(7);
        assert_eq!(e["msg"], msg);
    }
    assert_untouched(&host, &c, "c1");
}
