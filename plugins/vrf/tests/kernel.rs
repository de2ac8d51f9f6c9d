//! On a kernel with VRF support (scripts/vm-test.sh; this machine's has
//! none): two interfaces in two VRFs with overlapping subnets both pass
//! traffic, in both directions, routes copied into each VRF's table
//! included; a third interface joins an existing VRF; the VRF goes with
//! its last interface; DEL is idempotent and succeeds when the interface
//! is gone; a failed ADD at each step changes nothing.

mod common;

use common::*;
use serde_json::json;
use testsupport::{Failpoints, ping, ping_with};

fn master_of(pod: &Pod, ifname: &str) -> String {
    pod.links()
        .into_iter()
        .find(|l| l.starts_with(&format!("{ifname} ")))
        .unwrap_or_default()
}

/// What the pod's IPv6 looks like, for a failure's message.
fn diagnose(pod: &Pod) -> String {
    let mut out = String::new();
    for cmd in [
        &["ip", "-6", "addr"][..],
        &["ip", "-6", "route", "show", "table", "all"],
        &["ip", "-6", "rule"],
        &["ip", "-6", "neigh"],
    ] {
        let o = pod.ns.exec_output(cmd);
        out.push_str(&format!(
            "\n$ {}\n{}",
            cmd.join(" "),
            String::from_utf8_lossy(&o.stdout)
        ));
    }
    let o = pod.nets[0].exec_output(&["ip", "-6", "neigh"]);
    out.push_str(&format!(
        "\nnet0's network: {}",
        String::from_utf8_lossy(&o.stdout)
    ));
    out
}

#[test]
#[ignore = "kernel-features: vrf (scripts/vm-test.sh)"]
fn two_vrfs_with_overlapping_subnets_and_a_third_interface() {
    let pod = Pod::new("vrft", 3);
    let blue = pod.run("ADD", 0, "blue").ok();
    assert_eq!(blue, pod.prev(0), "prevResult passed through");
    pod.call("ADD", 1, &pod.conf(1, "red", json!({"table": 1200})))
        .run(ours())
        .ok();
    assert!(
        master_of(&pod, "net0").contains("master=blue"),
        "{:?}",
        pod.links()
    );
    assert!(
        master_of(&pod, "net1").contains("master=red"),
        "{:?}",
        pod.links()
    );
    assert!(
        master_of(&pod, "red").contains("table=1200"),
        "{:?}",
        pod.links()
    );
    for (i, vrf) in [(0, "blue"), (1, "red")] {
        let ifname = format!("net{i}");
        // The addresses stayed, the route via the gateway is in the VRF's
        // table.
        let addrs = pod.addrs(&ifname);
        let (a4, a6) = (format!("{}/24", v4(i)), format!("{}/64", v6(i)));
        assert!(addrs.contains(&a4) && addrs.contains(&a6), "{addrs}");
        let table = pod.table(if vrf == "red" { "1200" } else { "1" });
        assert!(
            table
                .iter()
                .any(|r| r.starts_with(&format!("10.240.170.0/24 via {}", gw4(i)))),
            "{table:?}"
        );
        // Into the pod through each network, and out through each VRF.
        assert!(ping(&pod.nets[i], &v4(i)), "{ifname} IPv4");
        assert!(
            ping(&pod.nets[i], &v6(i)),
            "{ifname} IPv6: {}",
            diagnose(&pod)
        );
        assert!(
            ping_with(&pod.ns, &["-I", vrf], "10.240.170.1"),
            "{vrf} route"
        );
        pod.run("CHECK", i, vrf).ok();
    }
    // A third interface joins blue.
    pod.run("ADD", 2, "blue").ok();
    assert!(master_of(&pod, "net2").contains("master=blue"));
    assert!(ping(&pod.nets[2], &v4(2)));
    assert!(ping(&pod.nets[2], &v6(2)), "net2 IPv6: {}", diagnose(&pod));
    pod.run("CHECK", 2, "blue").ok();

    // blue stays while an interface is in it, and goes with the last.
    pod.run("DEL", 0, "blue").ok();
    assert!(master_of(&pod, "net0").contains("master=-"));
    assert!(master_of(&pod, "blue").contains("kind=vrf"));
    pod.run("DEL", 0, "blue").ok();
    pod.run("DEL", 2, "blue").ok();
    assert!(master_of(&pod, "blue").is_empty(), "{:?}", pod.links());
    pod.run("DEL", 2, "blue").ok();
    // DEL after the interface went (the reference fails).
    pod.ns.exec(&["ip", "link", "del", "net1"]);
    pod.run("DEL", 1, "red").ok();
    assert!(master_of(&pod, "red").is_empty(), "{:?}", pod.links());
}

#[test]
#[ignore = "kernel-features: vrf (scripts/vm-test.sh)"]
fn refusals_keep_the_references_words() {
    let pod = Pod::new("vrfr", 2);
    pod.run("ADD", 0, "blue").ok();
    let e = pod
        .call("ADD", 1, &pod.conf(1, "blue", json!({"table": 77})))
        .run(ours())
        .err(999);
    assert_eq!(
        e["msg"],
        "cmdAdd failed: VRF blue already exist with different routing table 1"
    );
    let e = pod.run("ADD", 1, "net0").err(999);
    assert_eq!(e["msg"], "cmdAdd failed: Netlink net0 is not a VRF");
    pod.ns.exec(&["ip", "link", "add", "br0", "type", "bridge"]);
    pod.ns.exec(&["ip", "link", "set", "net1", "master", "br0"]);
    let e = pod.run("ADD", 1, "blue").err(999);
    assert_eq!(
        e["msg"],
        "cmdAdd failed: interface net1 has already a master set: br0"
    );
    let e = pod.run("CHECK", 1, "blue").err(999);
    assert_eq!(e["msg"], "failed to find net1 associated to vrf blue");
    // DEL leaves an interface of another master alone.
    pod.run("DEL", 1, "blue").ok();
    assert!(master_of(&pod, "net1").contains("master=br0"));
    pod.run("DEL", 0, "blue").ok();
}

#[cfg(debug_assertions)]
#[test]
#[ignore = "kernel-features: vrf (scripts/vm-test.sh)"]
fn failed_add_at_each_step_changes_nothing() {
    let snapshot = |pod: &Pod| (pod.links(), pod.table("main"), pod.addrs("net0"));
    let pod = Pod::new("vrff", 1);
    let points = Failpoints::new();
    points
        .record(pod.call("ADD", 0, &pod.conf(0, "blue", json!({}))))
        .run(ours())
        .ok();
    let mut steps = points.passed("vrf/");
    steps.dedup();
    assert!(
        steps.starts_with(&[
            "vrf/created".to_string(),
            "vrf/up".into(),
            "vrf/enslaved".into()
        ]),
        "{steps:?}"
    );
    for step in &steps {
        let pod = Pod::new("vrff", 1);
        let conf = pod.conf(0, "blue", json!({}));
        let before = snapshot(&pod);
        let r = pod.call("ADD", 0, &conf).fail_at(step).run(ours());
        assert_eq!(
            r.err(999)["msg"],
            format!("cmdAdd failed: injected failure at {step}")
        );
        assert!(!r.stderr.contains("cleanup"), "{step}: {}", r.stderr);
        assert_eq!(snapshot(&pod), before, "{step}");
        pod.call("ADD", 0, &conf).run(ours()).ok();
        pod.call("CHECK", 0, &conf).run(ours()).ok();
        pod.call("DEL", 0, &conf).run(ours()).ok();
        assert!(master_of(&pod, "blue").is_empty(), "{step}");
    }
}
