//! What runs on any kernel: bad input gets the reference's messages and
//! codes and changes nothing; on a kernel without VRF support ADD fails as
//! the reference's does, leaving nothing; DEL and CHECK without a VRF
//! (CHECK as v1.9.1's: Debian's v1.1.1 ignores its own failures).

mod common;

use common::*;
use serde_json::json;

#[test]
fn bad_input_gets_the_references_messages() {
    let pod = Pod::new("vrfb", 1);
    let before = pod.links();
    let mut no_name = pod.conf(0, "", json!({}));
    no_name.as_object_mut().unwrap().remove("vrfname");
    let mut no_prev = pod.conf(0, "blue", json!({}));
    no_prev.as_object_mut().unwrap().remove("prevResult");
    let old = pod.conf(0, "blue", json!({"cniVersion": "0.3.0"}));
    let bad_table = pod.conf(0, "blue", json!({"table": "x"}));
    for (conf, cmds) in [
        (&no_name, &["ADD", "DEL", "CHECK"][..]),
        (&no_prev, &["ADD", "CHECK"][..]),
        (&old, &["ADD"][..]),
        (&bad_table, &["ADD", "DEL"][..]),
    ] {
        for cmd in cmds {
            let ours = pod.call(cmd, 0, conf).run(ours());
            let theirs = pod.call(cmd, 0, conf).run(go());
            assert_eq!(ours.code, 1, "{cmd} {conf}: {ours:?}");
            let (o, t) = (ours.json(), theirs.json());
            assert_eq!(
                (&o["code"], &o["msg"]),
                (&t["code"], &t["msg"]),
                "{cmd} {conf}"
            );
        }
    }
    assert_eq!(pod.links(), before);
}

/// This kernel has no VRF: ADD fails as the reference's does (`cmdAdd
/// failed: could not add VRF blue: operation not supported`) and leaves
/// nothing; DEL succeeds; CHECK fails as the reference's.
#[test]
fn without_kernel_support_add_fails_as_the_references() {
    if kernel_has_vrf() {
        return;
    }
    let pod = Pod::new("vrfn", 1);
    let before = (pod.links(), pod.table("main"));
    let conf = pod.conf(0, "blue", json!({}));
    for cmd in ["ADD", "DEL"] {
        let ours = pod.call(cmd, 0, &conf).run(ours());
        let theirs = pod.call(cmd, 0, &conf).run(go());
        assert_eq!(ours.code, theirs.code, "{cmd}: {ours:?} {theirs:?}");
        if ours.code != 0 {
            assert_eq!(ours.json()["msg"], theirs.json()["msg"], "{cmd}");
        }
    }
    assert_eq!(
        pod.call("ADD", 0, &conf).run(ours()).err(999)["msg"],
        "cmdAdd failed: could not add VRF blue: operation not supported"
    );
    // v1.9.1's CHECK fails on the missing VRF with the lookup's error;
    // v1.1.1's drops every error of its namespace closure.
    let e = pod.call("CHECK", 0, &conf).run(ours()).err(999);
    assert_eq!(e["msg"], "Link not found");
    assert_eq!((pod.links(), pod.table("main")), before);
    // DEL without the namespace.
    pod.call("DEL", 0, &conf).netns("").run(ours()).ok();
    pod.call("DEL", 0, &conf)
        .netns("/run/netns/cnirs-vrf-gone")
        .run(ours())
        .ok();
}
