//! The firewall layer through the bridge binary: a node without the `nft`
//! binary (or any firewall tool) works, a missing tool is reported by
//! name, and a node can switch between the reference Go bridge (Debian's
//! v1.1.1: iptables masquerade, spoof check through `nft`) and ours in
//! either direction, each removing the other's rules.

mod common;

use std::path::Path;

use common::*;
use serde_json::{Value, json};
use testsupport::{TempDir, TestNetns};

/// A `PATH` with `ip` only (the harness starts the plugin through `ip
/// netns exec`): no `nft`, no iptables tools.
fn bare_path() -> TempDir {
    let dir = TempDir::new("path");
    let ip = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]
        .into_iter()
        .find(|p| Path::new(p).is_file())
        .expect("ip is installed");
    std::os::unix::fs::symlink(ip, dir.join("ip")).unwrap();
    dir
}

fn conf(host: &Host, extra: Value) -> Value {
    let mut keys = json!({"isGateway": true, "ipMasq": true, "macspoofchk": true});
    if let (Some(k), Some(more)) = (keys.as_object_mut(), extra.as_object()) {
        k.extend(more.clone());
    }
    host.conf("1.0.0", &["10.240.40.0/24", "fd40:40::/64"], keys)
}

#[test]
fn masquerade_and_spoof_check_work_without_nft_on_path() {
    let host = Host::new("np");
    let path = bare_path();
    let c = TestNetns::new("npc");
    let base = conf(&host, json!({}));
    let call = |cmd: &str, conf: &Value| {
        let req = host.request(cmd, conf, "c1", c.path(), "eth0");
        host.run(req.env("PATH", path.to_str()))
    };
    // No iptables here: auto chooses nftables, over netlink.
    let r = call("ADD", &base).ok();
    let nft = host.sh(&["nft", "list", "ruleset"]);
    assert!(
        nft.contains(&format!("net: {}, if: eth0, id: c1", host.net)),
        "{nft}"
    );
    assert!(nft.contains("cni-br-iface-c1-eth0"), "{nft}");
    assert!(ping(&c, "10.240.40.1"), "the genuine MAC passes");
    call("CHECK", &with_prev(&base, &r)).ok();
    call("DEL", &base).ok();
    assert!(
        rules_of(&host, "c1").is_empty(),
        "{:?}",
        rules_of(&host, "c1")
    );
    call("DEL", &base).ok();

    // iptables asked for by name: refused with the tool's name, and the
    // failed ADD leaves nothing.
    let ipt = conf_with(&base, "ipMasqBackend", "iptables");
    let e = call("ADD", &ipt).err(999);
    assert_eq!(
        e["msg"],
        "set up ip masquerade: exec: \"iptables-restore\": executable file not found in $PATH"
    );
    assert!(ports(&host).is_empty());
    assert!(rules_of(&host, "c1").is_empty());
    assert!(host.leases().is_empty());
}

fn conf_with(conf: &Value, key: &str, value: &str) -> Value {
    let mut c = conf.clone();
    c[key] = json!(value);
    c
}

/// Debian's Go bridge (v1.1.1), which scripts/test.sh installs.
fn reference() -> &'static Path {
    let p = Path::new("/usr/lib/cni/bridge");
    assert!(
        p.is_file(),
        "{} missing: install Debian's containernetworking-plugins (scripts/test.sh does)",
        p.display()
    );
    p
}

fn go(host: &Host, cmd: &str, conf: &Value, cid: &str, netns: &str) -> Value {
    host.request(cmd, conf, cid, netns, "eth0")
        .run_in(host.ns.name(), reference())
        .ok()
}

#[test]
fn rules_of_the_go_bridge_are_removed_by_ours_and_the_reverse() {
    let host = Host::new("sw");
    // The Go plugin writes iptables masquerade rules; ours is told to.
    let ours = conf(&host, json!({"ipMasqBackend": "iptables"}));
    let go_conf = conf(&host, json!({}));
    let (c1, mut c2, c3) = (
        TestNetns::new("sw1"),
        TestNetns::new("sw2"),
        TestNetns::new("sw3"),
    );

    // Go's ADD, our DEL (with the backend unset: both are looked at).
    go(&host, "ADD", &go_conf, "c1", c1.path());
    let made = rules_of(&host, "c1");
    assert!(made.iter().any(|r| r.contains("MASQUERADE")), "{made:#?}");
    assert!(
        made.iter().any(|r| r.contains("cni-br-iface-c1-eth0")),
        "{made:#?}"
    );
    host.del(&go_conf, "c1", c1.path());
    assert!(
        rules_of(&host, "c1").is_empty(),
        "{:#?}",
        rules_of(&host, "c1")
    );

    // Go's ADD, container gone, our GC.
    go(&host, "ADD", &go_conf, "c2", c2.path());
    assert!(!rules_of(&host, "c2").is_empty());
    c2.delete();
    assert!(eventually(|| ports(&host).is_empty()), "{:?}", ports(&host));
    let mut gc = go_conf.clone();
    gc["cniVersion"] = json!("1.1.0");
    gc["cni.dev/valid-attachments"] = json!([]);
    host.call("GC", &gc, "", "", "").ok();
    assert!(
        rules_of(&host, "c2").is_empty(),
        "{:#?}",
        rules_of(&host, "c2")
    );

    // Our ADD, Go's DEL.
    host.add(&ours, "c3", &c3);
    let made = rules_of(&host, "c3");
    assert!(made.iter().any(|r| r.contains("MASQUERADE")), "{made:#?}");
    go(&host, "DEL", &go_conf, "c3", c3.path());
    assert!(
        rules_of(&host, "c3").is_empty(),
        "{:#?}",
        rules_of(&host, "c3")
    );
}

/// One container attached twice to one network (multus: eth0 and eth1),
/// with either masquerade backend: DEL of eth1 leaves eth0's masquerade
/// and spoof check in place (CHECK of eth0 reads them back); DEL of eth0
/// then removes the rest. With iptables both share the reference's chain
/// `CNI-<hash(net + cid)>`: DEL of eth1 removed it with eth0's jump.
#[test]
fn del_of_one_attachment_keeps_the_other_ifnames_rules() {
    for backend in ["iptables", "nftables"] {
        let host = Host::new("mu");
        let conf = conf(&host, json!({"ipMasqBackend": backend}));
        let c = TestNetns::new("mu1");
        let r0 = host.add(&conf, "c1", &c);
        let r1 = host.call("ADD", &conf, "c1", c.path(), "eth1").ok();
        host.call("DEL", &with_prev(&conf, &r1), "c1", c.path(), "eth1")
            .ok();
        host.call("CHECK", &with_prev(&conf, &r0), "c1", c.path(), "eth0")
            .ok();
        host.call("DEL", &with_prev(&conf, &r0), "c1", c.path(), "eth0")
            .ok();
        let left = rules_of(&host, "c1");
        assert!(left.is_empty(), "{backend}: {left:#?}");
    }
}
