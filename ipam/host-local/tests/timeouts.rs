//! A network's lock held by another process (a host-local that hangs) is
//! waited for at most `CNI_RS_TIMEOUT` (short here): ADD then fails,
//! naming the lock and who holds it, and takes nothing.

mod common;

use std::process::{Command, Stdio};

use common::*;
use testsupport::TempDir;

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
    // -o: the lock is flock's alone, released when it is killed.
    let mut holder = Command::new("flock")
        .arg("-o")
        .arg(&lock)
        .args(["sleep", "60"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // flock holds it once its child runs.
    while testsupport::orphans::children(holder.id()).is_empty() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let r = call("ADD", "second", "eth0")
        .stdin(c.as_str())
        .env("CNI_RS_TIMEOUT", "500ms")
        .run(&ours());
    let _ = holder.kill();
    let _ = holder.wait();
    let e = r.err(999);
    assert_eq!(
        e["msg"],
        format!(
            "lock {}: still held after 500ms by process {} (flock)",
            lock.display(),
            holder.id()
        ),
        "{e}"
    );
    assert_eq!(leases(d.path()).len(), 1, "{:?}", leases(d.path()));
    run(&ours(), "ADD", "second", &c).ok();
}
