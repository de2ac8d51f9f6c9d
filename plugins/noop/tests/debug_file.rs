//! The Debug file protocol, as the reference's Go test suites use it: the
//! file drives noop's answer and records each invocation; `commandLog`
//! collects every call; `PASSTHROUGH`/`INJECT-DNS` echo `prevResult`.

mod common;

use common::{DebugFile, bin, call, stdin_data};
use serde_json::{Value, json};
use testsupport::Call;

const RESULT_100: &str = r#"{"cniVersion":"1.0.0","ips":[{"address":"10.240.1.2/24"}]}"#;

#[test]
fn records_the_invocation_and_answers_verbatim() {
    let d = DebugFile::new(json!({"ReportResult": RESULT_100}));
    let stdin = r#"{"name": "noop-test", "some":"stdin-json", "cniVersion": "1.0.0"}"#;
    let run = call("ADD", stdin).args(&d.args()).run(bin());
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, RESULT_100, "verbatim, nothing else");
    assert_eq!(run.stderr, "");

    let recorded = d.read();
    assert_eq!(recorded["ReportResult"], RESULT_100);
    assert_eq!(recorded["Command"], "ADD");
    let args = &recorded["CmdArgs"];
    assert_eq!(args["ContainerID"], "some-container-id");
    assert_eq!(args["Netns"], "/some/netns/path");
    assert_eq!(args["IfName"], "eth0");
    assert_eq!(args["Args"], d.args());
    assert_eq!(args["Path"], "/some/bin/path");
    assert_eq!(args["NetnsOverride"], "");
    assert_eq!(stdin_data(&args["StdinData"]), stdin.as_bytes());
}

/// What Go's `json.Marshal(debug.Debug)` writes, key for key and in order,
/// so `json.Unmarshal` into Go's struct round-trips and diffs stay empty.
#[test]
fn rewritten_file_has_go_shape() {
    let d = DebugFile::new(json!({"ReportResult": "<x>", "ReportStderr": "s"}));
    let stdin = r#"{"cniVersion":"1.0.0","name":"n"}"#;
    let run = call("ADD", stdin).args(&d.args()).run(bin());
    assert_eq!(run.code, 0, "{run:?}");
    let expected = format!(
        concat!(
            r#"{{"ReportResult":"\u003cx\u003e","ReportError":"","ReportErrorCode":0,"#,
            r#""ReportStderr":"s","ReportVersionSupport":null,"ExitWithCode":0,"Command":"ADD","#,
            r#""CmdArgs":{{"ContainerID":"some-container-id","Netns":"/some/netns/path","#,
            r#""IfName":"eth0","Args":"{}","Path":"/some/bin/path","NetnsOverride":"","#,
            r#""StdinData":"{}"}}}}"#
        ),
        d.args(),
        common::base64::encode(stdin.as_bytes())
    );
    assert_eq!(d.raw(), expected);
}

#[test]
fn debug_file_from_config_and_args_precedence() {
    let d = DebugFile::new(json!({"ReportResult": RESULT_100}));
    let stdin = format!(
        r#"{{"name":"noop-test","cniVersion":"1.0.0","debugFile":{:?}}}"#,
        d.path_str()
    );
    // No CNI_ARGS at all, and CNI_ARGS without DEBUG.
    for args in ["", "FOO=BAR"] {
        let run = call("ADD", &stdin).args(args).run(bin());
        assert_eq!(run.stdout, RESULT_100, "{run:?}");
        let recorded = d.read();
        assert_eq!(recorded["CmdArgs"]["Args"], args);
        assert_eq!(
            stdin_data(&recorded["CmdArgs"]["StdinData"]),
            stdin.as_bytes()
        );
    }
    // DEBUG= in CNI_ARGS wins over debugFile.
    let other = DebugFile::new(json!({"ReportResult": "other"}));
    let run = call("ADD", &stdin).args(&other.args()).run(bin());
    assert_eq!(run.stdout, "other", "{run:?}");
    assert_eq!(other.read()["Command"], "ADD");
}

#[test]
fn report_error_with_and_without_code() {
    let d =
        DebugFile::new(json!({"ReportError": "banana", "ReportErrorCode": 7, "ExitWithCode": 3}));
    let run = call("ADD", r#"{"cniVersion":"1.0.0","name":"n"}"#)
        .args(&d.args())
        .run(bin());
    // ExitWithCode is ignored when an error is reported.
    let v = run.err(7);
    assert_eq!(v["msg"], "banana");
    assert!(v.get("details").is_none());
    assert_eq!(d.read()["Command"], "ADD", "recorded before failing");

    d.write(json!({"ReportError": "banana"}));
    let run = call("DEL", r#"{"cniVersion":"1.0.0","name":"n"}"#)
        .args(&d.args())
        .run(bin());
    assert_eq!(run.err(999)["msg"], "banana");
    assert_eq!(run.stderr, "");
}

#[test]
fn report_stderr_is_verbatim() {
    let d = DebugFile::new(json!({"ReportStderr": "line one\nno newline", "ReportResult": "{}"}));
    let run = call("ADD", r#"{"cniVersion":"1.0.0","name":"n"}"#)
        .args(&d.args())
        .run(bin());
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stderr, "line one\nno newline");
    assert_eq!(run.stdout, "{}");
}

#[test]
fn exit_with_code_after_printing() {
    let d = DebugFile::new(json!({"ReportResult": RESULT_100, "ExitWithCode": 2}));
    let run = call("ADD", r#"{"cniVersion":"1.0.0","name":"n"}"#)
        .args(&d.args())
        .run(bin());
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.stdout, RESULT_100, "the result, no error object");
    // The Go suite's case: no result, exit 3, empty stdout.
    d.write(json!({"ExitWithCode": 3}));
    let run = call("ADD", r#"{"cniVersion":"1.0.0","name":"n"}"#)
        .args(&d.args())
        .run(bin());
    assert_eq!((run.code, run.stdout.as_str()), (3, ""), "{run:?}");
    assert_eq!(d.read()["ReportResult"], "");
}

#[test]
fn empty_report_result_prints_nothing() {
    let d = DebugFile::new(json!({}));
    for verb in ["ADD", "DEL", "CHECK"] {
        let run = call(verb, r#"{"cniVersion":"1.0.0","name":"n"}"#)
            .args(&d.args())
            .run(bin());
        assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{verb}: {run:?}");
        assert_eq!(d.read()["Command"], verb);
    }
}

#[test]
fn report_version_support_changes_version_and_checks() {
    let d = DebugFile::new(json!({"ReportVersionSupport": ["0.123.0", "0.2.0"]}));
    let stdin = r#"{"name":"noop-test","cniVersion":"0.3.1"}"#;
    let run = Call::new("VERSION").args(&d.args()).stdin(stdin).run(bin());
    assert_eq!(
        run.stdout,
        "{\"cniVersion\":\"1.1.0\",\"supportedVersions\":[\"0.123.0\",\"0.2.0\"]}\n"
    );
    let run = call("ADD", stdin).args(&d.args()).run(bin());
    let v = run.err(1);
    assert_eq!(v["msg"], "incompatible CNI versions");
    assert_eq!(
        v["details"],
        r#"config is "0.3.1", plugin supports ["0.123.0" "0.2.0"]"#
    );
    // The about text lists them too.
    let run = Call::new("").args(&d.args()).stdin(stdin).run(bin());
    assert_eq!(
        run.stderr,
        "CNI noop plugin v0.7.0\nCNI protocol versions supported: 0.123.0, 0.2.0\n"
    );
    // A version in the list works.
    let run = call("ADD", r#"{"name":"n","cniVersion":"0.2.0"}"#)
        .args(&d.args())
        .run(bin());
    assert_eq!(run.code, 0, "{run:?}");
}

fn passthrough(mode: &str, config_version: &str, prev: Value) -> String {
    let d = DebugFile::new(json!({"ReportResult": mode}));
    let stdin = json!({"name": "noop-test", "cniVersion": config_version, "prevResult": prev});
    let run = call("ADD", &stdin.to_string()).args(&d.args()).run(bin());
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stderr, "");
    run.stdout
}

#[test]
fn passthrough_same_version_like_go_suite() {
    for v in ["0.3.1", "0.4.0"] {
        let out = passthrough(
            "PASSTHROUGH",
            v,
            json!({"cniVersion": v, "ips": [{"version": "4", "address": "10.240.1.15/24"}]}),
        );
        assert_eq!(
            out,
            format!(
                r#"{{"cniVersion":"{v}","ips":[{{"version":"4","address":"10.240.1.15/24"}}],"dns":{{}}}}"#
            )
        );
    }
}

/// A 1.0.0 prevResult under older configs is converted to the config's
/// version. (The reference noop refuses this mix in `ParsePrevResult`,
/// before PASSTHROUGH: `result type supports [0.3.0 0.3.1 0.4.0] but
/// unmarshalled CNIVersion is "1.0.0"`; our skel converts any version.)
#[test]
fn passthrough_converts_across_versions() {
    let prev = json!({
        "cniVersion": "1.0.0",
        "interfaces": [{"name": "eth0", "mac": "02:00:00:00:00:01", "sandbox": "/x"}],
        "ips": [
            {"address": "10.240.1.2/24", "gateway": "10.240.1.1", "interface": 0},
            {"address": "fd40::2/64", "interface": 0}
        ],
        "routes": [{"dst": "0.0.0.0/0"}, {"dst": "::/0", "gw": "fd40::1"}]
    });
    assert_eq!(
        passthrough("PASSTHROUGH", "0.4.0", prev.clone()),
        concat!(
            r#"{"cniVersion":"0.4.0","interfaces":[{"name":"eth0","mac":"02:00:00:00:00:01","sandbox":"/x"}],"#,
            r#""ips":[{"version":"4","interface":0,"address":"10.240.1.2/24","gateway":"10.240.1.1"},"#,
            r#"{"version":"6","interface":0,"address":"fd40::2/64"}],"#,
            r#""routes":[{"dst":"0.0.0.0/0"},{"dst":"::/0","gw":"fd40::1"}],"dns":{}}"#
        )
    );
    assert_eq!(
        passthrough("PASSTHROUGH", "0.2.0", prev),
        concat!(
            r#"{"cniVersion":"0.2.0","ip4":{"ip":"10.240.1.2/24","gateway":"10.240.1.1","routes":[{"dst":"0.0.0.0/0"}]},"#,
            r#""ip6":{"ip":"fd40::2/64","routes":[{"dst":"::/0","gw":"fd40::1"}]},"dns":{}}"#
        )
    );
}

#[test]
fn passthrough_keeps_11_fields_and_defaults_the_label() {
    let prev = json!({
        "cniVersion": "1.1.0",
        "interfaces": [{"name": "eth0", "mtu": 1400, "socketPath": "/s", "pciID": "0000:00:01.0"}],
        "ips": [{"address": "10.240.1.2/24", "interface": 0}],
        "routes": [{"dst": "10.240.9.0/24", "mtu": 1300, "advmss": 1200, "priority": 5, "table": 100, "scope": 253}]
    });
    assert_eq!(
        passthrough("PASSTHROUGH", "1.1.0", prev),
        concat!(
            r#"{"cniVersion":"1.1.0","interfaces":[{"mtu":1400,"name":"eth0","pciID":"0000:00:01.0","socketPath":"/s"}],"#,
            r#""ips":[{"address":"10.240.1.2/24","interface":0}],"#,
            r#""routes":[{"advmss":1200,"dst":"10.240.9.0/24","mtu":1300,"priority":5,"scope":253,"table":100}]}"#
        )
    );
    // A prevResult without cniVersion is in the config's version.
    assert_eq!(
        passthrough(
            "PASSTHROUGH",
            "0.2.0",
            json!({"ip4": {"ip": "10.240.1.2/24"}})
        ),
        r#"{"cniVersion":"0.2.0","ip4":{"ip":"10.240.1.2/24"},"dns":{}}"#
    );
}

#[test]
fn inject_dns() {
    // The Go suite's case.
    let out = passthrough(
        "INJECT-DNS",
        "0.4.0",
        json!({"cniVersion": "0.4.0", "ips": [{"version": "4", "address": "10.240.1.3/24"}], "dns": {}}),
    );
    assert_eq!(
        out,
        r#"{"cniVersion":"0.4.0","ips":[{"version":"4","address":"10.240.1.3/24"}],"dns":{"nameservers":["1.2.3.4"]}}"#
    );
    // Replaces existing nameservers, keeps the rest of dns, 1.x key order.
    let out = passthrough(
        "INJECT-DNS",
        "1.1.0",
        json!({"cniVersion": "1.0.0", "ips": [{"address": "10.240.1.3/24"}],
               "dns": {"nameservers": ["9.9.9.9"], "search": ["a"]}}),
    );
    assert_eq!(
        out,
        r#"{"cniVersion":"1.1.0","dns":{"nameservers":["1.2.3.4"],"search":["a"]},"ips":[{"address":"10.240.1.3/24"}]}"#
    );
}

/// The reference dereferences a nil prevResult here and panics.
#[test]
fn passthrough_without_prev_result_is_an_error() {
    for mode in ["PASSTHROUGH", "INJECT-DNS"] {
        let d = DebugFile::new(json!({"ReportResult": mode}));
        let run = call("ADD", r#"{"cniVersion":"1.0.0","name":"n"}"#)
            .args(&d.args())
            .run(bin());
        let v = run.err(999);
        assert_eq!(
            v["msg"],
            format!("ReportResult {mode} needs a prevResult in the config, and there is none")
        );
    }
    // A prevResult that cannot be expressed in the config's version.
    let d = DebugFile::new(json!({"ReportResult": "PASSTHROUGH"}));
    let stdin = r#"{"cniVersion":"0.2.0","name":"n","prevResult":{"cniVersion":"1.0.0"}}"#;
    let run = call("ADD", stdin).args(&d.args()).run(bin());
    assert_eq!(
        run.err(999)["msg"],
        "failed to convert result to config \"0.2.0\": cannot convert: no valid IP addresses"
    );
}

#[test]
fn command_log_collects_every_verb() {
    let d = DebugFile::new(json!({}));
    let stdin = format!(
        r#"{{"cniVersion":"1.1.0","name":"n","debugFile":{:?},"commandLog":{:?}}}"#,
        d.path_str(),
        d.log_str()
    );
    for verb in ["ADD", "CHECK", "DEL"] {
        let run = call(verb, &stdin).run(bin());
        assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{verb}: {run:?}");
    }
    for verb in ["GC", "STATUS"] {
        let run = Call::new(verb)
            .path("/opt/cni/bin")
            .stdin(stdin.as_str())
            .run(bin());
        assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{verb}: {run:?}");
    }
    let log = d.read_log();
    let verbs: Vec<&str> = log
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["Command"].as_str().unwrap())
        .collect();
    assert_eq!(verbs, ["ADD", "CHECK", "DEL", "GC", "STATUS"]);
    assert_eq!(log[0]["CmdArgs"]["ContainerID"], "some-container-id");
    assert_eq!(log[3]["CmdArgs"]["ContainerID"], "");
    assert_eq!(log[3]["CmdArgs"]["Path"], "/opt/cni/bin");
    assert_eq!(
        stdin_data(&log[4]["CmdArgs"]["StdinData"]),
        stdin.as_bytes()
    );
    // The Go key order inside each entry.
    let raw = std::fs::read_to_string(&d.log).unwrap();
    assert!(
        raw.starts_with(r#"[{"Command":"ADD","CmdArgs":{"ContainerID":"#),
        "{raw}"
    );
}

#[test]
fn missing_command_log_is_an_error() {
    let d = DebugFile::new(json!({"ReportResult": "{}"}));
    let missing = d.dir().join("absent.json");
    let stdin = format!(
        r#"{{"cniVersion":"1.0.0","name":"n","commandLog":{:?}}}"#,
        missing.to_str().unwrap()
    );
    let run = call("ADD", &stdin).args(&d.args()).run(bin());
    assert_eq!(
        run.err(999)["msg"],
        format!("open {}: no such file or directory", missing.display())
    );
}

#[test]
fn gc_and_status_with_110_configs() {
    let d = DebugFile::new(json!({}));
    // What libcni sends for GC: plugin object, name, cniVersion and the
    // valid attachments; env with only CNI_COMMAND and CNI_PATH.
    let gc = format!(
        r#"{{"cni.dev/attachments":[{{"containerID":"c1","ifname":"eth0"}}],"cni.dev/valid-attachments":[{{"containerID":"c1","ifname":"eth0"}}],"cniVersion":"1.1.0","debugFile":{:?},"name":"n","type":"noop"}}"#,
        d.path_str()
    );
    let run = Call::new("GC")
        .path("/opt/cni/bin")
        .stdin(gc.as_str())
        .run(bin());
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    let recorded = d.read();
    assert_eq!(recorded["Command"], "GC");
    assert_eq!(
        recorded["CmdArgs"],
        json!({"ContainerID":"","Netns":"","IfName":"","Args":"","Path":"/opt/cni/bin",
               "NetnsOverride":"","StdinData": common::base64::encode(gc.as_bytes())})
    );

    d.write(json!({"ReportError": "not ready", "ReportErrorCode": 50}));
    let status = format!(
        r#"{{"cniVersion":"1.1.0","debugFile":{:?},"name":"n","type":"noop"}}"#,
        d.path_str()
    );
    let run = Call::new("STATUS")
        .path("/opt/cni/bin")
        .stdin(status.as_str())
        .run(bin());
    assert_eq!(run.err(50)["msg"], "not ready");
    assert_eq!(d.read()["Command"], "STATUS");
}

#[test]
fn del_does_the_debug_behaviour() {
    let d = DebugFile::new(json!({"ReportResult": r#"{ "some": "delete-data" }"#}));
    let run = call("DEL", r#"{"cniVersion":"0.3.1","name":"n"}"#)
        .args(&d.args())
        .env("CNI_NETNS_OVERRIDE", "1")
        .run(bin());
    assert_eq!(run.stdout, r#"{ "some": "delete-data" }"#, "{run:?}");
    let recorded = d.read();
    assert_eq!(recorded["Command"], "DEL");
    assert_eq!(recorded["CmdArgs"]["NetnsOverride"], "1");
}

#[test]
fn debug_file_written_by_go_with_extra_fields_is_read() {
    // A file from a previous run (CmdArgs filled, StdinData base64) and
    // lower-case keys, which Go's decoder also matches.
    let d = DebugFile::new(json!({
        "reportresult": "ok", "Command": "ADD",
        "CmdArgs": {"ContainerID": "old", "StdinData": "e30="}, "Unknown": [1]
    }));
    let run = call("CHECK", r#"{"cniVersion":"1.0.0","name":"n"}"#)
        .args(&d.args())
        .run(bin());
    assert_eq!(run.stdout, "ok", "{run:?}");
    let recorded = d.read();
    assert_eq!(recorded["Command"], "CHECK");
    assert_eq!(recorded["CmdArgs"]["ContainerID"], "some-container-id");
    assert!(recorded.get("Unknown").is_none());
}
