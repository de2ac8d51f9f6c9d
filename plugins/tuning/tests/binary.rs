//! Black-box tests of the built `tuning` binary: protocol edges and the
//! reference's messages for bad input, side by side with the Go plugin
//! where both versions behave alike. Nothing here needs a link: every case
//! fails (or succeeds) before one is touched.

mod common;

use std::path::Path;

use common::*;
use serde_json::{Value, json};
use testsupport::Call;

/// Both errors. Ours leaves no file; the reference may (it writes the
/// backup before it parses the MAC), so its files are cleared after.
fn run_both(c: &Container, conf: &Value) -> (Value, Value) {
    let ours = c.run("ADD", conf).err(999);
    assert!(c.data_files().is_empty(), "{conf}: {:?}", c.data_files());
    let go = c.run_go("ADD", conf).err(999);
    let _ = std::fs::remove_file(c.backup());
    (ours, go)
}

#[test]
fn errors_read_as_the_references() {
    let c = Container::new("berr");
    let cases = [
        json!({"mtu": "1400"}),
        json!({"sysctl": {"kernel.hostname": "x"}}),
        json!({"sysctl": ["net.core.somaxconn"]}),
        json!({"mac": "zz"}),
        json!({"prevResult": null}),
    ];
    for keys in cases {
        let mut conf = c.conf("1.0.0", keys.clone());
        if keys.get("prevResult").is_some() {
            conf.as_object_mut().unwrap().remove("prevResult");
        }
        let (ours, go) = run_both(&c, &conf);
        match keys.get("sysctl") {
            // v1.1.1 quotes the key before the dots are replaced, and has
            // no duplicate-key check (whose decoding errors come first
            // since v1.2.0); the messages are the current reference's.
            Some(Value::Object(_)) => {
                assert_eq!(ours["msg"], r#"invalid net sysctl key: "kernel/hostname""#)
            }
            Some(_) => assert_eq!(
                ours["msg"],
                "json: cannot unmarshal array into Go struct field sysctlCheck.sysctl of type map[main.sysctlKey]string"
            ),
            None => assert_eq!(ours, go, "{keys}"),
        }
    }
}

#[test]
fn duplicate_sysctl_keys_are_refused() {
    let c = Container::new("bdup");
    let conf = c.conf("1.0.0", json!({}));
    let text = conf.to_string().replacen(
        '{',
        r#"{"sysctl":{"net.core.somaxconn":"1","net.core.somaxconn":"2"},"#,
        1,
    );
    for cmd in ["ADD", "CHECK"] {
        let r = Call::new(cmd)
            .container_id("c1")
            .netns(c.ns.path())
            .ifname("eth0")
            .path("/x")
            .stdin(text.clone())
            .run(ours());
        assert_eq!(
            r.err(999)["msg"],
            "duplicated sysctl keys are not allowed",
            "{cmd}"
        );
    }
}

#[test]
fn del_needs_no_namespace_and_add_does() {
    let c = Container::new("bns");
    let conf = c.conf("1.0.0", json!({"mtu": 1400}));
    let r = c.call("ADD", &conf).netns("").run(ours());
    assert_eq!(
        r.err(4)["msg"],
        "required env variables [CNI_NETNS] missing"
    );
    c.call("DEL", &conf).netns("").run(ours()).ok();
    c.call("DEL", &conf)
        .netns("/run/netns/cnirs-no-such-ns")
        .run(ours())
        .ok();
    // The plugin's own namespace is refused before anything runs.
    let r = c.call("ADD", &conf).netns("/proc/self/ns/net").run(ours());
    assert_eq!(
        r.err(8)["msg"],
        "plugin's netns and netns from CNI_NETNS should not be the same"
    );
}

#[test]
fn status_version_and_about() {
    let c = Container::new("bver");
    let conf = c.conf("1.1.0", json!({}));
    let r = c.call("STATUS", &conf).run(ours());
    assert_eq!((r.code, r.stdout.as_str()), (0, ""));
    let v = Call::new("VERSION").run(ours()).ok();
    assert_eq!(v["supportedVersions"].as_array().unwrap().len(), 7);
    let about = Call::new("").run(ours());
    assert!(about.stderr.starts_with("CNI tuning plugin "), "{about:?}");
    assert!(Path::new(GO).exists());
}
