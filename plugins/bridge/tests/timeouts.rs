//! Every wait is bounded (`skel::deadline`, `CNI_RS_TIMEOUT`, short here):
//! an IPAM plugin that never answers is killed with what it started, the
//! ADD fails naming it, and nothing is left, not even what the IPAM
//! plugin took before it hung (its DEL runs, as after any failed ADD).

mod common;

use std::os::unix::fs::PermissionsExt;

use common::*;
use serde_json::json;
use testsupport::{TempDir, TestNetns};

/// `dir/name`: a fake IPAM plugin. ADD runs the real host-local when
/// `reserve`, records its PID and that of its `sleep`, and never answers;
/// anything else is host-local's.
fn fake_ipam(dir: &TempDir, name: &str, host_local: &std::path::Path, reserve: bool) {
    let take = if reserve {
        "\"$REAL\" <\"$D/in\" >/dev/null"
    } else {
        ":"
    };
    let script = format!(
        "#!/bin/sh\nD={d}\nREAL={real}\nif [ \"$CNI_COMMAND\" != ADD ]; then exec \"$REAL\"; fi\n\
         cat >\"$D/in\"\n{take}\necho $$ >\"$D/pids\"\nsleep 1000 &\necho $! >>\"$D/pids\"\nwait\n",
        d = dir.path().display(),
        real = host_local.display(),
    );
    let path = dir.join(name);
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Whether process `pid` still runs (a zombie no longer does).
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(')')
            .is_some_and(|(_, r)| !r.trim_start().starts_with('Z'))
    })
}

fn hung_ipam(reserve: bool) {
    let host = Host::new("tmo");
    let fakes = TempDir::new("fakeipam");
    fake_ipam(
        &fakes,
        "hang-ipam",
        &testsupport::plugin_bin("host-local"),
        reserve,
    );
    let mut conf = host.conf("1.0.0", &["10.240.22.0/24"], json!({"isGateway": true}));
    conf["ipam"]["type"] = json!("hang-ipam");
    let c = TestNetns::new("tmoc");
    let path = format!("{}:{}", fakes.to_str(), host.path.to_str());
    let call = host
        .request("ADD", &conf, "hung", c.path(), "eth0")
        .path(&path)
        .env("CNI_RS_TIMEOUT", "1");
    let e = host.run(call).err(999);
    assert_eq!(
        e["msg"], "plugin hang-ipam (ADD) gave no answer within 1s (CNI_RS_TIMEOUT): killed",
        "{e}"
    );
    let pids = std::fs::read_to_string(fakes.join("pids")).unwrap();
    for pid in pids.split_whitespace() {
        assert!(!alive(pid), "process {pid} of the hung plugin still runs");
    }
    let inside: Vec<String> = links(&c).into_iter().map(|(n, _)| n).collect();
    assert_eq!(inside, vec!["lo"]);
    assert!(ports(&host).is_empty(), "{:?}", ports(&host));
    assert!(host.leases().is_empty(), "left: {:?}", host.leases());
}

#[test]
fn an_ipam_plugin_that_never_answers_is_killed_and_nothing_is_left() {
    hung_ipam(false);
}

/// It reserved an address before it hung: the ADD's undo releases it.
#[test]
fn what_a_killed_ipam_plugin_took_is_released() {
    hung_ipam(true);
}
