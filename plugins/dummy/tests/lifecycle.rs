//! dummy on this machine's kernel, which has no dummy module: IPAM
//! required in the reference's words, the kernel's refusal, and nothing
//! left either way. What needs the kernel is in `kernel_features.rs`.

use std::path::Path;

use serde_json::json;
use testsupport::TestNetns;
use testsupport::onelink::{conf, host, is_empty};

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_dummy"))
}

#[test]
fn ipam_is_required_and_a_kernel_without_dummy_refuses() {
    testsupport::require_root();
    let h = host("dmb", bin());
    let c = TestNetns::new("dmbc");
    let mut no_ipam = conf(&h, "dummy", "1.0.0", &[], json!({"master": null}));
    no_ipam.as_object_mut().unwrap().remove("ipam");
    let e = h.call("ADD", &no_ipam, "c1", c.path(), "eth0").err(7);
    assert_eq!(e["msg"], "dummy interface requires an IPAM configuration");
    let e = h.call("CHECK", &no_ipam, "c1", c.path(), "eth0").err(7);
    assert_eq!(e["msg"], "dummy interface requires an IPAM configuration");
    h.call("DEL", &no_ipam, "c1", c.path(), "eth0").ok();
    assert!(is_empty(&c));
    if Path::new("/sys/module/dummy").exists() {
        return;
    }
    let conf = conf(
        &h,
        "dummy",
        "1.0.0",
        &["10.240.77.0/24"],
        json!({"master": null}),
    );
    let e = h.call("ADD", &conf, "c1", c.path(), "eth0").err(999);
    assert_eq!(e["msg"], "failed to create dummy: operation not supported");
    assert!(is_empty(&c) && h.leases().is_empty());
}
