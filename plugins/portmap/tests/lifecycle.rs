//! The protocol around the rules, with each backend: prevResult passed
//! through in the config's version, the reference's messages, DEL without
//! the namespace, prevResult or mappings, DEL twice, GC that spares other
//! networks' rules, STATUS, calls without mappings that touch nothing,
//! DEL of one of two attachments of a container to one network (nftables),
//! and DELs of one attachment at once.

mod common;

use common::*;
use serde_json::{Value, json};
use testsupport::traffic::Server;

fn maps() -> Value {
    both(8080, None)
}

#[test]
fn add_passes_prev_result_through_in_the_config_version() {
    let lab = Lab::new("pp");
    let (a, ra) = lab.container("ca");
    for backend in ["iptables", "nftables"] {
        let mut conf = lab.conf(None, maps(), json!({"backend": backend}));
        conf["cniVersion"] = json!("0.4.0");
        let out = lab
            .portmap("ADD", &with_prev(&conf, &ra), "ca", a.path())
            .ok();
        assert_eq!(out["cniVersion"], "0.4.0");
        assert_eq!(out["ips"][0]["version"], "4");
        assert_eq!(out["ips"][0]["address"], ra["ips"][0]["address"]);
        lab.portmap("DEL", &conf, "ca", "").ok();
    }
    // Without mappings, prevResult comes back as it is.
    let conf = lab.conf(None, json!([]), json!({}));
    let out = lab
        .portmap("ADD", &with_prev(&conf, &ra), "ca", a.path())
        .ok();
    assert_eq!(out, ra);
}

#[test]
fn reference_messages() {
    let lab = Lab::new("pe");
    let (a, ra) = lab.container("ca");
    let conf = lab.conf(None, json!([]), json!({}));
    // prevResult is needed even without mappings.
    let e = lab.portmap("ADD", &conf, "ca", a.path()).err(999);
    assert_eq!(e["msg"], "must be called as chained plugin");
    let e = lab.portmap("CHECK", &conf, "ca", a.path()).err(999);
    assert_eq!(e["msg"], "Required prevResult missing");
    let bad = lab.conf(
        None,
        json!([{"hostPort": 0, "containerPort": 80, "protocol": "tcp"}]),
        json!({}),
    );
    let e = lab
        .portmap("ADD", &with_prev(&bad, &ra), "ca", a.path())
        .err(999);
    assert_eq!(
        e["msg"],
        "failed to parse config: Invalid host port number: 0"
    );
    let e = lab.portmap("DEL", &bad, "ca", "").err(999);
    assert_eq!(
        e["msg"],
        "failed to parse config: Invalid host port number: 0"
    );
    let opts = lab.conf(
        None,
        maps(),
        json!({"backend": "nftables", "externalSetMarkChain": "X"}),
    );
    let e = lab
        .portmap("ADD", &with_prev(&opts, &ra), "ca", a.path())
        .err(999);
    assert_eq!(
        e["msg"],
        "failed to parse config: nftables backend was requested but configuration contains iptables-specific options [externalSetMarkChain]"
    );
    let unknown = lab.conf(None, maps(), json!({"backend": "pf"}));
    let e = lab
        .portmap("ADD", &with_prev(&unknown, &ra), "ca", a.path())
        .err(999);
    assert_eq!(
        e["msg"],
        "failed to parse config: unrecognized backend \"pf\""
    );
    let cond = lab.conf(
        None,
        maps(),
        json!({"backend": "nftables", "conditionsV4": ["meta", "mark", "1"]}),
    );
    let e = lab
        .portmap("ADD", &with_prev(&cond, &ra), "ca", a.path())
        .err(999);
    assert!(
        e["msg"]
            .as_str()
            .unwrap()
            .contains("unsupported nftables condition"),
        "{e}"
    );
    assert!(lab.rules_of(None, "ca").is_empty());
    assert!(lab.host.sh(&["nft", "list", "ruleset"]).is_empty());
}

fn del_finds_rules_without_anything(backend: &str) {
    let lab = Lab::new(&format!("pd{}", &backend[..1]));
    let (a, ra) = lab.container("ca");
    let _s = Server::start(&a, 80, "a");
    let conf = lab.conf(None, maps(), json!({"backend": backend}));
    lab.portmap("ADD", &with_prev(&conf, &ra), "ca", a.path())
        .ok();
    assert!(!lab.rules_of(None, "ca").is_empty());
    // The runtime lost runtimeConfig, prevResult and the namespace.
    let bare = lab.conf(None, json!([]), json!({"backend": backend}));
    lab.portmap("DEL", &bare, "ca", "").ok();
    assert!(
        lab.rules_of(None, "ca").is_empty(),
        "{:#?}",
        lab.rules_of(None, "ca")
    );
    assert!(silent("tcp", &lab.outside, sock(HOST4, 8080)));
    lab.portmap("DEL", &bare, "ca", "").ok();
    lab.portmap("DEL", &conf, "ca", "").ok();
    // A config without the backend looks at both.
    lab.portmap("ADD", &with_prev(&conf, &ra), "ca", a.path())
        .ok();
    let unset = lab.conf(None, maps(), json!({}));
    lab.portmap("DEL", &unset, "ca", "/run/netns/cnirs-gone-long-ago")
        .ok();
    assert!(lab.rules_of(None, "ca").is_empty());
    assert_eq!(lab.records(), 0);
}

#[test]
fn del_finds_rules_without_anything_iptables() {
    del_finds_rules_without_anything("iptables");
}

#[test]
fn del_finds_rules_without_anything_nftables() {
    del_finds_rules_without_anything("nftables");
}

/// Two networks map ports to the same container: GC and DEL of one leave
/// the other's rules, which still carry traffic.
fn gc_spares_other_networks(backend: &str) {
    let lab = Lab::new(&format!("pg{}", &backend[..1]));
    let (a, ra) = lab.container("ca");
    let (b, rb) = lab.container("cb");
    let _sa = Server::start(&a, 80, "a");
    let _sb = Server::start(&b, 80, "b");
    let one = lab.conf(
        Some("netone"),
        both(8080, None),
        json!({"backend": backend}),
    );
    let two = lab.conf(
        Some("nettwo"),
        both(8081, None),
        json!({"backend": backend}),
    );
    lab.portmap("ADD", &with_prev(&one, &ra), "ca", a.path())
        .ok();
    lab.portmap("ADD", &with_prev(&one, &rb), "cb", b.path())
        .ok();
    lab.portmap("ADD", &with_prev(&two, &ra), "ca", a.path())
        .ok();
    let mut gc = lab.conf(Some("netone"), json!([]), json!({"backend": backend}));
    gc["cniVersion"] = json!("1.1.0");
    // No list: nothing removed.
    lab.portmap("GC", &gc, "", "").ok();
    assert_eq!(
        tag("tcp", &lab.outside, sock(HOST4, 8080)).as_deref(),
        Some("a")
    );
    gc["cni.dev/valid-attachments"] = json!([{"containerID": "cb", "ifname": "eth0"}]);
    lab.portmap("GC", &gc, "", "").ok();
    // netone's rules of ca are gone, cb's stay, nettwo's of ca stay.
    assert!(lab.rules_of(Some("netone"), "cb").len() > 1);
    assert_eq!(
        tag("tcp", &lab.outside, sock(HOST4, 8081)).as_deref(),
        Some("a")
    );
    assert_eq!(
        tag("udp", &lab.outside, sock(HOST4, 8081)).as_deref(),
        Some("a")
    );
    assert_eq!(
        tag("tcp", &lab.outside, sock(HOST4, 8080)).as_deref(),
        Some("b")
    );
    // DEL of cb in netone leaves nettwo alone too; then nettwo's DEL.
    lab.portmap("DEL", &one, "ca", "").ok();
    assert_eq!(
        tag("tcp", &lab.outside, sock(HOST4, 8081)).as_deref(),
        Some("a")
    );
    lab.portmap("DEL", &one, "cb", "").ok();
    lab.portmap("DEL", &two, "ca", "").ok();
    assert!(lab.rules_of(Some("netone"), "ca").is_empty());
    assert!(lab.rules_of(Some("netone"), "cb").is_empty());
    assert!(lab.rules_of(Some("nettwo"), "ca").is_empty());
    let mut status = lab.conf(None, json!([]), json!({"backend": backend}));
    status["cniVersion"] = json!("1.1.0");
    lab.portmap("STATUS", &status, "", "").ok();
    lab.portmap("GC", &gc, "", "").ok();
}

#[test]
fn gc_spares_other_networks_iptables() {
    gc_spares_other_networks("iptables");
}

#[test]
fn gc_spares_other_networks_nftables() {
    gc_spares_other_networks("nftables");
}

/// Without mappings, ADD and DEL open no socket and start no process
/// (strace sees the plugin's own start only), and need no iptables on
/// PATH nor a usable data directory.
#[test]
fn no_mappings_touch_nothing() {
    let lab = Lab::new("pn");
    let (a, ra) = lab.container("ca");
    let mut conf = lab.conf(None, json!([]), json!({}));
    conf["dataDir"] = json!("/proc/cnirs-nothing");
    let traced = testsupport::strace::Traced::new(
        "portmap",
        lab.host.ns.name(),
        &["PATH=/cnirs-nowhere"],
        "",
        "socket,execve",
        bin(),
    );
    for cmd in ["ADD", "DEL"] {
        let out = lab
            .host
            .request(cmd, &with_prev(&conf, &ra), "ca", a.path(), "eth0")
            .run(&traced.wrapper);
        if cmd == "ADD" {
            assert_eq!(out.ok(), ra);
        } else {
            out.ok();
        }
        let trace = traced.log();
        let calls: Vec<&str> = trace.lines().filter(|l| !l.contains("exited")).collect();
        assert_eq!(calls.len(), 1, "{cmd}: {trace}");
        assert!(calls[0].contains("execve("), "{trace}");
    }
}

/// DEL with the backend unset looks for nftables rules too; when the
/// container has none (iptables rules only), it reads no other
/// attachment's record (it read every record of every network).
#[test]
fn iptables_del_reads_no_other_record() {
    let lab = Lab::new("pr");
    let (a, ra) = lab.container("ca");
    let (b, rb) = lab.container("cb");
    let conf = lab.conf(None, maps(), json!({}));
    lab.portmap("ADD", &with_prev(&conf, &ra), "ca", a.path())
        .ok();
    lab.portmap("ADD", &with_prev(&conf, &rb), "cb", b.path())
        .ok();
    assert_eq!(lab.records(), 2);
    let traced = testsupport::strace::Traced::new(
        "portmap",
        lab.host.ns.name(),
        &["PATH=/usr/sbin:/usr/bin:/sbin:/bin"],
        "",
        "openat",
        bin(),
    );
    lab.host
        .request("DEL", &conf, "ca", "", "eth0")
        .run(&traced.wrapper)
        .ok();
    let trace = traced.log();
    assert!(trace.contains("ca:eth0"), "{trace}");
    assert!(!trace.contains("cb:eth0"), "{trace}");
    assert!(lab.rules_of(None, "ca").is_empty());
    assert!(!lab.rules_of(None, "cb").is_empty());
    assert_eq!(lab.records(), 1);
    lab.portmap("DEL", &conf, "cb", "").ok();
    assert!(lab.rules_of(None, "cb").is_empty());
}

/// One container attached twice to the network (multus: eth0 and net1),
/// with nftables: DEL of one attachment, with or without its mappings,
/// leaves the other's rules (both carry the bare container ID as comment;
/// DEL took every rule of it but those of other networks' records).
#[test]
fn del_of_one_attachment_spares_the_other_nftables() {
    let lab = Lab::new("pmm");
    let (a, ra) = lab.container("ca");
    let rb = lab
        .host
        .call("ADD", &lab.bridge_conf(), "ca", a.path(), "net1")
        .ok();
    let _s = Server::start(&a, 80, "a");
    let nft = json!({"backend": "nftables"});
    let one = lab.conf(None, both(8080, None), nft.clone());
    let two = lab.conf(None, both(8081, None), nft.clone());
    lab.portmap("ADD", &with_prev(&one, &ra), "ca", a.path())
        .ok();
    lab.host
        .request("ADD", &with_prev(&two, &rb), "ca", a.path(), "net1")
        .run_in(lab.host.ns.name(), bin())
        .ok();
    let table = || lab.host.sh(&["nft", "list", "table", "ip", "cni_hostport"]);
    assert!(table().contains("dport 8080") && table().contains("dport 8081"));
    // eth0's DEL without mappings goes by its record.
    let bare = lab.conf(None, json!([]), nft);
    lab.portmap("DEL", &bare, "ca", "").ok();
    let left = table();
    assert!(!left.contains("dport 8080"), "{left}");
    assert!(left.contains("dport 8081"), "{left}");
    assert_eq!(
        tag("tcp", &lab.outside, sock(HOST4, 8081)).as_deref(),
        Some("a")
    );
    assert!(silent("tcp", &lab.outside, sock(HOST4, 8080)));
    lab.host
        .request("DEL", &two, "ca", "", "net1")
        .run_in(lab.host.ns.name(), bin())
        .ok();
    assert!(lab.rules_of(None, "ca").is_empty());
    assert_eq!(lab.records(), 0);
}

/// DELs of one attachment at once (a runtime retrying while the first is
/// still running) all succeed and leave nothing, with each backend.
fn concurrent_dels(backend: &str) {
    let lab = Lab::new(&format!("pc{}", &backend[..1]));
    let (a, ra) = lab.container("ca");
    let conf = lab.conf(None, maps(), json!({"backend": backend}));
    for _ in 0..5 {
        lab.portmap("ADD", &with_prev(&conf, &ra), "ca", a.path())
            .ok();
        std::thread::scope(|s| {
            let runs: Vec<_> = (0..3)
                .map(|_| s.spawn(|| lab.portmap("DEL", &conf, "ca", "")))
                .collect();
            for r in runs {
                r.join().unwrap().ok();
            }
        });
        assert!(lab.rules_of(None, "ca").is_empty());
        assert_eq!(lab.records(), 0);
    }
}

#[test]
fn concurrent_dels_iptables() {
    concurrent_dels("iptables");
}

#[test]
fn concurrent_dels_nftables() {
    concurrent_dels("nftables");
}

/// No record is written through a link planted at its name, its
/// temporary file's or the lock's, with either backend: the links'
/// targets stay as they were, ADD writes root-only files in their place,
/// DEL removes them. A network directory that is a link is refused.
#[test]
fn planted_links_are_never_followed() {
    use std::os::unix::fs::PermissionsExt;
    let lab = Lab::new("ppl");
    let (a, ra) = lab.container("ca");
    for backend in ["iptables", "nftables"] {
        let conf = lab.conf(None, maps(), json!({"backend": backend}));
        let dir = lab.records.join(&lab.host.net);
        let mut planted = testsupport::planted::Planted::new();
        planted.plant(&[
            dir.join("ca:eth0"),
            dir.join(".ca:eth0.tmp"),
            lab.records.join(".lock"),
        ]);
        lab.portmap("ADD", &with_prev(&conf, &ra), "ca", a.path())
            .ok();
        planted.check(backend);
        assert!(
            planted.still_links().is_empty(),
            "{:?}",
            planted.still_links()
        );
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir.join("ca:eth0")), 0o600);
        lab.portmap("DEL", &with_prev(&conf, &ra), "ca", a.path())
            .ok();
        planted.check(backend);
        assert_eq!(lab.records(), 0);
        assert!(lab.rules_of(None, "ca").is_empty());
    }
    let other = lab.conf(Some("cnirsplanted"), maps(), json!({"backend": "nftables"}));
    let elsewhere = testsupport::TempDir::new("pmelsewhere");
    std::os::unix::fs::symlink(elsewhere.path(), lab.records.join("cnirsplanted")).unwrap();
    let e = lab
        .portmap("ADD", &with_prev(&other, &ra), "ca", a.path())
        .err(999);
    assert!(e["msg"].as_str().unwrap().contains("symbolic link"), "{e}");
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    assert!(lab.rules_of(Some("cnirsplanted"), "ca").is_empty());
}
