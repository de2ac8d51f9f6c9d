//! A `PATH` wrapper named `iptables-restore` that forks the real tool (no
//! `exec`): the commits are the grandchild's, not the child's, so none is
//! counted and the wrapper's exit is waited for; the batch still applies.
//! Alone in its test binary: it changes `PATH` for the whole process.

use std::fs::File;
use std::os::unix::fs::PermissionsExt;

use cni_firewall::iptables::{self, Batch, Ended, Family};
use cni_net::netns;
use testsupport::TestNetns;

#[test]
fn a_forking_wrapper_is_waited_for() {
    // Watched as where orphans are reaped, whatever this machine's PID 1.
    assert!(skel::orphans::assume(true));
    let path = std::env::var("PATH").unwrap_or_default();
    let real = skel::invoke::find_in_path("iptables-restore", &path).unwrap();
    let dir = std::env::temp_dir().join(testsupport::unique_name("fwwrap"));
    std::fs::create_dir_all(&dir).unwrap();
    let wrapper = dir.join("iptables-restore");
    // Not the last command of the script, so the shell cannot exec it.
    let ran = dir.join("ran");
    let script = format!(
        "#!/bin/sh\necho >>{}\n{} \"$@\"\nrc=$?\nexit $rc\n",
        ran.display(),
        real.display()
    );
    std::fs::write(&wrapper, script).unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    // SAFETY: the only test of this binary; no other thread reads the
    // environment meanwhile.
    unsafe { std::env::set_var("PATH", format!("{}:{path}", dir.display())) };
    let ns = TestNetns::new("fww");
    let file = File::open(ns.path()).unwrap();
    let result = netns::run(&file, || {
        let mut add = Batch::new();
        add.append("filter", "FORWARD", &["-s", "10.240.4.2", "-j", "ACCEPT"]);
        iptables::restore(Family::V4, &add).unwrap();
        let mut del = Batch::new();
        del.delete("filter", "FORWARD", &["-s", "10.240.4.2", "-j", "ACCEPT"]);
        let ended = iptables::start_restore(Family::V4, &del)
            .unwrap()
            .unwrap()
            .finish();
        let failed = iptables::restore(Family::V4, &del).unwrap_err();
        (ended, failed, iptables::save(Family::V4, "filter").unwrap())
    })
    .unwrap();
    let runs = std::fs::read_to_string(&ran).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(runs.lines().count(), 3, "the wrapper did not run");
    let (ended, failed, save) = result;
    assert!(matches!(ended, Ok(Ended::Exited)), "{ended:?}");
    assert!(!save.text().contains("10.240.4.2"), "{}", save.text());
    // The wrapper ran: the tool's error, through it.
    assert!(failed.to_string().contains("line 2 failed"), "{failed}");
}
