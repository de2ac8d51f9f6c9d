//! Wire compatibility with the reference (Debian's v1.1.1 `dhcp` in
//! /usr/lib/cni) on a real server: its plugin against our daemon, ours
//! against its daemon, a node swapping daemons while pods hold leases,
//! the same results from both pairs, and a chain with the reference's
//! macvlan whose routes land in the container.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{Daemon, GO_DHCP, GO_MACVLAN, Lan, addr, call, conf, configure, ours, wait_for};
use serde_json::{Value, json};

const LONG: Duration = Duration::from_secs(90);

fn go() -> &'static Path {
    Path::new(GO_DHCP)
}

#[test]
fn the_go_plugin_works_against_our_daemon() {
    let lan = Lan::new(21);
    let srv = lan.server(1, &[]);
    let c = lan.container();
    let d = Daemon::ours(&lan.ns, &["-timeout=5s"]);
    let conf = conf("dnet", &d.socket, "1.0.0", json!({}));
    let r = call(go(), "ADD", &conf, "ctrgo", c.path()).ok();
    assert_eq!(srv.lease_of("ctrgo/dnet/eth0"), Some(addr(&r)));
    assert_eq!(r["ips"][0]["gateway"], "10.247.21.1");
    call(go(), "CHECK", &conf, "ctrgo", c.path()).ok();
    // Errors travel back as the reference's text.
    let e = call(go(), "ADD", &conf, "ctrgo2", "/nonexistent/netns").err(999);
    assert_eq!(
        e["msg"],
        "error calling DHCP.Allocate: failed to Statfs \"/nonexistent/netns\": no such file or directory"
    );
    call(go(), "DEL", &conf, "ctrgo", c.path()).ok();
    wait_for("the release", LONG, || {
        srv.lease_of("ctrgo/dnet/eth0").is_none()
    });
    assert!(d.records().is_empty());
}

#[test]
fn our_plugin_works_against_the_go_daemon() {
    let lan = Lan::new(22);
    let srv = lan.server(1, &[]);
    let c = lan.container();
    let d = Daemon::go(&lan.ns, &[]);
    let conf = conf("dnet", &d.socket, "1.0.0", json!({}));
    let r = call(&ours(), "ADD", &conf, "ctrrs", c.path()).ok();
    assert_eq!(srv.lease_of("ctrrs/dnet/eth0"), Some(addr(&r)));
    let e = call(
        &ours(),
        "ADD",
        &conf,
        "ctrrs2",
        c.path().replace("ctr", "nope").as_str(),
    )
    .err(999);
    assert!(
        e["msg"]
            .as_str()
            .unwrap()
            .starts_with("error calling DHCP.Allocate: "),
        "{e}"
    );
    call(&ours(), "DEL", &conf, "ctrrs", c.path()).ok();
    wait_for("the release", LONG, || {
        srv.lease_of("ctrrs/dnet/eth0").is_none()
    });
    // GC against a daemon without it: nothing to collect, no error.
    let conf11 = common::conf("dnet", &d.socket, "1.1.0", json!({}));
    call(&ours(), "GC", &conf11, "", "").ok();
}

#[test]
fn a_node_swaps_daemons_while_pods_hold_leases() {
    let lan = Lan::new(23);
    let srv = lan.server(1, &[]);
    let (c1, c2) = (lan.container(), lan.container());
    let mut god = Daemon::go(&lan.ns, &[]);
    let conf = conf("dnet", &god.socket, "1.0.0", json!({}));
    let r1 = call(go(), "ADD", &conf, "pod1", c1.path()).ok();
    let r2 = call(go(), "ADD", &conf, "pod2", c2.path()).ok();
    configure(&c1, &r1);
    configure(&c2, &r2);
    // The Go daemon stops (v1.1.1 leaves its socket file behind); ours
    // takes the same socket and, asked again, the same leases.
    god.proc.terminate();
    let dir = std::mem::replace(&mut god.dir, testsupport::TempDir::new("swap"));
    let mut rsd = Daemon::start(&ours(), &lan.ns, dir, &["-timeout=5s"], true);
    assert_eq!(
        addr(&call(&ours(), "ADD", &conf, "pod1", c1.path()).ok()),
        addr(&r1)
    );
    call(&ours(), "CHECK", &conf, "pod2", c2.path()).ok();
    assert_eq!(rsd.records().len(), 2);
    call(&ours(), "DEL", &conf, "pod1", c1.path()).ok();
    wait_for("pod1's release", LONG, || {
        srv.lease_of("pod1/dnet/eth0").is_none()
    });
    // And back: ours removes its socket, the Go daemon binds it again.
    rsd.proc.terminate();
    assert!(!rsd.socket.exists());
    let dir = std::mem::replace(&mut rsd.dir, testsupport::TempDir::new("swap"));
    let _god = Daemon::go_in(&lan.ns, dir, &[]);
    assert_eq!(
        addr(&call(go(), "ADD", &conf, "pod2", c2.path()).ok()),
        addr(&r2)
    );
    call(go(), "DEL", &conf, "pod2", c2.path()).ok();
    wait_for("pod2's release", LONG, || {
        srv.lease_of("pod2/dnet/eth0").is_none()
    });
}

/// A result as compared: v1.1.1 prints an empty `dns` object for 1.0.0
/// (cni v1.0.1), the newest reference and we leave it out.
fn comparable(mut r: Value) -> Value {
    if r.get("dns") == Some(&json!({})) {
        r.as_object_mut().unwrap().remove("dns");
    }
    r
}

/// The same attachment through the reference's plugin and daemon, then
/// ours, on one server: the same lease, the same result.
/// dnsmasq sends options 33 and 121 only to clients that ask for them.
fn both(lan: &Lan, server_opts: &[&str], version: &str) -> (Value, Value) {
    let srv = lan.server(1, server_opts);
    let c = lan.container();
    let god = Daemon::go(&lan.ns, &[]);
    let rsd = Daemon::ours(&lan.ns, &["-timeout=5s"]);
    let ask = json!({"request": [{"option": "33"}, {"option": "121"}]});
    let go_conf = conf("dnet", &god.socket, version, ask.clone());
    let rs_conf = conf("dnet", &rsd.socket, version, ask);
    let theirs = call(go(), "ADD", &go_conf, "diff", c.path()).ok();
    call(go(), "DEL", &go_conf, "diff", c.path()).ok();
    wait_for("the release", LONG, || {
        srv.lease_of("diff/dnet/eth0").is_none()
    });
    let mine = call(&ours(), "ADD", &rs_conf, "diff", c.path()).ok();
    (comparable(theirs), comparable(mine))
}

#[test]
fn results_are_the_references_on_the_same_server() {
    for version in ["1.0.0", "0.4.0", "0.3.1", "0.2.0"] {
        let lan = Lan::new(24);
        let (theirs, mine) = both(&lan, &["--dhcp-option=33,10.7.0.0,10.247.24.9"], version);
        assert_eq!(mine, theirs, "cniVersion {version}");
        assert_eq!(
            mine["routes"].as_array().map(Vec::len),
            if version == "0.2.0" { None } else { Some(2) },
            "{mine}"
        );
    }
}

#[test]
fn on_link_classless_routes_differ_only_by_their_scope() {
    let lan = Lan::new(25);
    let (theirs, mine) = both(
        &lan,
        &["--dhcp-option=121,10.99.0.0/16,10.247.25.9,10.247.26.0/24,0.0.0.0"],
        "1.0.0",
    );
    // v1.8.0 (PR #1187) gives an on-link route link scope; v1.1.1 did not.
    let mut expected = theirs.clone();
    expected["routes"][1]["scope"] = json!(253);
    assert_eq!(mine, expected);
    assert_eq!(theirs["routes"][1]["gw"], "0.0.0.0");
}

/// `ip -4 route` and `ip -4 addr` of the container, as compared.
fn routes(c: &testsupport::TestNetns) -> String {
    c.stdout(&["ip", "-4", "route", "show"])
}

#[test]
fn with_the_go_macvlan_routes_land_in_the_container_and_the_lease_is_kept() {
    let lan = Lan::new(27);
    let srv = lan.server(
        1,
        &[
            "--dhcp-option=option:T1,4s",
            "--dhcp-option=121,10.99.0.0/16,10.247.27.9,10.247.28.0/24,0.0.0.0,0.0.0.0/0,10.247.27.1",
        ],
    );
    let host = lan.host();
    let d = Daemon::ours(&lan.ns, &["-timeout=5s"]);
    let path = testsupport::TempDir::new("cnipath");
    std::os::unix::fs::symlink(ours(), path.join("dhcp")).unwrap();
    let ask = json!({"request": [{"option": "121"}]});
    let mut conf = conf("dnet", &d.socket, "1.0.0", ask);
    conf["master"] = json!("up0");
    let c = testsupport::TestNetns::new("mv");
    let run = |cmd: &str| {
        testsupport::Call::new(cmd)
            .container_id("mv1")
            .netns(c.path())
            .ifname("eth0")
            .path(path.to_str())
            .stdin(conf.to_string())
            .run_in(host.name(), Path::new(GO_MACVLAN))
    };
    let r = run("ADD").ok();
    let ip = addr(&r);
    assert_eq!(srv.lease_of("mv1/dnet/eth0"), Some(ip.clone()));
    let table = routes(&c);
    assert!(
        table.contains("10.99.0.0/16 via 10.247.27.9 dev eth0"),
        "{table}"
    );
    assert!(table.contains("10.247.28.0/24 dev eth0"), "{table}");
    assert!(
        table.contains("default via 10.247.27.1 dev eth0"),
        "{table}"
    );
    // Renewed through the macvlan (the address is on it, answers reach it).
    let first = d.acked_at("mv1/dnet/eth0").unwrap();
    wait_for("a renewal", LONG, || {
        d.acked_at("mv1/dnet/eth0").unwrap_or(0) > first
    });
    run("DEL").ok();
    wait_for("the release", LONG, || {
        srv.lease_of("mv1/dnet/eth0").is_none()
    });
}

#[test]
fn with_the_go_macvlan_option_3_is_the_default_route_as_with_the_go_daemon() {
    let lan = Lan::new(29);
    let srv = lan.server(1, &[]);
    let host = lan.host();
    let god = Daemon::go(&lan.ns, &[]);
    let rsd = Daemon::ours(&lan.ns, &["-timeout=5s"]);
    let path = testsupport::TempDir::new("cnipath");
    std::os::unix::fs::symlink(ours(), path.join("dhcp")).unwrap();
    let table = |bin_path: &str, socket: &Path| {
        let mut conf = conf("dnet", socket, "1.0.0", json!({}));
        conf["master"] = json!("up0");
        let c = testsupport::TestNetns::new("mv");
        let run = |cmd: &str| {
            testsupport::Call::new(cmd)
                .container_id("mv2")
                .netns(c.path())
                .ifname("eth0")
                .path(bin_path)
                .stdin(conf.to_string())
                .run_in(host.name(), Path::new(GO_MACVLAN))
        };
        let r = run("ADD").ok();
        // The macvlan's MAC is new each time, and so may the address be.
        let t = routes(&c).replace(&addr(&r), "ADDR");
        run("DEL").ok();
        wait_for("the release", LONG, || {
            srv.lease_of("mv2/dnet/eth0").is_none()
        });
        t
    };
    let theirs = table("/usr/lib/cni", &god.socket);
    let mine = table(path.to_str(), &rsd.socket);
    assert!(mine.contains("default via 10.247.29.1 dev eth0"), "{mine}");
    assert_eq!(mine, theirs);
}
