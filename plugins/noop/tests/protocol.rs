//! The CNI protocol as seen through the noop binary: libcni's VERSION
//! probe, every row of the skel outcome table (reference §1.8), every error
//! code noop can report, and the places where noop's answers differ from a
//! plugin that registers no function (noted per test).

mod common;

use common::{DEFAULT_SUPPORTS, DebugFile, bin, call};
use serde_json::json;
use testsupport::{Call, PluginRun};

/// An error run: exit 1, exactly one JSON document on stdout with `code`,
/// `msg` and (if given) `details`, nothing on stderr.
fn assert_error(run: &PluginRun, code: u64, msg: &str, details: Option<&str>) {
    let v = run.err(code);
    assert_eq!(v["msg"], msg, "{run:?}");
    match details {
        Some(d) => assert_eq!(v["details"], d, "{run:?}"),
        None => assert!(v.get("details").is_none(), "{run:?}"),
    }
    assert_eq!(run.stderr, "", "errors go to stdout only: {run:?}");
    assert!(!run.stdout.ends_with('\n'), "no trailing newline: {run:?}");
}

/// A broken test setup: a clear CNI error on stdout, and exit status 2 as
/// when the reference noop panics.
fn setup_error(run: &PluginRun) -> serde_json::Value {
    assert_eq!(run.code, 2, "{run:?}");
    let v = run.json();
    assert_eq!(v["code"], 999, "{run:?}");
    v
}

fn assert_setup_error(run: &PluginRun, msg: &str) {
    assert_eq!(setup_error(run)["msg"], msg, "{run:?}");
}

const CONF_100: &str = r#"{"cniVersion":"1.0.0","name":"net"}"#;
const CONF_110: &str = r#"{"cniVersion":"1.1.0","name":"net"}"#;

#[test]
fn libcni_version_probe() {
    // Exactly what invoke.GetVersionInfo sends.
    let run = Call::new("VERSION")
        .netns("dummy")
        .ifname("dummy")
        .path("dummy")
        .stdin(r#"{"cniVersion":"1.1.0"}"#)
        .run(bin());
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        "{\"cniVersion\":\"1.1.0\",\"supportedVersions\":[\"0.-42.0\",\"0.1.0\",\"0.2.0\",\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\",\"1.1.0\"]}\n"
    );
    assert_eq!(run.stderr, "");
}

#[test]
fn row_command_unset_prints_about_to_stderr() {
    let run = Call::new("").stdin(CONF_100).run(bin());
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        "CNI noop plugin v0.7.0\nCNI protocol versions supported: 0.-42.0, 0.1.0, 0.2.0, 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0\n"
    );
}

#[test]
fn row_add_without_environment() {
    let run = Call::new("ADD").stdin(CONF_100).run(bin());
    assert_error(
        &run,
        4,
        "required env variables [CNI_CONTAINERID,CNI_NETNS,CNI_IFNAME,CNI_PATH] missing",
        None,
    );
    // DEL needs no netns; GC and STATUS need only CNI_PATH.
    let run = Call::new("DEL").stdin(CONF_100).run(bin());
    assert_error(
        &run,
        4,
        "required env variables [CNI_CONTAINERID,CNI_IFNAME,CNI_PATH] missing",
        None,
    );
    for verb in ["GC", "STATUS"] {
        let run = Call::new(verb).stdin(CONF_110).run(bin());
        assert_error(&run, 4, "required env variables [CNI_PATH] missing", None);
    }
}

#[test]
fn row_ifname_too_long() {
    let run = call("ADD", CONF_100).ifname("abcdefghijklmnop").run(bin());
    assert_error(
        &run,
        4,
        "interface name is too long",
        Some("interface name should be less than 16 characters"),
    );
}

#[test]
fn row_bad_container_id() {
    let run = call("ADD", CONF_100).container_id("-a").run(bin());
    assert_error(&run, 4, "invalid characters in containerID", Some("-a"));
}

#[test]
fn row_invalid_var_reported_before_missing_ones() {
    // The scan returns at the first invalid variable even though later
    // ones are missing.
    let run = Call::new("ADD")
        .container_id("-a")
        .stdin(CONF_100)
        .run(bin());
    assert_error(&run, 4, "invalid characters in containerID", Some("-a"));
}

#[test]
fn row_add_empty_stdin() {
    let run = call("ADD", "").run(bin());
    assert_error(
        &run,
        6,
        "error unmarshall network config: unexpected end of JSON input",
        None,
    );
}

/// Truncated JSON reads as Go's `unexpected end of JSON input`, and a
/// `null` config is an empty one (Go decodes `null` into a struct as a
/// no-op), so it lacks a name.
#[test]
fn truncated_and_null_configs() {
    for stdin in ["{", "{\"name\":", "  \n"] {
        let run = call("ADD", stdin).run(bin());
        assert_error(
            &run,
            6,
            "error unmarshall network config: unexpected end of JSON input",
            None,
        );
    }
    let run = call("ADD", "null").run(bin());
    assert_error(&run, 7, "missing network name", None);
}

#[test]
fn row_missing_network_name() {
    let run = call("ADD", r#"{"cniVersion":"1.0.0"}"#).run(bin());
    assert_error(&run, 7, "missing network name", None);
}

#[test]
fn row_bad_network_name() {
    let run = call("ADD", r#"{"cniVersion":"1.0.0","name":"a b"}"#).run(bin());
    assert_error(
        &run,
        7,
        "invalid characters found in network name",
        Some("a b"),
    );
}

#[test]
fn row_incompatible_versions() {
    for v in ["9.9.9", "1.0"] {
        let stdin = format!(r#"{{"cniVersion":"{v}","name":"net"}}"#);
        for verb in ["ADD", "DEL"] {
            let run = call(verb, &stdin).run(bin());
            let details = format!("config is \"{v}\", plugin supports {DEFAULT_SUPPORTS}");
            assert_error(&run, 1, "incompatible CNI versions", Some(&details));
        }
    }
}

#[test]
fn row_check_needs_040() {
    let run = call("CHECK", r#"{"cniVersion":"0.3.1","name":"net"}"#).run(bin());
    assert_error(&run, 1, "config version does not allow CHECK", None);
    // No cniVersion means 0.1.0.
    let run = call("CHECK", r#"{"name":"net"}"#).run(bin());
    assert_error(&run, 1, "config version does not allow CHECK", None);
}

#[test]
fn row_check_unparsable_version() {
    let run = call("CHECK", r#"{"cniVersion":"x.y","name":"net"}"#).run(bin());
    assert_error(
        &run,
        6,
        "failed to convert major version part \"x\": strconv.Atoi: parsing \"x\": invalid syntax",
        None,
    );
}

#[test]
fn row_unknown_command() {
    let run = call("FOO", CONF_100).run(bin());
    assert_error(&run, 4, "unknown CNI_COMMAND: FOO", None);
    // Case matters.
    let run = call("add", CONF_100).run(bin());
    assert_error(&run, 4, "unknown CNI_COMMAND: add", None);
}

#[test]
fn row_unknown_command_empty_stdin() {
    let run = call("FOO", "").run(bin());
    assert_error(
        &run,
        6,
        "error unmarshall network config: unexpected end of JSON input",
        None,
    );
}

#[test]
fn row_gc_and_status_need_110() {
    for verb in ["GC", "STATUS"] {
        let run = Call::new(verb).path("/x").stdin(CONF_100).run(bin());
        assert_error(
            &run,
            1,
            &format!("config version does not allow {verb}"),
            None,
        );
    }
}

/// §1.8 row "STATUS/GC, cniVersion 1.1.0, func not registered: success, no
/// output" (v1.1.1 binaries: code 3 `missing containerID`). noop registers
/// both functions on purpose, so instead of "no output" it runs its debug
/// behaviour; without a debug file that is the reference noop's `{}` plus a
/// note on stderr. Deliberately not the v1.1.1 code 3 either.
#[test]
fn row_gc_and_status_on_110_run_noop() {
    for verb in ["GC", "STATUS"] {
        // As libcni runs them: only CNI_COMMAND and CNI_PATH set.
        let run = Call::new(verb).path("/x").stdin(CONF_110).run(bin());
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(run.stdout, "{}");
        assert_eq!(run.stderr, "CNI_ARGS or config empty, no debug behavior\n");
    }
}

#[test]
fn row_version_ignores_stdin() {
    let run = Call::new("VERSION").stdin("\u{1}garbage{").run(bin());
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.json(),
        json!({"cniVersion":"1.1.0","supportedVersions":["0.-42.0","0.1.0","0.2.0","0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]})
    );
}

/// §1.8 row "DEL, no cniVersion, CNI_NETNS unset: treated as 0.1.0,
/// success, no output" (loopback). noop accepts it the same way but, having
/// no debug file, prints the reference noop's `{}`.
#[test]
fn row_del_without_version_or_netns() {
    let run = Call::new("DEL")
        .container_id("c1")
        .ifname("eth0")
        .path("/x")
        .stdin(r#"{"name":"net"}"#)
        .run(bin());
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "{}");
}

#[test]
fn row_plain_error_is_999() {
    let d = DebugFile::new(json!({"ReportError": "banana"}));
    let run = call("ADD", CONF_100).args(&d.args()).run(bin());
    assert_error(&run, 999, "banana", None);
}

/// §1.8 row "ADD/DEL, CNI_NETNS = plugin's own netns: code 8". The newest
/// reference skel checks after the plugin ran; we refuse before noop does
/// anything, so the Debug file and the command log stay untouched.
#[test]
fn row_own_netns_is_refused_before_noop_runs() {
    let own = format!("/proc/{}/ns/net", std::process::id());
    for cmd in ["ADD", "DEL"] {
        for netns in ["/proc/self/ns/net", own.as_str()] {
            let d = DebugFile::new(json!({"ReportResult": "{}"}));
            let before = d.raw();
            let conf = format!(
                r#"{{"cniVersion":"1.0.0","name":"net","commandLog":"{}"}}"#,
                d.log_str()
            );
            let run = call(cmd, &conf).netns(netns).args(&d.args()).run(bin());
            assert_error(
                &run,
                8,
                "plugin's netns and netns from CNI_NETNS should not be the same",
                None,
            );
            assert_eq!(
                d.raw(),
                before,
                "{cmd} {netns}: the Debug file was rewritten"
            );
            assert_eq!(std::fs::read(&d.log).unwrap(), b"", "{cmd} {netns}: logged");
        }
    }
    // CHECK is not vetted (as in the reference), and the override works.
    let d = DebugFile::new(json!({"ReportResult": ""}));
    let run = call("CHECK", CONF_100)
        .netns("/proc/self/ns/net")
        .args(&d.args())
        .run(bin());
    assert_eq!(run.code, 0, "{run:?}");
    let run = call("ADD", CONF_100)
        .netns("/proc/self/ns/net")
        .env("CNI_NETNS_OVERRIDE", "true")
        .run(bin());
    assert_eq!((run.code, run.stdout.as_str()), (0, "{}"), "{run:?}");
}

#[test]
fn every_error_code_passes_through() {
    let d = DebugFile::new(json!({}));
    for code in [1u64, 2, 3, 4, 5, 6, 7, 8, 11, 50, 51, 100, 999] {
        d.write(json!({"ReportError": format!("failure {code}"), "ReportErrorCode": code}));
        let run = call("ADD", CONF_100).args(&d.args()).run(bin());
        assert_error(&run, code, &format!("failure {code}"), None);
    }
}

#[test]
fn oversized_stdin_is_an_io_error() {
    let big = vec![b' '; (64 << 20) + 1];
    let run = call("ADD", "").stdin(big).run(bin());
    assert_error(
        &run,
        5,
        "error reading from stdin: config is larger than 67108864 bytes",
        None,
    );
}

#[test]
fn check_with_versions_the_plugin_lacks() {
    // No supported version is >= the config's: "plugin version does not
    // allow"; one is but not exactly the config's: "incompatible".
    let d = DebugFile::new(json!({"ReportVersionSupport": ["0.4.0"]}));
    let run = call("CHECK", CONF_100).args(&d.args()).run(bin());
    assert_error(&run, 1, "plugin version does not allow CHECK", None);
    d.write(json!({"ReportVersionSupport": ["0.4.0", "1.1.0"]}));
    let run = call("CHECK", CONF_100).args(&d.args()).run(bin());
    assert_error(
        &run,
        1,
        "incompatible CNI versions",
        Some(r#"config is "1.0.0", plugin supports ["0.4.0" "1.1.0"]"#),
    );
    // GC with a plugin stuck at 1.0.0.
    d.write(json!({"ReportVersionSupport": ["1.0.0"]}));
    let run = Call::new("GC")
        .path("/x")
        .args(&d.args())
        .stdin(CONF_110)
        .run(bin());
    assert_error(&run, 1, "plugin version does not allow GC", None);
}

/// The bogus `0.-42.0` is a real, usable version string.
#[test]
fn bogus_default_version_is_accepted() {
    let run = call("ADD", r#"{"cniVersion":"0.-42.0","name":"net"}"#).run(bin());
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "{}");
}

/// Where the reference noop panics (exit 2, Go stack on stderr) we report a
/// CNI error: a non-empty CNI_ARGS needs a readable debug file and a
/// loadable config, whatever the command.
#[test]
fn broken_setup_is_a_clear_error() {
    let run = call("ADD", CONF_100).args("FOO=BAR").run(bin());
    assert_setup_error(
        &run,
        "test setup error: unable to read debug file: open : no such file or directory",
    );
    let run = call("ADD", CONF_100)
        .args("DEBUG=/nonexistent/cnirs")
        .run(bin());
    assert_setup_error(
        &run,
        "test setup error: unable to read debug file: open /nonexistent/cnirs: no such file or directory",
    );
    let run = Call::new("VERSION").args("DEBUG=/x").stdin("").run(bin());
    assert_setup_error(
        &run,
        "test setup error: unable to get debug file path: failed to load netconf: unexpected end of JSON input \"\"",
    );
    let run = call("ADD", CONF_100).args("DEBUG=/x=y").run(bin());
    assert_setup_error(
        &run,
        "test setup error: unable to get debug file path: CNI_ARGS invalid key/value pair: [DEBUG /x y]",
    );
    let d = DebugFile::new(json!({"ReportVersionSupport": []}));
    let run = call("ADD", CONF_100).args(&d.args()).run(bin());
    let v = setup_error(&run);
    assert!(
        v["msg"]
            .as_str()
            .unwrap()
            .ends_with("ReportVersionSupport lists no versions"),
        "{run:?}"
    );
    std::fs::write(&d.path, "{").unwrap();
    let run = call("ADD", CONF_100).args(&d.args()).run(bin());
    let v = setup_error(&run);
    assert!(
        v["msg"].as_str().unwrap().starts_with(&format!(
            "test setup error: unable to read debug file: decode debug file {}: ",
            d.path_str()
        )),
        "{run:?}"
    );
}
