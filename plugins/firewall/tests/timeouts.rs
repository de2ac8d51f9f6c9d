//! The records' lock held by another process is waited for at most
//! `CNI_RS_TIMEOUT` (short here): ADD then fails naming the lock and its
//! holder, and writes nothing.

mod common;

use common::*;
use serde_json::json;
use testsupport::HeldLock;

#[test]
fn a_held_records_lock_is_waited_for_within_the_deadline_then_named() {
    let lab = Lab::new("fwt");
    let conf = lab.conf(&lab.a.name, json!({"backend": "nftables"}));
    let conf = with_prev(&conf, &prev(&lab.a.bridge, &["10.240.80.7/24"]));
    let lock = lab.records.join(".lock");
    std::fs::write(&lock, "").unwrap();
    let holder = HeldLock::new(&lock);
    let r = lab
        .host
        .request("ADD", &conf, "c1", "/x", "eth0")
        .env("DBUS_SYSTEM_BUS_ADDRESS", NO_BUS)
        .env("CNI_RS_TIMEOUT", "300ms")
        .run_in(lab.host.ns.name(), bin());
    let pid = holder.pid();
    drop(holder);
    let e = r.err(999);
    assert_eq!(
        e["msg"],
        format!(
            "lock {}: still held after 300ms by process {} (flock)",
            lock.display(),
            pid
        ),
        "{e}"
    );
    assert_eq!(lab.records(), 0);
    assert!(lab.rules_of("10.240.80.7", "c1").is_empty());
}
