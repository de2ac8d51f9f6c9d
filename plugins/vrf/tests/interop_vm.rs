//! Differential tests against the reference (Debian's v1.1.1
//! `/usr/lib/cni/vrf`, staged into the VM image by `scripts/vm-test.sh`),
//! where the kernel has VRF: the same interface put into a VRF by the
//! reference in one pod and by ours in another gives the same output
//! (`prevResult` passed through), the same VRF device and table, the
//! interface enslaved with its addresses, the same routes in the VRF's
//! table but for the routes of `main` ours copies (v1.9.1's behaviour,
//! README, vrf; v1.1.1 copies none); each CHECKs and DELs the other's;
//! the same refusals.

mod common;

use common::*;
use serde_json::{Value, json};

/// The output without the empty `dns` the reference prints.
fn comparable(mut r: Value) -> Value {
    if r["dns"] == json!({}) {
        r.as_object_mut().map(|o| o.remove("dns"));
    }
    r
}

/// The global addresses of `ifname`, `address/prefix`, sorted.
fn global_addrs(pod: &Pod, ifname: &str) -> Vec<String> {
    let v: Value =
        serde_json::from_str(&pod.ns.stdout(&["ip", "-j", "addr", "show", ifname])).unwrap();
    let mut out: Vec<String> = v[0]["addr_info"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["scope"] == "global")
        .map(|a| format!("{}/{}", a["local"].as_str().unwrap_or(""), a["prefixlen"]))
        .collect();
    out.sort();
    out
}

/// The IPv4 routes of `table` (IPv6's local routes come back on their
/// own time after enslavement; the VRF tests in kernel.rs wait for them).
fn v4_table(pod: &Pod, table: &str) -> Vec<String> {
    let mut out: Vec<String> = pod
        .ns
        .stdout(&["ip", "-4", "route", "show", "table", table])
        .lines()
        .map(str::to_string)
        .collect();
    out.sort();
    out
}

#[test]
#[ignore = "kernel-features: vrf (scripts/vm-test.sh)"]
fn same_vrf_as_the_reference() {
    let (a, b) = (Pod::new("vrfda", 2), Pod::new("vrfdb", 2));
    let before = a.links();
    assert_eq!(b.links(), before);
    let (conf_a, conf_b) = (a.conf(0, "blue", json!({})), b.conf(0, "blue", json!({})));
    let theirs = a.call("ADD", 0, &conf_a).run(go()).ok();
    let mine = b.call("ADD", 0, &conf_b).run(ours()).ok();
    assert_eq!(comparable(theirs), a.prev(0), "the reference's output");
    assert_eq!(mine, b.prev(0), "our output");

    // The same VRF (kind vrf, table 1), net0 in it.
    let links = a.links();
    assert_eq!(b.links(), links);
    assert!(
        links.contains(&"blue master=- kind=vrf table=1".to_string()),
        "{links:?}"
    );
    assert!(
        links.iter().any(|l| l.starts_with("net0 master=blue ")),
        "{links:?}"
    );
    // Addresses kept.
    let addrs = vec![format!("{}/24", v4(0)), format!("{}/64", v6(0))];
    assert_eq!(global_addrs(&a, "net0"), addrs);
    assert_eq!(global_addrs(&b, "net0"), addrs);
    // The kernel's routes moved into table 1 alike; ours also copied the
    // route of `main` via the gateway (v1.9.1, #874: v1.1.1 loses it).
    let (theirs, mine) = (v4_table(&a, "1"), v4_table(&b, "1"));
    assert!(
        theirs.iter().all(|r| mine.contains(r)),
        "{theirs:?} {mine:?}"
    );
    let copied: Vec<&String> = mine.iter().filter(|r| !theirs.contains(r)).collect();
    assert_eq!(copied.len(), 1, "{theirs:?} {mine:?}");
    let via = format!("10.240.170.0/24 via {} dev net0", gw4(0));
    assert!(copied[0].starts_with(&via), "{copied:?}");
    assert_eq!(v4_table(&a, "main"), v4_table(&b, "main"));

    // The same refusals, on the reference's VRF and on ours.
    for pod in [&a, &b] {
        for conf in [
            pod.conf(1, "blue", json!({"table": 77})),
            pod.conf(1, "net0", json!({})),
        ] {
            let o = pod.call("ADD", 1, &conf).run(ours());
            let t = pod.call("ADD", 1, &conf).run(go());
            assert_eq!((o.code, t.code), (1, 1), "{o:?} {t:?}");
            let (o, t) = (o.json(), t.json());
            assert_eq!((&o["code"], &o["msg"]), (&t["code"], &t["msg"]), "{conf}");
        }
    }
    assert_eq!(a.links(), links);
    assert_eq!(b.links(), links);

    // Each CHECKs and DELs the other's.
    a.call("CHECK", 0, &conf_a).run(ours()).ok();
    b.call("CHECK", 0, &conf_b).run(go()).ok();
    a.call("DEL", 0, &conf_a).run(ours()).ok();
    b.call("DEL", 0, &conf_b).run(go()).ok();
    assert_eq!(a.links(), before, "after our DEL of the reference's");
    assert_eq!(b.links(), before, "after the reference's DEL of ours");
    assert_eq!(global_addrs(&a, "net0"), addrs);
    assert_eq!(global_addrs(&b, "net0"), addrs);
}
