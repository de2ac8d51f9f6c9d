//! noop against a reference v1.1.1 binary (Debian's `/usr/lib/cni/loopback`)
//! on the skel rows that do not depend on the plugin: where the reference
//! skel and ours must agree, the answers are compared field by field; where
//! v1.1.1's older skel (cni v1.0.1) differs from the newest reference on
//! purpose, both answers are pinned so a change on either side shows up.

mod common;

use std::path::Path;

use common::bin;
use serde_json::Value;
use testsupport::{Call, PluginRun};

const REFERENCE: &str = "/usr/lib/cni/loopback";

fn reference() -> &'static Path {
    let p = Path::new(REFERENCE);
    assert!(
        p.is_file(),
        "{REFERENCE} missing: install Debian's containernetworking-plugins (scripts/test.sh does)"
    );
    p
}

fn full(command: &str, stdin: &str) -> Call {
    Call::new(command)
        .container_id("c1")
        .netns("/nonexistent/cnirs")
        .ifname("eth0")
        .path("/nonexistent")
        .stdin(stdin)
}

fn error_of(run: &PluginRun) -> Value {
    assert_eq!(run.code, 1, "{run:?}");
    run.json()
}

/// Same code, msg and details; our only extra key is `cniVersion`.
fn assert_same_error(call: &Call) {
    let ours = error_of(&call.run(bin()));
    let theirs = error_of(&call.run(reference()));
    for key in ["code", "msg", "details"] {
        assert_eq!(ours.get(key), theirs.get(key), "{key}: {ours} vs {theirs}");
    }
    for key in ours.as_object().unwrap().keys() {
        assert!(
            theirs.get(key).is_some() || key == "cniVersion",
            "extra key {key}: {ours}"
        );
    }
}

#[test]
fn rows_where_both_agree() {
    let conf = r#"{"cniVersion":"1.0.0","name":"net"}"#;
    for call in [
        Call::new("ADD").stdin(conf),
        Call::new("DEL").stdin(conf),
        Call::new("CHECK").stdin(conf),
        full("ADD", conf).ifname("abcdefghijklmnop"),
        full("ADD", conf).ifname(".."),
        full("ADD", conf).ifname("a:b"),
        full("ADD", conf).container_id("-a"),
        full("ADD", ""),
        full("DEL", "{"),
        full("ADD", "null"),
        full("ADD", r#"{"cniVersion":"1.0.0"}"#),
        full("ADD", r#"{"cniVersion":"1.0.0","name":"a b"}"#),
        full("CHECK", r#"{"cniVersion":"0.3.1","name":"net"}"#),
        full("CHECK", r#"{"name":"net"}"#),
        full("CHECK", r#"{"cniVersion":"x.y","name":"net"}"#),
        full("FOO", ""),
    ] {
        assert_same_error(&call);
    }
}

#[test]
fn incompatible_version_differs_only_in_the_list() {
    let call = full("ADD", r#"{"cniVersion":"9.9.9","name":"net"}"#);
    let ours = error_of(&call.run(bin()));
    let theirs = error_of(&call.run(reference()));
    assert_eq!(ours["code"], theirs["code"]);
    assert_eq!(ours["msg"], theirs["msg"]);
    let prefix = "config is \"9.9.9\", plugin supports [";
    assert!(
        ours["details"].as_str().unwrap().starts_with(prefix),
        "{ours}"
    );
    assert!(
        theirs["details"].as_str().unwrap().starts_with(prefix),
        "{theirs}"
    );
}

/// A non-string `name`: same code; the wording is Go's decoder error there
/// (`json: cannot unmarshal number into Go struct field .name of type
/// string`) and a shorter one in our skel.
#[test]
fn name_of_wrong_type_same_code() {
    let call = full("ADD", r#"{"cniVersion":"1.0.0","name":5}"#);
    for run in [call.run(bin()), call.run(reference())] {
        let e = error_of(&run);
        assert_eq!(e["code"], 6, "{e}");
        let msg = e["msg"].as_str().unwrap();
        assert!(
            msg.starts_with("error unmarshall network config: "),
            "{msg}"
        );
        assert!(msg.contains("cannot unmarshal number into "), "{msg}");
    }
}

/// v1.1.1 validates the container ID for every command after the missing
/// check; the newest skel (ours) stops at the first invalid variable.
#[test]
fn invalid_container_id_with_missing_vars_differs() {
    let call = Call::new("ADD")
        .container_id("-a")
        .stdin(r#"{"cniVersion":"1.0.0","name":"net"}"#);
    assert_eq!(
        error_of(&call.run(reference()))["msg"],
        "required env variables [CNI_NETNS,CNI_IFNAME,CNI_PATH] missing"
    );
    assert_eq!(
        error_of(&call.run(bin()))["msg"],
        "invalid characters in containerID"
    );
}

/// v1.1.1 knows no GC/STATUS and checks the container ID of any command:
/// code 3. The newest skel (ours) reports unknown commands with code 4 and
/// runs GC/STATUS.
#[test]
fn unknown_commands_gc_and_status_differ() {
    let conf = r#"{"cniVersion":"1.1.0","name":"net"}"#;
    for verb in ["FOO", "GC", "STATUS"] {
        let call = Call::new(verb).path("/nonexistent").stdin(conf);
        let theirs = error_of(&call.run(reference()));
        assert_eq!(
            (theirs["code"].as_u64(), theirs["msg"].as_str()),
            (Some(3), Some("missing containerID"))
        );
        let ours = call.run(bin());
        if verb == "FOO" {
            assert_eq!(error_of(&ours)["msg"], "unknown CNI_COMMAND: FOO");
        } else {
            assert_eq!((ours.code, ours.stdout.as_str()), (0, "{}"), "{ours:?}");
        }
    }
}

/// v1.1.1 speaks spec 1.0.0; we speak 1.1.0. Both answer compact JSON and a
/// newline without reading stdin.
#[test]
fn version_answer_differs_in_label_and_list() {
    let call = Call::new("VERSION").stdin("garbage");
    let theirs = call.run(reference());
    let ours = call.run(bin());
    assert_eq!(
        theirs.stdout,
        "{\"cniVersion\":\"1.0.0\",\"supportedVersions\":[\"0.1.0\",\"0.2.0\",\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\"]}\n"
    );
    assert!(
        ours.stdout
            .starts_with("{\"cniVersion\":\"1.1.0\",\"supportedVersions\":[\"0.-42.0\",")
    );
    assert!(ours.stdout.ends_with("\"1.1.0\"]}\n"));
}

/// The about text: same shape, each plugin's own name and versions.
#[test]
fn about_text_has_the_same_shape() {
    let call = Call::new("").stdin("");
    let theirs = call.run(reference());
    let ours = call.run(bin());
    for run in [&theirs, &ours] {
        assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 2, "{run:?}");
        assert!(lines[0].starts_with("CNI ") && lines[0].contains(" plugin "));
        assert!(lines[1].starts_with("CNI protocol versions supported: 0."));
    }
}
