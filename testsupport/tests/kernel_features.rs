//! What `skel::orphans` relies on, on cgroup v2 (this machine's own
//! kernel has its pids controller on cgroup v1, where
//! `cnitool/tests/orphans.rs` runs): zombies stay charged to their
//! cgroup's `pids.current` and leave `cgroup.threads`, so a PID 1 that
//! catches SIGCHLD and never reaps is found out. Run in the VM tier
//! (`scripts/vm-test.sh`), whose /init mounts no cgroup file system: the
//! test mounts cgroup2 at `/sys/fs/cgroup` when nothing is there.

use std::path::Path;
use std::process::Command;

const ROOT: &str = "/sys/fs/cgroup";

fn mounted_v2() -> bool {
    std::fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split(' ').nth(1) == Some(ROOT) && l.split(' ').nth(2) == Some("cgroup2"))
}

#[test]
#[ignore = "kernel-features: cgroup v2 pids controller (scripts/vm-test.sh)"]
fn zombies_under_a_pid1_that_never_reaps_are_counted_on_cgroup_v2() {
    if !mounted_v2() {
        let ok = Command::new("mount")
            .args(["-t", "cgroup2", "none", ROOT])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "mount cgroup2 at {ROOT}");
    }
    let root = Path::new(ROOT);
    let controllers = std::fs::read_to_string(root.join("cgroup.controllers")).unwrap();
    assert!(
        controllers.split_whitespace().any(|c| c == "pids"),
        "{controllers}"
    );
    std::fs::write(root.join("cgroup.subtree_control"), "+pids").unwrap();
    let dir = root.join(format!("cnirsorph{}", std::process::id()));
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("pids.max"), "256").unwrap();
    let init = env!("CARGO_BIN_EXE_cnirs-init");
    let probe = env!("CARGO_BIN_EXE_cnirs-orphans");
    // 20 orphans for PID 1, which catches SIGCHLD and never reaps; then the
    // decision, seen from inside.
    let script = format!(
        "echo $$ >{procs} && exec unshare -p -f {init} catch sh -c \
         'i=0; while [ $i -lt 20 ]; do (sleep 0 &); i=$((i+1)); done; sleep 1; {probe}'",
        procs = dir.join("cgroup.procs").display()
    );
    let out = Command::new("sh").args(["-c", &script]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let _ = std::fs::remove_dir(&dir);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(v["init_may_reap"], true, "{v}");
    let zombies = v["zombies"]
        .as_u64()
        .unwrap_or_else(|| panic!("no count: {v}"));
    assert!(zombies >= 20, "{v}");
    assert_eq!(v["reaped"], false, "{v}");
    assert_eq!(v["headroom"].as_u64().map(|h| h < 256), Some(true), "{v}");
}
