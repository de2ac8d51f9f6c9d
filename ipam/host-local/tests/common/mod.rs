//! Shared helpers of the black-box tests: run the built binary (or the
//! reference one) like a runtime, and read a lease directory.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};

use testsupport::{Call, PluginRun};

pub fn ours() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_host-local"))
}

/// The reference Go binary (Debian's containernetworking-plugins, which
/// scripts/test.sh installs).
pub fn reference() -> PathBuf {
    let p = PathBuf::from("/usr/lib/cni/host-local");
    assert!(
        p.is_file(),
        "{} missing: install Debian's containernetworking-plugins (scripts/test.sh does)",
        p.display()
    );
    p
}

/// A network config with the given `ipam` members.
pub fn conf(version: &str, data_dir: &Path, ipam: &str) -> String {
    format!(
        r#"{{"cniVersion":"{version}","name":"net1","type":"bridge","ipam":{{"type":"host-local","dataDir":"{}",{ipam}}}}}"#,
        data_dir.display()
    )
}

pub fn call(cmd: &str, id: &str, ifname: &str) -> Call {
    Call::new(cmd)
        .container_id(id)
        .ifname(ifname)
        .netns("/run/netns/cnirs-hl-unused")
        .path("/nonexistent")
}

pub fn run(bin: &Path, cmd: &str, id: &str, stdin: &str) -> PluginRun {
    call(cmd, id, "eth0").stdin(stdin).run(bin)
}

/// The addresses of an ADD result of any version.
pub fn addresses(result: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(ips) = result["ips"].as_array() {
        out.extend(
            ips.iter()
                .map(|i| i["address"].as_str().unwrap().to_string()),
        );
    }
    for k in ["ip4", "ip6"] {
        if let Some(ip) = result[k]["ip"].as_str() {
            out.push(ip.to_string());
        }
    }
    out.into_iter()
        .map(|a| a.split('/').next().unwrap().to_string())
        .collect()
}

/// Lease files (name, content) of `<dataDir>/net1`, sorted.
pub fn leases(data_dir: &Path) -> Vec<(String, String)> {
    testsupport::lease_files(&data_dir.join("net1"))
}

/// Random bytes from the kernel (no rand crate).
pub fn random_u32s(n: usize) -> Vec<u32> {
    let mut buf = vec![0u8; n * 4];
    use std::io::Read;
    fs::File::open("/dev/urandom")
        .unwrap()
        .read_exact(&mut buf)
        .unwrap();
    buf.chunks(4)
        .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
