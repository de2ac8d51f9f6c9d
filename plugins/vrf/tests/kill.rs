//! ADD and DEL killed (SIGKILL) at every point and at spread moments
//! (`testsupport::kill`), where the kernel has VRF (the VM tier): DEL and
//! GC afterwards leave no VRF, the interface in no master with its
//! address, and no route in any table but `main` and `local`.
#![cfg(debug_assertions)]

mod common;

use common::*;
use serde_json::json;
use testsupport::kill::{Scenario, kill_everywhere};

/// What is left: VRF devices, interfaces with a master, routes in other
/// tables than `main` and `local`, and the interface's lost address.
fn leftovers(pod: &Pod) -> Vec<String> {
    let mut left: Vec<String> = pod
        .links()
        .into_iter()
        .filter(|l| l.contains("kind=vrf") || !l.contains("master=-"))
        .map(|l| format!("link {l}"))
        .collect();
    for f in ["-4", "-6"] {
        let routes = pod.ns.stdout(&["ip", f, "route", "show", "table", "all"]);
        left.extend(
            routes
                .lines()
                .filter(|r| r.contains(" table "))
                .filter(|r| !r.contains("table main") && !r.contains("table local"))
                .map(|r| format!("route {r}")),
        );
    }
    if !pod.addrs("net0").contains(&v4(0)) {
        left.push(format!("net0 lost {}", v4(0)));
    }
    left
}

fn kill(command: &str) {
    let pod = Pod::new(if command == "ADD" { "vrfka" } else { "vrfkd" }, 1);
    let conf = pod.conf(0, "blue", json!({"cniVersion": "1.1.0"}));
    let mut gc = conf.clone();
    gc["cni.dev/valid-attachments"] = json!([]);
    gc.as_object_mut().unwrap().remove("prevResult");
    let name = format!("vrf {command}");
    kill_everywhere(
        &Scenario {
            name: &name,
            run: &|k| k(pod.call(command, 0, &conf)).run(ours()),
            before: &|| {
                if command == "DEL" {
                    pod.call("ADD", 0, &conf).run(ours()).ok();
                }
            },
            cleanup: &|| {
                pod.call("DEL", 0, &conf).run(ours()).ok();
                pod.call("GC", 0, &gc).run(ours()).ok();
            },
            leftovers: &|| leftovers(&pod),
        },
        4,
    );
}

#[test]
#[ignore = "kernel-features: vrf (scripts/vm-test.sh)"]
fn add_killed_anywhere_leaves_nothing_after_del_and_gc() {
    kill("ADD");
}

#[test]
#[ignore = "kernel-features: vrf (scripts/vm-test.sh)"]
fn del_killed_anywhere_leaves_nothing_after_del_and_gc() {
    kill("DEL");
}
