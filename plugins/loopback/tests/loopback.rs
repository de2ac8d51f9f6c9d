//! Black-box tests: the built `loopback` binary driven like a runtime,
//! each test in its own throwaway namespace.

use std::path::Path;

use serde_json::{Value, json};
use testsupport::{Call, PluginRun, TempDir, TestNetns, plugin_bin, sh};

const VERSIONS: [&str; 7] = [
    "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0",
];

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_loopback"))
}

fn conf(version: &str) -> String {
    json!({"cniVersion": version, "name": "lonet", "type": "loopback"}).to_string()
}

fn run(cmd: &str, netns: &str, stdin: &str) -> PluginRun {
    Call::new(cmd)
        .container_id("cnirs-lo")
        .netns(netns)
        .ifname("eth0")
        .path("/nonexistent")
        .stdin(stdin)
        .run(bin())
}

/// Whether `lo` is administratively up, from `ip -o link show lo` flags.
fn lo_up(out: &str) -> bool {
    let flags = out.split(['<', '>']).nth(1).unwrap_or_default();
    flags.split(',').any(|f| f == "UP")
}

fn ns_lo_up(ns: &TestNetns) -> bool {
    lo_up(&ns.stdout(&["ip", "-o", "link", "show", "lo"]))
}

fn host_lo_up() -> bool {
    let out = sh(&["ip", "-o", "link", "show", "lo"]);
    lo_up(&String::from_utf8_lossy(&out.stdout))
}

fn ipv6_on(ns: &TestNetns) -> bool {
    ns.stdout(&["cat", "/proc/sys/net/ipv6/conf/lo/disable_ipv6"])
        .trim()
        == "0"
}

/// The result the spec prescribes for `version`.
fn expected(version: &str, sandbox: &str, v6: bool) -> Value {
    let mut r = match version {
        "0.1.0" | "0.2.0" => json!({
            "cniVersion": version,
            "ip4": {"ip": "127.0.0.1/8"},
            "dns": {},
        }),
        "0.3.0" | "0.3.1" | "0.4.0" => json!({
            "cniVersion": version,
            "interfaces": [{"name": "lo", "mac": "00:00:00:00:00:00", "sandbox": sandbox}],
            "ips": [{"version": "4", "interface": 0, "address": "127.0.0.1/8"}],
            "dns": {},
        }),
        _ => json!({
            "cniVersion": version,
            "interfaces": [{"name": "lo", "mac": "00:00:00:00:00:00", "sandbox": sandbox}],
            "ips": [{"interface": 0, "address": "127.0.0.1/8"}],
        }),
    };
    if v6 {
        match version {
            "0.1.0" | "0.2.0" => r["ip6"] = json!({"ip": "::1/128"}),
            "0.3.0" | "0.3.1" | "0.4.0" => r["ips"]
                .as_array_mut()
                .unwrap()
                .push(json!({"version": "6", "interface": 0, "address": "::1/128"})),
            _ => r["ips"]
                .as_array_mut()
                .unwrap()
                .push(json!({"interface": 0, "address": "::1/128"})),
        }
    }
    r
}

#[test]
fn add_check_del_del() {
    let ns = TestNetns::new("loa");
    assert!(!ns_lo_up(&ns));
    let c = conf("1.1.0");

    let r = run("ADD", ns.path(), &c).ok();
    assert_eq!(r, expected("1.1.0", ns.path(), ipv6_on(&ns)));
    assert!(ns_lo_up(&ns));

    assert_eq!(run("CHECK", ns.path(), &c).ok(), Value::Null);

    assert_eq!(run("DEL", ns.path(), &c).ok(), Value::Null);
    assert!(!ns_lo_up(&ns));
    let e = run("CHECK", ns.path(), &c).err(999);
    assert_eq!(e["msg"], "loopback interface is down");

    assert_eq!(run("DEL", ns.path(), &c).ok(), Value::Null);
    assert!(!ns_lo_up(&ns));
}

#[test]
fn del_succeeds_when_the_namespace_is_gone_or_unset() {
    let mut ns = TestNetns::new("lob");
    let c = conf("1.0.0");
    run("ADD", ns.path(), &c).ok();
    let path = ns.path().to_string();
    ns.delete();
    assert!(!Path::new(&path).exists());
    assert_eq!(run("DEL", &path, &c).ok(), Value::Null);
    assert_eq!(run("DEL", "", &c).ok(), Value::Null);
    // ADD and CHECK need the namespace.
    let e = run("ADD", &path, &c).err(999);
    assert_eq!(
        e["msg"],
        format!("failed to Statfs \"{path}\": no such file or directory")
    );
    run("CHECK", &path, &c).err(999);
}

#[test]
fn regular_file_is_refused_and_left_alone() {
    let dir = TempDir::new("lof");
    let file = dir.join("not-a-netns");
    std::fs::write(&file, "keep me").unwrap();
    let path = file.to_str().unwrap();
    for cmd in ["ADD", "DEL", "CHECK"] {
        let e = run(cmd, path, &conf("1.1.0")).err(8);
        let msg = e["msg"].as_str().unwrap();
        assert!(
            msg.starts_with(&format!("unknown FS magic on \"{path}\"")),
            "{cmd}: {msg}"
        );
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
    assert!(host_lo_up());
}

/// plugins #714: a recycled `/proc/PID/ns/net` naming the runtime's own
/// namespace must never let DEL take the host's `lo` down.
#[test]
fn own_namespace_is_refused_and_host_lo_stays_up() {
    testsupport::require_root();
    assert!(host_lo_up());
    let own = format!("/proc/{}/ns/net", std::process::id());
    for cmd in ["DEL", "ADD", "CHECK"] {
        let e = run(cmd, &own, &conf("1.1.0")).err(8);
        assert_eq!(
            e["msg"], "plugin's netns and netns from CNI_NETNS should not be the same",
            "{cmd}"
        );
        assert!(host_lo_up(), "host lo went down after {cmd}");
    }
}

#[test]
fn result_shape_for_every_version() {
    for v in VERSIONS {
        let ns = TestNetns::new("loc");
        let r = run("ADD", ns.path(), &conf(v)).ok();
        assert_eq!(r, expected(v, ns.path(), ipv6_on(&ns)), "cniVersion {v}");
    }
}

#[test]
fn no_ipv6_address_when_ipv6_is_disabled() {
    let ns = TestNetns::new("lod");
    ns.exec(&["sysctl", "-q", "-w", "net.ipv6.conf.lo.disable_ipv6=1"]);
    for v in ["0.2.0", "0.4.0", "1.1.0"] {
        let r = run("ADD", ns.path(), &conf(v)).ok();
        assert_eq!(r, expected(v, ns.path(), false), "cniVersion {v}");
    }
}

#[test]
fn extra_address_on_lo_is_refused_before_anything_changes() {
    let ns = TestNetns::new("loe");
    let octet = std::process::id() % 250 + 2;
    let ip = format!("10.240.77.{octet}");
    ns.exec(&["ip", "addr", "add", &format!("{ip}/32"), "dev", "lo"]);
    let e = run("ADD", ns.path(), &conf("1.0.0")).err(999);
    assert_eq!(
        e["msg"],
        format!("loopback interface found with non-loopback address \"{ip}\"")
    );
    assert!(!ns_lo_up(&ns), "lo must stay down");
}

/// A chain `noop (PASSTHROUGH) → loopback`: loopback hands the previous
/// result on (in the config's version) and still brings `lo` up.
#[test]
fn chained_after_noop_passes_the_previous_result_through() {
    let ns = TestNetns::new("lof");
    let dir = TempDir::new("loc");
    let debug = dir.join("debug.json");
    std::fs::write(&debug, r#"{"ReportResult":"PASSTHROUGH"}"#).unwrap();
    let earlier = json!({
        "cniVersion": "1.0.0",
        "interfaces": [{"name": "eth0", "mac": "0a:58:0a:f0:01:02", "sandbox": ns.path()}],
        "ips": [{"address": "10.240.1.2/24", "gateway": "10.240.1.1", "interface": 0}],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dns": {"nameservers": ["10.240.1.1"]},
    });
    let noop_conf = json!({
        "cniVersion": "0.4.0", "name": "lonet", "type": "noop", "prevResult": earlier,
    });
    let noop = Call::new("ADD")
        .container_id("cnirs-lo")
        .netns(ns.path())
        .ifname("eth0")
        .path("/nonexistent")
        .args(&format!("DEBUG={}", debug.display()))
        .stdin(noop_conf.to_string())
        .run(&plugin_bin("noop"))
        .ok();
    assert_eq!(noop["ips"][0]["version"], "4", "noop converted to 0.4.0");

    let lo_conf = json!({
        "cniVersion": "0.4.0", "name": "lonet", "type": "loopback", "prevResult": noop,
    });
    let r = run("ADD", ns.path(), &lo_conf.to_string()).ok();
    assert_eq!(r, noop);
    assert!(ns_lo_up(&ns));
}

#[test]
fn previous_result_is_converted_to_the_config_version() {
    let ns = TestNetns::new("log");
    let lo_conf = json!({
        "cniVersion": "0.2.0", "name": "lonet", "type": "loopback",
        "prevResult": {
            "cniVersion": "1.0.0",
            "interfaces": [{"name": "eth0", "sandbox": ns.path()}],
            "ips": [{"address": "10.240.2.2/24", "gateway": "10.240.2.1", "interface": 0}],
        },
    });
    let r = run("ADD", ns.path(), &lo_conf.to_string()).ok();
    assert_eq!(
        r,
        json!({
            "cniVersion": "0.2.0",
            "ip4": {"ip": "10.240.2.2/24", "gateway": "10.240.2.1"},
            "dns": {},
        })
    );
    // A prevResult that cannot be parsed fails before lo is touched.
    let bad = json!({
        "cniVersion": "1.0.0", "name": "lonet", "type": "loopback",
        "prevResult": {"ips": [{"address": "nope"}]},
    });
    run("ADD", ns.path(), &bad.to_string()).err(6);
    assert!(ns_lo_up(&ns), "lo stays as the first ADD left it");
    let ns2 = TestNetns::new("loh");
    run("ADD", ns2.path(), &bad.to_string()).err(6);
    assert!(!ns_lo_up(&ns2), "lo untouched on a bad prevResult");
}

#[test]
fn status_gc_and_version() {
    let c = conf("1.1.0");
    assert_eq!(run("STATUS", "", &c).ok(), Value::Null);
    let gc = json!({"cniVersion": "1.1.0", "name": "lonet", "type": "loopback",
                    "cni.dev/valid-attachments": []});
    assert_eq!(run("GC", "", &gc.to_string()).ok(), Value::Null);
    let v = run("VERSION", "", "").ok();
    assert_eq!(v["supportedVersions"], json!(VERSIONS));
    let about = Call::new("").run(bin());
    assert_eq!(about.code, 0);
    assert!(
        about
            .stderr
            .starts_with(&format!("{}\n", skel::about("loopback"))),
        "{}",
        about.stderr
    );
}
