//! ADD and DEL killed (SIGKILL) at every point and at spread moments
//! (`testsupport::kill`): DEL (without prevResult after a killed ADD, as a
//! runtime has none) and GC leave the device home (own name and MAC, no
//! alias), the container empty and no lease.
#![cfg(debug_assertions)]

mod common;

use common::*;
use serde_json::json;
use testsupport::TestNetns;

const CID: &str = "kill1";

fn leftovers(h: &PluginHost, d: &Device, c: &TestNetns) -> Vec<String> {
    let mut left = Vec::new();
    match link(&h.ns, &d.name) {
        None => left.push(format!(
            "device {} not in the host: {:?}",
            d.name,
            links(&h.ns)
        )),
        Some(l) if l["address"] != d.mac.as_str() || l.get("ifalias").is_some() => {
            left.push(format!("device changed: {l}"))
        }
        Some(_) => {}
    }
    if !is_empty(c) {
        left.push(format!("container links {:?}", links(c)));
    }
    left.extend(h.leases().into_iter().map(|l| format!("lease {l}")));
    left
}

fn kill(command: &str) {
    let h = host("hk");
    let d = Device::new(&h);
    let c = TestNetns::new("hkc");
    let conf = conf(
        &h,
        "1.1.0",
        &d,
        &["10.240.68.0/24", "fd40:68::/64"],
        json!({}),
    );
    testsupport::kill::main_plugin(&h, command, &conf, CID, &c, &|| leftovers(&h, &d, &c));
}

#[test]
fn add_killed_anywhere_leaves_the_device_home_after_del() {
    kill("ADD");
}

#[test]
fn del_killed_anywhere_leaves_the_device_home_after_del() {
    kill("DEL");
}
