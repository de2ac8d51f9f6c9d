//! Every wait is bounded (`skel::deadline`, `CNI_RS_TIMEOUT`, short here):
//! an `iptables-restore` or `iptables-save` that hangs, or
//! iptables-legacy waiting for a held `xtables.lock`, is killed; the call
//! fails naming the tool (and what it said), and a failed ADD leaves no
//! rule and no record.

mod common;

use std::os::unix::fs::{PermissionsExt, symlink};

use common::*;
use serde_json::{Value, json};
use testsupport::{HeldLock, TempDir};

const CID: &str = "tmo";

/// A `PATH` with `hang` (tool names) hanging and the real tools after.
fn path_with(dir: &TempDir) -> String {
    format!(
        "{}:{}",
        dir.to_str(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn hanging(names: &[&str]) -> TempDir {
    let dir = TempDir::new("hangtools");
    for n in names {
        let p = dir.join(n);
        std::fs::write(&p, "#!/bin/sh\nexec sleep 1000\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

fn run(
    lab: &Lab,
    cmd: &str,
    conf: &Value,
    c: &testsupport::TestNetns,
    env: &[(&str, &str)],
) -> testsupport::PluginRun {
    let mut call = lab
        .host
        .request(cmd, conf, CID, c.path(), "eth0")
        .env("CNI_RS_TIMEOUT", "1");
    for (k, v) in env {
        call = call.env(k, v);
    }
    call.run_in(lab.host.ns.name(), bin())
}

fn nothing_left(lab: &Lab) {
    assert!(
        lab.rules_of(None, CID).is_empty(),
        "{:?}",
        lab.rules_of(None, CID)
    );
    assert_eq!(lab.records(), 0);
}

#[test]
fn a_hung_iptables_restore_is_killed_and_the_add_undone() {
    let lab = Lab::new("tmr");
    let (c, prev) = lab.container(CID);
    let conf = with_prev(
        &lab.conf(None, both(8091, None), json!({"backend": "iptables"})),
        &prev,
    );
    let fakes = hanging(&["iptables-restore", "ip6tables-restore"]);
    let e = run(&lab, "ADD", &conf, &c, &[("PATH", &path_with(&fakes))]).err(999);
    let msg = e["msg"].as_str().unwrap_or_default();
    assert!(
        msg.contains("iptables-restore: no answer within 1s (CNI_RS_TIMEOUT), killed"),
        "{e}"
    );
    nothing_left(&lab);
    lab.portmap("ADD", &conf, CID, c.path()).ok();
    lab.portmap("DEL", &conf, CID, c.path()).ok();
    nothing_left(&lab);
}

#[test]
fn a_hung_iptables_save_is_killed_and_named() {
    let lab = Lab::new("tms");
    let (c, prev) = lab.container(CID);
    let conf = with_prev(
        &lab.conf(None, both(8092, None), json!({"backend": "iptables"})),
        &prev,
    );
    lab.portmap("ADD", &conf, CID, c.path()).ok();
    let fakes = hanging(&["iptables-save", "ip6tables-save"]);
    let e = run(&lab, "DEL", &conf, &c, &[("PATH", &path_with(&fakes))]).err(999);
    let msg = e["msg"].as_str().unwrap_or_default();
    assert!(
        msg.contains("iptables-save: no answer within 1s (CNI_RS_TIMEOUT), killed"),
        "{e}"
    );
    lab.portmap("DEL", &conf, CID, c.path()).ok();
    nothing_left(&lab);
}

/// iptables-legacy waits for `xtables.lock` (here a lock file of the
/// test's, `XTABLES_LOCKFILE`) as long as another process holds it.
#[test]
fn a_held_xtables_lock_is_waited_for_within_the_deadline() {
    let lab = Lab::new("tml");
    let (c, prev) = lab.container(CID);
    let conf = with_prev(
        &lab.conf(None, both(8093, None), json!({"backend": "iptables"})),
        &prev,
    );
    let legacy = TempDir::new("legacy");
    for tool in [
        "iptables-save",
        "iptables-restore",
        "ip6tables-save",
        "ip6tables-restore",
    ] {
        let real = tool.replacen("tables-", "tables-legacy-", 1);
        symlink(format!("/usr/sbin/{real}"), legacy.join(tool)).unwrap();
    }
    let lock = legacy.join("xtables.lock");
    std::fs::write(&lock, "").unwrap();
    let holder = HeldLock::new(&lock);
    let env = [
        ("PATH", path_with(&legacy)),
        ("XTABLES_LOCKFILE", lock.to_str().unwrap().to_string()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let r = run(&lab, "ADD", &conf, &c, &env);
    drop(holder);
    let e = r.err(999);
    let msg = e["msg"].as_str().unwrap_or_default();
    assert!(
        msg.contains("iptables-restore: no answer within 1s (CNI_RS_TIMEOUT), killed"),
        "{e}"
    );
    assert_eq!(lab.records(), 0);
    let save = lab
        .host
        .ns
        .exec_output(&["iptables-legacy-save", "-t", "nat"]);
    let text = String::from_utf8_lossy(&save.stdout);
    assert!(!text.contains(CID), "{text}");
}
