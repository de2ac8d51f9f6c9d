//! host-device ADD / CHECK / DEL on a stand-in device (one end of a veth
//! pair): the device goes into the container under `CNI_IFNAME` with its
//! host name in its alias, carries IPAM's addresses and traffic, and comes
//! back under its own name and MAC: also when the container renamed it or
//! changed its MAC (#773), without `CNI_NETNS` (#1196: the lease is still
//! released), after the namespace is gone, and on a repeated DEL.

mod common;

use common::*;
use serde_json::json;
use testsupport::TestNetns;

#[test]
fn add_moves_the_device_in_and_del_moves_it_back() {
    let h = host("hl");
    let d = Device::new(&h);
    let c = TestNetns::new("hlc");
    let conf = conf(&h, "1.0.0", &d, &["10.240.60.0/24"], json!({}));
    let r = h.call("ADD", &conf, "c1", c.path(), "net1").ok();
    assert_eq!(
        r["interfaces"],
        json!([{"name": "net1", "mac": d.mac, "sandbox": c.path()}])
    );
    assert_eq!(r["ips"][0]["interface"], 0);
    let ip = r["ips"][0]["address"].as_str().unwrap().to_string();
    assert!(link(&h.ns, &d.name).is_none());
    let l = link(&c, "net1").expect("net1 in the container");
    assert_eq!(
        (&l["ifalias"], &l["address"], &l["mtu"]),
        (&json!(d.name), &json!(d.mac), &json!(1400))
    );
    assert!(is_up(&l));
    assert!(
        c.stdout(&["ip", "-o", "addr", "show", "net1"])
            .contains(&ip)
    );
    // Traffic through the device: the veth's other end in the host.
    h.ns.exec(&["ip", "addr", "add", "10.240.60.200/24", "dev", &d.peer]);
    assert!(ping(&c, "10.240.60.200"));

    let with = with_prev(&conf, &r);
    h.call("CHECK", &with, "c1", c.path(), "net1").ok();
    assert_eq!(h.leases().len(), 1);
    for _ in 0..2 {
        h.call("DEL", &with, "c1", c.path(), "net1").ok();
        assert_home(&h, &d, false, "after DEL");
        assert!(is_empty(&c), "{:?}", links(&c));
        assert!(h.leases().is_empty(), "{:?}", h.leases());
    }
    // CHECK after DEL fails: the lease is gone.
    let e = h.call("CHECK", &with, "c1", c.path(), "net1").err(999);
    assert_eq!(
        e["msg"],
        "host-local: Failed to find address added by container c1"
    );
}

#[test]
fn every_selector_finds_the_device() {
    let h = host("hs");
    let d = Device::new(&h);
    let c = TestNetns::new("hsc");
    let by_mac = json!({"device": "", "hwaddr": d.mac.to_uppercase()});
    // `device` wins over `hwaddr` (the reference's precedence).
    let both = json!({"hwaddr": "02:00:00:00:00:99"});
    for extra in [by_mac, both] {
        let conf = conf(&h, "0.4.0", &d, &[], extra);
        let r = h.call("ADD", &conf, "c1", c.path(), "eth1").ok();
        assert_eq!(r["interfaces"][0]["mac"], d.mac.as_str(), "{conf}");
        assert!(link(&c, "eth1").is_some());
        h.call("DEL", &conf, "c1", c.path(), "eth1").ok();
        assert_home(&h, &d, false, "after DEL");
        h.ns.exec(&["ip", "link", "set", &d.name, "up"]);
    }
}

/// Bad input: a clear error, and the device stays where it is, as it was.
#[test]
fn bad_input_changes_nothing() {
    let h = host("hb");
    let d = Device::new(&h);
    let c = TestNetns::new("hbc");
    let cases = [
        (
            json!({"device": ""}),
            r#"specify either "device", "hwaddr", "kernelpath" or "pciBusID""#,
        ),
        (
            json!({"device": "cnirsnothere"}),
            "failed to find host device: Link not found",
        ),
        (
            json!({"device": "", "hwaddr": "02:00:00:00:00"}),
            "failed to find host device: failed to parse MAC address \"02:00:00:00:00\": \
             address 02:00:00:00:00: invalid MAC address",
        ),
        (
            json!({"device": "", "hwaddr": "02:00:00:00:00:99"}),
            "failed to find host device: failed to find physical interface",
        ),
        (
            json!({"device": "", "kernelpath": "sys/devices/x"}),
            "failed to find host device: kernel device path \"sys/devices/x\" must be absolute \
             and begin with /sys/devices/",
        ),
        (
            json!({"device": "", "kernelpath": "/sys/devices/cnirs-none"}),
            "failed to find host device: failed to read directory /sys/devices/cnirs-none/net: \
             \"open /sys/devices/cnirs-none/net: no such file or directory\"",
        ),
        (
            json!({"device": "", "pciBusID": "0000:ff:1f.7"}),
            "error with host device: lstat /sys/bus/pci/devices/0000:ff:1f.7: no such file or \
             directory",
        ),
        (
            json!({"runtimeConfig": {"deviceID": "0000:ff:1f.7"}}),
            "runtime config DeviceID 0000:ff:1f.7 not found or unsupported",
        ),
    ];
    for (extra, msg) in cases {
        let conf = conf(&h, "1.0.0", &d, &["10.240.61.0/24"], extra);
        let r = h.call("ADD", &conf, "c1", c.path(), "eth1");
        assert_eq!(r.code, 1, "{conf}: {r:?}");
        assert_eq!(r.json()["msg"], msg, "{conf}");
        assert_home(&h, &d, true, msg);
        assert!(is_empty(&c));
        assert!(h.leases().is_empty());
    }
    // A container that has the name already: refused before anything.
    c.exec(&["ip", "link", "add", "eth1", "type", "bridge"]);
    let conf = conf(&h, "1.0.0", &d, &["10.240.61.0/24"], json!({}));
    let e = h.call("ADD", &conf, "c1", c.path(), "eth1").err(999);
    assert_eq!(
        e["msg"],
        format!(
            "failed to move link failed to move \"eth1\" (host: \"{}\") to container NS: file \
             exists",
            d.name
        )
    );
    assert_home(&h, &d, true, "name taken");
    assert!(h.leases().is_empty());
    // The same without IPAM.
    let conf = conf_without_ipam(&h, &d);
    let e = h.call("ADD", &conf, "c1", c.path(), "eth1").err(999);
    assert!(e["msg"].as_str().unwrap().ends_with("file exists"), "{e}");
    assert_home(&h, &d, true, "name taken, no IPAM");
}

fn conf_without_ipam(h: &PluginHost, d: &Device) -> serde_json::Value {
    conf(h, "1.0.0", d, &[], json!({}))
}

/// #773: the container renamed the device (and changed its MAC, and
/// cleared its alias): DEL finds it by its alias, or by prevResult's MAC,
/// and puts it back under its own name and MAC.
#[test]
fn del_finds_a_device_the_container_renamed() {
    let h = host("hr");
    let d = Device::new(&h);
    let c = TestNetns::new("hrc");
    let conf = conf(&h, "1.0.0", &d, &["10.240.62.0/24"], json!({}));
    // Renamed and its MAC changed: found by the alias.
    let r = h.call("ADD", &conf, "c1", c.path(), "net1").ok();
    c.exec(&["ip", "link", "set", "net1", "down"]);
    c.exec(&["ip", "link", "set", "net1", "name", "renamed0"]);
    c.exec(&[
        "ip",
        "link",
        "set",
        "renamed0",
        "address",
        "02:00:00:00:00:42",
    ]);
    h.call("DEL", &with_prev(&conf, &r), "c1", c.path(), "net1")
        .ok();
    assert_home(&h, &d, false, "renamed");
    assert!(is_empty(&c));
    assert!(h.leases().is_empty());

    // Renamed and its alias cleared: the config's `device` names it.
    h.call("ADD", &conf, "c2", c.path(), "net1").ok();
    c.exec(&["ip", "link", "set", "net1", "name", "renamed1"]);
    c.exec(&["ip", "link", "set", "renamed1", "alias", ""]);
    h.call("DEL", &conf, "c2", c.path(), "net1").ok();
    // Without its alias the renamed device is not recognised: it stays,
    // nothing else is moved.
    assert!(link(&c, "renamed1").is_some());
    c.exec(&["ip", "link", "set", "renamed1", "alias", &d.name]);
    h.call("DEL", &conf, "c2", c.path(), "net1").ok();
    assert_home(&h, &d, false, "alias restored");
}

/// #1196: DEL without `CNI_NETNS` still releases the address; the device
/// comes back with the DEL that names the namespace.
#[test]
fn del_without_netns_releases_the_address() {
    let h = host("hn");
    let d = Device::new(&h);
    let c = TestNetns::new("hnc");
    let conf = conf(&h, "1.0.0", &d, &["10.240.63.0/24"], json!({}));
    h.call("ADD", &conf, "c1", c.path(), "eth1").ok();
    h.call("DEL", &conf, "c1", "", "eth1").ok();
    assert!(h.leases().is_empty(), "{:?}", h.leases());
    assert!(link(&c, "eth1").is_some());
    h.call("DEL", &conf, "c1", c.path(), "eth1").ok();
    assert_home(&h, &d, false, "second DEL");
}

/// DEL after the namespace is gone: the lease is released. A virtual
/// device went with the namespace; a physical one the kernel puts back in
/// the initial namespace under its container name with its alias, and DEL
/// gives it its name back (shown with a link in that state).
#[test]
fn del_after_the_namespace_is_gone() {
    let h = host("hg");
    let d = Device::new(&h);
    let mut c = TestNetns::new("hgc");
    let conf = conf(&h, "1.0.0", &d, &["10.240.64.0/24"], json!({}));
    let r = h.call("ADD", &conf, "c1", c.path(), "eth1").ok();
    let path = c.path().to_string();
    c.delete();
    // The veth went with the namespace (its peer too). What the kernel
    // does with a physical device of a deleted namespace, played by a
    // bridge.
    h.ns.exec(&["ip", "link", "add", "eth1", "type", "bridge"]);
    h.ns.exec(&["ip", "link", "set", "eth1", "alias", &d.name]);
    h.call("DEL", &with_prev(&conf, &r), "c1", &path, "eth1")
        .ok();
    assert!(h.leases().is_empty(), "{:?}", h.leases());
    let back = link(&h.ns, &d.name).expect("renamed back");
    assert_eq!(back.get("ifalias"), None, "{back}");
    assert!(link(&h.ns, "eth1").is_none());
    h.call("DEL", &conf, "c1", &path, "eth1").ok();
}

/// DEL cannot put the device back when the host has taken its name: it
/// fails and leaves the device in the container, under `CNI_IFNAME` with
/// its alias, for a later DEL.
#[test]
fn del_keeps_the_device_when_its_name_is_taken() {
    let h = host("ht");
    let d = Device::new(&h);
    let c = TestNetns::new("htc");
    let conf = conf(&h, "1.0.0", &d, &[], json!({}));
    h.call("ADD", &conf, "c1", c.path(), "eth1").ok();
    h.ns.exec(&["ip", "link", "add", &d.name, "type", "bridge"]);
    let e = h.call("DEL", &conf, "c1", c.path(), "eth1").err(999);
    assert_eq!(
        e["msg"],
        format!(
            "failed to move \"eth1\" back as \"{}\": the host has a link of that name",
            d.name
        )
    );
    assert_eq!(link(&c, "eth1").expect("still there")["ifalias"], d.name);
    h.ns.exec(&["ip", "link", "del", &d.name]);
    h.call("DEL", &conf, "c1", c.path(), "eth1").ok();
    assert_home(&h, &d, false, "after the name was free");
}

/// Two ADDs race for one device: one wins, the other fails and leaves
/// nothing (no lease, nothing in its container), and the winner's DEL
/// brings the device home.
#[test]
fn two_adds_race_for_one_device() {
    let h = host("hx");
    let d = Device::new(&h);
    for round in 0..3 {
        let (a, b) = (TestNetns::new("hxa"), TestNetns::new("hxb"));
        let conf = conf(&h, "1.0.0", &d, &["10.240.65.0/24"], json!({}));
        let (ra, rb) = std::thread::scope(|s| {
            let ta = s.spawn(|| h.call("ADD", &conf, "ca", a.path(), "eth1"));
            let tb = s.spawn(|| h.call("ADD", &conf, "cb", b.path(), "eth1"));
            (ta.join().unwrap(), tb.join().unwrap())
        });
        assert_eq!(
            [ra.code, rb.code].iter().filter(|c| **c == 0).count(),
            1,
            "round {round}: {ra:?} {rb:?}"
        );
        let (win, wid, lose) = if ra.code == 0 {
            (&a, "ca", &b)
        } else {
            (&b, "cb", &a)
        };
        assert!(is_empty(lose), "round {round}: {:?}", links(lose));
        assert!(link(win, "eth1").is_some());
        assert_eq!(h.leases().len(), 1, "round {round}");
        h.call("DEL", &conf, wid, win.path(), "eth1").ok();
        assert_home(&h, &d, false, "after the race");
        assert!(h.leases().is_empty());
        h.ns.exec(&["ip", "link", "set", &d.name, "up"]);
    }
}

/// STATUS asks IPAM; without IPAM it is ready.
#[test]
fn status() {
    let h = host("hq");
    let d = Device::new(&h);
    for subnets in [&["10.240.66.0/24"][..], &[]] {
        let conf = conf(&h, "1.1.0", &d, subnets, json!({}));
        h.call("STATUS", &conf, "", "", "").ok();
    }
}

/// A device that refuses a MAC change (as a VF whose MAC its PF set) is
/// still moved back under its own name: the MAC is restored in a request
/// of its own, whose failure DEL reports; the next DEL succeeds.
#[test]
fn a_refused_mac_does_not_keep_the_device_out() {
    let h = host("hm");
    let c = TestNetns::new("hmc");
    let name = unique_name("cnirsd");
    h.ns.exec(&["ip", "link", "add", &name, "type", "ifb"]);
    let conf = h.conf("host-device", "1.0.0", &[], json!({"device": name}));
    let mut conf = conf;
    conf.as_object_mut().unwrap().remove("ipam");
    let mut r = h.call("ADD", &conf, "c1", c.path(), "net1").ok();
    r["interfaces"][0]["mac"] = json!("02:00:00:00:00:55");
    let e = h
        .call("DEL", &with_prev(&conf, &r), "c1", c.path(), "net1")
        .err(999);
    assert!(
        e["msg"]
            .as_str()
            .unwrap()
            .starts_with(&format!("failed to restore the MAC of \"{name}\"")),
        "{e}"
    );
    let l = link(&h.ns, &name).expect("home");
    assert_eq!(l.get("ifalias"), None);
    assert!(is_empty(&c));
    h.call("DEL", &with_prev(&conf, &r), "c1", c.path(), "net1")
        .ok();
}
