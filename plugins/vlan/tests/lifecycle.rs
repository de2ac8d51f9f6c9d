//! vlan on this machine's kernel, which has no 8021q: bad input in the
//! reference's words, the kernel's refusal as the reference words it, and
//! nothing left either way (no link, no lease); the same messages as
//! Debian's v1.1.1 `/usr/lib/cni/vlan` (whose `master` message ends with a
//! period, dropped since). What needs the kernel is in
//! `kernel_features.rs`.

use std::path::Path;

use serde_json::{Value, json};
use testsupport::TestNetns;
use testsupport::onelink::{conf, host, is_empty};

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_vlan"))
}

fn kernel_has_8021q() -> bool {
    Path::new("/sys/module/8021q").exists()
}

const MASTER_REQUIRED: &str = "\"master\" field is required. It specifies the host interface \
                               name to create the VLAN for";

fn cases() -> Vec<(Value, u64, &'static str)> {
    vec![
        (json!({"master": null, "vlanId": 5}), 7, MASTER_REQUIRED),
        (
            json!({"vlanId": 4095}),
            7,
            "invalid VLAN ID 4095 (must be between 0 and 4095 inclusive)",
        ),
        (
            json!({"vlanId": -1}),
            7,
            "invalid VLAN ID -1 (must be between 0 and 4095 inclusive)",
        ),
        (
            json!({"vlanId": 5, "mtu": 9000}),
            7,
            "invalid MTU 9000, must be [0, master MTU(1500)]",
        ),
        (
            json!({"vlanId": 5, "master": "nosuch0"}),
            999,
            "Link not found",
        ),
    ]
}

#[test]
fn bad_input_in_the_references_words_changes_nothing() {
    testsupport::require_root();
    let h = host("vlb", bin());
    let c = TestNetns::new("vlbc");
    let mut all = cases();
    // The reference makes the link first and leaves it.
    all.push((
        json!({"vlanId": 5, "ipam": null}),
        7,
        "failed to execute IPAM delegate: no plugin name provided",
    ));
    for (keys, code, msg) in all {
        let conf = conf(&h, "vlan", "1.0.0", &["10.240.72.0/24"], keys.clone());
        let e = h.call("ADD", &conf, "c1", c.path(), "eth0").err(code);
        assert_eq!(e["msg"], msg, "{keys}");
        assert!(is_empty(&c) && h.leases().is_empty(), "{keys}");
    }
}

#[test]
fn same_messages_as_the_reference() {
    testsupport::require_root();
    let h = host("vlr", bin());
    let c = TestNetns::new("vlrc");
    let reference = Path::new("/usr/lib/cni/vlan");
    let mut keys: Vec<Value> = cases().into_iter().map(|c| c.0).collect();
    if !kernel_has_8021q() {
        keys.push(json!({"vlanId": 5}));
    }
    for k in keys {
        let conf = conf(&h, "vlan", "1.0.0", &["10.240.72.0/24"], k.clone());
        let call = h.request("ADD", &conf, "c1", c.path(), "eth0");
        let theirs = call
            .path("/usr/lib/cni")
            .run_in(h.ns.name(), reference)
            .json();
        let mine = h.call("ADD", &conf, "c1", c.path(), "eth0").json();
        let theirs = theirs["msg"].as_str().unwrap().trim_end_matches('.');
        assert_eq!(mine["msg"], theirs, "{k}");
        assert!(is_empty(&c), "{k}");
    }
}

#[test]
fn a_kernel_without_8021q_refuses_and_nothing_is_left() {
    testsupport::require_root();
    if kernel_has_8021q() {
        return;
    }
    let h = host("vlk", bin());
    let c = TestNetns::new("vlkc");
    let conf = conf(
        &h,
        "vlan",
        "1.0.0",
        &["10.240.72.0/24"],
        json!({"vlanId": 5}),
    );
    let e = h.call("ADD", &conf, "c1", c.path(), "eth0").err(999);
    assert_eq!(e["msg"], "failed to create vlan: operation not supported");
    assert!(is_empty(&c) && h.leases().is_empty());
    h.del(&conf, "c1", c.path());
    h.del(&conf, "c1", "");
}
