//! A PCI device bound to a userspace driver (vfio-pci, DPDK) has no
//! netdev: ADD moves nothing and reports the interface (and IPAM's
//! addresses, unconfigured), as the reference v1.7+; CHECK and DEL have
//! nothing to do. The device is played by a sysfs made up for the plugin
//! (a tmpfs over `/sys/bus/pci/devices` in a mount namespace of its own).

mod common;

use common::*;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use testsupport::{PluginRun, TempDir, TestNetns};

const PCI: &str = "0000:00:09.0";

/// A wrapper that runs the plugin in a mount namespace of its own (so
/// the made-up sysfs is the plugin's only) with `PCI` bound to vfio-pci.
fn wrapper(dir: &TempDir) -> PathBuf {
    let script = dir.join("host-device");
    let text = format!(
        "#!/bin/sh\nset -e\n\
         if [ -z \"$CNIRS_UNSHARED\" ]; then\n\
         CNIRS_UNSHARED=1 exec unshare -m --propagation private \"$0\"\nfi\n\
         d=/sys/bus/pci/devices\nmount -t tmpfs cnirs $d\n\
         mkdir -p $d/{PCI} $d/drivers/vfio-pci\nln -s ../drivers/vfio-pci $d/{PCI}/driver\n\
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
    let script = wrapper(&dir);
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
