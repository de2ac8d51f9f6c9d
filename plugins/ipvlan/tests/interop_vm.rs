//! Differential tests against the reference (Debian's v1.1.1
//! `/usr/lib/cni/ipvlan`, staged into the VM image by
//! `scripts/vm-test.sh`), where the kernel has ipvlan: l2 and l3
//! attachments on one master with the same result (but for the MAC and
//! sandbox, and the empty `dns` the reference prints), the same link
//! settings, addresses and routes; each one CHECKs and DELs the other's;
//! the same messages for bad input, the container's name clash included.

use std::path::Path;

use serde_json::{Value, json};
use testsupport::TestNetns;
use testsupport::onelink::{both_refuse, conf, host, same_as_reference};

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_ipvlan"))
}

fn static_keys(extra: Value) -> Value {
    let mut keys = json!({"ipam": {"type": "static",
        "addresses": [{"address": "10.240.86.5/24", "gateway": "10.240.86.1"}],
        "routes": [{"dst": "10.240.0.0/12", "gw": "10.240.86.254"}]}});
    for (k, v) in extra.as_object().into_iter().flatten() {
        keys[k] = v.clone();
    }
    keys
}

#[test]
#[ignore = "kernel-features: ipvlan"]
fn l2_same_result_and_link_as_the_reference() {
    testsupport::require_root();
    let h = host("ipd2", bin());
    let conf = conf(&h, "ipvlan", "1.0.0", &[], static_keys(json!({})));
    same_as_reference(&h, "ipvlan", &conf);
}

#[test]
#[ignore = "kernel-features: ipvlan"]
fn l3_mtu_same_result_and_link_as_the_reference() {
    testsupport::require_root();
    let h = host("ipd3", bin());
    let keys = static_keys(json!({"mode": "l3", "mtu": 1400}));
    let conf = conf(&h, "ipvlan", "1.0.0", &[], keys);
    same_as_reference(&h, "ipvlan", &conf);
}

#[test]
#[ignore = "kernel-features: ipvlan"]
fn same_messages_as_the_reference() {
    testsupport::require_root();
    let h = host("ipdm", bin());
    let c = TestNetns::new("ipdmc");
    for keys in [json!({"mode": "x"}), json!({"master": "nosuch0"})] {
        let conf = conf(&h, "ipvlan", "1.0.0", &[], static_keys(keys.clone()));
        let (mine, theirs) = both_refuse(&h, "ipvlan", &conf, &c);
        assert_eq!(mine["msg"], theirs["msg"], "{keys}");
        // An invalid configuration is 7 (README), the reference's 999.
        assert!(mine["code"] == 7 || mine["code"] == 999, "{keys}: {mine}");
    }
    // The container already has `net1`.
    let conf = conf(&h, "ipvlan", "1.0.0", &[], static_keys(json!({})));
    h.call("ADD", &conf, "a", c.path(), "net1").ok();
    let mut other = conf.clone();
    other["ipam"]["addresses"][0]["address"] = json!("10.240.86.6/24");
    let (mine, theirs) = both_refuse(&h, "ipvlan", &other, &c);
    assert_eq!(
        (&mine["code"], &mine["msg"]),
        (&theirs["code"], &theirs["msg"])
    );
    h.call("DEL", &conf, "a", c.path(), "net1").ok();
}
