//! A network's lock held by another process (a host-local that hangs) is
//! waited for at most `CNI_RS_TIMEOUT` (short here): ADD then fails,
//! naming the lock and who holds it, and takes nothing.

mod common;

use common::*;
use testsupport::{HeldLock, TempDir};

#[test]
fn a_held_lock_is_waited_for_within_the_deadline_then_named() {
    let d = TempDir::new("hl-held");
    let c = conf(
        "1.0.0",
        d.path(),
        r#""ranges":[[{"subnet":"10.240.0.0/24"}]]"#,
    );
    run(&ours(), "ADD", "first", &c).ok();
    let lock = d.join("net1/lock");
    let holder = HeldLock::new(&lock);
    let r = call("ADD", "second", "eth0")
        .stdin(c.as_str())
        .env("CNI_RS_TIMEOUT", "500ms")
        .run(&ours());
    let pid = holder.pid();
    drop(holder);
    let e = r.err(999);
    assert_eq!(
        e["msg"],
        format!(
            "lock {}: still held after 500ms by process {} (flock)",
            lock.display(),
            pid
        ),
        "{e}"
    );
    assert_eq!(leases(d.path()).len(), 1, "{:?}", leases(d.path()));
    run(&ours(), "ADD", "second", &c).ok();
}
