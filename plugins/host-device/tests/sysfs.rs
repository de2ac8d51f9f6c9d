//! The selectors that read sysfs, with a sysfs made up for the plugin
//! (tmpfs over `/sys/bus/pci/devices` and `/sys/devices/virtual`, in a
//! mount namespace of its own): `pciBusID` and `deviceID` of a device
//! with a kernel driver (its `net` directory, or a virtio device's
//! `virtio*/net`), `kernelpath`; and a PCI device bound to a userspace
//! driver (vfio-pci, DPDK), which has no netdev: ADD moves nothing and
//! reports the interface (and IPAM's addresses, unconfigured), as the
//! reference v1.7+; CHECK and DEL have nothing to do.

mod common;

use common::*;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use testsupport::{PluginRun, TempDir, TestNetns};

const PCI: &str = "0000:00:09.0";
const NET_PCI: &str = "0000:00:0a.0";
const VIRTIO_PCI: &str = "0000:00:0b.0";
const KERNELPATH: &str = "/sys/devices/virtual/cnirs0";

/// A wrapper that runs the plugin in a mount namespace of its own (so
/// the made-up sysfs is the plugin's only) with `PCI` bound to vfio-pci,
/// `NET_PCI` to virtio-pci with `device` as its netdev, `VIRTIO_PCI` with
/// it under `virtio3/net`, and `device` under `KERNELPATH/net`.
fn wrapper(dir: &TempDir, device: &str) -> PathBuf {
    let script = dir.join("host-device");
    let text = format!(
        "#!/bin/sh\nset -e\n\
         if [ -z \"$CNIRS_UNSHARED\" ]; then\n\
         CNIRS_UNSHARED=1 exec unshare -m --propagation private \"$0\"\nfi\n\
         d=/sys/bus/pci/devices\nmount -t tmpfs cnirs $d\n\
         mkdir -p $d/{PCI} $d/drivers/vfio-pci $d/drivers/virtio-pci\n\
         ln -s ../drivers/vfio-pci $d/{PCI}/driver\n\
         mkdir -p $d/{NET_PCI}/net/{device} $d/{VIRTIO_PCI}/virtio3/net/{device}\n\
         ln -s ../drivers/virtio-pci $d/{NET_PCI}/driver\n\
         ln -s ../drivers/virtio-pci $d/{VIRTIO_PCI}/driver\n\
         mount -t tmpfs cnirs /sys/devices/virtual\nmkdir -p {KERNELPATH}/net/{device}\n\
         exec {}\n",
        bin().display()
    );
    std::fs::write(&script, text).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

fn run(h: &PluginHost, script: &Path, cmd: &str, conf: &Value, c: &str) -> PluginRun {
    h.request(cmd, conf, "c1", c, "net1")
        .run_in(h.ns.name(), script)
}

#[test]
fn a_device_without_netdev_is_reported_not_moved() {
    let h = host("hp");
    let d = Device::new(&h);
    let c = TestNetns::new("hpc");
    let dir = TempDir::new("dpdk");
    let script = wrapper(&dir, &d.name);
    let by_pci = json!({"device": "", "pciBusID": PCI});
    let by_id = json!({"device": "", "runtimeConfig": {"deviceID": PCI}});
    for extra in [by_pci, by_id] {
        let conf = conf(&h, "1.0.0", &d, &[], extra.clone());
        let r = run(&h, &script, "ADD", &conf, c.path()).ok();
        assert_eq!(
            r,
            json!({"cniVersion": "1.0.0",
                   "interfaces": [{"name": "net1", "sandbox": c.path()}]})
        );
        assert!(is_empty(&c));
        run(&h, &script, "CHECK", &with_prev(&conf, &r), c.path()).ok();
        run(&h, &script, "DEL", &conf, c.path()).ok();
        // With IPAM: the addresses are reported, nothing is configured.
        let conf = conf_ipam(&h, &d, extra);
        let r = run(&h, &script, "ADD", &conf, c.path()).ok();
        let addr = r["ips"][0]["address"].as_str().unwrap();
        assert!(addr.starts_with("10.240.75."), "{r}");
        assert_eq!(r["ips"][0]["interface"], 0);
        assert!(is_empty(&c));
        assert_eq!(h.leases().len(), 1);
        run(&h, &script, "DEL", &conf, c.path()).ok();
        assert!(h.leases().is_empty());
        assert_home(&h, &d, true, "DPDK");
    }
}

fn conf_ipam(h: &PluginHost, d: &Device, extra: Value) -> Value {
    conf(h, "1.0.0", d, &["10.240.75.0/24"], extra)
}

#[test]
fn sysfs_selectors_find_the_netdev() {
    let h = host("hy");
    let d = Device::new(&h);
    let c = TestNetns::new("hyc");
    let dir = TempDir::new("sysfs");
    let script = wrapper(&dir, &d.name);
    let cases = [
        json!({"device": "", "pciBusID": NET_PCI}),
        json!({"device": "", "pciBusID": VIRTIO_PCI}),
        json!({"device": "", "runtimeConfig": {"deviceID": NET_PCI}}),
        json!({"device": "", "kernelpath": KERNELPATH}),
    ];
    for extra in cases {
        let conf = conf(&h, "1.0.0", &d, &[], extra);
        let r = run(&h, &script, "ADD", &conf, c.path()).ok();
        assert_eq!(r["interfaces"][0]["mac"], d.mac.as_str(), "{conf}");
        assert_eq!(link(&c, "net1").expect("moved")["ifalias"], d.name);
        run(&h, &script, "DEL", &conf, c.path()).ok();
        assert_home(&h, &d, false, "sysfs selector");
    }
    let mut conf = conf(
        &h,
        "1.0.0",
        &d,
        &[],
        json!({"device": "", "pciBusID": NET_PCI}),
    );
    conf["kernelpath"] = json!(format!("{KERNELPATH}/none"));
    let e = run(&h, &script, "ADD", &conf, c.path()).err(999);
    // `kernelpath` comes before `pciBusID`.
    assert_eq!(
        e["msg"],
        format!(
            "failed to find host device: failed to read directory {KERNELPATH}/none/net: \
             \"open {KERNELPATH}/none/net: no such file or directory\""
        )
    );
}
