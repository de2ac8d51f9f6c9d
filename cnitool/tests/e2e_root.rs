//! End to end as root: cnitool drives the suite's bridge, host-local,
//! loopback and noop binaries. cnitool runs inside a throwaway "host"
//! namespace (bridge, forwarding sysctls) and attaches throwaway container
//! namespaces, so the real host is never touched.

mod common;

use common::{Setup, id_for};
use serde_json::{Value, json};
use testsupport::{TempDir, TestNetns, require_root, unique_name};

struct Net {
    setup: Setup,
    ipam: TempDir,
    /// Where cnitool runs; the bridge lives here.
    host: TestNetns,
    bridge: String,
    name: String,
}

/// A network `bridge` (gateway, host-local in `subnet`) followed by
/// `tail` plugin objects.
fn network(version: &str, subnet: &str, tail: impl FnOnce(&Setup) -> Vec<Value>) -> Net {
    require_root();
    let setup = Setup::with_plugins(&["bridge", "host-local", "loopback", "noop"]);
    let ipam = TempDir::new("ipam");
    let host = TestNetns::new("h");
    let bridge = unique_name("cnirsbr");
    let name = unique_name("cnirsnet");
    let mut plugins = vec![json!({
        "type": "bridge",
        "bridge": bridge,
        "isGateway": true,
        "ipam": {
            "type": "host-local",
            "dataDir": ipam.path(),
            "ranges": [[{"subnet": subnet}]],
            "routes": [{"dst": "0.0.0.0/0"}],
        },
    })];
    plugins.extend(tail(&setup));
    setup.write_conf(
        "10-e2e.conflist",
        &json!({"cniVersion": version, "name": name, "plugins": plugins}),
    );
    Net {
        setup,
        ipam,
        host,
        bridge,
        name,
    }
}

impl Net {
    fn run(&self, args: &[&str]) -> common::Run {
        self.setup.run_in(self.host.name(), args)
    }

    fn leases(&self) -> Vec<String> {
        let dir = self.ipam.join(&self.name);
        let mut out: Vec<String> = std::fs::read_dir(dir)
            .map(|r| {
                r.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.parse::<std::net::IpAddr>().is_ok())
                    .collect()
            })
            .unwrap_or_default();
        out.sort();
        out
    }
}

#[test]
fn bridge_and_loopback_add_check_del_del_again() {
    let net = network("1.0.0", "10.241.1.0/24", |_| {
        vec![json!({"type": "loopback"})]
    });
    let ns = TestNetns::new("ct");
    let s = &net.setup;

    let result = net.run(&["add", &net.name, ns.path()]).ok();
    assert_eq!(result["ips"][0]["address"], "10.241.1.2/24");
    assert_eq!(result["ips"][0]["gateway"], "10.241.1.1");
    assert_eq!(result["interfaces"][0]["name"], net.bridge);
    assert!(
        ns.stdout(&["ip", "-4", "addr", "show", "eth0"])
            .contains("10.241.1.2/24")
    );
    assert!(ns.stdout(&["ip", "link", "show", "lo"]).contains(",UP"));
    // The bridge is in the throwaway host namespace, not on the real host.
    assert!(
        net.host
            .stdout(&["ip", "link", "show", &net.bridge])
            .contains("UP")
    );
    assert_eq!(net.leases(), ["10.241.1.2"]);
    let cache = s.cache_file(&net.name, &id_for(ns.path()), "eth0");
    assert!(cache.exists());

    net.run(&["check", &net.name, ns.path()]).ok();

    net.run(&["del", &net.name, ns.path()]).ok();
    assert!(
        !ns.exec_output(&["ip", "link", "show", "eth0"])
            .status
            .success()
    );
    assert!(net.leases().is_empty(), "lease not released");
    assert!(!cache.exists());

    // DEL is idempotent; CHECK now fails because eth0 is gone.
    net.run(&["del", &net.name, ns.path()]).ok();
    let err = net.run(&["check", &net.name, ns.path()]).fails(1);
    assert!(
        err["msg"]
            .as_str()
            .unwrap()
            .starts_with("plugin type=\"bridge\" failed (check)"),
        "{err}"
    );
}

#[test]
fn bridge_then_noop_passthrough() {
    let net = network("1.1.0", "10.241.2.0/24", |s| {
        vec![s.noop("tail", json!({"ReportResult": "PASSTHROUGH"}))]
    });
    let ns = TestNetns::new("pt");
    let s = &net.setup;

    let result = net.run(&["add", &net.name, ns.path()]).ok();
    assert_eq!(result["cniVersion"], "1.1.0");
    assert_eq!(result["ips"][0]["address"], "10.241.2.2/24");
    let calls = s.calls();
    assert_eq!(calls.len(), 1);
    // noop saw bridge's result and handed it on unchanged.
    let mut prev = calls[0].stdin["prevResult"].clone();
    prev["cniVersion"] = json!("1.1.0");
    assert_eq!(prev, result);

    net.run(&["check", &net.name, ns.path()]).ok();
    net.run(&["del", &net.name, ns.path()]).ok();
    let commands: Vec<String> = s.calls().iter().map(|c| c.command.clone()).collect();
    assert_eq!(commands, ["ADD", "CHECK", "DEL"]);
    assert!(net.leases().is_empty());
    assert!(
        !ns.exec_output(&["ip", "link", "show", "eth0"])
            .status
            .success()
    );
}

#[test]
fn gc_removes_an_attachment_whose_container_is_gone_and_status_is_ready() {
    let net = network("1.1.0", "10.241.3.0/24", |_| {
        vec![json!({"type": "loopback"})]
    });
    let s = &net.setup;
    let keep = TestNetns::new("gk");
    let mut gone = TestNetns::new("gg");
    let gone_path = gone.path().to_string();

    net.run(&["add", &net.name, keep.path()]).ok();
    net.run(&["add", &net.name, &gone_path]).ok();
    assert_eq!(net.leases(), ["10.241.3.2", "10.241.3.3"]);
    net.run(&["status", &net.name]).ok();

    // The container goes away without a DEL.
    gone.delete();
    let valid = format!("{}/eth0", id_for(keep.path()));
    let run = net.run(&["gc", &net.name, "--valid", &valid]);
    run.ok();
    assert!(
        run.stderr.contains(&format!(
            "deleted stale attachment {}/eth0",
            id_for(&gone_path)
        )),
        "{run:?}"
    );
    assert_eq!(net.leases(), ["10.241.3.2"]);
    assert!(
        !s.cache_file(&net.name, &id_for(&gone_path), "eth0")
            .exists()
    );
    assert!(
        s.cache_file(&net.name, &id_for(keep.path()), "eth0")
            .exists()
    );
    net.run(&["check", &net.name, keep.path()]).ok();
    net.run(&["del", &net.name, keep.path()]).ok();
    assert!(net.leases().is_empty());
}
