//! Shared helpers of the black-box tests: run the built binary (or the
//! reference one) like a runtime, and read a lease directory.
#![allow(dead_code)]

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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

/// Start `bin` as a runtime does, config on stdin, without waiting.
pub fn spawn(bin: &Path, cmd: &str, id: &str, stdin: &str) -> Child {
    let mut child = Command::new(bin)
        .env_clear()
        .env("CNI_COMMAND", cmd)
        .env("CNI_CONTAINERID", id)
        .env("CNI_NETNS", "/run/netns/cnirs-hl-unused")
        .env("CNI_IFNAME", "eth0")
        .env("CNI_PATH", "/nonexistent")
        .env("CNI_ARGS", "")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {}: {e}", bin.display()));
    // Configs are far smaller than a pipe buffer: this write never blocks.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    child
}

/// Like [`run`], but a call still running after the tests' deadline
/// ([`testsupport::deadline`]) is killed and fails the test, so that a
/// hang cannot hang the test run.
pub fn run_bounded(bin: &Path, cmd: &str, id: &str, stdin: &str) -> PluginRun {
    let bound = testsupport::deadline();
    let mut child = spawn(bin, cmd, id, stdin);
    let deadline = Instant::now() + bound;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{} {cmd} {id} did not return within {bound:?}",
                bin.display()
            );
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    // Both outputs are small enough to sit in their pipes until now.
    let (mut stdout, mut stderr) = (String::new(), String::new());
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_string(&mut stdout);
    }
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    PluginRun {
        code: status.code().unwrap_or(-1),
        pid: child.id(),
        stdout,
        stderr,
    }
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
