//! Black-box tests of the built binary: env + stdin in, one JSON document
//! out, for every spec version's result shape and the error texts.

mod common;

use std::fs;

use common::*;
use serde_json::json;
use testsupport::{Call, TempDir};

const DUAL: &str = r#""ranges":[[{"subnet":"10.240.0.0/29"}],[{"subnet":"fd40::/125"}]],"routes":[{"dst":"0.0.0.0/0"},{"dst":"fd41::/16","gw":"fd40::9"}]"#;

#[test]
fn result_shape_of_every_version() {
    let d = TempDir::new("hl-bin");
    fs::write(
        d.join("resolv.conf"),
        "nameserver 10.240.0.53\ndomain x.example\n",
    )
    .unwrap();
    let ipam = format!(
        r#""resolvConf":"{}",{DUAL}"#,
        d.join("resolv.conf").display()
    );
    let dns02 = json!({"nameservers": ["10.240.0.53"], "domain": "x.example"});
    for (i, v) in [
        "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0",
    ]
    .iter()
    .enumerate()
    {
        let data = d.join(v);
        let out = run(&ours(), "ADD", &format!("c{i}"), &conf(v, &data, &ipam)).ok();
        let want = match *v {
            "0.1.0" | "0.2.0" => json!({
                "cniVersion": v,
                "ip4": {"ip": "10.240.0.2/29", "gateway": "10.240.0.1", "routes": [{"dst": "0.0.0.0/0"}]},
                "ip6": {"ip": "fd40::2/125", "gateway": "fd40::1", "routes": [{"dst": "fd41::/16", "gw": "fd40::9"}]},
                "dns": dns02,
            }),
            "0.3.0" | "0.3.1" | "0.4.0" => json!({
                "cniVersion": v,
                "ips": [
                    {"version": "4", "address": "10.240.0.2/29", "gateway": "10.240.0.1"},
                    {"version": "6", "address": "fd40::2/125", "gateway": "fd40::1"},
                ],
                "routes": [{"dst": "0.0.0.0/0"}, {"dst": "fd41::/16", "gw": "fd40::9"}],
                "dns": dns02,
            }),
            _ => json!({
                "cniVersion": v,
                "ips": [
                    {"address": "10.240.0.2/29", "gateway": "10.240.0.1"},
                    {"address": "fd40::2/125", "gateway": "fd40::1"},
                ],
                "routes": [{"dst": "0.0.0.0/0"}, {"dst": "fd41::/16", "gw": "fd40::9"}],
                "dns": dns02,
            }),
        };
        assert_eq!(out, want, "version {v}");
    }
}

#[test]
fn error_texts() {
    let d = TempDir::new("hl-bin");
    let c = conf("1.0.0", d.path(), DUAL);
    run(&ours(), "ADD", "c1", &c).ok();
    let e = run(&ours(), "ADD", "c1", &c).err(999);
    assert_eq!(
        e["msg"],
        "failed to allocate for range 0: 10.240.0.2 has been allocated to c1, duplicate allocation is not allowed"
    );
    let e = call("ADD", "c2", "eth0")
        .args("K8S_POD_NAME=x")
        .stdin(c.as_str())
        .run(&ours())
        .err(999);
    assert_eq!(e["msg"], "ARGS: unknown args [\"K8S_POD_NAME=x\"]");
    let e = run(
        &ours(),
        "ADD",
        "c2",
        &conf("1.0.0", d.path(), r#""ranges":[]"#),
    )
    .err(999);
    assert_eq!(e["msg"], "no IP ranges specified");
    let e = run(
        &ours(),
        "ADD",
        "c2",
        r#"{"cniVersion":"1.0.0","name":"net1"}"#,
    )
    .err(999);
    assert_eq!(e["msg"], "IPAM config missing 'ipam' key");
    let e = run(&ours(), "ADD", "c2", &c.replace("\"net1\"", "\"../up\"")).err(7);
    assert_eq!(e["msg"], "invalid characters found in network name");
    let e = run(&ours(), "CHECK", "c9", &c).err(999);
    assert_eq!(
        e["msg"],
        "host-local: Failed to find address added by container c9"
    );
    // DEL needs no netns at all.
    call("DEL", "c1", "eth0")
        .netns("")
        .stdin(c.as_str())
        .run(&ours())
        .ok();
    call("DEL", "c1", "eth0")
        .netns("")
        .stdin(c.as_str())
        .run(&ours())
        .ok();
    assert!(leases(d.path()).is_empty());
}

#[test]
fn gc_and_status_of_a_1_1_0_network() {
    let d = TempDir::new("hl-bin");
    let c = conf(
        "1.1.0",
        d.path(),
        r#""ranges":[[{"subnet":"10.240.0.0/29","rangeEnd":"10.240.0.3"}]]"#,
    );
    run(&ours(), "STATUS", "", &c).ok();
    run(&ours(), "ADD", "a", &c).ok();
    run(&ours(), "ADD", "b", &c).ok();
    let e = run(&ours(), "STATUS", "", &c).err(50);
    assert!(
        e["msg"]
            .as_str()
            .unwrap()
            .contains("no IP addresses available in range set 0")
    );

    let out = run(&ours(), "GC", "", &c);
    out.ok();
    assert!(out.stderr.contains("releasing nothing"), "{out:?}");
    assert_eq!(leases(d.path()).len(), 2);

    let with = |v: &str| format!("{},\"cni.dev/valid-attachments\":{v}}}", &c[..c.len() - 1]);
    run(
        &ours(),
        "GC",
        "",
        &with(r#"[{"containerID":"b","ifname":"eth0"}]"#),
    )
    .ok();
    assert_eq!(
        leases(d.path()),
        [("10.240.0.3".to_string(), "b\r\neth0".to_string())]
    );
    run(&ours(), "STATUS", "", &c).ok();
}

#[test]
fn version_lists_every_spec_version() {
    let out = Call::new("VERSION").run(&ours()).ok();
    assert_eq!(
        out["supportedVersions"],
        json!([
            "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"
        ])
    );
}
