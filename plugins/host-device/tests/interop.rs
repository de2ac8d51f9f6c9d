//! Against the reference (Debian's Go host-device v1.1.1): the same result
//! and the same device state in the container for the same config, the
//! same words for the errors both versions share, and a node switching
//! suites with live containers: an attachment made by one is checked and
//! deleted by the other.

mod common;

use std::path::Path;

use common::*;
use serde_json::{Value, json};
use testsupport::{PluginRun, TestNetns};

/// Run the reference host-device in `h`'s namespace.
fn go(h: &PluginHost, cmd: &str, conf: &Value, cid: &str, c: &str) -> PluginRun {
    let reference = Path::new(REFERENCE).join("host-device");
    h.request(cmd, conf, cid, c, "net1")
        .run_in(h.ns.name(), &reference)
}

fn ours(h: &PluginHost, cmd: &str, conf: &Value, cid: &str, c: &str) -> PluginRun {
    h.call(cmd, conf, cid, c, "net1")
}

/// Static addresses, so that both get the same.
fn with_static(h: &PluginHost, d: &Device) -> Value {
    let ipam = json!({"type": "static",
        "addresses": [{"address": "10.240.69.5/24", "gateway": "10.240.69.1"}],
        "routes": [{"dst": "10.240.200.0/24"}]});
    conf(
        h,
        "1.0.0",
        d,
        &[],
        json!({"ipam": ipam, "dns": {"nameservers": ["10.240.0.53"]}}),
    )
}

/// The container's view of `net1`: name, alias, MAC, MTU, up, addresses.
fn state(c: &TestNetns) -> Value {
    let l = link(c, "net1").expect("net1");
    let addrs = c.stdout(&["ip", "-o", "-4", "addr", "show", "net1"]);
    let addrs: Vec<&str> = addrs
        .lines()
        .filter_map(|l| l.split_whitespace().nth(3))
        .collect();
    let routes = c.stdout(&["ip", "-4", "route", "show", "dev", "net1"]);
    json!([
        l["ifname"],
        l["ifalias"],
        l["address"],
        l["mtu"],
        is_up(&l),
        addrs,
        routes
    ])
}

/// Go prints an empty `dns` object; ours leaves it out.
fn without_empty_dns(mut v: Value) -> Value {
    if v["dns"] == json!({}) {
        v.as_object_mut().unwrap().remove("dns");
    }
    v
}

#[test]
fn same_result_and_device_state_as_the_reference() {
    let h = host("id");
    let d = Device::new(&h);
    let c = TestNetns::new("idc");
    for conf in [conf(&h, "1.0.0", &d, &[], json!({})), with_static(&h, &d)] {
        h.ns.exec(&["ip", "link", "set", &d.name, "up"]);
        let theirs = without_empty_dns(go(&h, "ADD", &conf, "c1", c.path()).ok());
        let their_state = state(&c);
        go(&h, "DEL", &conf, "c1", c.path()).ok();
        // v1.1.1 leaves the alias on the device back home.
        h.ns.exec(&["ip", "link", "set", &d.name, "alias", ""]);
        h.ns.exec(&["ip", "link", "set", &d.name, "up"]);
        let mine = ours(&h, "ADD", &conf, "c1", c.path()).ok();
        assert_eq!(mine, theirs, "{conf}");
        assert_eq!(state(&c), their_state, "{conf}");
        ours(&h, "DEL", &conf, "c1", c.path()).ok();
        assert_home(&h, &d, false, "our DEL");
    }
}

#[test]
fn same_errors_as_the_reference() {
    let h = host("ie");
    let d = Device::new(&h);
    let c = TestNetns::new("iec");
    let cases = [
        json!({"device": ""}),
        json!({"device": "cnirsnothere"}),
        json!({"device": "", "hwaddr": "02:00:00:00:00:99"}),
        json!({"device": "", "hwaddr": "02:00:00:00:00"}),
        json!({"device": "", "kernelpath": "sys/devices/x"}),
        json!({"device": "", "pciBusID": "0000:ff:1f.7"}),
    ];
    for extra in cases {
        let conf = conf(&h, "1.0.0", &d, &[], extra);
        let (g, o) = (
            go(&h, "ADD", &conf, "c1", c.path()),
            ours(&h, "ADD", &conf, "c1", c.path()),
        );
        assert_eq!((g.code, o.code), (1, 1), "{conf}: {g:?} {o:?}");
        assert_eq!(o.json()["msg"], g.json()["msg"], "{conf}");
        assert_home(&h, &d, true, "error");
    }
    // CHECK without prevResult.
    let conf = conf(&h, "1.0.0", &d, &[], json!({}));
    let g = go(&h, "CHECK", &conf, "c1", c.path()).json();
    let o = ours(&h, "CHECK", &conf, "c1", c.path()).json();
    assert_eq!(o["msg"], g["msg"]);
}

#[test]
fn reference_attachment_checked_and_deleted_by_ours() {
    let h = host("ig");
    let d = Device::new(&h);
    let c = TestNetns::new("igc");
    let conf = with_static(&h, &d);
    let r = go(&h, "ADD", &conf, "c1", c.path()).ok();
    go(&h, "CHECK", &with_prev(&conf, &r), "c1", c.path()).err(999);
    ours(&h, "CHECK", &with_prev(&conf, &r), "c1", c.path()).ok();
    for _ in 0..2 {
        ours(&h, "DEL", &with_prev(&conf, &r), "c1", c.path()).ok();
        assert_home(&h, &d, false, "our DEL");
    }
    // The reference fails a repeated DEL.
    let e = go(&h, "DEL", &conf, "c1", c.path()).err(999);
    assert_eq!(e["msg"], "failed to find \"net1\": Link not found");
}

#[test]
fn our_attachment_checked_and_deleted_by_the_reference() {
    let h = host("ir");
    let d = Device::new(&h);
    let c = TestNetns::new("irc");
    let conf = with_static(&h, &d);
    let r = ours(&h, "ADD", &conf, "c1", c.path()).ok();
    // The reference's CHECK looks for a route without gateway as one
    // without gateway, where its ADD (and ours) sets the address's
    // gateway: it fails its own attachment with a route, so it is given
    // one without.
    go(&h, "CHECK", &with_prev(&conf, &r), "c1", c.path()).err(999);
    let mut routeless = r.clone();
    routeless["routes"] = json!([]);
    go(&h, "CHECK", &with_prev(&conf, &routeless), "c1", c.path()).ok();
    go(&h, "DEL", &conf, "c1", c.path()).ok();
    let l = link(&h.ns, &d.name).expect("home");
    assert_eq!(
        (&l["address"], &l["ifalias"]),
        (&json!(d.mac), &json!(d.name))
    );
    assert!(is_empty(&c));
}
