//! A record per attachment, written by ADD when it installs rules:
//! `<dataDir>/<network>/<containerID>:<ifname>` (default dataDir
//! `/run/cni/portmap`: the rules do not outlive a reboot, neither do the
//! records), holding the backend, the container addresses and the
//! options the rules were made from, as a portmap config (so it is read
//! back by [`Config::parse`]) plus `containerID`, `ifname` and `addrs`.
//! A record is only taken as an attachment's when it names it (network,
//! container ID and ifname), and names too long for a file are hashed.
//!
//! Records of earlier versions are named `<containerID>_<ifname>`, which
//! two attachments can share (`x` + `eth_0`, `x_eth` + `0`); they are read
//! when the attachment has no record under the new name (and only when
//! they name it), and the next ADD or DEL of the attachment removes them.
//!
//! What it is for:
//!
//! - DEL without `portMappings` (a runtime that lost them) still finds
//!   that the attachment has rules, and removes them (#752, #683); without
//!   mappings and without a record, DEL reads nothing else.
//! - nftables rules are commented with the bare container ID and the
//!   tables are shared by every network, so a rule does not say which
//!   network it belongs to. GC removes only rules that match the record of
//!   one of its own network's invalid attachments, and DEL spares rules
//!   that match another network's record for the same container.
//!
//! Rules written by the Go plugin have no record: DEL removes them as the
//! Go plugin does (by comment), GC leaves them.

use std::fs;
use std::path::{Path, PathBuf};

use cni_firewall::{Backend, records};
use cni_net::IpNetwork;
use serde_json::{Value, json};
use skel::Error;

use crate::config::Config;

/// One attachment's record.
#[derive(Debug, Clone)]
pub struct Record {
    pub container_id: String,
    pub ifname: String,
    pub backend: Option<Backend>,
    /// The options and mappings (with the network's name).
    pub conf: Config,
    pub addrs: Vec<IpNetwork>,
}

/// The name of earlier versions (never longer than a file name may be:
/// such an ADD failed).
fn legacy_name(cid: &str, ifname: &str) -> String {
    format!("{cid}_{ifname}")
}

/// The record's content.
fn content(conf: &Config, owner: (&str, &str), backend: Backend, addrs: &[IpNetwork]) -> String {
    let mappings: Vec<Value> = conf
        .mappings
        .iter()
        .map(|m| {
            let host_ip = match (m.host_ip, m.family) {
                (Some(ip), _) => ip.to_string(),
                (None, Some(true)) => "::".into(),
                (None, Some(false)) => "0.0.0.0".into(),
                (None, None) => String::new(),
            };
            json!({"hostPort": m.host_port, "containerPort": m.container_port,
                   "protocol": m.protocol, "hostIP": host_ip})
        })
        .collect();
    let addrs: Vec<String> = addrs.iter().map(|a| a.to_string()).collect();
    json!({
        "name": conf.name, "containerID": owner.0, "ifname": owner.1,
        "backend": backend.to_string(), "snat": conf.snat,
        "masqAll": conf.masq_all, "runtimeConfig": {"portMappings": mappings}, "addrs": addrs,
    })
    .to_string()
}

/// Write the attachment's record (to a temporary file renamed into place).
pub fn write(
    conf: &Config,
    cid: &str,
    ifname: &str,
    backend: Backend,
    addrs: &[IpNetwork],
) -> Result<(), Error> {
    let bytes = content(conf, (cid, ifname), backend, addrs);
    records::write(&conf.data_dir, &conf.name, cid, ifname, bytes.as_bytes())?;
    // The attachment's record of an earlier version is replaced by this one.
    remove_legacy(&conf.data_dir, &conf.name, cid, ifname)
}

/// The attachment's record file as it is (to be put back with
/// [`put_back`]), if it has one.
pub fn snapshot(data_dir: &Path, network: &str, cid: &str, ifname: &str) -> Option<Vec<u8>> {
    own(data_dir, network, cid, ifname).map(|(_, bytes, _)| bytes)
}

/// Put back a record taken with [`snapshot`] (under the current name).
pub fn put_back(
    data_dir: &Path,
    network: &str,
    cid: &str,
    ifname: &str,
    bytes: &[u8],
) -> Result<(), Error> {
    records::write(data_dir, network, cid, ifname, bytes)
}

/// An exclusive lock on `<dataDir>/.lock`, held by ADD (two ADDs at once
/// would each find a shared iptables rule missing and both append it; a
/// repeated ADD reads the record it may have to put back) and, best
/// effort, by DEL and GC (two DELs of one attachment would delete the
/// same nftables rules).
pub fn lock(data_dir: &Path) -> Result<fs::File, Error> {
    records::lock(data_dir)
}

/// The attachment's record: its path, bytes and content; under the
/// current name, else under the earlier one. Only a record naming the
/// attachment counts (a hashed name, or an earlier name two attachments
/// shared, may hold another's).
fn own(
    data_dir: &Path,
    network: &str,
    cid: &str,
    ifname: &str,
) -> Option<(PathBuf, Vec<u8>, Record)> {
    let d = records::dir(data_dir, network);
    [records::file_name(cid, ifname), legacy_name(cid, ifname)]
        .into_iter()
        .find_map(|name| {
            let path = d.join(name);
            let bytes = records::read(&path)?;
            let r = parse(&bytes)?;
            let mine = r.conf.name == network && r.container_id == cid && r.ifname == ifname;
            mine.then_some((path, bytes, r))
        })
}

/// Whether the attachment has a record.
pub fn exists(conf: &Config, cid: &str, ifname: &str) -> bool {
    own(&conf.data_dir, &conf.name, cid, ifname).is_some()
}

/// Remove the attachment's record of an earlier version, if it names it.
fn remove_legacy(data_dir: &Path, network: &str, cid: &str, ifname: &str) -> Result<(), Error> {
    let path = records::dir(data_dir, network).join(legacy_name(cid, ifname));
    let Some(r) = records::read(&path).and_then(|b| parse(&b)) else {
        return Ok(());
    };
    if r.conf.name == network && r.container_id == cid && r.ifname == ifname {
        records::remove_path(&path)?;
    }
    Ok(())
}

/// Remove the attachment's record (and its record of an earlier
/// version); a missing one is fine.
pub fn remove(data_dir: &Path, network: &str, cid: &str, ifname: &str) -> Result<(), Error> {
    records::remove_path(&records::path(data_dir, network, cid, ifname))?;
    remove_legacy(data_dir, network, cid, ifname)
}

/// A record parsed; `None` when it is not one of ours.
fn parse(bytes: &[u8]) -> Option<Record> {
    let conf = Config::parse(bytes).ok()?;
    let v: Value = serde_json::from_slice(bytes).ok()?;
    // A portmap record names iptables or nftables.
    let backend = v["backend"]
        .as_str()
        .and_then(|b| b.parse().ok())
        .filter(|b| *b != Backend::Firewalld);
    let addrs = v["addrs"]
        .as_array()?
        .iter()
        .filter_map(|a| a.as_str()?.parse().ok())
        .collect();
    Some(Record {
        container_id: v["containerID"].as_str()?.to_string(),
        ifname: v["ifname"].as_str()?.to_string(),
        backend,
        conf,
        addrs,
    })
}

/// The records of `network` (container ID, ifname and content).
pub fn of_network(data_dir: &Path, network: &str) -> Vec<Record> {
    let files = records::files_in(&records::dir(data_dir, network)).into_iter();
    files
        .filter_map(|bytes| parse(&bytes))
        .filter(|r| r.conf.name == network)
        .collect()
}

/// The records of container `cid`'s other attachments: in other networks,
/// or in `network` on another interface (multus attaches a container
/// twice to one network).
pub fn of_container_others(data_dir: &Path, network: &str, cid: &str, ifname: &str) -> Vec<Record> {
    let mut out: Vec<Record> = Vec::new();
    for (d, _) in records::networks(data_dir) {
        for bytes in records::files_in(&d) {
            let Some(r) = parse(&bytes) else {
                continue;
            };
            let me = r.conf.name == network && r.ifname == ifname;
            // An attachment with records under both names counts once.
            let seen = out
                .iter()
                .any(|o| o.conf.name == r.conf.name && o.ifname == r.ifname);
            if r.container_id == cid && !me && !seen {
                out.push(r);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(d: &Path, net: &str) -> Config {
        let c = json!({"cniVersion": "1.0.0", "name": net, "type": "portmap",
            "dataDir": d, "runtimeConfig": {"portMappings": [
                {"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}]}});
        Config::parse(c.to_string().as_bytes()).unwrap()
    }

    fn addr(s: &str) -> Vec<IpNetwork> {
        vec![s.parse().unwrap()]
    }

    fn owners(rs: &[Record]) -> Vec<(String, String)> {
        let mut v: Vec<_> = rs
            .iter()
            .map(|r| (r.container_id.clone(), r.ifname.clone()))
            .collect();
        v.sort();
        v
    }

    /// Attachments whose names join alike (`x` + `eth_0`, `x_eth` + `0`)
    /// keep a record each (with `_` one overwrote the other and either
    /// DEL removed it); names too long for a file still get one.
    #[test]
    fn every_attachment_its_own_record() {
        let d = std::env::temp_dir().join(format!("cnirs-pmrec1-{}", std::process::id()));
        let c = conf(&d, "n1");
        let long = "c".repeat(300);
        write(&c, "x", "eth_0", Backend::Iptables, &addr("10.240.0.2/24")).unwrap();
        write(&c, "x_eth", "0", Backend::Iptables, &addr("10.240.0.3/24")).unwrap();
        write(&c, &long, "eth0", Backend::Iptables, &addr("10.240.0.4/24")).unwrap();
        assert!(exists(&c, "x", "eth_0") && exists(&c, "x_eth", "0") && exists(&c, &long, "eth0"));
        assert_eq!(of_network(&d, "n1").len(), 3);
        remove(&d, "n1", "x", "eth_0").unwrap();
        assert!(!exists(&c, "x", "eth_0"));
        assert!(exists(&c, "x_eth", "0"));
        remove(&d, "n1", &long, "eth0").unwrap();
        assert_eq!(
            owners(&of_network(&d, "n1")),
            [("x_eth".into(), "0".into())]
        );
        // A network name too long for a directory.
        let net = "n".repeat(300);
        let c2 = conf(&d, &net);
        write(&c2, "x", "eth0", Backend::Nftables, &addr("10.240.0.5/24")).unwrap();
        assert!(exists(&c2, "x", "eth0"));
        assert_eq!(of_network(&d, &net).len(), 1);
        assert_eq!(
            owners(&of_container_others(&d, "n1", "x", "eth0")),
            [("x".into(), "eth0".into())]
        );
        let _ = fs::remove_dir_all(&d);
    }

    /// A record of an earlier version (`<cid>_<ifname>`) is still the
    /// attachment's: found, listed, removed by DEL, replaced by ADD; but
    /// not when it names another attachment sharing its name.
    #[test]
    fn records_of_earlier_versions() {
        let d = std::env::temp_dir().join(format!("cnirs-pmrec2-{}", std::process::id()));
        let c = conf(&d, "n1");
        let old = |cid: &str, ifname: &str| {
            let dir = d.join("n1");
            fs::create_dir_all(&dir).unwrap();
            let body = content(&c, (cid, ifname), Backend::Iptables, &addr("10.240.0.2/24"));
            fs::write(dir.join(legacy_name(cid, ifname)), body).unwrap();
        };
        old("x", "eth_0");
        assert!(exists(&c, "x", "eth_0"));
        // Same file name, another attachment's content.
        assert!(!exists(&c, "x_eth", "0"));
        remove(&d, "n1", "x_eth", "0").unwrap();
        assert!(exists(&c, "x", "eth_0"));
        assert_eq!(
            owners(&of_network(&d, "n1")),
            [("x".into(), "eth_0".into())]
        );
        assert_eq!(
            owners(&of_container_others(&d, "n2", "x", "eth_0")).len(),
            1
        );
        remove(&d, "n1", "x", "eth_0").unwrap();
        assert!(!exists(&c, "x", "eth_0"));
        assert!(of_network(&d, "n1").is_empty());
        // ADD replaces it; both names count once for the others.
        old("x", "eth0");
        assert_eq!(of_container_others(&d, "n2", "x", "eth0").len(), 1);
        write(&c, "x", "eth0", Backend::Iptables, &addr("10.240.0.2/24")).unwrap();
        assert!(!d.join("n1").join("x_eth0").exists());
        assert_eq!(of_network(&d, "n1").len(), 1);
        let snap = snapshot(&d, "n1", "x", "eth0").unwrap();
        remove(&d, "n1", "x", "eth0").unwrap();
        put_back(&d, "n1", "x", "eth0", &snap).unwrap();
        assert!(exists(&c, "x", "eth0"));
        let _ = fs::remove_dir_all(&d);
    }

    /// With `dataDir` a file there is no record, and removing none works
    /// (DEL failed with "not a directory", forever).
    #[test]
    fn data_dir_a_file() {
        let d = std::env::temp_dir().join(format!("cnirs-pmrec3-{}", std::process::id()));
        fs::write(&d, "").unwrap();
        let c = conf(&d, "n1");
        assert!(!exists(&c, "x", "eth0"));
        remove(&d, "n1", "x", "eth0").unwrap();
        assert!(of_network(&d, "n1").is_empty());
        assert!(of_container_others(&d, "n1", "x", "eth0").is_empty());
        assert!(lock(&d).is_err());
        let _ = fs::remove_file(&d);
    }
}
