//! The skel outcome table (reference §1.8), row by row, through [`run`].

use std::collections::HashMap;

use super::*;

struct TestPlugin {
    about: &'static str,
    fail_with: Option<Error>,
}

impl Plugin for TestPlugin {
    fn about(&self) -> String {
        self.about.to_string()
    }
    fn add(&self, _args: &CmdArgs) -> Outcome {
        match &self.fail_with {
            Some(e) => Err(e.clone()),
            None => Ok(Reply::Result(
                CniResult::parse_bytes(
                    br#"{"cniVersion":"1.1.0","ips":[{"address":"10.240.0.2/24"}]}"#,
                    "",
                )
                .unwrap(),
            )),
        }
    }
}

/// Same, but declaring that it needs `CNI_NETNS`.
struct NsPlugin;

impl Plugin for NsPlugin {
    const USES_NETNS: bool = true;
    fn about(&self) -> String {
        "CNI ns plugin".into()
    }
    fn add(&self, args: &CmdArgs) -> Outcome {
        args.netns.file()?;
        Ok(Reply::Text("ran".into()))
    }
}

const PLUGIN: TestPlugin = TestPlugin {
    about: "CNI test plugin v1",
    fail_with: None,
};

struct Outcome3 {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Outcome3 {
    fn err(&self) -> serde_json::Value {
        assert_eq!(self.code, 1, "stdout: {}", self.stdout);
        serde_json::from_str(&self.stdout).unwrap()
    }
}

fn run_with<P: Plugin>(plugin: &P, env: &[(&str, &str)], stdin: &str) -> Outcome3 {
    let env: HashMap<String, String> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let get = move |k: &str| env.get(k).cloned();
    let mut out = Vec::new();
    let mut err = Vec::new();
    let code = run(plugin, &get, &mut stdin.as_bytes(), &mut out, &mut err);
    Outcome3 {
        code,
        stdout: String::from_utf8(out).unwrap(),
        stderr: String::from_utf8(err).unwrap(),
    }
}

fn full_env(command: &'static str) -> Vec<(&'static str, &'static str)> {
    vec![
        ("CNI_COMMAND", command),
        ("CNI_CONTAINERID", "c1"),
        ("CNI_NETNS", "/nonexistent/ns"),
        ("CNI_IFNAME", "eth0"),
        ("CNI_PATH", "/opt/cni/bin"),
    ]
}

const CONF_100: &str = r#"{"cniVersion":"1.0.0","name":"net1","type":"test"}"#;
const CONF_110: &str = r#"{"cniVersion":"1.1.0","name":"net1","type":"test"}"#;

#[test]
fn command_unset_prints_about_and_exits_zero() {
    let o = run_with(&PLUGIN, &[], "");
    assert_eq!(o.code, 0);
    assert_eq!(o.stdout, "");
    assert_eq!(
        o.stderr,
        "CNI test plugin v1\nCNI protocol versions supported: 0.1.0, 0.2.0, 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0\n"
    );
}

#[test]
fn command_unset_without_about_is_missing_variable() {
    let p = TestPlugin {
        about: "",
        fail_with: None,
    };
    let e = run_with(&p, &[], "").err();
    assert_eq!(e["code"], 4);
    assert_eq!(e["msg"], "required env variables [CNI_COMMAND] missing");
}

#[test]
fn add_with_nothing_else_lists_missing_in_order() {
    let o = run_with(&PLUGIN, &[("CNI_COMMAND", "ADD")], CONF_100);
    assert_eq!(
        o.stdout,
        "{\n    \"code\": 4,\n    \"msg\": \"required env variables [CNI_CONTAINERID,CNI_NETNS,CNI_IFNAME,CNI_PATH] missing\"\n}"
    );
    assert_eq!(o.code, 1);
}

#[test]
fn empty_values_count_as_missing() {
    let mut env = full_env("DEL");
    env.retain(|(k, _)| *k != "CNI_PATH");
    env.push(("CNI_PATH", ""));
    let e = run_with(&PLUGIN, &env, CONF_100).err();
    assert_eq!(e["msg"], "required env variables [CNI_PATH] missing");
}

#[test]
fn del_does_not_need_netns() {
    let env: Vec<_> = full_env("DEL")
        .into_iter()
        .filter(|(k, _)| *k != "CNI_NETNS")
        .collect();
    let o = run_with(&PLUGIN, &env, CONF_100);
    assert_eq!((o.code, o.stdout.as_str()), (0, ""));
}

#[test]
fn ifname_too_long() {
    let mut env = full_env("ADD");
    env[3] = ("CNI_IFNAME", "0123456789abcdef");
    let e = run_with(&PLUGIN, &env, CONF_100).err();
    assert_eq!(e["code"], 4);
    assert_eq!(e["msg"], "interface name is too long");
    assert_eq!(
        e["details"],
        "interface name should be less than 16 characters"
    );
}

#[test]
fn ifname_rules() {
    for (name, msg) in [
        (".", "interface name is . or .."),
        ("..", "interface name is . or .."),
        (
            "a/b",
            "interface name contains / or : or whitespace characters",
        ),
        (
            "a:b",
            "interface name contains / or : or whitespace characters",
        ),
        (
            "a b",
            "interface name contains / or : or whitespace characters",
        ),
        (
            "a\u{a0}b",
            "interface name contains / or : or whitespace characters",
        ),
    ] {
        assert_eq!(validate_ifname(name).unwrap_err().msg, msg, "{name:?}");
    }
    assert!(validate_ifname("eth0").is_ok());
    assert!(validate_ifname("0123456789abcde").is_ok());
}

#[test]
fn invalid_container_id() {
    let mut env = full_env("ADD");
    env[1] = ("CNI_CONTAINERID", "-a");
    let e = run_with(&PLUGIN, &env, CONF_100).err();
    assert_eq!(e["code"], 4);
    assert_eq!(e["msg"], "invalid characters in containerID");
    assert_eq!(e["details"], "-a");
}

#[test]
fn validation_error_wins_over_missing_later_variable() {
    // CNI_IFNAME is invalid and CNI_PATH is missing: the validation error is
    // returned as soon as it is met.
    let env = [
        ("CNI_COMMAND", "ADD"),
        ("CNI_CONTAINERID", "c1"),
        ("CNI_IFNAME", "a b"),
    ];
    let e = run_with(&PLUGIN, &env, CONF_100).err();
    assert_eq!(
        e["msg"],
        "interface name contains / or : or whitespace characters"
    );
}

#[test]
fn empty_stdin_is_decoding_failure() {
    let e = run_with(&PLUGIN, &full_env("ADD"), "").err();
    assert_eq!(e["code"], 6);
    assert_eq!(
        e["msg"],
        "error unmarshall network config: unexpected end of JSON input"
    );
}

#[test]
fn malformed_json_and_wrong_types_are_decoding_failures() {
    for stdin in [
        "{",
        "[1]",
        "42",
        r#"{"name": 5}"#,
        r#"{"name":"n","cniVersion":7}"#,
    ] {
        let e = run_with(&PLUGIN, &full_env("ADD"), stdin).err();
        assert_eq!(e["code"], 6, "{stdin}");
    }
}

#[test]
fn missing_name() {
    let e = run_with(&PLUGIN, &full_env("ADD"), r#"{"cniVersion":"1.0.0"}"#).err();
    assert_eq!(e["code"], 7);
    assert_eq!(e["msg"], "missing network name");
}

#[test]
fn invalid_name() {
    for name in ["a b", "../etc", "a/b", "-x"] {
        let stdin = format!(r#"{{"cniVersion":"1.0.0","name":{name:?}}}"#);
        let e = run_with(&PLUGIN, &full_env("ADD"), &stdin).err();
        assert_eq!(e["code"], 7);
        assert_eq!(e["msg"], "invalid characters found in network name");
        assert_eq!(e["details"], name);
    }
}

#[test]
fn incompatible_versions() {
    for v in ["9.9.9", "1.0"] {
        let stdin = format!(r#"{{"cniVersion":"{v}","name":"n"}}"#);
        let e = run_with(&PLUGIN, &full_env("ADD"), &stdin).err();
        assert_eq!(e["code"], 1);
        assert_eq!(e["msg"], "incompatible CNI versions");
        assert_eq!(
            e["details"],
            format!(
                r#"config is "{v}", plugin supports ["0.1.0" "0.2.0" "0.3.0" "0.3.1" "0.4.0" "1.0.0" "1.1.0"]"#
            )
        );
        assert!(
            e.get("cniVersion").is_none(),
            "errors are byte-identical to the reference's"
        );
    }
}

#[test]
fn check_needs_040() {
    let e = run_with(
        &PLUGIN,
        &full_env("CHECK"),
        r#"{"cniVersion":"0.3.1","name":"n"}"#,
    )
    .err();
    assert_eq!(e["code"], 1);
    assert_eq!(e["msg"], "config version does not allow CHECK");
    let o = run_with(
        &PLUGIN,
        &full_env("CHECK"),
        r#"{"cniVersion":"0.4.0","name":"n"}"#,
    );
    assert_eq!((o.code, o.stdout.as_str()), (0, ""));
}

#[test]
fn check_with_unparsable_version() {
    let e = run_with(
        &PLUGIN,
        &full_env("CHECK"),
        r#"{"cniVersion":"x.y","name":"n"}"#,
    )
    .err();
    assert_eq!(e["code"], 6);
    assert_eq!(
        e["msg"],
        "failed to convert major version part \"x\": strconv.Atoi: parsing \"x\": invalid syntax"
    );
}

#[test]
fn plugin_version_does_not_allow_check() {
    struct Old;
    impl Plugin for Old {
        fn about(&self) -> String {
            "old".into()
        }
        fn versions(&self) -> Vec<String> {
            vec!["0.1.0".into(), "0.2.0".into()]
        }
    }
    let e = run_with(
        &Old,
        &full_env("CHECK"),
        r#"{"cniVersion":"0.4.0","name":"n"}"#,
    )
    .err();
    assert_eq!(e["msg"], "plugin version does not allow CHECK");
}

#[test]
fn unknown_command_after_stdin_validation() {
    let e = run_with(&PLUGIN, &[("CNI_COMMAND", "FOO")], CONF_100).err();
    assert_eq!(e["code"], 4);
    assert_eq!(e["msg"], "unknown CNI_COMMAND: FOO");
    let e = run_with(&PLUGIN, &[("CNI_COMMAND", "FOO")], "").err();
    assert_eq!(e["code"], 6);
    // Commands are case-sensitive.
    let e = run_with(&PLUGIN, &[("CNI_COMMAND", "add")], CONF_100).err();
    assert_eq!(e["msg"], "unknown CNI_COMMAND: add");
}

#[test]
fn status_and_gc_without_handlers_succeed_for_110() {
    for cmd in ["STATUS", "GC"] {
        let o = run_with(
            &PLUGIN,
            &[("CNI_COMMAND", cmd), ("CNI_PATH", "/x")],
            CONF_110,
        );
        assert_eq!((o.code, o.stdout.as_str()), (0, ""), "{cmd}");
    }
}

#[test]
fn status_and_gc_need_cni_path() {
    let e = run_with(&PLUGIN, &[("CNI_COMMAND", "GC")], CONF_110).err();
    assert_eq!(e["msg"], "required env variables [CNI_PATH] missing");
}

#[test]
fn gc_needs_110() {
    for cmd in ["GC", "STATUS"] {
        let e = run_with(
            &PLUGIN,
            &[("CNI_COMMAND", cmd), ("CNI_PATH", "/x")],
            CONF_100,
        )
        .err();
        assert_eq!(e["code"], 1);
        assert_eq!(e["msg"], format!("config version does not allow {cmd}"));
    }
}

#[test]
fn version_ignores_stdin() {
    let o = run_with(&PLUGIN, &[("CNI_COMMAND", "VERSION")], "garbage{");
    assert_eq!(o.code, 0);
    assert_eq!(
        o.stdout,
        "{\"cniVersion\":\"1.1.0\",\"supportedVersions\":[\"0.1.0\",\"0.2.0\",\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\",\"1.1.0\"]}\n"
    );
}

#[test]
fn version_probe_as_libcni_sends_it() {
    let env = [
        ("CNI_COMMAND", "VERSION"),
        ("CNI_NETNS", "dummy"),
        ("CNI_IFNAME", "dummy"),
        ("CNI_PATH", "dummy"),
        ("CNI_CONTAINERID", ""),
    ];
    let o = run_with(&PLUGIN, &env, r#"{"cniVersion":"1.1.0"}"#);
    assert_eq!(o.code, 0);
    assert!(o.stdout.starts_with("{\"cniVersion\":\"1.1.0\""));
}

#[test]
fn del_without_version_is_010() {
    let env = [
        ("CNI_COMMAND", "DEL"),
        ("CNI_CONTAINERID", "c1"),
        ("CNI_IFNAME", "eth0"),
        ("CNI_PATH", "/x"),
    ];
    let o = run_with(&PLUGIN, &env, r#"{"name":"n"}"#);
    assert_eq!((o.code, o.stdout.as_str()), (0, ""));
}

#[test]
fn plain_errors_become_999_without_details() {
    let p = TestPlugin {
        about: "x",
        fail_with: Some(Error::internal("boom")),
    };
    let e = run_with(&p, &full_env("ADD"), CONF_100).err();
    assert_eq!(e["code"], 999);
    assert_eq!(e["msg"], "boom");
    assert!(e.get("details").is_none());
}

#[test]
fn coded_errors_pass_through() {
    let p = TestPlugin {
        about: "x",
        fail_with: Some(Error::with_details(11, "busy", "later")),
    };
    let e = run_with(&p, &full_env("ADD"), CONF_100).err();
    assert_eq!(
        (e["code"].as_u64(), e["msg"].as_str(), e["details"].as_str()),
        (Some(11), Some("busy"), Some("later"))
    );
}

#[test]
fn add_result_is_converted_to_config_version() {
    let o = run_with(
        &PLUGIN,
        &full_env("ADD"),
        r#"{"cniVersion":"0.2.0","name":"n"}"#,
    );
    assert_eq!(o.code, 0);
    assert_eq!(
        o.stdout,
        "{\n    \"cniVersion\": \"0.2.0\",\n    \"ip4\": {\n        \"ip\": \"10.240.0.2/24\"\n    },\n    \"dns\": {}\n}"
    );
    let o = run_with(&PLUGIN, &full_env("ADD"), r#"{"name":"n"}"#);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["cniVersion"], "0.1.0");
}

#[test]
fn netns_is_vetted_before_the_plugin_runs() {
    let mut env = full_env("ADD");
    env[2] = ("CNI_NETNS", "/proc/self/ns/net");
    let e = run_with(&NsPlugin, &env, CONF_100).err();
    assert_eq!(e["code"], 8);
    assert_eq!(
        e["msg"],
        "plugin's netns and netns from CNI_NETNS should not be the same"
    );

    env.push(("CNI_NETNS_OVERRIDE", "TRUE"));
    let o = run_with(&NsPlugin, &env, CONF_100);
    assert_eq!((o.code, o.stdout.as_str()), (0, "ran"));

    env[2] = ("CNI_NETNS", "/etc/hostname");
    let e = run_with(&NsPlugin, &env, CONF_100).err();
    assert_eq!(e["code"], 8);

    env[2] = ("CNI_NETNS", "/nonexistent/netns");
    let e = run_with(&NsPlugin, &env, CONF_100).err();
    assert_eq!(
        e["msg"],
        "failed to Statfs \"/nonexistent/netns\": no such file or directory"
    );
}

/// Sees what DEL gets for `CNI_NETNS`.
struct NsDel;

impl Plugin for NsDel {
    const USES_NETNS: bool = true;
    const DEL_TAKES_NON_NAMESPACE_AS_GONE: bool = true;
    fn about(&self) -> String {
        "CNI ns del plugin".into()
    }
    fn del(&self, args: &CmdArgs) -> Outcome {
        match &args.netns {
            Netns::Missing(p) => Ok(Reply::Text(format!("missing {p}"))),
            other => Ok(Reply::Text(format!("{other:?}"))),
        }
    }
}

/// For plugins that ask for it, a path that exists but is no namespace
/// (an unmounted netns bind mount's file) is a gone namespace for DEL (it
/// failed forever), and still an error for ADD; the own namespace is
/// still refused. Other plugins' DEL still answers code 8.
#[test]
fn del_takes_a_path_that_is_no_namespace_for_a_gone_one() {
    let o = run_with(&NsDel, &env_with_netns("DEL", "/etc/hostname"), CONF_100);
    assert_eq!((o.code, o.stdout.as_str()), (0, "missing /etc/hostname"));
    let e = run_with(&NsDel, &env_with_netns("ADD", "/etc/hostname"), CONF_100).err();
    assert_eq!(e["code"], 8);
    let e = run_with(
        &NsDel,
        &env_with_netns("DEL", "/proc/self/ns/net"),
        CONF_100,
    )
    .err();
    assert_eq!(e["code"], 8);
    let e = run_with(&NsPlugin, &env_with_netns("DEL", "/etc/hostname"), CONF_100).err();
    assert_eq!(e["code"], 8);
}

#[test]
fn oversized_stdin_is_refused() {
    let big = vec![b' '; (MAX_STDIN + 10) as usize];
    let env: HashMap<String, String> = full_env("ADD")
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let get = move |k: &str| env.get(k).cloned();
    let mut out = Vec::new();
    let code = run(&PLUGIN, &get, &mut &big[..], &mut out, &mut Vec::new());
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["code"], 5);
}

// ------------------------------------------------ Go's HTML-safe escaping

/// A plugin whose ADD fails or succeeds with text full of the characters
/// Go's encoder escapes (`<`, `>`, `&`, U+2028, U+2029).
struct Html;

const HTML_TEXT: &str = "a<b&c>\u{2028}";

impl Plugin for Html {
    fn about(&self) -> String {
        "CNI html plugin".into()
    }
    fn versions(&self) -> Vec<String> {
        vec!["1.0.0".into(), "<9.9.9&>".into()]
    }
    fn add(&self, _args: &CmdArgs) -> Outcome {
        let mut r = Result1 {
            cni_version: "1.0.0".into(),
            ..Default::default()
        };
        r.dns.search = vec![HTML_TEXT.into()];
        Ok(Reply::Result(r.into()))
    }
    fn del(&self, _args: &CmdArgs) -> Outcome {
        Err(Error::with_details(7, HTML_TEXT, HTML_TEXT))
    }
}

#[test]
fn error_json_escapes_html_characters_as_go_does() {
    let o = run_with(&Html, &full_env("DEL"), CONF_100);
    assert_eq!(o.code, 1);
    assert_eq!(
        o.stdout,
        "{\n    \"code\": 7,\n    \"msg\": \"a\\u003cb\\u0026c\\u003e\\u2028\",\n    \"details\": \"a\\u003cb\\u0026c\\u003e\\u2028\"\n}"
    );
}

#[test]
fn result_json_escapes_html_characters_as_go_does() {
    let o = run_with(&Html, &full_env("ADD"), CONF_100);
    assert_eq!(o.code, 0, "{}", o.stdout);
    assert_eq!(
        o.stdout,
        "{\n    \"cniVersion\": \"1.0.0\",\n    \"dns\": {\n        \"search\": [\n            \"a\\u003cb\\u0026c\\u003e\\u2028\"\n        ]\n    }\n}"
    );
}

#[test]
fn version_json_escapes_html_characters_as_go_does() {
    let o = run_with(&Html, &[("CNI_COMMAND", "VERSION")], "");
    assert_eq!(
        o.stdout,
        "{\"cniVersion\":\"1.1.0\",\"supportedVersions\":[\"1.0.0\",\"\\u003c9.9.9\\u0026\\u003e\"]}\n"
    );
}

// ------------------------------------- CNI_NETNS naming our own namespace

/// A plugin that does not use namespaces and counts the calls it gets.
#[derive(Default)]
struct Counting {
    calls: std::cell::Cell<u32>,
}

impl Plugin for Counting {
    fn about(&self) -> String {
        "CNI counting plugin".into()
    }
    fn add(&self, _args: &CmdArgs) -> Outcome {
        self.calls.set(self.calls.get() + 1);
        Ok(Reply::Text("added".into()))
    }
    fn del(&self, _args: &CmdArgs) -> Outcome {
        self.calls.set(self.calls.get() + 1);
        Ok(Reply::None)
    }
    fn check(&self, _args: &CmdArgs) -> Outcome {
        self.calls.set(self.calls.get() + 1);
        Ok(Reply::None)
    }
}

fn env_with_netns(command: &'static str, netns: &'static str) -> Vec<(&'static str, &'static str)> {
    let mut env = full_env(command);
    env[2] = ("CNI_NETNS", netns);
    env
}

#[test]
fn own_netns_is_refused_for_add_and_del_of_every_plugin_before_it_runs() {
    let own: &'static str = Box::leak(format!("/proc/{}/ns/net", std::process::id()).into());
    for netns in ["/proc/self/ns/net", "/proc/thread-self/ns/net", own] {
        for cmd in ["ADD", "DEL"] {
            let p = Counting::default();
            let e = run_with(&p, &env_with_netns(cmd, netns), CONF_100).err();
            assert_eq!(e["code"], 8, "{cmd} {netns}");
            assert_eq!(
                e["msg"],
                "plugin's netns and netns from CNI_NETNS should not be the same"
            );
            assert_eq!(p.calls.get(), 0, "{cmd} {netns}: the plugin ran");
        }
    }
}

#[test]
fn own_netns_check_follows_the_reference_verbs_and_override() {
    // CHECK is not vetted by the reference skel.
    let p = Counting::default();
    let o = run_with(&p, &env_with_netns("CHECK", "/proc/self/ns/net"), CONF_100);
    assert_eq!((o.code, p.calls.get()), (0, 1), "{}", o.stdout);
    // CNI_NETNS_OVERRIDE=true|1 (any case) lets the call through.
    for over in ["true", "TRUE", "1"] {
        let p = Counting::default();
        let mut env = env_with_netns("ADD", "/proc/self/ns/net");
        env.push(("CNI_NETNS_OVERRIDE", over));
        let o = run_with(&p, &env, CONF_100);
        assert_eq!((o.code, o.stdout.as_str()), (0, "added"), "{over}");
    }
    let p = Counting::default();
    let mut env = env_with_netns("ADD", "/proc/self/ns/net");
    env.push(("CNI_NETNS_OVERRIDE", "yes"));
    assert_eq!(run_with(&p, &env, CONF_100).err()["code"], 8);
}

#[test]
fn netns_that_is_gone_or_not_a_namespace_is_left_to_plugins_without_netns() {
    // DEL after the namespace vanished must still succeed; a plain file is
    // not the plugin's namespace either.
    for netns in ["/nonexistent/cnirs-ns", "/etc/hostname", "dummy"] {
        for cmd in ["ADD", "DEL"] {
            let p = Counting::default();
            let o = run_with(&p, &env_with_netns(cmd, netns), CONF_100);
            assert_eq!(
                (o.code, p.calls.get()),
                (0, 1),
                "{cmd} {netns}: {}",
                o.stdout
            );
        }
    }
}
