//! Differential property test against the reference (Debian's Go
//! `static`, v1.1.1): generated combinations of `ipam.addresses`,
//! CNI_ARGS `IP=`/`GATEWAY=`, `args.cni.ips` and `runtimeConfig.ips`, in
//! every version the reference knows, with IPv6 and odd address forms,
//! duplicates and gateways outside their subnet, give the same exit code
//! and the same output from our binary and Go's.

use std::path::Path;
use std::process::{Command, Stdio};

use proptest::prelude::*;
use serde_json::{Value, json};

const GO: &str = "/usr/lib/cni/static";

fn ours() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_static"))
}

/// Exit code and output of `bin` for ADD, with an empty `dns` dropped
/// (the newest reference omits it in 1.x results, v1.1.1 prints `{}`).
fn add(bin: &Path, stdin: &str, cni_args: &str) -> Value {
    use std::io::Write;
    let mut child = Command::new(bin)
        .env_clear()
        .envs([
            ("CNI_COMMAND", "ADD"),
            ("CNI_CONTAINERID", "c1"),
            ("CNI_IFNAME", "eth0"),
            ("CNI_PATH", "/nonexistent"),
            ("CNI_NETNS", "/run/netns/cnirs-none"),
            ("CNI_ARGS", cni_args),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let mut v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    if let Some(obj) = v.as_object_mut()
        && obj.get("dns") == Some(&json!({}))
    {
        obj.remove("dns");
    }
    json!({"exit": out.status.code(), "out": v})
}

/// Addresses in the forms Go's parser meets: plain, IPv4-mapped, upper
/// case, leading zeros in the prefix, zones, out-of-range prefixes,
/// a few fixed ones (duplicates), and junk.
fn cidr() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (0u8..2, 1u8..4, 0u8..=33).prop_map(|(c, d, p)| format!("10.240.{c}.{d}/{p}")),
        3 => (0u16..2, 1u16..4, 0u8..=129).prop_map(|(c, d, p)| format!("fd40:{c:x}::{d:x}/{p}")),
        1 => (1u8..4, 96u8..=128).prop_map(|(d, p)| format!("::ffff:10.240.0.{d}/{p}")),
        1 => (1u16..4,).prop_map(|(d,)| format!("FD40::{d:X}/64")),
        1 => (1u8..4,).prop_map(|(d,)| format!("10.240.0.{d}/0024")),
        1 => Just("fd40::1%eth0/64".to_string()),
        1 => Just("10.240.0.1/24".to_string()),
        1 => Just("10.240.0.1".to_string()),
        1 => "[0-9a-f:./ ]{0,10}",
    ]
}

fn gateway() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u8..2, 1u8..4).prop_map(|(c, d)| format!("10.240.{c}.{d}")),
        (0u16..2, 1u16..4).prop_map(|(c, d)| format!("fd40:{c:x}::{d:x}")),
        (1u8..4,).prop_map(|(d,)| format!("::ffff:10.240.0.{d}")),
        Just("192.0.2.1".to_string()),
        Just("".to_string()),
        Just("bad".to_string()),
    ]
}

#[derive(Debug, Clone)]
struct Input {
    version: &'static str,
    conf: Option<Vec<(String, Option<String>)>>,
    ip: Option<Vec<String>>,
    gateway: Option<Vec<String>>,
    args_ips: Option<Vec<String>>,
    runtime_ips: Option<Vec<String>>,
    routes: bool,
    dns: bool,
    /// Extra CNI_ARGS pairs: `IgnoreUnknown` spellings, unknown and
    /// lower-case keys, repeated keys, pairs without `=`.
    extra: Vec<&'static str>,
}

fn input() -> impl Strategy<Value = Input> {
    // Debian's v1.1.1 knows no 1.1.0.
    let versions =
        prop::sample::select(&["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0"][..]);
    let list = || prop::option::of(prop::collection::vec(cidr(), 0..3));
    (
        versions,
        prop::option::of(prop::collection::vec(
            (cidr(), prop::option::of(gateway())),
            0..3,
        )),
        list(),
        prop::option::of(prop::collection::vec(gateway(), 0..3)),
        list(),
        list(),
        any::<bool>(),
        any::<bool>(),
        prop::collection::vec(
            prop::sample::select(
                &[
                    "IgnoreUnknown=1",
                    "IgnoreUnknown=true",
                    "IgnoreUnknown=0",
                    "ignoreunknown=1",
                    "K8S_POD_NAME=p",
                    "ip=10.240.0.7/24",
                    "IP=10.240.1.7/24",
                    "GATEWAY=10.240.1.1",
                    "IP",
                    "IP=",
                    "=x",
                ][..],
            ),
            0..3,
        ),
    )
        .prop_map(
            |(version, conf, ip, gateway, args_ips, runtime_ips, routes, dns, extra)| Input {
                version,
                conf,
                ip,
                gateway,
                args_ips,
                runtime_ips,
                routes,
                dns,
                extra,
            },
        )
}

impl Input {
    fn stdin(&self) -> String {
        let mut ipam = json!({"type": "static"});
        if let Some(conf) = &self.conf {
            let addresses: Vec<Value> = conf
                .iter()
                .map(|(a, g)| match g {
                    Some(g) => json!({"address": a, "gateway": g}),
                    None => json!({"address": a}),
                })
                .collect();
            ipam["addresses"] = json!(addresses);
        }
        if self.routes {
            ipam["routes"] =
                json!([{"dst": "0.0.0.0/0", "gw": "10.240.0.1"}, {"dst": "fd40:9::/64"}]);
        }
        if self.dns {
            ipam["dns"] = json!({"nameservers": ["10.240.0.53"], "search": ["a.test"]});
        }
        let mut c = json!({"cniVersion": self.version, "name": "n", "ipam": ipam});
        if let Some(ips) = &self.args_ips {
            c["args"] = json!({"cni": {"ips": ips}});
        }
        if let Some(ips) = &self.runtime_ips {
            c["runtimeConfig"] = json!({"ips": ips});
        }
        c.to_string()
    }

    fn cni_args(&self) -> String {
        let mut parts: Vec<String> = self.extra.iter().map(|s| s.to_string()).collect();
        if let Some(ip) = &self.ip {
            parts.push(format!("IP={}", ip.join(",")));
        }
        if let Some(gw) = &self.gateway {
            parts.push(format!("GATEWAY={}", gw.join(",")));
        }
        parts.join(";")
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn add_answers_as_the_reference(inp in input()) {
        prop_assert!(Path::new(GO).exists(), "{} missing: scripts/test.sh installs it", GO);
        let (stdin, args) = (inp.stdin(), inp.cni_args());
        let a = add(ours(), &stdin, &args);
        let b = add(Path::new(GO), &stdin, &args);
        prop_assert_eq!(a, b, "stdin {} CNI_ARGS {}", stdin, args);
    }
}
