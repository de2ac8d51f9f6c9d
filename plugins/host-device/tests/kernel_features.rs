//! host-device on devices this machine's kernel cannot give: a dummy
//! device, and a real PCI netdev (the VM's virtio-net NIC at `PCI`,
//! `scripts/vm-test.sh`) selected by `pciBusID`, `deviceID` and
//! `kernelpath`, which also shows what happens to a physical device whose
//! namespace is deleted: the kernel returns it to the initial namespace
//! under its container name, and DEL gives it its name back.
//!
//! Every test is ignored with a `kernel-features` reason; the VM tier runs
//! them.

mod common;

use std::path::PathBuf;

use common::*;
use serde_json::json;
use testsupport::{Call, TestNetns};

/// The PCI address of the VM's virtio-net NIC (`addr=6` in vm-test.sh).
const PCI: &str = "0000:00:06.0";

/// The NIC's `virtioN` directory (its netdev is under `net/`) and its name,
/// read in the caller's namespace.
fn nic() -> (PathBuf, String) {
    let dev = std::fs::canonicalize(format!("/sys/bus/pci/devices/{PCI}"))
        .unwrap_or_else(|e| panic!("no PCI device {PCI}: {e}"));
    for e in std::fs::read_dir(&dev).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with("virtio") {
            let net = e.path().join("net");
            if let Some(n) = std::fs::read_dir(&net).ok().and_then(|mut d| d.next()) {
                return (
                    e.path(),
                    n.unwrap().file_name().to_string_lossy().into_owned(),
                );
            }
        }
    }
    panic!("no netdev under {}", dev.display());
}

#[test]
#[ignore = "kernel-features: dummy"]
fn a_dummy_device_goes_in_and_back() {
    let h = host("kd");
    let c = TestNetns::new("kdc");
    let name = unique_name("cnirsd");
    h.ns.exec(&["ip", "link", "add", &name, "type", "dummy"]);
    h.ns.exec(&["ip", "link", "set", &name, "mtu", "1400", "up"]);
    let mac = link(&h.ns, &name).unwrap()["address"]
        .as_str()
        .unwrap()
        .to_string();
    let d = Device {
        name,
        peer: String::new(),
        mac,
    };
    let conf = conf(&h, "1.1.0", &d, &["10.240.76.0/24"], json!({}));
    let r = h.call("ADD", &conf, "c1", c.path(), "net1").ok();
    assert_eq!(link(&c, "net1").unwrap()["linkinfo"]["info_kind"], "dummy");
    h.call("CHECK", &with_prev(&conf, &r), "c1", c.path(), "net1")
        .ok();
    h.call("DEL", &with_prev(&conf, &r), "c1", c.path(), "net1")
        .ok();
    assert_home(&h, &d, false, "dummy");
    assert!(h.leases().is_empty());
}

#[test]
#[ignore = "kernel-features: pci netdev"]
fn a_pci_netdev_by_bus_id_device_id_and_kernel_path() {
    let h = host("kp");
    let (virtio, name) = nic();
    // The NIC into the plugin's host namespace (sysfs there shows it).
    testsupport::sh(&["ip", "link", "set", &name, "netns", h.ns.name()]);
    h.ns.exec(&["ip", "link", "set", &name, "mtu", "1400", "up"]);
    let mac = link(&h.ns, &name).unwrap()["address"]
        .as_str()
        .unwrap()
        .to_string();
    let d = Device {
        name: name.clone(),
        peer: String::new(),
        mac,
    };
    let c = TestNetns::new("kpc");
    let kernelpath = virtio.to_string_lossy().into_owned();
    let cases = [
        json!({"device": "", "pciBusID": PCI}),
        json!({"device": "", "runtimeConfig": {"deviceID": PCI}}),
        json!({"device": "", "kernelpath": kernelpath}),
    ];
    for extra in cases {
        let conf = conf(&h, "1.1.0", &d, &["10.240.77.0/24"], extra);
        let r = h.call("ADD", &conf, "c1", c.path(), "net1").ok();
        assert_eq!(r["interfaces"][0]["mac"], d.mac.as_str(), "{conf}");
        let l = link(&c, "net1").expect("the NIC in the container");
        assert_eq!(l["ifalias"], d.name.as_str());
        h.call("DEL", &with_prev(&conf, &r), "c1", c.path(), "net1")
            .ok();
        assert_home(&h, &d, false, "pci");
        h.ns.exec(&["ip", "link", "set", &name, "up"]);
    }
    h.ns.exec(&["ip", "link", "set", &name, "netns", "1"]);
}

/// The plugin runs in the initial namespace, where the kernel puts a
/// physical device back when its namespace is deleted.
#[test]
#[ignore = "kernel-features: pci netdev"]
fn a_physical_device_of_a_deleted_namespace_gets_its_name_back() {
    let (_, name) = nic();
    let mut c = TestNetns::new("kgc");
    let conf = json!({"cniVersion": "1.0.0", "name": "kg", "type": "host-device",
                      "pciBusID": PCI});
    let call = |cmd: &str, netns: &str| {
        Call::new(cmd)
            .container_id("c1")
            .netns(netns)
            .ifname("net1")
            .path("/opt/cni/bin")
            .stdin(conf.to_string())
            .run(bin())
    };
    let r = call("ADD", c.path()).ok();
    let mac = r["interfaces"][0]["mac"].as_str().unwrap().to_string();
    let path = c.path().to_string();
    c.delete();
    // The kernel returns it asynchronously, as `net1` with its alias.
    assert!(
        testsupport::eventually(|| testsupport::try_sh(&["ip", "link", "show", "net1"])),
        "the NIC did not come back"
    );
    let with = with_prev(&conf, &r);
    Call::new("DEL")
        .container_id("c1")
        .netns(&path)
        .ifname("net1")
        .path("/opt/cni/bin")
        .stdin(with.to_string())
        .run(bin())
        .ok();
    let out = testsupport::sh(&["ip", "-j", "link", "show", &name]);
    let l: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((&l[0]["address"], l[0].get("ifalias")), (&json!(mac), None));
    assert!(!testsupport::try_sh(&["ip", "link", "show", "net1"]));
}
