//! Chains of the noop plugin driven through the cnitool binary: ADD order
//! and prevResult, DEL in reverse with the cached result, CHECK and
//! disableCheck, GC of stale attachments, STATUS, cniVersions, capability
//! and CNI_ARGS passing.

mod common;

use common::{Setup, id_for, mode, order, pairs};
use serde_json::{Value, json};

const NS: &str = "/run/netns/cnirs-chain-fake";

fn result_v1(addr: &str) -> String {
    json!({"cniVersion": "1.0.0", "ips": [{"address": addr}]}).to_string()
}

fn three_plugin_list(s: &Setup, version: &str) -> Value {
    json!({
        "cniVersion": version,
        "name": "chain",
        "plugins": [
            s.noop("first", json!({"ReportResult": result_v1("10.240.0.2/24")})),
            s.noop("second", json!({"ReportResult": result_v1("10.240.0.3/24")})),
            s.noop("third", json!({"ReportResult": result_v1("10.240.0.4/24")})),
        ]
    })
}

#[test]
fn add_runs_in_order_passing_each_result_on_and_caches_the_last() {
    let s = Setup::new();
    let list = three_plugin_list(&s, "1.0.0");
    s.write_conf("10-chain.conflist", &list);

    let result = s.run(&["add", "chain", NS]).ok();
    assert_eq!(result["ips"][0]["address"], "10.240.0.4/24");
    assert_eq!(result["cniVersion"], "1.0.0");

    let calls = s.calls();
    assert_eq!(
        order(&calls),
        pairs(&[("ADD", "first"), ("ADD", "second"), ("ADD", "third")])
    );
    let id = id_for(NS);
    for c in &calls {
        assert_eq!(c.container_id, id);
        assert_eq!(c.stdin["name"], "chain");
        assert_eq!(c.stdin["cniVersion"], "1.0.0");
        assert!(c.stdin.get("runtimeConfig").is_none());
    }
    assert!(calls[0].stdin.get("prevResult").is_none());
    assert_eq!(
        calls[1].stdin["prevResult"]["ips"][0]["address"],
        "10.240.0.2/24"
    );
    assert_eq!(
        calls[2].stdin["prevResult"]["ips"][0]["address"],
        "10.240.0.3/24"
    );

    // The cache holds the conflist bytes and the final result, private.
    let file = s.cache_file("chain", &id, "eth0");
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(&s.cache.join("results")), 0o700);
    let cached: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(cached["kind"], "cniCacheV1");
    assert_eq!(cached["netns"], NS);
    let config = skel::base64::decode(cached["config"].as_str().unwrap()).unwrap();
    assert_eq!(config, list.to_string().into_bytes());
    assert_eq!(cached["result"], result);
}

#[test]
fn del_runs_in_reverse_with_the_cached_result_then_drops_the_cache() {
    let s = Setup::new();
    s.write_conf("chain.conflist", &three_plugin_list(&s, "1.0.0"));
    s.run(&["add", "chain", NS]).ok();
    s.clear_log();

    s.run(&["del", "chain", NS]).ok();
    let calls = s.calls();
    assert_eq!(
        order(&calls),
        pairs(&[("DEL", "third"), ("DEL", "second"), ("DEL", "first")])
    );
    // Every plugin gets the cached final result.
    for c in &calls {
        assert_eq!(c.stdin["prevResult"]["ips"][0]["address"], "10.240.0.4/24");
    }
    assert!(!s.cache_file("chain", &id_for(NS), "eth0").exists());

    // DEL again: still succeeds, now without a prevResult.
    s.clear_log();
    s.run(&["del", "chain", NS]).ok();
    let calls = s.calls();
    assert_eq!(calls.len(), 3);
    assert!(calls.iter().all(|c| c.stdin.get("prevResult").is_none()));
}

#[test]
fn del_of_a_pre_0_4_0_list_sends_no_prev_result() {
    let s = Setup::new();
    let list = json!({"cniVersion": "0.3.1", "name": "old", "plugins": [
        s.noop("only", json!({"ReportResult": json!({"cniVersion":"0.3.1","ips":[{"version":"4","address":"10.240.0.9/24"}]}).to_string()})),
    ]});
    s.write_conf("old.conflist", &list);
    s.run(&["add", "old", NS]).ok();
    s.clear_log();
    s.run(&["del", "old", NS]).ok();
    let calls = s.calls();
    assert_eq!(order(&calls), pairs(&[("DEL", "only")]));
    assert!(calls[0].stdin.get("prevResult").is_none());

    // CHECK does not exist before 0.4.0.
    let err = s.run(&["check", "old", NS]).fails(3);
    assert_eq!(
        err["msg"],
        "configuration version \"0.3.1\" does not support the CHECK command"
    );
}

#[test]
fn check_runs_forward_with_the_cached_result_unless_disabled() {
    let s = Setup::new();
    let mut list = three_plugin_list(&s, "0.4.0");
    s.write_conf("chain.conflist", &list);
    s.run(&["add", "chain", NS]).ok();
    s.clear_log();

    s.run(&["check", "chain", NS]).ok();
    let calls = s.calls();
    assert_eq!(
        order(&calls),
        pairs(&[("CHECK", "first"), ("CHECK", "second"), ("CHECK", "third")])
    );
    // The cached 1.0.0 result reaches the plugins in the list's version.
    for c in &calls {
        assert_eq!(c.stdin["prevResult"]["cniVersion"], "0.4.0");
        assert_eq!(c.stdin["prevResult"]["ips"][0]["version"], "4");
    }

    s.clear_log();
    list["disableCheck"] = json!("true");
    s.write_conf("chain.conflist", &list);
    let run = s.run(&["check", "chain", NS]);
    run.ok();
    assert!(run.stderr.contains("disableCheck"), "{run:?}");
    assert!(s.calls().is_empty());
}

#[test]
fn gc_deletes_stale_attachments_and_sends_the_valid_set() {
    let s = Setup::new();
    let list = json!({"cniVersion": "1.1.0", "name": "gcnet", "plugins": [
        s.noop("a", json!({"ReportResult": result_v1("10.240.1.2/24")})),
        s.noop("b", json!({"ReportResult": result_v1("10.240.1.3/24")})),
    ]});
    s.write_conf("gc.conflist", &list);
    let (keep_ns, stale_ns) = ("/run/netns/cnirs-keep", "/run/netns/cnirs-stale");
    let (keep, stale) = (id_for(keep_ns), id_for(stale_ns));
    s.run(&["add", "gcnet", keep_ns]).ok();
    s.run_env(&["add", "gcnet", stale_ns], &[("CNI_ARGS", "FOO=bar")])
        .ok();
    // An attachment of another network must be left alone.
    let other = json!({"cniVersion": "1.1.0", "name": "other", "plugins": [
        s.noop("o", json!({"ReportResult": result_v1("10.240.2.2/24")})),
    ]});
    s.write_conf("other.conflist", &other);
    s.run(&["add", "other", stale_ns]).ok();
    s.clear_log();

    let valid = format!("{keep}/eth0");
    let run = s.run(&["gc", "gcnet", "--valid", &valid]);
    run.ok();
    assert!(
        run.stderr
            .contains(&format!("deleted stale attachment {stale}/eth0")),
        "{run:?}"
    );

    let calls = s.calls();
    assert_eq!(
        order(&calls),
        pairs(&[("DEL", "b"), ("DEL", "a"), ("GC", "a"), ("GC", "b")])
    );
    // The stale attachment is deleted with its cached args and result.
    assert_eq!(calls[0].container_id, stale);
    assert_eq!(calls[0].args, "FOO=bar");
    assert_eq!(
        calls[0].stdin["prevResult"]["ips"][0]["address"],
        "10.240.1.3/24"
    );
    let expected = json!([{"containerID": keep, "ifname": "eth0"}]);
    for gc in &calls[2..] {
        assert_eq!(gc.container_id, "");
        assert_eq!(gc.stdin["cni.dev/valid-attachments"], expected);
        assert_eq!(gc.stdin["cni.dev/attachments"], expected);
        assert_eq!(gc.stdin["cniVersion"], "1.1.0");
        assert!(gc.stdin.get("prevResult").is_none());
    }
    assert!(s.cache_file("gcnet", &keep, "eth0").exists());
    assert!(!s.cache_file("gcnet", &stale, "eth0").exists());
    assert!(s.cache_file("other", &stale, "eth0").exists());
}

#[test]
fn gc_without_valid_attachments_collects_everything_of_the_network() {
    let s = Setup::new();
    let list = json!({"cniVersion": "1.0.0", "name": "gc0", "plugins": [
        s.noop("a", json!({"ReportResult": result_v1("10.240.3.2/24")})),
    ]});
    s.write_conf("gc.conflist", &list);
    s.run(&["add", "gc0", NS]).ok();
    s.clear_log();
    s.run(&["gc", "gc0"]).ok();
    // 1.0.0: stale attachments are deleted, but no GC verb is sent.
    assert_eq!(order(&s.calls()), pairs(&[("DEL", "a")]));
    assert!(!s.cache_file("gc0", &id_for(NS), "eth0").exists());
}

#[test]
fn status_asks_every_plugin_of_a_1_1_0_list() {
    let s = Setup::new();
    let mut list = json!({"cniVersion": "1.1.0", "name": "st", "plugins": [
        s.noop("a", json!({})),
        s.noop("b", json!({})),
    ]});
    s.write_conf("st.conflist", &list);
    s.run(&["status", "st"]).ok();
    assert_eq!(
        order(&s.calls()),
        pairs(&[("STATUS", "a"), ("STATUS", "b")])
    );

    // A plugin that is not ready: its code reaches stdout, the chain stops.
    s.clear_log();
    list["plugins"][0] = s.noop(
        "a",
        json!({"ReportError": "no leases left", "ReportErrorCode": 50}),
    );
    s.write_conf("st.conflist", &list);
    let err = s.run(&["status", "st"]).fails(1);
    assert_eq!(err["code"], 50);
    assert_eq!(
        err["msg"],
        "plugin type=\"noop\" failed (status): no leases left"
    );
    assert_eq!(order(&s.calls()), pairs(&[("STATUS", "a")]));

    // Before 1.1.0 there is no STATUS: nothing is run.
    s.clear_log();
    list["cniVersion"] = json!("1.0.0");
    s.write_conf("st.conflist", &list);
    let run = s.run(&["status", "st"]);
    run.ok();
    assert!(run.stderr.contains("STATUS needs 1.1.0"), "{run:?}");
    assert!(s.calls().is_empty());
}

#[test]
fn cni_versions_negotiates_the_highest_we_speak() {
    let s = Setup::new();
    let list = json!({"cniVersion": "0.4.0", "cniVersions": ["1.0.0", "1.1.0", "2.0.0"], "name": "neg",
        "plugins": [s.noop("a", json!({"ReportResult": result_v1("10.240.4.2/24")}))]});
    s.write_conf("neg.conflist", &list);
    let result = s.run(&["add", "neg", NS]).ok();
    // noop relabels nothing: its 1.0.0 result is printed as returned.
    assert_eq!(result["cniVersion"], "1.0.0");
    let calls = s.calls();
    assert_eq!(calls[0].stdin["cniVersion"], "1.1.0");
}

#[test]
fn capability_args_reach_only_plugins_that_declare_them() {
    let s = Setup::new();
    let mut a = s.noop("a", json!({"ReportResult": result_v1("10.240.5.2/24")}));
    a["capabilities"] = json!({"portMappings": true, "bandwidth": false});
    let b = s.noop("b", json!({"ReportResult": "PASSTHROUGH"}));
    let list = json!({"cniVersion": "1.0.0", "name": "caps", "plugins": [a, b]});
    s.write_conf("caps.conflist", &list);
    let caps = r#"{"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"}],"bandwidth":{"ingressRate":1}}"#;
    s.run_env(
        &[
            "add",
            "caps",
            NS,
            "--args",
            "K8S_POD_NAME=web;IgnoreUnknown=1",
        ],
        &[("CAP_ARGS", caps)],
    )
    .ok();
    let calls = s.calls();
    assert_eq!(
        calls[0].stdin["runtimeConfig"],
        json!({"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"}]})
    );
    assert!(calls[1].stdin.get("runtimeConfig").is_none());
    assert!(
        calls
            .iter()
            .all(|c| c.args == "K8S_POD_NAME=web;IgnoreUnknown=1")
    );

    // Args and capability args are cached as libcni does.
    let cached: Value =
        serde_json::from_slice(&std::fs::read(s.cache_file("caps", &id_for(NS), "eth0")).unwrap())
            .unwrap();
    assert_eq!(
        cached["cniArgs"],
        json!([["K8S_POD_NAME", "web"], ["IgnoreUnknown", "1"]])
    );
    assert_eq!(cached["capabilityArgs"]["bandwidth"]["ingressRate"], 1);
}

#[test]
fn ifname_and_container_id_flags() {
    let s = Setup::new();
    let list = json!({"cniVersion": "1.0.0", "name": "flags", "plugins": [
        s.noop("a", json!({"ReportResult": result_v1("10.240.6.2/24")})),
    ]});
    s.write_conf("flags.conflist", &list);
    s.run_env(
        &["add", "flags", NS, "--container-id", "mybox"],
        &[("CNI_IFNAME", "net1")],
    )
    .ok();
    assert!(s.cache_file("flags", "mybox", "net1").exists());
    s.run(&["del", "flags", NS, "--container-id", "mybox", "-i", "net1"])
        .ok();
    assert!(!s.cache_file("flags", "mybox", "net1").exists());
    let calls = s.calls();
    assert!(calls.iter().all(|c| c.container_id == "mybox"));

    let err = s
        .run(&["add", "flags", NS, "--container-id", "bad/id"])
        .fails(2);
    assert_eq!(err["msg"], "invalid characters in containerID");
    s.run(&["add", "flags", NS, "--ifname", "much-too-long-name"])
        .fails(2);
}

#[test]
fn version_and_validate() {
    let s = Setup::new();
    let v = s.run(&["version", "noop"]).ok();
    assert_eq!(v["cniVersion"], "1.1.0");
    assert!(
        v["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("1.0.0"))
    );

    s.script(
        "old",
        r#"echo '{"cniVersion":"0.4.0","supportedVersions":["0.3.1","0.4.0"]}'"#,
    );
    let list = json!({"cniVersion": "1.0.0", "name": "val", "plugins": [
        {"type": "noop", "capabilities": {"portMappings": true}},
        {"type": "old"},
    ]});
    s.write_conf("val.conflist", &list);
    let err = s.run(&["validate", "val"]).fails(3);
    assert_eq!(
        err["msg"],
        "plugin old does not support config version \"1.0.0\" (it supports 0.3.1, 0.4.0)"
    );

    let list = json!({"cniVersion": "0.4.0", "name": "val", "plugins": [
        {"type": "noop", "capabilities": {"portMappings": true, "mac": false}},
        {"type": "old"},
    ]});
    s.write_conf("val.conflist", &list);
    let out = s.run(&["validate", "val"]).ok();
    assert_eq!(out["capabilities"], json!(["portMappings"]));
    assert_eq!(
        out["plugins"][1]["supportedVersions"],
        json!(["0.3.1", "0.4.0"])
    );
}
