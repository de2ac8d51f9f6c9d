//! The multi-call binary runs host-local in-process (the file on
//! `CNI_PATH` is itself): a held lock there is waited for within
//! `CNI_RS_TIMEOUT` (short here) too, and the failed ADD leaves nothing.

use serde_json::json;
use testsupport::{HeldLock, PluginHost, TempDir, TestNetns};

#[test]
fn in_process_ipam_waits_within_the_deadline() {
    let bins = TempDir::new("mcbins");
    for name in ["bridge", "host-local"] {
        std::fs::hard_link(env!("CARGO_BIN_EXE_cni-plugins"), bins.join(name)).unwrap();
    }
    let mut h = PluginHost::new("mct", &bins.join("bridge"), &[]);
    h.path = bins;
    let conf = h.conf(
        "bridge",
        "1.0.0",
        &["10.240.23.0/24"],
        json!({"bridge": testsupport::unique_name("cnirsmt")}),
    );
    let c = TestNetns::new("mctc");
    h.add(&conf, "first", &c);
    let holder = HeldLock::new(&h.data.join(&format!("{}/lock", h.net)));
    let other = TestNetns::new("mctd");
    let r = h.run(
        h.request("ADD", &conf, "second", other.path(), "eth0")
            .env("CNI_RS_TIMEOUT", "500ms"),
    );
    drop(holder);
    let e = r.err(999);
    let msg = e["msg"].as_str().unwrap_or_default();
    assert!(
        msg.contains("still held after 500ms") || msg.contains("gave no answer within 500ms"),
        "{e}"
    );
    let inside: Vec<String> = testsupport::links(&other)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(inside, vec!["lo"]);
    assert_eq!(h.leases().len(), 1, "{:?}", h.leases());
    h.del(&conf, "first", c.path());
}
