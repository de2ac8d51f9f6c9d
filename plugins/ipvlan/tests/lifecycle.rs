//! ipvlan on this machine's kernel, which has no ipvlan: bad input in the
//! reference's words, the kernel's refusal as the reference words it, and
//! nothing left either way (no link, no lease); the same messages as
//! Debian's v1.1.1 `/usr/lib/cni/ipvlan`. What needs the kernel is in
//! `kernel_features.rs`.

use std::path::Path;

use serde_json::{Value, json};
use testsupport::onelink::{conf, host, is_empty};
use testsupport::{PluginHost, TestNetns, links, with_prev};

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_ipvlan"))
}

fn kernel_has_ipvlan() -> bool {
    Path::new("/sys/module/ipvlan").exists()
}

fn cases(h: &PluginHost) -> Vec<(Value, u64, &'static str)> {
    let subnets = ["10.240.65.0/24"];
    let two = json!({"cniVersion": "1.0.0",
        "interfaces": [{"name": "a"}, {"name": "b"}], "ips": []});
    let mut chained = conf(h, "ipvlan", "1.0.0", &subnets, json!({"master": null}));
    chained = with_prev(&chained, &two);
    vec![
        (
            conf(h, "ipvlan", "1.0.0", &subnets, json!({"mode": "bridge"})),
            7,
            r#"unknown ipvlan mode: "bridge""#,
        ),
        (
            conf(h, "ipvlan", "1.0.0", &subnets, json!({"master": "nosuch0"})),
            999,
            r#"failed to lookup master "nosuch0": Link not found"#,
        ),
        (
            chained,
            7,
            "chained master failure. PrevResult lacks a single named interface",
        ),
    ]
}

#[test]
fn bad_input_in_the_references_words_changes_nothing() {
    testsupport::require_root();
    let h = host("ipb", bin());
    let c = TestNetns::new("ipbc");
    for (conf, code, msg) in cases(&h) {
        let e = h.call("ADD", &conf, "c1", c.path(), "eth0").err(code);
        assert_eq!(e["msg"], msg, "{conf}");
        assert!(is_empty(&c) && h.leases().is_empty(), "{conf}");
    }
}

#[test]
fn same_messages_as_the_reference() {
    testsupport::require_root();
    let h = host("ipr", bin());
    let c = TestNetns::new("iprc");
    let reference = Path::new("/usr/lib/cni/ipvlan");
    let mut confs: Vec<Value> = cases(&h).into_iter().map(|c| c.0).collect();
    if !kernel_has_ipvlan() {
        confs.push(conf(&h, "ipvlan", "1.0.0", &["10.240.65.0/24"], json!({})));
    }
    for conf in confs {
        let call = h.request("ADD", &conf, "c1", c.path(), "eth0");
        let theirs = call
            .path("/usr/lib/cni")
            .run_in(h.ns.name(), reference)
            .json();
        let mine = h.call("ADD", &conf, "c1", c.path(), "eth0").json();
        assert_eq!(mine["msg"], theirs["msg"], "{conf}");
        assert!(is_empty(&c), "{conf}: {:?}", links(&c));
    }
}

/// Without the module the kernel refuses the link: the reference's
/// words, and the lease IPAM took meanwhile is released.
#[test]
fn a_kernel_without_ipvlan_refuses_and_nothing_is_left() {
    testsupport::require_root();
    if kernel_has_ipvlan() {
        return;
    }
    let h = host("ipk", bin());
    let c = TestNetns::new("ipkc");
    let conf = conf(&h, "ipvlan", "1.0.0", &["10.240.65.0/24"], json!({}));
    let e = h.call("ADD", &conf, "c1", c.path(), "eth0").err(999);
    assert_eq!(e["msg"], "failed to create ipvlan: operation not supported");
    assert!(is_empty(&c) && h.leases().is_empty());
    h.del(&conf, "c1", c.path());
    h.del(&conf, "c1", "");
}
