//! A node switching suites with live containers: an attachment made by the
//! reference ptp (Debian's Go v1.1.1, iptables masquerade) is checked and
//! deleted by ours, and the reverse, with the same host-local lease files
//! and masquerade rules.

mod common;

use std::path::Path;

use common::*;
use serde_json::{Value, json};
use testsupport::{PluginHost, PluginRun, TestNetns};

/// Run the reference ptp in `h`'s namespace.
fn go(h: &PluginHost, cmd: &str, conf: &Value, cid: &str, c: &TestNetns) -> PluginRun {
    let reference = Path::new(REFERENCE).join("ptp");
    h.request(cmd, conf, cid, c.path(), "eth0")
        .run_in(h.ns.name(), &reference)
}

fn dual_stack(h: &PluginHost, extra: Value) -> Value {
    // v1.1.1 knows CNI versions up to 1.0.0.
    conf(h, "1.0.0", &["10.240.43.0/24", "fd40:43::/64"], extra)
}

/// Nothing of `cid` left on the host, nor in `c` unless it is gone.
fn assert_gone(h: &PluginHost, c: &TestNetns, cid: &str) {
    assert!(eventually(|| veths(h).is_empty()), "{:?}", veths(h));
    if !c.name().is_empty() {
        assert!(is_empty(c), "{:?}", links(c));
    }
    assert!(h.leases().is_empty(), "{:?}", h.leases());
    assert!(rules_of(h, cid).is_empty(), "{:#?}", rules_of(h, cid));
}

#[test]
fn reference_attachment_checked_and_deleted_by_ours() {
    let h = host("gr");
    let conf = dual_stack(&h, json!({}));
    let c = TestNetns::new("grc");
    let r = go(&h, "ADD", &conf, "c1", &c).ok();
    // The reference's gateway address on the host end does duplicate
    // address detection first.
    assert!(ping(&c, "10.240.43.1"));
    assert!(eventually(|| ping(&c, "fd40:43::1")));
    h.call("CHECK", &with_prev(&conf, &r), "c1", c.path(), "eth0")
        .ok();
    h.del(&conf, "c1", c.path());
    assert_gone(&h, &c, "c1");
}

#[test]
fn our_attachment_checked_and_deleted_by_the_reference() {
    let h = host("rg");
    let conf = dual_stack(&h, json!({}));
    let c = TestNetns::new("rgc");
    let r = h.add(&conf, "c1", &c);
    go(&h, "CHECK", &with_prev(&conf, &r), "c1", &c).ok();
    go(&h, "DEL", &conf, "c1", &c).ok();
    assert_gone(&h, &c, "c1");
}

/// The reference's masquerade chain goes with our DEL, also once the
/// namespace is gone (the reference itself leaks it then).
#[test]
fn reference_masquerade_removed_by_ours() {
    let h = host("gm");
    let conf = dual_stack(&h, json!({"ipMasq": true}));
    let c = TestNetns::new("gmc");
    go(&h, "ADD", &conf, "c1", &c).ok();
    let chain = cni_firewall::ipmasq::iptables_chain(&h.net, "c1");
    let nat = |save: &str| h.sh(&[save, "-t", "nat"]);
    assert!(nat("iptables-save").contains(&chain) && nat("ip6tables-save").contains(&chain));
    let mut c = c;
    let path = c.path().to_string();
    c.delete();
    h.del(&conf, "c1", &path);
    assert_gone(&h, &c, "c1");

    let c2 = TestNetns::new("gmd");
    go(&h, "ADD", &conf, "c2", &c2).ok();
    h.del(&conf, "c2", c2.path());
    assert_gone(&h, &c2, "c2");
}

#[test]
fn our_iptables_masquerade_removed_by_the_reference() {
    let h = host("mg");
    let conf = dual_stack(&h, json!({"ipMasq": true, "ipMasqBackend": "iptables"}));
    let c = TestNetns::new("mgc");
    let r = h.add(&conf, "c1", &c);
    assert!(!rules_of(&h, "c1").is_empty());
    go(&h, "CHECK", &with_prev(&conf, &r), "c1", &c).ok();
    go(&h, "DEL", &conf, "c1", &c).ok();
    assert_gone(&h, &c, "c1");
}

/// The container's and the host end's routes, the container's address,
/// the host end's name and link-local addresses replaced, so that two
/// attachments' tables compare.
fn tables(h: &PluginHost, c: &TestNetns, result: &Value) -> Vec<String> {
    let port = result["interfaces"][0]["name"].as_str().unwrap();
    let mut out = Vec::new();
    for v6 in [false, true] {
        let family = if v6 { "-6" } else { "-4" };
        let addr = ip_of(result, v6);
        let lines = ip_lines(c, &[family, "route", "show", "table", "all"])
            .into_iter()
            .chain(ip_lines(&h.ns, &[family, "route", "show", "dev", port]))
            .map(|l| {
                let token = |t: &str| {
                    match t {
                        t if t == addr => "ADDR",
                        t if t == port => "PORT",
                        t if t.starts_with("fe80::") && t.len() > "fe80::".len() => "LINK-LOCAL",
                        t => t,
                    }
                    .to_string()
                };
                l.split(' ').map(token).collect::<Vec<_>>().join(" ")
            });
        out.extend(lines.map(|l| format!("{family} {l}")));
    }
    out
}

/// IPAM routes via an address of the subnet that is not the gateway
/// (`.254`): the reference adds them (its container address still has
/// its subnet route when IPAM's routes go in, and only then is that
/// route deleted); ours adds them too, and both namespaces' routing
/// tables are the reference's, line for line. A gateway outside the
/// subnet fails in both, as unreachable, and ours leaves nothing.
#[test]
fn ipam_routes_via_another_address_of_the_subnet_as_the_reference() {
    let h = host("rv");
    let mut conf = conf(
        &h,
        "1.0.0",
        &["10.242.1.0/24", "fd40:242:1::/64"],
        json!({}),
    );
    conf["ipam"]["routes"] = json!([
        {"dst": "10.242.200.0/24", "gw": "10.242.1.254"},
        {"dst": "10.242.1.128/25", "gw": "10.242.1.254"},
        {"dst": "0.0.0.0/0"},
        {"dst": "fd40:242:200::/64", "gw": "fd40:242:1::fe"},
        {"dst": "::/0", "gw": "fd40:242:1::fe"},
    ]);
    let (cg, co) = (TestNetns::new("rvg"), TestNetns::new("rvo"));
    let rg = go(&h, "ADD", &conf, "cg", &cg).ok();
    let ro = h.add(&conf, "co", &co);
    let theirs = tables(&h, &cg, &rg);
    assert!(
        theirs
            .iter()
            .any(|l| l.contains("10.242.200.0/24 via 10.242.1.254")),
        "{theirs:#?}"
    );
    // The container's link-local address is not waited for (the
    // reference waits for its DAD): its local route comes when DAD ends.
    eventually(|| tables(&h, &co, &ro) == theirs);
    assert_eq!(tables(&h, &co, &ro), theirs);
    assert!(ping(&co, "10.242.1.1") && ping(&co, "fd40:242:1::1"));
    h.call("CHECK", &with_prev(&conf, &ro), "co", co.path(), "eth0")
        .ok();
    go(&h, "CHECK", &with_prev(&conf, &ro), "co", &co).ok();
    go(&h, "DEL", &conf, "cg", &cg).ok();
    h.del(&conf, "co", co.path());

    for (route, gw) in [
        (
            json!({"dst": "10.242.200.0/24", "gw": "10.242.9.1"}),
            "10.242.9.1",
        ),
        (
            json!({"dst": "fd40:242:200::/64", "gw": "fd40:242:9::1"}),
            "fd40:242:9::1",
        ),
    ] {
        conf["ipam"]["routes"] = json!([route]);
        let (cg, co) = (TestNetns::new("rvh"), TestNetns::new("rvp"));
        let theirs = go(&h, "ADD", &conf, "cg", &cg).err(999);
        let ours = h.call("ADD", &conf, "co", co.path(), "eth0").err(999);
        // The wording around the route differs (v1.1.1 prints the
        // destination as a Go struct); the kernel's refusal is the same.
        let errno = |e: &Value| {
            let msg = e["msg"].as_str().unwrap().to_string();
            assert!(
                msg.starts_with("failed to add route '")
                    && msg.contains(&format!(" via {gw} dev eth0")),
                "{e}"
            );
            msg.rsplit(": ").next().unwrap().to_string()
        };
        assert_eq!(errno(&ours), errno(&theirs));
        assert!(is_empty(&co));
    }
}
