//! A record per attachment, written by ADD before it installs anything:
//! `<dataDir>/<network>/<containerID>:<ifname>` (default dataDir
//! `/run/cni/firewall`; the rules do not outlive a reboot, neither do the
//! records), JSON with `network`, `containerID`, `ifname`, `backend` and
//! `addrs`. Names too long for a file or directory are hashed.
//!
//! The reference's iptables rules name only the container's address (so
//! the Go plugin can delete ours and we its, rule for rule), which leaves
//! DEL without `prevResult` nothing to go by: the record gives DEL and GC
//! the addresses. It also keeps DEL from removing the rules of an address
//! another live attachment holds (a stale DEL after the address was
//! reused: the reference removes the live container's rules).

use std::fs;
use std::net::IpAddr;
use std::path::Path;

use cni_firewall::records;
use serde_json::{Value, json};
use skel::Error;

/// One attachment's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub network: String,
    pub container_id: String,
    pub ifname: String,
    pub backend: String,
    pub addrs: Vec<IpAddr>,
}

/// Write `r` under `data_dir` (a temporary file renamed into place).
pub fn write(data_dir: &Path, r: &Record) -> Result<(), Error> {
    let addrs: Vec<String> = r.addrs.iter().map(|a| a.to_string()).collect();
    let doc = json!({"network": r.network, "containerID": r.container_id,
        "ifname": r.ifname, "backend": r.backend, "addrs": addrs});
    let (net, cid, ifname) = (&r.network, &r.container_id, &r.ifname);
    records::write(data_dir, net, cid, ifname, doc.to_string().as_bytes())
}

/// Remove the attachment's record; a missing one is fine.
pub fn remove(data_dir: &Path, network: &str, cid: &str, ifname: &str) -> Result<(), Error> {
    records::remove_path(&records::path(data_dir, network, cid, ifname))
}

/// The attachment's record, if there is one (and names it: a hashed file
/// name is checked against what the record holds).
pub fn read(data_dir: &Path, network: &str, cid: &str, ifname: &str) -> Option<Record> {
    let path = records::path(data_dir, network, cid, ifname);
    parse(network, &records::read(&path)?)
        .filter(|r| r.network == network && r.container_id == cid && r.ifname == ifname)
}

pub(crate) fn parse(network: &str, bytes: &[u8]) -> Option<Record> {
    let v: Value = serde_json::from_slice(bytes).ok()?;
    let addrs = v["addrs"]
        .as_array()?
        .iter()
        .filter_map(|a| a.as_str()?.parse().ok())
        .collect();
    Some(Record {
        network: v["network"].as_str().unwrap_or(network).to_string(),
        container_id: v["containerID"].as_str()?.to_string(),
        ifname: v["ifname"].as_str()?.to_string(),
        backend: v["backend"].as_str().unwrap_or_default().to_string(),
        addrs,
    })
}

/// The records of `network`.
pub fn of_network(data_dir: &Path, network: &str) -> Vec<Record> {
    in_dir(&records::dir(data_dir, network), network)
        .into_iter()
        .filter(|r| r.network == network)
        .collect()
}

/// The records in `d`, a network's directory (`network` for records
/// that do not say theirs).
fn in_dir(d: &Path, network: &str) -> Vec<Record> {
    let files = records::files_in(d).into_iter();
    files.filter_map(|bytes| parse(network, &bytes)).collect()
}

/// Every record of every network.
pub fn all(data_dir: &Path) -> Vec<Record> {
    let nets = records::networks(data_dir).into_iter();
    nets.flat_map(|(path, name)| in_dir(&path, &name)).collect()
}

/// The addresses held by attachments other than `(network, cid, ifname)`:
/// their rules must stay.
pub fn held_elsewhere(data_dir: &Path, network: &str, cid: &str, ifname: &str) -> Vec<IpAddr> {
    all(data_dir)
        .into_iter()
        .filter(|r| !(r.network == network && r.container_id == cid && r.ifname == ifname))
        .flat_map(|r| r.addrs)
        .collect()
}

/// An exclusive lock on `<dataDir>/.lock`, held while ADD reads and
/// writes the shared chains (two ADDs at once would each find a shared
/// chain or rule missing and both create it; an iptables chain declared
/// twice is flushed by the second), and by DEL and GC (two DELs of one
/// attachment would delete the same nftables rules).
pub fn lock(data_dir: &Path) -> Result<fs::File, Error> {
    records::lock(data_dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_held_addresses() {
        let d = std::env::temp_dir().join(format!("cnirs-fwrec-{}", std::process::id()));
        let r = Record {
            network: "n1".into(),
            container_id: "c1".into(),
            ifname: "eth0".into(),
            backend: "iptables".into(),
            addrs: vec!["10.240.0.2".parse().unwrap(), "fd40::2".parse().unwrap()],
        };
        write(&d, &r).unwrap();
        let other = Record {
            network: "n2".into(),
            container_id: "c1".into(),
            addrs: vec!["10.240.9.2".parse().unwrap()],
            ..r.clone()
        };
        write(&d, &other).unwrap();
        assert_eq!(read(&d, "n1", "c1", "eth0"), Some(r.clone()));
        assert_eq!(of_network(&d, "n1"), vec![r.clone()]);
        assert_eq!(all(&d).len(), 2);
        assert_eq!(
            held_elsewhere(&d, "n1", "c1", "eth0"),
            vec!["10.240.9.2".parse::<IpAddr>().unwrap()]
        );
        remove(&d, "n1", "c1", "eth0").unwrap();
        remove(&d, "n1", "c1", "eth0").unwrap();
        assert_eq!(read(&d, "n1", "c1", "eth0"), None);
        let _ = fs::remove_dir_all(&d);
    }

    /// Attachments whose names join alike (`x` + `eth_0`, `x_eth` + `0`)
    /// keep a record each; a container ID too long for a file name still
    /// has one; with `dataDir` a file, there is no record to remove.
    #[test]
    fn every_attachment_its_own_record() {
        let d = std::env::temp_dir().join(format!("cnirs-fwrec2-{}", std::process::id()));
        let rec = |cid: &str, ifname: &str, ip: &str| Record {
            network: "n1".into(),
            container_id: cid.into(),
            ifname: ifname.into(),
            backend: "iptables".into(),
            addrs: vec![ip.parse().unwrap()],
        };
        let long = "c".repeat(300);
        let all = [
            rec("x", "eth_0", "10.240.0.2"),
            rec("x_eth", "0", "10.240.0.3"),
            rec(&long, "eth0", "10.240.0.4"),
        ];
        for r in &all {
            write(&d, r).unwrap();
        }
        for r in &all {
            assert_eq!(read(&d, "n1", &r.container_id, &r.ifname).as_ref(), Some(r));
        }
        assert_eq!(of_network(&d, "n1").len(), 3);
        remove(&d, "n1", "x", "eth_0").unwrap();
        assert_eq!(read(&d, "n1", "x_eth", "0").as_ref(), Some(&all[1]));
        remove(&d, "n1", &long, "eth0").unwrap();
        assert_eq!(of_network(&d, "n1"), vec![all[1].clone()]);
        // A network name too long for a directory.
        let net = "n".repeat(300);
        let r = Record {
            network: net.clone(),
            ..all[1].clone()
        };
        write(&d, &r).unwrap();
        assert_eq!(read(&d, &net, "x_eth", "0").as_ref(), Some(&r));
        assert_eq!(of_network(&d, &net), vec![r.clone()]);
        assert!(super::all(&d).contains(&r));
        assert_eq!(held_elsewhere(&d, "n1", "x_eth", "0"), r.addrs);
        let _ = fs::remove_dir_all(&d);
        fs::write(&d, "").unwrap();
        assert_eq!(read(&d, "n1", "x", "eth0"), None);
        remove(&d, "n1", "x", "eth0").unwrap();
        let _ = fs::remove_file(&d);
    }
}
