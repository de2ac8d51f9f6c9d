//! `CNI_ARGS` as the reference reads it (`types.LoadArgs` into
//! `IPAMEnvArgs`, each value through its type's `UnmarshalText`), checked
//! against the reference binary itself: same exit code and byte-identical
//! stdout for every input, including Go's `\u003c`-style escaping of the
//! error JSON.

mod common;

use std::path::Path;

use common::*;
use testsupport::{PluginRun, TempDir};

const RANGE: &str = r#""ranges":[[{"subnet":"10.240.0.0/29"}]]"#;

/// ADD with `args` by `bin`, in a data dir of its own.
fn add(bin: &Path, dir: &Path, args: &str) -> PluginRun {
    call("ADD", "c1", "eth0")
        .args(args)
        .stdin(conf("0.4.0", dir, RANGE))
        .run(bin)
}

/// Run both binaries on `args` and require the same outcome, byte for byte.
fn same_as_reference(d: &TempDir, case: usize, args: &str) -> PluginRun {
    let want = add(&reference(), &d.join(&format!("go{case}")), args);
    let got = add(&ours(), &d.join(&format!("rs{case}")), args);
    assert_eq!(
        (got.code, &got.stdout),
        (want.code, &want.stdout),
        "CNI_ARGS {args:?}: ours {got:?}, reference {want:?}"
    );
    got
}

#[test]
fn empty_ip_value_is_no_request() {
    let d = TempDir::new("hl-args");
    for (i, (args, want)) in [
        ("IP=", "10.240.0.2/29"),
        ("IgnoreUnknown=1;K8S_POD_NAME=p;IP=", "10.240.0.2/29"),
        ("IP=;IP=10.240.0.5", "10.240.0.5/29"),
        // A later empty value replaces an earlier address, as in Go.
        ("IP=10.240.0.5;IP=", "10.240.0.2/29"),
    ]
    .into_iter()
    .enumerate()
    {
        let run = same_as_reference(&d, i, args);
        assert_eq!(
            addresses(&run.ok()),
            vec![want.split('/').next().unwrap()],
            "{args:?}"
        );
    }
}

#[test]
fn typed_value_errors_match_the_reference_byte_for_byte() {
    let d = TempDir::new("hl-args");
    for (i, args) in [
        "IP=a<b&c>",
        "IP= ",
        "IP=10.240.0.5 ",
        "IP=10.240.0.5/+24",
        "IP=10.240.0.5/33",
        "IP=10.240.0.5/",
        "IP=fe80::1%eth0",
        "IP=\u{1}",
        "IgnoreUnknown=",
        "IgnoreUnknown=YES",
        "IgnoreUnknown=Ja\u{e4}",
        "CommonArgs=1",
        "K8S_POD_NAME=<&>",
        "ignoreunknown=1;K8S_POD_NAME=x",
        "K8S_POD_NAME=x;IgnoreUnknown=1;IgnoreUnknown=0",
        "IP=10.240.0.5=x",
        "IP=10.240.0.5;",
        "=",
        "a\u{1}b",
    ]
    .into_iter()
    .enumerate()
    {
        let run = same_as_reference(&d, i, args);
        assert_eq!(run.code, 1, "{args:?} must fail: {run:?}");
    }
}

#[test]
fn typed_values_accepted_by_the_reference_are_accepted() {
    let d = TempDir::new("hl-args");
    for (i, args) in [
        "IP=10.240.0.5/024",
        "IP=10.240.0.5/29",
        "IP=::ffff:10.240.0.5",
        "IgnoreUnknown=tRuE;X=1",
        "IgnoreUnknown=0;X=1;IgnoreUnknown=1",
        "IgnoreUnknown=1;=",
    ]
    .into_iter()
    .enumerate()
    {
        let run = same_as_reference(&d, i, args);
        assert_eq!(run.code, 0, "{args:?} must succeed: {run:?}");
    }
}

/// Random `CNI_ARGS` built from the pieces the rules are about (keys of
/// every case, empty and padded values, `=` and `;` in odd places): ours and
/// the reference answer the same.
#[test]
fn random_cni_args_behave_as_the_reference() {
    const KEYS: &[&str] = &[
        "IP",
        "ip",
        "IgnoreUnknown",
        "MAC",
        "K8S_POD_NAME",
        "",
        "CommonArgs",
    ];
    const VALUES: &[&str] = &[
        "",
        " ",
        "1",
        "0",
        "true",
        "FALSE",
        "yes",
        "10.240.0.4",
        "10.240.0.4/29",
        "10.240.0.4/+1",
        "fd40::4",
        "::ffff:10.240.0.6",
        "<&>",
        "a=b",
        "10.240.0.300",
    ];
    let d = TempDir::new("hl-args");
    let random = random_u32s(60 * 8);
    for case in 0..60 {
        let r = &random[case * 8..case * 8 + 8];
        let pairs = 1 + r[0] as usize % 4;
        let args: Vec<String> = (0..pairs)
            .map(|i| {
                let key = KEYS[r[1 + i] as usize % KEYS.len()];
                let value = VALUES[(r[1 + i] >> 8) as usize % VALUES.len()];
                match r[5] >> (i * 4) & 0xf {
                    0 => key.to_string(),
                    1 => String::new(),
                    _ => format!("{key}={value}"),
                }
            })
            .collect();
        same_as_reference(&d, case, &args.join(";"));
    }
}
