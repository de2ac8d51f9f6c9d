//! ADD, CHECK, DEL, STATUS and GC of ptp attachments: CHECK noticing what
//! changed, DEL idempotent (also with the namespace gone), failed ADDs
//! leaving nothing, static IPAM, results in every version.

mod common;

use common::*;
use serde_json::{Value, json};
use testsupport::TestNetns;

#[test]
fn check_passes_then_fails_when_a_route_or_address_is_removed() {
    let h = host("ck");
    let conf = conf(&h, "1.0.0", &["10.240.34.0/24", "fd40:34::/64"], json!({}));
    let c = TestNetns::new("ckc");
    let r = h.add(&conf, "c1", &c);
    let prev = with_prev(&conf, &r);
    let check = || h.call("CHECK", &prev, "c1", c.path(), "eth0");
    check().ok();
    let e = h.call("CHECK", &conf, "c1", c.path(), "eth0").err(999);
    assert_eq!(e["msg"], "ptp: Required prevResult missing");

    // The container's route to its own subnet via the gateway.
    let subnet_route = ["ip", "route", "del", "10.240.34.0/24", "via", "10.240.34.1"];
    c.exec(&subnet_route);
    let e = check().err(999);
    assert_eq!(
        e["msg"],
        "Failed to match route to 10.240.34.0/24 on interface eth0"
    );
    c.exec(&["ip", "route", "add", "10.240.34.0/24", "via", "10.240.34.1"]);
    check().ok();
    // IPAM's default route.
    c.exec(&["ip", "-6", "route", "del", "default"]);
    let e = check().err(999);
    assert_eq!(
        e["msg"],
        "Expected Route {Dst: ::/0} not found in routing table"
    );
    c.exec(&["ip", "-6", "route", "add", "default", "via", "fd40:34::1"]);
    check().ok();
    // The host end's gateway address (beyond the reference's CHECK).
    let port = r["interfaces"][0]["name"].as_str().unwrap();
    h.ns.exec(&["ip", "addr", "del", "10.240.34.1/32", "dev", port]);
    let e = check().err(999);
    assert_eq!(
        e["msg"],
        format!("ptp: host interface {port} lacks the gateway address 10.240.34.1")
    );
    c.exec(&["ip", "link", "del", "eth0"]);
    let e = check().err(999);
    assert_eq!(
        e["msg"],
        "ptp: Container Interface name in prevResult: eth0 not found"
    );
    h.del(&conf, "c1", c.path());
    // Nothing left to check: IPAM, asked first, says so.
    let e = check().err(999);
    assert_eq!(
        e["msg"],
        "host-local: Failed to find address added by container c1"
    );
}

#[test]
fn del_is_idempotent_also_without_the_namespace() {
    let h = host("dl");
    let conf = conf(&h, "1.0.0", &["10.240.35.0/24"], json!({}));
    let c = TestNetns::new("dlc");
    h.add(&conf, "c1", &c);
    h.del(&conf, "c1", c.path());
    h.del(&conf, "c1", c.path());
    assert!(is_empty(&c) && veths(&h).is_empty());
    assert!(h.leases().is_empty());

    let mut gone = TestNetns::new("dlg");
    h.add(&conf, "c2", &gone);
    let path = gone.path().to_string();
    gone.delete();
    h.del(&conf, "c2", &path);
    h.del(&conf, "c2", "");
    assert!(h.leases().is_empty(), "{:?}", h.leases());
    assert!(eventually(|| veths(&h).is_empty()), "{:?}", veths(&h));
}

/// A `CNI_NETNS` that is there but no namespace (a netns bind mount
/// unmounted, its file left behind): DEL releases the lease, removes the
/// masquerade rules and succeeds (the reference fails forever with
/// `unknown FS magic`). ADD still refuses the path.
#[test]
fn del_with_a_netns_path_that_is_no_namespace_cleans_up() {
    let h = host("df");
    let conf = conf(&h, "1.0.0", &["10.240.45.0/24"], json!({"ipMasq": true}));
    let c = TestNetns::new("dfc");
    h.add(&conf, "c1", &c);
    assert!(!rules_of(&h, "c1").is_empty());
    let file = h.data.join("netns-file");
    std::fs::write(&file, "").unwrap();
    let path = file.to_str().unwrap();
    h.call("ADD", &conf, "c2", path, "eth0").err(8);
    h.call("DEL", &conf, "c1", path, "eth0").ok();
    assert!(h.leases().is_empty(), "{:?}", h.leases());
    assert!(rules_of(&h, "c1").is_empty(), "{:?}", rules_of(&h, "c1"));
}

/// ADD repeated for a live attachment (same container ID and ifname) in
/// another namespace: host-local refuses the duplicate allocation, and the
/// failed ADD leaves the first attachment's lease alone (its undo released
/// it).
#[test]
fn failed_ipam_add_does_not_release_the_live_attachments_lease() {
    let h = host("dup");
    let conf = conf(&h, "1.0.0", &["10.240.52.0/24"], json!({}));
    let (a, b) = (TestNetns::new("dupa"), TestNetns::new("dupb"));
    let r = h.add(&conf, "c1", &a);
    let e = h.call("ADD", &conf, "c1", b.path(), "eth0").err(999);
    assert!(
        e["msg"].as_str().unwrap().contains("duplicate allocation"),
        "{e}"
    );
    assert_eq!(h.leases(), vec![ip_of(&r, false)]);
    assert!(!has_link(&b, "eth0"));
    assert_eq!(veths(&h).len(), 1);
}

/// A failing IPAM DEL does not stop DEL: the interface and the masquerade
/// rules go, and the error is reported (the reference stops at it).
#[test]
fn del_goes_on_when_ipam_fails() {
    let h = host("di");
    let conf = conf(&h, "1.0.0", &["10.240.51.0/24"], json!({"ipMasq": true}));
    let c = TestNetns::new("dic");
    h.add(&conf, "c1", &c);
    assert!(!rules_of(&h, "c1").is_empty());
    let mut broken = conf.clone();
    broken["ipam"]["type"] = json!("cnirs-none");
    let e = h.call("DEL", &broken, "c1", c.path(), "eth0").err(999);
    assert!(
        e["msg"]
            .as_str()
            .unwrap()
            .starts_with("failed to find plugin"),
        "{e}"
    );
    assert!(is_empty(&c) && veths(&h).is_empty());
    assert!(rules_of(&h, "c1").is_empty(), "{:#?}", rules_of(&h, "c1"));
    // The lease is still there; a DEL with the right IPAM releases it.
    assert_eq!(h.leases().len(), 1);
    h.del(&conf, "c1", c.path());
    assert!(h.leases().is_empty());
}

/// A /30 holds one address besides its gateway: the second ADD's IPAM
/// fails, and leaves no veth, no lease and nothing in the container.
#[test]
fn add_whose_ipam_fails_leaves_nothing() {
    let h = host("if");
    let conf = conf(&h, "1.0.0", &["10.240.36.0/30"], json!({}));
    let (c1, c2) = (TestNetns::new("if1"), TestNetns::new("if2"));
    h.add(&conf, "c1", &c1);
    let e = h.call("ADD", &conf, "c2", c2.path(), "eth0").err(999);
    let msg = e["msg"].as_str().unwrap();
    assert!(msg.contains("no IP addresses available"), "{e}");
    assert!(is_empty(&c2));
    assert_eq!(veths(&h).len(), 1, "{:?}", veths(&h));
    assert_eq!(h.leases(), vec!["10.240.36.2"]);

    // No IPAM plugin of that name, or none named at all.
    for (ipam, msg) in [
        (
            json!({"type": "cnirs-none"}),
            "failed to find plugin \"cnirs-none\"",
        ),
        (json!({}), "no plugin name provided"),
    ] {
        let mut bad = conf.clone();
        bad["ipam"] = ipam;
        let e = h.call("ADD", &bad, "c2", c2.path(), "eth0").err(999);
        assert!(e["msg"].as_str().unwrap().starts_with(msg), "{e}");
        assert!(is_empty(&c2));
        assert_eq!(veths(&h).len(), 1);
    }
    h.del(&conf, "c1", c1.path());
}

/// ADD of an interface that exists fails before IPAM runs: the existing
/// attachment keeps its address and its lease.
#[test]
fn existing_interface_is_refused_before_ipam() {
    let h = host("ex");
    let conf = conf(&h, "1.0.0", &["10.240.37.0/24"], json!({}));
    let c = TestNetns::new("exc");
    let r = h.add(&conf, "c1", &c);
    let e = h.call("ADD", &conf, "c1", c.path(), "eth0").err(999);
    let msg = e["msg"].as_str().unwrap();
    assert!(
        msg.starts_with("container veth name (\"eth0\") peer provided (\"veth")
            && msg.ends_with("\") already exists"),
        "{e}"
    );
    assert_eq!(h.leases(), vec![ip_of(&r, false)]);
    assert!(ping(&c, "10.240.37.1"));
    // A name the kernel would rewrite is refused before anything.
    let e = h.call("ADD", &conf, "c2", c.path(), "eth%d").err(4);
    assert_eq!(
        e["msg"],
        "interface name contains %, which the kernel reads as a name template"
    );
    assert_eq!(h.leases().len(), 1);
    h.del(&conf, "c1", c.path());
}

/// A namespace path that does not exist: ADD fails with the reference's
/// message before IPAM runs; CHECK says the sandbox does not match a
/// `prevResult` of another namespace.
#[test]
fn missing_or_other_namespace() {
    let h = host("ns");
    let conf = conf(&h, "1.0.0", &["10.240.44.0/24"], json!({}));
    let e = h
        .call("ADD", &conf, "c1", "/run/netns/cnirs-none", "eth0")
        .err(999);
    assert_eq!(
        e["msg"],
        "failed to open netns \"/run/netns/cnirs-none\": failed to Statfs \
         \"/run/netns/cnirs-none\": no such file or directory"
    );
    assert!(h.leases().is_empty());
    let (c, other) = (TestNetns::new("nsc"), TestNetns::new("nso"));
    let r = h.add(&conf, "c1", &c);
    let e = h
        .call("CHECK", &with_prev(&conf, &r), "c1", other.path(), "eth0")
        .err(999);
    assert_eq!(
        e["msg"],
        format!(
            "Sandbox in prevResult  doesn't match configured netns: {}",
            other.path()
        )
    );
    h.del(&conf, "c1", c.path());
}

fn static_ipam(addresses: Value) -> Value {
    json!({"type": "static", "addresses": addresses,
           "routes": [{"dst": "0.0.0.0/0"}]})
}

/// With static IPAM: fixed addresses work; an address without a gateway,
/// which the reference crashes on, is refused.
#[test]
fn static_ipam_addresses_and_missing_gateway() {
    let h = host("st");
    let mut conf = conf(&h, "1.0.0", &[], json!({}));
    let (c1, c2) = (TestNetns::new("st1"), TestNetns::new("st2"));
    for (c, cid, addr) in [(&c1, "c1", "10.240.38.5/24"), (&c2, "c2", "10.240.38.6/24")] {
        conf["ipam"] = static_ipam(json!([{"address": addr, "gateway": "10.240.38.1"}]));
        let r = h.add(&conf, cid, c);
        assert_eq!(r["ips"][0]["address"], addr);
        assert_eq!(r["ips"][0]["interface"], 1);
    }
    assert!(ping(&c1, "10.240.38.6") && ping(&c2, "10.240.38.5"));
    assert!(ping(&c1, "10.240.38.1"));
    // Two addresses behind one gateway: it goes on the host end once.
    let c4 = TestNetns::new("st4");
    conf["ipam"] = static_ipam(json!([
        {"address": "10.240.38.8/24", "gateway": "10.240.38.1"},
        {"address": "10.240.38.9/24", "gateway": "10.240.38.1"},
    ]));
    h.add(&conf, "c4", &c4);
    for src in ["10.240.38.8", "10.240.38.9"] {
        assert!(ping_with(&c4, &["-I", src], "10.240.38.5"), "from {src}");
    }
    h.del(&conf, "c4", c4.path());

    let c3 = TestNetns::new("st3");
    conf["ipam"] = static_ipam(json!([{"address": "10.240.38.7/24"}]));
    let e = h.call("ADD", &conf, "c3", c3.path(), "eth0").err(7);
    assert_eq!(
        e["msg"],
        "IPAM plugin returned no gateway for 10.240.38.7/24: ptp needs one, as the address of \
         the host end of the link"
    );
    assert!(is_empty(&c3));
    assert_eq!(veths(&h).len(), 2);
    h.del(&conf, "c1", c1.path());
    h.del(&conf, "c2", c2.path());
}

/// Every version's result shape, with the reference's interface order:
/// the host end first, the container end (index 1) second.
#[test]
fn results_in_every_version() {
    let h = host("rv");
    let c = TestNetns::new("rvc");
    for version in [
        "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0",
    ] {
        let conf = conf(&h, version, &["10.240.39.0/24"], json!({}));
        let r = h.add(&conf, "c1", &c);
        assert_eq!(r["cniVersion"], version);
        if version < "0.3.0" {
            assert_eq!(r["ip4"]["gateway"], "10.240.39.1", "{version}: {r}");
            assert!(r["ip4"]["ip"].as_str().unwrap().starts_with("10.240.39."));
            assert!(r.get("interfaces").is_none(), "{version}: {r}");
        } else {
            let ifs = r["interfaces"].as_array().unwrap();
            assert_eq!(ifs.len(), 2, "{version}: {r}");
            assert!(ifs[0]["name"].as_str().unwrap().starts_with("veth"));
            assert_eq!(ifs[0].get("sandbox"), None);
            assert_eq!(ifs[1]["name"], "eth0");
            assert_eq!(ifs[1]["sandbox"], c.path());
            assert_eq!(r["ips"][0]["interface"], 1, "{version}: {r}");
            assert_eq!(r["ips"][0]["gateway"], "10.240.39.1");
        }
        h.del(&conf, "c1", c.path());
    }
}

#[test]
fn dns_of_the_config_replaces_ipam_dns() {
    let h = host("dn");
    let dns = json!({"nameservers": ["10.240.40.53"], "search": ["example.org"]});
    let conf = conf(&h, "1.0.0", &["10.240.40.0/24"], json!({"dns": dns}));
    let c = TestNetns::new("dnc");
    let r = h.add(&conf, "c1", &c);
    assert_eq!(r["dns"], dns);
    h.del(&conf, "c1", c.path());
}

#[test]
fn status_and_gc_go_to_ipam() {
    let h = host("gc");
    let conf = conf(&h, "1.1.0", &["10.240.41.0/24"], json!({}));
    let (c1, c2) = (TestNetns::new("gc1"), TestNetns::new("gc2"));
    let r1 = h.add(&conf, "c1", &c1);
    h.add(&conf, "c2", &c2);
    h.call("STATUS", &conf, "", "", "").ok();
    // Without the list of valid attachments nothing is collected.
    h.call("GC", &conf, "", "", "").ok();
    assert_eq!(h.leases().len(), 2);
    let mut gc = conf.clone();
    gc["cni.dev/valid-attachments"] = json!([{"containerID": "c1", "ifname": "eth0"}]);
    h.call("GC", &gc, "", "", "").ok();
    assert_eq!(h.leases(), vec![ip_of(&r1, false)]);
    h.del(&conf, "c1", c1.path());
    h.del(&conf, "c2", c2.path());
}

/// Without `CNI_COMMAND`: the about text on stderr, exit 0; VERSION lists
/// every spec version.
#[test]
fn about_and_version() {
    let out = std::process::Command::new(bin()).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.starts_with("CNI ptp plugin v1.9.1+cni-rs."), "{text}");
    let v = testsupport::Call::new("VERSION")
        .stdin("{}")
        .run(bin())
        .ok();
    assert_eq!(v["supportedVersions"].as_array().unwrap().len(), 7, "{v}");
}
