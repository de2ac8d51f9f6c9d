//! Root tests against the reference (Debian's Go tuning, v1.1.1): each
//! plugin restores what the other changed, from the other's backup file,
//! and both write the same bytes. v1.1.1 has no `txQLen` (added in
//! v1.4.0): it ignores that key in a backup, restores the rest and removes
//! the file, as it ignores the key in a config.

mod common;

use std::path::Path;

use common::*;
use serde_json::json;

fn go_present() {
    assert!(
        Path::new(GO).exists(),
        "{GO} missing: scripts/test.sh installs containernetworking-plugins"
    );
}

/// The keys both versions know, MAC in the kernel's lowercase form (the
/// reference's CHECK compares MACs as text).
fn shared_keys() -> serde_json::Value {
    json!({
        "sysctl": {"net.ipv4.conf.eth0.arp_notify": "1"},
        "mac": "02:42:0a:f0:28:07",
        "promisc": true,
        "mtu": 1400,
        "allmulti": true
    })
}

#[test]
fn ours_restores_what_the_go_plugin_changed() {
    go_present();
    let c = Container::new("igo");
    let before = c.link();
    let conf = c.conf("1.0.0", shared_keys());
    c.run_go("ADD", &conf).ok();
    assert_eq!(c.link().mtu, 1400);
    assert!(c.backup_text().is_some());
    c.run("CHECK", &conf).ok();
    c.run("DEL", &conf).ok();
    assert_eq!(c.link(), before);
    assert!(c.data_files().is_empty(), "{:?}", c.data_files());
}

#[test]
fn the_go_plugin_restores_what_ours_changed() {
    go_present();
    let c = Container::new("irs");
    let before = c.link();
    let conf = c.conf("1.0.0", shared_keys());
    c.run("ADD", &conf).ok();
    c.run_go("CHECK", &conf).ok();
    c.run_go("DEL", &conf).ok();
    assert_eq!(c.link(), before);
    // Go removes the backup; our GC record of it goes on the next GC.
    assert!(c.backup_text().is_none());
}

/// v1.1.1 restores everything but the queue length, which it does not
/// know; the current reference restores that too.
#[test]
fn the_go_plugin_v1_1_1_ignores_txqlen_in_our_backup() {
    go_present();
    let c = Container::new("itxq");
    let before = c.link();
    let mut keys = shared_keys();
    keys["txQLen"] = json!(77);
    let conf = c.conf("1.0.0", keys);
    c.run("ADD", &conf).ok();
    assert!(c.backup_text().unwrap().contains("\"txQLen\": 1000"));
    c.run_go("DEL", &conf).ok();
    let after = c.link();
    assert_eq!(after.txqlen, 77);
    assert_eq!(
        LinkState {
            txqlen: before.txqlen,
            ..after
        },
        before
    );
    assert!(c.backup_text().is_none());
}

/// The same changes on identical links give byte-identical backups.
#[test]
fn both_write_the_same_backup_bytes() {
    go_present();
    for keys in [
        shared_keys(),
        json!({"mtu": 1300}),
        json!({"mac": "02:00:00:00:01:01", "allmulti": false}),
        json!({"promisc": true}),
    ] {
        let ours_c = Container::new("ibo");
        let go_c = Container::new("ibg");
        for c in [&ours_c, &go_c] {
            c.ip_link_set(&["address", "02:00:00:00:00:33"]);
        }
        ours_c.run("ADD", &ours_c.conf("1.0.0", keys.clone())).ok();
        go_c.run_go("ADD", &go_c.conf("1.0.0", keys.clone())).ok();
        assert_eq!(
            ours_c.backup_text().unwrap(),
            go_c.backup_text().unwrap(),
            "{keys}"
        );
        let mode = |c: &Container| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(c.backup()).unwrap().permissions().mode() & 0o777
        };
        assert_eq!(mode(&ours_c), mode(&go_c));
        assert_eq!(ours_c.link(), go_c.link(), "{keys}");
    }
}
