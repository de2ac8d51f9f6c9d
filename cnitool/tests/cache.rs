//! The result cache against libcni's format: a cache file written here
//! byte for byte as libcni's `cacheAdd` writes it (as containerd or CRI-O
//! would leave it) is used by `cnitool del`, and what `cnitool add` writes
//! is exactly what libcni would have written.

mod common;

use common::{Setup, id_for, order, pairs};
use serde_json::json;

/// A containerd-style attachment: 64-hex sandbox ID, CRI args, capability
/// args with Go-cased keys, and a 0.4.0 result (keys sorted, `dns: {}`),
/// exactly as Go's json.Marshal(cachedInfo) lays it out.
const CONTAINER: &str = "4f2b8c0a9d1e3f5a7b6c8d0e2f4a6b8c0d2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a";
const FIXTURE_CONFIG: &str = r#"{"cniVersion":"0.4.0","name":"fix","plugins":[{"type":"noop"}]}"#;

fn fixture() -> String {
    let config = skel::base64::encode(FIXTURE_CONFIG.as_bytes());
    format!(
        concat!(
            r#"{{"kind":"cniCacheV1","containerId":"{id}","config":"{config}","ifName":"eth0","#,
            r#""networkName":"fix","netns":"/var/run/netns/cni-1b2c3d4e","#,
            r#""cniArgs":[["K8S_POD_NAMESPACE","default"],["K8S_POD_NAME","web"],["IgnoreUnknown","1"]],"#,
            r#""capabilityArgs":{{"io.kubernetes.cri.pod-annotations":{{}},"portMappings":[{{"ContainerPort":80,"HostIP":"","HostPort":8080,"Protocol":"tcp"}}]}},"#,
            r#""result":{{"cniVersion":"0.4.0","dns":{{}},"#,
            r#""interfaces":[{{"mac":"0a:78:fb:01:04:c6","name":"cni0"}},{{"mac":"3a:bf:86:bb:81:8b","name":"eth0","sandbox":"/var/run/netns/cni-1b2c3d4e"}}],"#,
            r#""ips":[{{"address":"10.240.7.2/24","gateway":"10.240.7.1","interface":1,"version":"4"}}],"#,
            r#""routes":[{{"dst":"0.0.0.0/0"}}]}}}}"#
        ),
        id = CONTAINER,
        config = config
    )
}

fn write_fixture(s: &Setup, content: &str) -> std::path::PathBuf {
    let dir = s.cache.join("results");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("fix-{CONTAINER}-eth0"));
    std::fs::write(&file, content).unwrap();
    file
}

#[test]
fn del_uses_a_cache_entry_written_by_libcni() {
    let s = Setup::new();
    // The network has since moved to 1.0.0: the cached 0.4.0 result must
    // arrive converted.
    let list = json!({"cniVersion": "1.0.0", "name": "fix", "plugins": [s.noop("a", json!({}))]});
    s.write_conf("fix.conflist", &list);
    let file = write_fixture(&s, &fixture());

    s.run(&[
        "del",
        "fix",
        "/var/run/netns/cni-1b2c3d4e",
        "--container-id",
        CONTAINER,
    ])
    .ok();
    let calls = s.calls();
    assert_eq!(order(&calls), pairs(&[("DEL", "a")]));
    let prev = &calls[0].stdin["prevResult"];
    assert_eq!(prev["cniVersion"], "1.0.0");
    assert_eq!(
        prev["ips"],
        json!([{"address": "10.240.7.2/24", "gateway": "10.240.7.1", "interface": 1}])
    );
    assert_eq!(
        prev["interfaces"][1]["sandbox"],
        "/var/run/netns/cni-1b2c3d4e"
    );
    assert!(!file.exists(), "cache entry not removed");
}

#[test]
fn add_writes_what_libcni_writes() {
    let s = Setup::new();
    let result = r#"{"cniVersion":"0.4.0","interfaces":[{"name":"cni0","mac":"0a:78:fb:01:04:c6"},{"name":"eth0","mac":"3a:bf:86:bb:81:8b","sandbox":"/var/run/netns/cni-1b2c3d4e"}],"ips":[{"version":"4","interface":1,"address":"10.240.7.2/24","gateway":"10.240.7.1"}],"routes":[{"dst":"0.0.0.0/0"}],"dns":{}}"#;
    // The plugin object is what the cached config holds, byte for byte.
    let debug = s.debug("a", json!({"ReportResult": result}));
    let config = format!(
        r#"{{"cniVersion":"0.4.0","name":"fix","plugins":[{{"type":"noop","debugFile":{}}}]}}"#,
        serde_json::to_string(&debug).unwrap()
    );
    std::fs::write(s.conf.join("fix.conflist"), &config).unwrap();
    s.run_env(
        &[
            "add",
            "fix",
            "/var/run/netns/cni-1b2c3d4e",
            "--container-id",
            CONTAINER,
        ],
        &[
            ("CNI_ARGS", "K8S_POD_NAMESPACE=default;K8S_POD_NAME=web;IgnoreUnknown=1"),
            (
                "CAP_ARGS",
                r#"{"portMappings":[{"HostPort":8080,"ContainerPort":80,"Protocol":"tcp","HostIP":""}],"io.kubernetes.cri.pod-annotations":{}}"#,
            ),
        ],
    )
    .ok();
    let written = std::fs::read_to_string(
        s.cache
            .join("results")
            .join(format!("fix-{CONTAINER}-eth0")),
    )
    .unwrap();
    let expected = fixture().replace(
        &skel::base64::encode(FIXTURE_CONFIG.as_bytes()),
        &skel::base64::encode(config.as_bytes()),
    );
    assert_eq!(written, expected);
}

#[test]
fn legacy_cache_holding_only_the_result_is_read() {
    let s = Setup::new();
    let list = json!({"cniVersion": "0.4.0", "name": "fix", "plugins": [s.noop("a", json!({}))]});
    s.write_conf("fix.conflist", &list);
    let file = write_fixture(
        &s,
        r#"{"cniVersion":"0.3.1","ips":[{"version":"4","address":"10.240.8.2/24"}],"dns":{}}"#,
    );
    s.run(&["del", "fix", "/x", "--container-id", CONTAINER])
        .ok();
    let prev = &s.calls()[0].stdin["prevResult"];
    assert_eq!(prev["cniVersion"], "0.4.0");
    assert_eq!(prev["ips"][0]["address"], "10.240.8.2/24");
    assert!(!file.exists());
}

#[test]
fn unusable_cache_does_not_block_del_but_fails_check() {
    let s = Setup::new();
    let list = json!({"cniVersion": "1.0.0", "name": "fix", "plugins": [s.noop("a", json!({}))]});
    s.write_conf("fix.conflist", &list);
    let file = write_fixture(&s, "this is not a cache");

    let err = s
        .run(&["check", "fix", "/x", "--container-id", CONTAINER])
        .fails(4);
    assert!(
        err["msg"]
            .as_str()
            .unwrap()
            .starts_with("failed to get network \"fix\" cached result: parse cached result"),
        "{err}"
    );
    assert!(s.calls().is_empty());

    let run = s.run(&["del", "fix", "/x", "--container-id", CONTAINER]);
    run.ok();
    assert!(
        run.stderr.contains("ignoring unusable cached result"),
        "{run:?}"
    );
    let calls = s.calls();
    assert_eq!(order(&calls), pairs(&[("DEL", "a")]));
    assert!(calls[0].stdin.get("prevResult").is_none());
    assert!(!file.exists());
}

#[test]
fn gc_finds_attachments_cached_by_other_runtimes() {
    let s = Setup::new();
    let list = json!({"cniVersion": "1.1.0", "name": "fix", "plugins": [s.noop("a", json!({}))]});
    s.write_conf("fix.conflist", &list);
    let file = write_fixture(&s, &fixture());
    // Files that are not v1 entries are not attachments.
    std::fs::write(s.cache.join("results").join("fix-legacy-eth0"), "{}").unwrap();
    s.run(&["gc", "fix", "--valid", &format!("{}/eth0", id_for("/keep"))])
        .ok();
    let calls = s.calls();
    assert_eq!(order(&calls), pairs(&[("DEL", "a"), ("GC", "a")]));
    // The DEL is made with the attachment's cached netns and args.
    assert_eq!(calls[0].container_id, CONTAINER);
    assert_eq!(
        calls[0].args,
        "K8S_POD_NAMESPACE=default;K8S_POD_NAME=web;IgnoreUnknown=1"
    );
    assert_eq!(calls[0].stdin["runtimeConfig"], serde_json::Value::Null);
    assert!(!file.exists());
    assert!(s.cache.join("results").join("fix-legacy-eth0").exists());
}

/// The cache file is never written through a link planted at its name:
/// the link's target stays as it was, a real file takes its place.
#[test]
fn a_planted_link_at_the_cache_file_is_not_followed() {
    let s = Setup::new();
    let result = json!({"cniVersion": "1.0.0", "ips": [{"address": "10.240.0.9/24"}]});
    let settings = json!({"ReportResult": result.to_string()});
    let list =
        json!({"cniVersion": "1.0.0", "name": "planted", "plugins": [s.noop("only", settings)]});
    s.write_conf("planted.conflist", &list);
    let ns = "/run/netns/cnirs-cache-planted";
    let file = s.cache_file("planted", &id_for(ns), "eth0");
    let mut planted = testsupport::planted::Planted::new();
    planted.plant(std::slice::from_ref(&file));
    s.run(&["add", "planted", ns]).ok();
    planted.check("cnitool add");
    assert!(planted.still_links().is_empty());
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("cniCacheV1")
    );
}
