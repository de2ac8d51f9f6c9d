//! host-device's stdin configuration (the reference's `NetConf`) and the
//! selection of the device: `device` (a name), `hwaddr`, `kernelpath`,
//! `pciBusID`, or runtimeConfig `deviceID` (what SR-IOV device plugins
//! pass: a PCI address, or an auxiliary device). The precedence is the
//! reference's, by key and not by origin: `device` > `hwaddr` >
//! `kernelpath` > `pciBusID` > auxiliary device, so a `deviceID` does not
//! override an explicit `device`. A PCI device bound to a userspace driver
//! (vfio-pci, uio_pci_generic, igb_uio) is in DPDK mode: it has no netdev,
//! and ADD only reports it.

use std::path::{Path, PathBuf};

use cni_net::{Link, Netlink};
use serde::Deserialize;
use skel::conf::Ipam;
use skel::types::{Dns, null_default};

use crate::error::Error;

/// Where the kernel lists PCI and auxiliary devices.
const SYS_PCI: &str = "/sys/bus/pci/devices";
const SYS_AUX: &str = "/sys/bus/auxiliary/devices";

/// The drivers that leave a device without a netdev (DPDK, VFIO).
const USERSPACE_DRIVERS: &[&str] = &["vfio-pci", "uio_pci_generic", "igb_uio"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub cni_version: String,
    pub name: String,
    /// `ipam.type`; empty: no IPAM.
    pub ipam_type: String,
    pub dns: Dns,
    pub device: String,
    pub hwaddr: String,
    pub kernelpath: String,
    /// `pciBusID`, or `deviceID` when it names a PCI device.
    pub pci: String,
    /// `deviceID` when it names an auxiliary device.
    pub aux: String,
    /// The PCI device is bound to a userspace driver.
    pub dpdk: bool,
}

#[derive(Deserialize)]
#[serde(rename = "main.NetConf")]
struct NetConf {
    #[serde(rename = "cniVersion", default, deserialize_with = "null_default")]
    cni_version: String,
    #[serde(default, deserialize_with = "null_default")]
    name: String,
    #[serde(default, deserialize_with = "null_default")]
    ipam: Ipam,
    #[serde(default, deserialize_with = "null_default")]
    dns: Dns,
    #[serde(default, deserialize_with = "null_default")]
    device: String,
    #[serde(default, deserialize_with = "null_default")]
    hwaddr: String,
    #[serde(default, deserialize_with = "null_default")]
    kernelpath: String,
    #[serde(rename = "pciBusID", default, deserialize_with = "null_default")]
    pci_bus_id: String,
    #[serde(rename = "runtimeConfig", default, deserialize_with = "null_default")]
    runtime_config: RuntimeConfig,
}

#[derive(Deserialize, Default)]
#[serde(rename = "main.RuntimeConfig")]
struct RuntimeConfig {
    #[serde(rename = "deviceID", default, deserialize_with = "null_default")]
    device_id: String,
}

impl Config {
    /// The config with the device's selection resolved as the reference's
    /// `loadConf` does (every verb but STATUS needs it).
    pub fn parse(stdin: &[u8]) -> Result<Config, Error> {
        let mut c = Config::keys(stdin)?;
        c.device_id_and_driver()?;
        Ok(c)
    }

    /// The keys only, nothing looked up (STATUS).
    pub fn keys(stdin: &[u8]) -> Result<Config, Error> {
        let nc: NetConf = skel::gojson::unmarshal(stdin)
            .map_err(|e| Error::decode(format!("failed to load netconf: {e}")))?;
        Ok(Config {
            cni_version: nc.cni_version,
            name: nc.name,
            ipam_type: nc.ipam.plugin_type,
            dns: nc.dns,
            device: nc.device,
            hwaddr: nc.hwaddr,
            kernelpath: nc.kernelpath,
            pci: nc.pci_bus_id,
            aux: nc.runtime_config.device_id,
            dpdk: false,
        })
    }

    /// `deviceID` as a PCI or auxiliary device, a selection required, and
    /// DPDK mode from the PCI device's driver.
    fn device_id_and_driver(&mut self) -> Result<(), Error> {
        let id = std::mem::take(&mut self.aux);
        if !id.is_empty() {
            if Path::new(SYS_PCI).join(&id).exists() {
                self.pci = id;
            } else if Path::new(SYS_AUX).join(&id).exists() {
                self.pci.clear();
                self.aux = id;
            } else {
                return Err(Error::config(format!(
                    "runtime config DeviceID {id} not found or unsupported"
                )));
            }
        }
        let keys = [&self.device, &self.hwaddr, &self.kernelpath, &self.pci];
        if keys.iter().all(|k| k.is_empty()) && self.aux.is_empty() {
            return Err(Error::config(
                r#"specify either "device", "hwaddr", "kernelpath" or "pciBusID""#,
            ));
        }
        if !self.pci.is_empty() {
            self.dpdk = userspace_driver(&self.pci)
                .map_err(|e| Error::internal(format!("error with host device: {e}")))?;
        }
        Ok(())
    }

    /// The configured MAC, when `hwaddr` is one.
    pub fn mac(&self) -> Option<Vec<u8>> {
        parse_mac(&self.hwaddr).ok()
    }

    /// The host's link this config selects, in the reference's precedence
    /// and words (the caller adds `failed to find host device: `).
    pub fn find(&self, host: &Netlink) -> Result<Link, Error> {
        if !self.device.is_empty() {
            return by_name(host, &self.device);
        }
        if !self.hwaddr.is_empty() {
            let mac = parse_mac(&self.hwaddr)?;
            let links = host
                .links()
                .map_err(|e| Error::from(e).context("failed to list node links"))?;
            return links
                .into_iter()
                .find(|l| l.mac == mac)
                .ok_or_else(|| Error::internal("failed to find physical interface"));
        }
        if !self.kernelpath.is_empty() {
            let p = &self.kernelpath;
            if !p.starts_with("/sys/devices/") {
                return Err(Error::config(format!(
                    "kernel device path {p:?} must be absolute and begin with /sys/devices/"
                )));
            }
            return first_link(host, &Path::new(p).join("net"));
        }
        if !self.pci.is_empty() {
            return first_link(host, &pci_net_dir(&self.pci)?);
        }
        if !self.aux.is_empty() {
            return first_link(host, &Path::new(SYS_AUX).join(&self.aux).join("net"));
        }
        Err(Error::internal("failed to find physical interface"))
    }
}

/// The link `name`, a missing one in the reference's words.
fn by_name(host: &Netlink, name: &str) -> Result<Link, Error> {
    match host.link_by_name(name) {
        Err(e) if e.is_not_found() => Err(Error::internal("Link not found")),
        other => Ok(other?),
    }
}

/// The device's `net` directory: `net`, or a virtio device's
/// `virtio*/net`.
fn pci_net_dir(pci: &str) -> Result<PathBuf, Error> {
    let dev = Path::new(SYS_PCI).join(pci);
    let net = dev.join("net");
    if net.symlink_metadata().is_ok() {
        return Ok(net);
    }
    let mut virtio: Vec<PathBuf> = std::fs::read_dir(&dev)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("virtio"))
        .map(|e| e.path().join("net"))
        .filter(|p| p.exists())
        .collect();
    virtio.sort();
    virtio
        .into_iter()
        .next()
        .ok_or_else(|| Error::internal(format!("no net directory under pci device {pci}")))
}

/// The link named by the first entry (in name order) of `dir`.
fn first_link(host: &Netlink, dir: &Path) -> Result<Link, Error> {
    let d = dir.display();
    let entries = std::fs::read_dir(dir).map_err(|e| {
        Error::internal(format!(
            "failed to read directory {d}: \"open {d}: {}\"",
            skel::io_text(&e)
        ))
    })?;
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    match names.first() {
        Some(n) => by_name(host, n),
        None => Err(Error::internal(format!(
            "failed to find network device in path {d}"
        ))),
    }
}

/// Whether the PCI device's driver is a userspace one; an unresolvable
/// driver link in Go's words (`lstat <path>: no such file or directory`).
fn userspace_driver(pci: &str) -> Result<bool, String> {
    let dev = Path::new(SYS_PCI).join(pci);
    let driver = dev.join("driver");
    for p in [&dev, &driver] {
        if let Err(e) = p.symlink_metadata() {
            return Err(format!("lstat {}: {}", p.display(), skel::io_text(&e)));
        }
    }
    let target = std::fs::canonicalize(&driver)
        .map_err(|e| format!("lstat {}: {}", driver.display(), skel::io_text(&e)))?;
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    Ok(USERSPACE_DRIVERS.contains(&name.as_ref()))
}

/// A MAC as Go's `net.ParseMAC` reads one (6, 8 or 20 bytes, `:` or `-`
/// between bytes, or `.` between groups of four digits); its error in the
/// reference's words.
pub fn parse_mac(s: &str) -> Result<Vec<u8>, Error> {
    let bad = || {
        Error::config(format!(
            "failed to parse MAC address {s:?}: address {s}: invalid MAC address"
        ))
    };
    if !s.is_ascii() || s.len() < 14 {
        return Err(bad());
    }
    let b = s.as_bytes();
    let hex = |t: &str| -> Result<Vec<u8>, Error> {
        if !t.len().is_multiple_of(2) || !t.bytes().all(|c| c.is_ascii_hexdigit()) {
            return Err(bad());
        }
        (0..t.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&t[i..i + 2], 16).map_err(|_| bad()))
            .collect()
    };
    let (sep, width) = match (b[2], b[4]) {
        (b':' | b'-', _) => (b[2] as char, 2),
        (_, b'.') => ('.', 4),
        _ => return Err(bad()),
    };
    let parts: Vec<&str> = s.split(sep).collect();
    if parts.iter().any(|p| p.len() != width) {
        return Err(bad());
    }
    let mac: Vec<u8> = parts
        .into_iter()
        .map(hex)
        .collect::<Result<Vec<_>, _>>()?
        .concat();
    match mac.len() {
        6 | 8 | 20 => Ok(mac),
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Config, Error> {
        Config::parse(s.as_bytes())
    }

    #[test]
    fn keys() {
        let c = parse(
            r#"{"cniVersion":"1.0.0","name":"n","type":"host-device","device":"hd0",
                "hwaddr":"02:00:00:00:00:01","kernelpath":"/sys/devices/x",
                "ipam":{"type":"static"},"dns":{"nameservers":["10.240.0.53"]}}"#,
        )
        .unwrap();
        assert_eq!(
            (c.device.as_str(), c.hwaddr.as_str(), c.kernelpath.as_str()),
            ("hd0", "02:00:00:00:00:01", "/sys/devices/x")
        );
        assert_eq!((c.ipam_type.as_str(), c.dpdk), ("static", false));
        assert_eq!(c.mac(), Some(vec![2, 0, 0, 0, 0, 1]));
        // Go's decoder: any case of a key.
        let g = parse(r#"{"name":"n","DEVICE":"x","Ipam":{"Type":"dhcp"}}"#).unwrap();
        assert_eq!((g.device.as_str(), g.ipam_type.as_str()), ("x", "dhcp"));
    }

    #[test]
    fn errors_in_the_references_words() {
        let e = parse(r#"{"name":"n"}"#).unwrap_err();
        assert_eq!(
            e.msg,
            r#"specify either "device", "hwaddr", "kernelpath" or "pciBusID""#
        );
        let e = parse(r#"{"name":"n","runtimeConfig":{"deviceID":"0000:ff:1f.7"}}"#).unwrap_err();
        assert_eq!(
            e.msg,
            "runtime config DeviceID 0000:ff:1f.7 not found or unsupported"
        );
        let e = parse(r#"{"name":"n","pciBusID":"0000:ff:1f.7"}"#).unwrap_err();
        assert_eq!(
            e.msg,
            "error with host device: lstat /sys/bus/pci/devices/0000:ff:1f.7: no such file or \
             directory"
        );
        let e = parse(r#"{"name":"n","device":7}"#).unwrap_err();
        assert_eq!(e.code, skel::code::DECODING_FAILURE);
    }

    #[test]
    fn macs_as_go_parses_them() {
        assert_eq!(parse_mac("02-00-00-00-00-0A").unwrap(), [2, 0, 0, 0, 0, 10]);
        assert_eq!(parse_mac("0200.0000.000a").unwrap(), [2, 0, 0, 0, 0, 10]);
        assert_eq!(parse_mac("02:00:00:00:00:00:00:01").unwrap().len(), 8);
        for bad in [
            "",
            "02:00:00:00:00",
            "02:00:00:00:00:0g",
            "02:00-00:00:00:00",
            "x",
        ] {
            let e = parse_mac(bad).unwrap_err();
            assert_eq!(
                e.msg,
                format!("failed to parse MAC address {bad:?}: address {bad}: invalid MAC address")
            );
        }
    }
}
