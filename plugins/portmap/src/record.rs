//! A record per attachment, written by ADD when it installs rules:
//! `<dataDir>/<network>/<containerID>_<ifname>` (default dataDir
//! `/run/cni/portmap`: the rules do not outlive a reboot, neither do the
//! records), holding the backend, the container addresses and the
//! options the rules were made from, as a portmap config (so it is read
//! back by [`Config::parse`]) plus `containerID`, `ifname` and `addrs`.
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
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use cni_firewall::Backend;
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

fn dir(data_dir: &Path, network: &str) -> PathBuf {
    data_dir.join(network)
}

fn file_name(cid: &str, ifname: &str) -> String {
    format!("{cid}_{ifname}")
}

fn io_error(what: &str, path: &Path, e: &std::io::Error) -> Error {
    Error::internal(format!("{what} {}: {}", path.display(), skel::io_text(e)))
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
    let d = dir(&conf.data_dir, &conf.name);
    fs::create_dir_all(&d).map_err(|e| io_error("create", &d, &e))?;
    let path = d.join(file_name(cid, ifname));
    let tmp = d.join(format!(".{}.tmp", file_name(cid, ifname)));
    fs::write(&tmp, content(conf, (cid, ifname), backend, addrs))
        .map_err(|e| io_error("write", &tmp, &e))?;
    fs::rename(&tmp, &path).map_err(|e| io_error("rename", &tmp, &e))
}

/// An exclusive lock on `<dataDir>/.lock`, held while ADD reads and
/// writes the shared iptables chains: two ADDs at once would each find a
/// shared rule missing and both append it.
pub fn lock(data_dir: &Path) -> Result<fs::File, Error> {
    fs::create_dir_all(data_dir).map_err(|e| io_error("create", data_dir, &e))?;
    let path = data_dir.join(".lock");
    let f = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| io_error("open", &path, &e))?;
    f.lock().map_err(|e| io_error("lock", &path, &e))?;
    Ok(f)
}

/// Whether the attachment has a record.
pub fn exists(conf: &Config, cid: &str, ifname: &str) -> bool {
    dir(&conf.data_dir, &conf.name)
        .join(file_name(cid, ifname))
        .exists()
}

/// Remove the attachment's record; a missing one is fine.
pub fn remove(data_dir: &Path, network: &str, cid: &str, ifname: &str) -> Result<(), Error> {
    let path = dir(data_dir, network).join(file_name(cid, ifname));
    match fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_error("remove", &path, &e)),
    }
}

/// A record read back; `None` when it is not one of ours.
fn read(path: &Path) -> Option<Record> {
    let bytes = fs::read(path).ok()?;
    let conf = Config::parse(&bytes).ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    let backend = match v["backend"].as_str() {
        Some("iptables") => Some(Backend::Iptables),
        Some("nftables") => Some(Backend::Nftables),
        _ => None,
    };
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
    let d = dir(data_dir, network);
    let Ok(entries) = fs::read_dir(&d) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| !e.file_name().as_encoded_bytes().starts_with(b"."))
        .filter_map(|e| read(&e.path()))
        .collect()
}

/// The records of container `cid` in networks other than `network`.
pub fn of_container_elsewhere(data_dir: &Path, network: &str, cid: &str) -> Vec<Record> {
    let Ok(nets) = fs::read_dir(data_dir) else {
        return Vec::new();
    };
    nets.flatten()
        .filter_map(|n| n.file_name().into_string().ok())
        .filter(|n| n != network)
        .flat_map(|n| of_network(data_dir, &n))
        .filter(|r| r.container_id == cid)
        .collect()
}
