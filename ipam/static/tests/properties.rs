//! Property test over generated inputs, through the whole plugin (skel
//! included, in-process): it never panics, the result always parses as a
//! result of the config's version, and the addresses follow the
//! precedence rule: `runtimeConfig.ips`, else `args.cni.ips`, else
//! `ipam.addresses` followed by CNI_ARGS `IP=` (whose addresses take the
//! `GATEWAY=` their subnet holds).

use std::net::IpAddr;

use proptest::prelude::*;
use serde_json::{Value, json};
use skel::types::CniResult;
use static_ipam::Static;
use static_ipam::config::parse_cidr;

/// What the plugin printed and its exit code.
fn run(cmd: &str, stdin: &str, cni_args: &str) -> (i32, String) {
    let env = |k: &str| -> Option<String> {
        Some(
            match k {
                "CNI_COMMAND" => cmd,
                "CNI_CONTAINERID" => "c1",
                "CNI_IFNAME" => "eth0",
                "CNI_PATH" => "/nonexistent",
                "CNI_NETNS" => "/run/netns/cnirs-none",
                "CNI_ARGS" => cni_args,
                _ => return None,
            }
            .to_string(),
        )
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = skel::run(&Static, &env, &mut stdin.as_bytes(), &mut out, &mut err);
    (code, String::from_utf8(out).unwrap())
}

fn cidr() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u8..4, 1u8..255, 8u8..=32).prop_map(|(c, d, p)| format!("10.240.{c}.{d}/{p}")),
        (0u16..4, 1u16..0xffff, 48u8..=128).prop_map(|(c, d, p)| format!("fd40:{c:x}::{d:x}/{p}")),
    ]
}

fn gateway() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u8..4, 1u8..255).prop_map(|(c, d)| format!("10.240.{c}.{d}")),
        (0u16..4, 1u16..0xffff).prop_map(|(c, d)| format!("fd40:{c:x}::{d:x}")),
    ]
}

/// Mostly valid text, sometimes not.
fn maybe_bad(valid: impl Strategy<Value = String>) -> impl Strategy<Value = String> {
    prop_oneof![
        8 => valid,
        1 => "[0-9a-f:./]{0,12}",
    ]
}

#[derive(Debug, Clone)]
struct Input {
    version: &'static str,
    conf: Vec<(String, Option<String>)>,
    ip: Vec<String>,
    gateway: Vec<String>,
    args_ips: Vec<String>,
    runtime_ips: Vec<String>,
}

fn input() -> impl Strategy<Value = Input> {
    let versions = prop::sample::select(
        &[
            "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0",
        ][..],
    );
    let list = |s: BoxedStrategy<String>| prop::collection::vec(s, 0..3);
    (
        versions,
        prop::collection::vec((maybe_bad(cidr()), prop::option::of(gateway())), 0..3),
        list(maybe_bad(cidr()).boxed()),
        list(gateway().boxed()),
        list(maybe_bad(cidr()).boxed()),
        list(maybe_bad(cidr()).boxed()),
    )
        .prop_map(
            |(version, conf, ip, gateway, args_ips, runtime_ips)| Input {
                version,
                conf,
                ip,
                gateway,
                args_ips,
                runtime_ips,
            },
        )
}

impl Input {
    fn stdin(&self) -> String {
        let addresses: Vec<Value> = self
            .conf
            .iter()
            .map(|(a, g)| match g {
                Some(g) => json!({"address": a, "gateway": g}),
                None => json!({"address": a}),
            })
            .collect();
        json!({"cniVersion": self.version, "name": "n",
            "ipam": {"type": "static", "addresses": addresses},
            "args": {"cni": {"ips": self.args_ips}},
            "runtimeConfig": {"ips": self.runtime_ips}})
        .to_string()
    }

    fn cni_args(&self) -> String {
        let mut parts = vec!["IgnoreUnknown=1".to_string()];
        if !self.ip.concat().is_empty() {
            parts.push(format!("IP={}", self.ip.join(",")));
        }
        if !self.gateway.is_empty() {
            parts.push(format!("GATEWAY={}", self.gateway.join(",")));
        }
        parts.join(";")
    }

    /// The addresses the precedence rule gives, `None` when some address
    /// that counts is not a CIDR.
    fn expected(&self) -> Option<Vec<(String, Option<IpAddr>)>> {
        let parse = |s: &String| parse_cidr(s).map(|a| (a, None::<IpAddr>));
        // CNI_ARGS are parsed whatever overrides them; an empty `IP=` is
        // no request.
        let ips = if self.ip.concat().is_empty() {
            &[][..]
        } else {
            &self.ip[..]
        };
        let mut from_args: Vec<_> = ips.iter().map(parse).collect::<Option<_>>()?;
        let gateways: Vec<IpAddr> = self.gateway.iter().map(|g| g.parse().unwrap()).collect();
        for (a, gw) in from_args.iter_mut() {
            for g in &gateways {
                if same_subnet(a.ip, a.prefix, *g) {
                    *gw = Some(*g);
                }
            }
        }
        let replaced = |list: &[String]| -> Option<Vec<(String, Option<IpAddr>)>> {
            list.iter()
                .map(|s| parse_cidr(s).map(|a| (format!("{}/{}", a.ip, a.prefix), None)))
                .collect()
        };
        let args_ips = replaced(&self.args_ips);
        let runtime_ips = replaced(&self.runtime_ips);
        if !self.args_ips.is_empty() {
            args_ips.as_ref()?;
        }
        if !self.runtime_ips.is_empty() {
            return runtime_ips;
        }
        if !self.args_ips.is_empty() {
            return args_ips;
        }
        let mut out = Vec::new();
        for (a, g) in &self.conf {
            let a = parse_cidr(a)?;
            out.push((
                format!("{}/{}", a.ip, a.prefix),
                g.as_ref().map(|g| g.parse().unwrap()),
            ));
        }
        out.extend(
            from_args
                .into_iter()
                .map(|(a, g)| (format!("{}/{}", a.ip, a.prefix), g)),
        );
        Some(out)
    }
}

fn same_subnet(ip: IpAddr, prefix: u8, other: IpAddr) -> bool {
    match (ip, other) {
        (IpAddr::V4(a), IpAddr::V4(b)) => {
            let m = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(a) & m == u32::from(b) & m
        }
        (IpAddr::V6(a), IpAddr::V6(b)) => {
            let m = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(a) & m == u128::from(b) & m
        }
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn results_follow_precedence_and_parse_in_the_configs_version(inp in input()) {
        let (code, out) = run("ADD", &inp.stdin(), &inp.cni_args());
        let json: Value = serde_json::from_str(&out).unwrap();
        let Some(want) = inp.expected() else {
            prop_assert_eq!(code, 1, "{}", out);
            prop_assert_eq!(&json["code"], 999);
            return Ok(());
        };
        let old = inp.version < "0.3.0";
        let v4 = want.iter().filter(|(a, _)| !a.contains(':')).count();
        if old && (v4 > 1 || want.len() - v4 > 1) {
            prop_assert_eq!(code, 1);
            prop_assert_eq!(json["msg"].as_str().unwrap(), format!(
                "CNI version {} does not support more than 1 address per family", inp.version));
            return Ok(());
        }
        if old && want.is_empty() {
            prop_assert_eq!(json["msg"].as_str().unwrap(), "cannot convert: no valid IP addresses");
            return Ok(());
        }
        prop_assert_eq!(code, 0, "{}", out);
        prop_assert_eq!(json["cniVersion"].as_str().unwrap(), inp.version);
        let parsed = CniResult::parse(&json, inp.version).unwrap();
        prop_assert_eq!(parsed.version(), inp.version);
        let mut got: Vec<(String, Option<IpAddr>)> = parsed
            .into_v1()
            .unwrap()
            .ips
            .iter()
            .map(|i| (i.address.to_string(), i.gateway))
            .collect();
        let mut want = want;
        if old {
            // 0.1.0/0.2.0 results hold the IPv4 address first.
            got.sort_by_key(|(a, _)| a.contains(':'));
            want.sort_by_key(|(a, _)| a.contains(':'));
        }
        prop_assert_eq!(got, want);
    }

    /// Anything at all on stdin and in CNI_ARGS: one JSON document out,
    /// exit 0 or 1, for every command.
    #[test]
    fn arbitrary_input_never_panics(
        stdin in prop_oneof![
            "\\PC{0,40}",
            Just(r#"{"cniVersion":"1.0.0","name":"n","ipam":{"addresses":[{"address":"#.to_string()),
            (any::<u8>(), "[a-zA-Z0-9\"{}\\[\\]:,./ ]{0,60}").prop_map(|(_, s)| format!(r#"{{"cniVersion":"1.0.0","name":"n","ipam":{s}}}"#)),
        ],
        args in "[A-Za-z=;,.:/0-9]{0,30}",
        cmd in prop::sample::select(&["ADD", "CHECK", "DEL", "GC", "STATUS"][..]),
    ) {
        let (code, out) = run(cmd, &stdin, &args);
        prop_assert!(code == 0 || code == 1);
        if !out.is_empty() {
            prop_assert!(serde_json::from_str::<Value>(&out).is_ok(), "{}", out);
        }
    }
}
