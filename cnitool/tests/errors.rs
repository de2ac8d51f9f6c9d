//! Failures a script can rely on: exit statuses, the CNI error object on
//! stdout, messages naming plugin and verb, timeouts, garbage output.

mod common;

use common::{Setup, order, pairs};
use serde_json::json;

const NS: &str = "/run/netns/cnirs-err-fake";

fn one_plugin(s: &Setup, plugin_type: &str) {
    s.write_conf(
        "net.conflist",
        &json!({"cniVersion": "1.0.0", "name": "net", "plugins": [{"type": plugin_type}]}),
    );
}

#[test]
fn garbage_result_is_a_clear_error() {
    let s = Setup::new();
    s.script("garbage", "cat >/dev/null; echo 'this is not json'");
    one_plugin(&s, "garbage");
    let err = s.run(&["add", "net", NS]).fails(1);
    assert_eq!(err["code"], 6);
    assert_eq!(
        err["msg"],
        "plugin type=\"garbage\" failed (add): invalid result \"this is not json\": expected ident at line 1 column 2"
    );
    assert!(
        !s.cache.join("results").exists(),
        "failed ADD must not be cached"
    );
}

#[test]
fn non_zero_exit_without_output_names_status_and_stderr() {
    let s = Setup::new();
    s.script("crash", "cat >/dev/null; echo 'segfault-ish' >&2; exit 3");
    one_plugin(&s, "crash");
    let err = s.run(&["del", "net", NS]).fails(1);
    assert_eq!(
        err["msg"],
        "plugin type=\"crash\" failed (delete): exited with status 3 without an error message; stderr: \"segfault-ish\""
    );

    s.script("kill", "kill -9 $$");
    one_plugin(&s, "kill");
    let err = s.run(&["add", "net", NS]).fails(1);
    assert_eq!(
        err["msg"],
        "plugin type=\"kill\" failed (add): was killed by signal 9 without an error message"
    );

    s.script("badjson", "echo '{not an error'; exit 1");
    one_plugin(&s, "badjson");
    let err = s.run(&["add", "net", NS]).fails(1);
    assert_eq!(
        err["msg"],
        "plugin type=\"badjson\" failed (add): exited with status 1 and printed an unparsable error \"{not an error\""
    );
}

#[test]
fn plugin_error_keeps_its_code_and_stops_the_chain() {
    let s = Setup::new();
    let list = json!({"cniVersion": "1.0.0", "name": "net", "plugins": [
        s.noop("a", json!({"ReportResult": json!({"cniVersion":"1.0.0"}).to_string()})),
        s.noop("b", json!({"ReportError": "banana", "ReportErrorCode": 7, "ReportStderr": "b says hi\n"})),
        s.noop("c", json!({"ReportResult": json!({"cniVersion":"1.0.0"}).to_string()})),
    ]});
    s.write_conf("net.conflist", &list);
    let run = s.run(&["add", "net", NS]);
    let err = run.fails(1);
    assert_eq!(err["code"], 7);
    assert_eq!(err["msg"], "plugin type=\"noop\" failed (add): banana");
    // The plugin's stderr is passed on.
    assert!(run.stderr.contains("b says hi"), "{run:?}");
    assert!(run.stderr.contains("run `cnitool del`"), "{run:?}");
    assert_eq!(order(&s.calls()), pairs(&[("ADD", "a"), ("ADD", "b")]));
    assert!(!s.cache.join("results").exists());
}

#[test]
fn failed_del_stops_and_keeps_the_cache_for_a_retry() {
    let s = Setup::new();
    let ok = json!({"ReportResult": json!({"cniVersion":"1.0.0"}).to_string()});
    let mut list = json!({"cniVersion": "1.0.0", "name": "net", "plugins": [
        s.noop("a", ok.clone()),
        s.noop("b", ok.clone()),
    ]});
    s.write_conf("net.conflist", &list);
    s.run(&["add", "net", NS]).ok();
    s.clear_log();
    list["plugins"][1] = s.noop("b", json!({"ReportError": "busy", "ReportErrorCode": 11}));
    s.write_conf("net.conflist", &list);
    let err = s.run(&["del", "net", NS]).fails(1);
    assert_eq!(err["code"], 11);
    assert_eq!(order(&s.calls()), pairs(&[("DEL", "b")]));
    let cache = s.cache_file("net", &common::id_for(NS), "eth0");
    assert!(cache.exists());

    list["plugins"][1] = s.noop("b", ok);
    s.write_conf("net.conflist", &list);
    s.run(&["del", "net", NS]).ok();
    assert!(!cache.exists());
}

/// No time is asserted: the message says the plugin was killed, which a
/// plugin that ended on its own (after two minutes, printing nothing)
/// would not give.
#[test]
fn timeout_kills_a_hung_plugin() {
    let s = Setup::new();
    s.script("hang", "exec sleep 120");
    one_plugin(&s, "hang");
    let err = s.run(&["add", "net", NS, "--timeout", "0.5"]).fails(1);
    assert_eq!(
        err["msg"],
        "plugin type=\"hang\" failed (add): timed out after 0.500s and was killed"
    );
}

#[test]
fn plugins_get_our_environment_with_the_cni_variables_replaced() {
    let s = Setup::new();
    s.script(
        "env",
        r#"cat >/dev/null; printf '{"cniVersion":"1.0.0","dns":{"domain":"%s|%s|%s|%s|%s"}}' "$CNI_COMMAND" "$CNI_NETNS" "$CNI_IFNAME" "$CNITOOL_TEST_MARK" "$CNI_ARGS"; echo note >&2"#,
    );
    one_plugin(&s, "env");
    let run = s.run_env(
        &["add", "net", NS],
        &[
            ("CNI_COMMAND", "BOGUS"),
            ("CNI_NETNS", "/bogus"),
            ("CNITOOL_TEST_MARK", "kept"),
        ],
    );
    let out = run.ok();
    assert_eq!(out["dns"]["domain"], format!("ADD|{NS}|eth0|kept|"));
    assert!(run.stderr.contains("note"), "{run:?}");
}

#[test]
fn configuration_errors_exit_3() {
    let s = Setup::new();
    let err = s.run(&["add", "missing", NS]).fails(3);
    assert_eq!(
        err["msg"],
        format!("no net configurations found in {}", s.conf.to_str())
    );
    one_plugin(&s, "nope");
    let err = s.run(&["add", "other", NS]).fails(3);
    assert_eq!(
        err["msg"],
        format!(
            "no net configuration with name \"other\" in {}",
            s.conf.to_str()
        )
    );
    let err = s.run(&["add", "net", NS]).fails(3);
    assert_eq!(
        err["msg"],
        format!(
            "plugin type=\"nope\" failed (add): failed to find plugin \"nope\" in path [{}]",
            s.path.to_str()
        )
    );
    s.write_conf(
        "net.conflist",
        &json!({"name": "bad name", "plugins": [{"type": "noop"}]}),
    );
    let err = s.run(&["add", "bad name", NS]).fails(3);
    assert_eq!(err["msg"], "invalid characters found in network name");
}

#[test]
fn usage_errors_exit_2() {
    let s = Setup::new();
    one_plugin(&s, "noop");
    for (args, env, msg) in [
        (vec![], vec![], "no command given"),
        (vec!["frobnicate"], vec![], "unknown command \"frobnicate\""),
        (
            vec!["add", "net"],
            vec![],
            "add needs NETWORK NETNS, got 1 argument(s)",
        ),
        (
            vec!["add", "net", NS, "--bogus"],
            vec![],
            "unknown flag --bogus",
        ),
        (
            vec!["del", "net", NS],
            vec![("CNI_ARGS", "A=1;B")],
            "invalid CNI_ARGS pair \"B\"",
        ),
        (
            vec!["add", "net", NS, "--valid", "a/b"],
            vec![],
            "--valid is only for gc",
        ),
        (
            vec!["gc", "net", "--valid", "nope"],
            vec![],
            "invalid --valid \"nope\": expected CONTAINERID/IFNAME",
        ),
    ] {
        let err = s.run_env(&args, &env).fails(2);
        assert_eq!(err["msg"], msg, "{args:?}");
    }
    let err = s
        .run_env(&["add", "net", NS], &[("CAP_ARGS", "[1]")])
        .fails(2);
    assert_eq!(
        err["msg"],
        "invalid CAP_ARGS: expected a JSON object, found array"
    );
    let err = s.run(&["add", "net", NS, "--cni-path", ""]).fails(2);
    assert_eq!(
        err["msg"],
        "no plugin directories: set CNI_PATH or --cni-path"
    );

    let help = s.run(&["--help"]);
    assert_eq!(help.code, 0);
    assert!(help.stdout.contains("exit status:"));
}

/// A container ID whose cache file name `<net>-<id>-<ifname>` is longer
/// than a file name can be (255 bytes) is refused before any plugin runs:
/// libcni runs the chain, then fails to cache the result, and the
/// attachment is left without the cache its DEL needs.
#[test]
fn cache_name_too_long_is_refused_before_the_plugins_run() {
    let s = Setup::new();
    let result = json!({"cniVersion": "1.0.0", "ips": [{"address": "10.240.0.2/24"}]});
    let plugin = s.noop("a", json!({"ReportResult": result.to_string()}));
    s.write_conf(
        "net.conflist",
        &json!({"cniVersion": "1.0.0", "name": "net", "plugins": [plugin]}),
    );
    let id = "c".repeat(255 - "net--eth0".len());
    s.run(&["add", "net", NS, "--container-id", &id]).ok();
    s.clear_log();
    let long = format!("{id}x");
    let err = s.run(&["add", "net", NS, "--container-id", &long]).fails(4);
    assert_eq!(
        err["msg"],
        format!(
            "cache file name \"net-{long}-eth0\" is longer than 255 bytes: use a shorter network name, container ID or interface name"
        )
    );
    assert!(s.calls().is_empty(), "{:?}", order(&s.calls()));
    // DEL still runs the plugins, without a cache.
    s.run(&["del", "net", NS, "--container-id", &long]).ok();
    assert_eq!(order(&s.calls()), pairs(&[("DEL", "a")]));
}
