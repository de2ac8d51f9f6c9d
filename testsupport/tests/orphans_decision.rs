//! What `skel::orphans` decides under each kind of PID 1 (`cnirs-init`
//! in a PID namespace of its own, made without a `/proc` of its own, so
//! PID 1 is found through a pidfd), as `cnirs-orphans` reports it.

use std::process::Command;

use serde_json::Value;

fn decision(mode: &str, env: &[(&str, &str)]) -> Value {
    let out = Command::new("unshare")
        .args(["--pid", "--fork", env!("CARGO_BIN_EXE_cnirs-init"), mode])
        .arg(env!("CARGO_BIN_EXE_cnirs-orphans"))
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn a_pid1_that_reaps_or_may_gets_children_one_that_cannot_does_not() {
    testsupport::require_root();
    let never = decision("never", &[]);
    assert_eq!(
        (&never["init_may_reap"], &never["reaped"]),
        (&Value::Bool(false), &Value::Bool(false))
    );
    for mode in ["catch", "reap"] {
        let d = decision(mode, &[]);
        assert_eq!(d["init_may_reap"], true, "{mode}: {d}");
        // Left to the cgroup's count, where there is one to read.
        let harm = d["zombies"].as_u64().is_some_and(|z| z > 16);
        assert_eq!(d["reaped"], !harm, "{mode}: {d}");
    }
    // A reaping subreaper may say so; waiting may be asked for anywhere.
    let declared = decision("never", &[("CNI_RS_ORPHANS", "reaped")]);
    assert_eq!(declared["reaped"], true, "{declared}");
    let wait = decision("reap", &[("CNI_RS_ORPHANS", "wait")]);
    assert_eq!(wait["reaped"], false, "{wait}");
}
