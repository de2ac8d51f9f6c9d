//! Property tests: every parser that sees runtime input (the environment,
//! stdin configs, results of every version, CNI_ARGS, version strings)
//! survives arbitrary and structured-but-hostile input without panicking,
//! and keeps the invariants the protocol promises: one JSON document on
//! stdout, exit 0 or 1, a result labelled with the config's version, lossless
//! 1.1.0 -> 0.4.0 -> 1.1.0 conversion of addresses.
//!
//! Case counts are small enough for the whole file to run in a few seconds.

use std::collections::HashMap;

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use skel::args::{Args, Kind};
use skel::conf::NetConf;
use skel::types::{CniResult, Result1};
use skel::{CmdArgs, Outcome, Plugin, Reply};

const VERSIONS: &[&str] = &[
    "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0",
];

// ------------------------------------------------------------ test plugin

/// Exercises the shared parsers from inside the commands: ADD echoes the
/// converted `prevResult` (or a fixed result), CHECK parses CNI_ARGS.
struct Echo;

fn fixed_result() -> Result1 {
    serde_json::from_value(json!({
        "cniVersion": "1.1.0",
        "interfaces": [{"name": "eth0", "mtu": 1500, "sandbox": "/x"}],
        "ips": [{"address": "10.240.0.2/24", "gateway": "10.240.0.1", "interface": 0}],
        "routes": [{"dst": "0.0.0.0/0", "table": 7}]
    }))
    .expect("fixed result parses")
}

impl Plugin for Echo {
    fn about(&self) -> String {
        "CNI echo plugin test".into()
    }
    fn add(&self, args: &CmdArgs) -> Outcome {
        let conf = NetConf::parse(&args.stdin)?;
        match conf.prev_result()? {
            Some(prev) => Ok(Reply::Result(prev)),
            None => Ok(Reply::Result(fixed_result().into())),
        }
    }
    fn check(&self, args: &CmdArgs) -> Outcome {
        Args::parse(&args.args, &[("IP", Kind::Ip), ("MAC", Kind::String)])
            .map_err(skel::Error::internal)?;
        Ok(Reply::None)
    }
    fn gc(&self, args: &CmdArgs) -> Outcome {
        NetConf::parse(&args.stdin)?;
        Ok(Reply::Text(String::new()))
    }
}

/// Same, but asks skel to vet CNI_NETNS (only harmless paths are generated).
struct EchoNetns;

impl Plugin for EchoNetns {
    const USES_NETNS: bool = true;
    fn about(&self) -> String {
        String::new()
    }
    fn versions(&self) -> Vec<String> {
        vec!["0.-42.0".into(), "1.0.0".into(), "banana".into()]
    }
    fn add(&self, args: &CmdArgs) -> Outcome {
        Echo.add(args)
    }
}

struct Outcomes {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run<P: Plugin>(plugin: &P, env: &HashMap<String, String>, stdin: &[u8]) -> Outcomes {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let code = skel::run(
        plugin,
        &|k| env.get(k).cloned(),
        &mut &stdin[..],
        &mut out,
        &mut err,
    );
    Outcomes {
        code,
        stdout: String::from_utf8(out).expect("stdout is UTF-8"),
        stderr: String::from_utf8(err).expect("stderr is UTF-8"),
    }
}

/// The protocol's promises, whatever the input.
fn check_outcome(o: &Outcomes, env: &HashMap<String, String>, stdin: &[u8]) {
    let command = env.get("CNI_COMMAND").map(String::as_str).unwrap_or("");
    match o.code {
        0 if o.stdout.is_empty() => {}
        0 => {
            let v: Value = serde_json::from_str(o.stdout.trim_end())
                .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {:?}", o.stdout));
            match command {
                "VERSION" => {
                    assert!(o.stdout.ends_with('\n'));
                    assert!(v["supportedVersions"].is_array());
                }
                "ADD" => {
                    // Labelled with the config's version.
                    let conf: Value = serde_json::from_slice(stdin).expect("config parsed");
                    let want = match conf.get("cniVersion").and_then(Value::as_str) {
                        None | Some("") => "0.1.0",
                        Some(v) => v,
                    };
                    assert_eq!(v["cniVersion"], want, "result label: {}", o.stdout);
                }
                other => panic!("{other} printed {:?}", o.stdout),
            }
        }
        1 => {
            let v: Value = serde_json::from_str(&o.stdout)
                .unwrap_or_else(|e| panic!("error is not JSON ({e}): {:?}", o.stdout));
            let code = v["code"].as_u64().expect("error code");
            assert!(
                [1, 2, 3, 4, 5, 6, 7, 8, 11, 999].contains(&code),
                "code {code}: {}",
                o.stdout
            );
            assert!(v["msg"].is_string());
        }
        other => panic!("exit {other}"),
    }
    if command.is_empty() && o.code == 0 {
        assert!(o.stderr.contains("CNI protocol versions supported: "));
    }
}

// ------------------------------------------------------------ strategies

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![".{0,12}", "[a-zA-Z0-9_.:/=; -]{0,20}", Just(String::new()),]
}

fn version_text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(VERSIONS).prop_map(str::to_string),
        1 => prop::sample::select(&["", "1.0", "9.9.9", "x.y", "0.-42.0", "1.2.3.4", "01.1.0"][..])
            .prop_map(str::to_string),
        1 => any_text(),
    ]
}

fn env_map() -> impl Strategy<Value = HashMap<String, String>> {
    let command = prop_oneof![
        8 => prop::sample::select(&["ADD", "DEL", "CHECK", "STATUS", "GC", "VERSION"][..])
            .prop_map(str::to_string),
        1 => prop::sample::select(&["", "FOO", "add"][..]).prop_map(str::to_string),
        1 => any_text(),
    ];
    // Mostly valid values, so that many cases reach the plugin.
    let id = prop_oneof![
        12 => Just("c1".to_string()),
        1 => Just("-a".to_string()),
        1 => Just(String::new()),
        1 => any_text()
    ];
    let ifname = prop_oneof![
        12 => Just("eth0".to_string()),
        1 => Just("abcdefghijklmnop".to_string()),
        1 => Just("..".to_string()),
        1 => any_text()
    ];
    let netns = prop::sample::select(
        &[
            "",
            "/nonexistent/cnirs",
            "/proc/self/ns/net",
            "/proc/1/ns/net",
            "dummy",
        ][..],
    )
    .prop_map(str::to_string);
    let args = prop_oneof![
        Just(String::new()),
        Just("IP=10.240.0.5;IgnoreUnknown=1;K8S_POD_NAME=x".to_string()),
        any_text()
    ];
    let flag = prop::sample::select(&["", "1", "true", "TRUE", "no"][..]).prop_map(str::to_string);
    let path = prop_oneof![12 => Just("/opt/cni/bin".to_string()), 1 => any_text()];
    (command, id, netns, ifname, args, path, flag).prop_map(
        |(command, id, netns, ifname, args, path, over)| {
            let mut m = HashMap::new();
            for (k, v) in [
                ("CNI_COMMAND", command),
                ("CNI_CONTAINERID", id),
                ("CNI_NETNS", netns),
                ("CNI_IFNAME", ifname),
                ("CNI_ARGS", args),
                ("CNI_PATH", path),
                ("CNI_NETNS_OVERRIDE", over),
            ] {
                m.insert(k.to_string(), v);
            }
            m
        },
    )
}

/// A complete, valid environment for a real verb, so that most cases get
/// past the environment checks and into the config and the plugin.
fn valid_env() -> impl Strategy<Value = HashMap<String, String>> {
    let command = prop::sample::select(&["ADD", "DEL", "CHECK", "STATUS", "GC"][..]);
    let netns = prop::sample::select(&["/nonexistent/cnirs", "dummy"][..]);
    let args = prop_oneof![
        Just(String::new()),
        Just("IP=10.240.0.5;IgnoreUnknown=1;K8S_POD_NAME=x".to_string()),
        any_text()
    ];
    (command, netns, args).prop_map(|(command, netns, args)| {
        [
            ("CNI_COMMAND", command),
            ("CNI_CONTAINERID", "c1"),
            ("CNI_NETNS", netns),
            ("CNI_IFNAME", "eth0"),
            ("CNI_ARGS", args.as_str()),
            ("CNI_PATH", "/opt/cni/bin"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    })
}

/// Scalars that are often of the wrong type for a field.
fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        any_text().prop_map(Value::String),
    ]
}

fn cidr_text() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => (any::<[u8; 4]>(), 0u8..=33).prop_map(|(a, p)| json!(format!(
            "{}.{}.{}.{}/{p}", a[0], a[1], a[2], a[3]
        ))),
        3 => (any::<u128>(), 0u8..=129).prop_map(|(a, p)| json!(format!(
            "{}/{p}", std::net::Ipv6Addr::from(a)
        ))),
        1 => Just(json!("::ffff:10.240.0.1/120")),
        1 => scalar(),
    ]
}

fn ip_text() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<[u8; 4]>().prop_map(|a| json!(std::net::Ipv4Addr::from(a).to_string())),
        any::<u128>().prop_map(|a| json!(std::net::Ipv6Addr::from(a).to_string())),
        scalar(),
    ]
}

fn small_int() -> impl Strategy<Value = Value> {
    prop_oneof![
        (-2i64..300).prop_map(Value::from),
        Just(json!(u64::MAX)),
        Just(json!(1.5)),
        Just(Value::Null),
    ]
}

/// Sparse object: each key present with probability ~1/2.
fn object(fields: Vec<(&'static str, BoxedStrategy<Value>)>) -> BoxedStrategy<Value> {
    let parts: Vec<BoxedStrategy<Option<(&'static str, Value)>>> = fields
        .into_iter()
        .map(|(k, s)| prop::option::of(s.prop_map(move |v| (k, v))).boxed())
        .collect();
    parts
        .prop_map(|kvs| {
            let mut m = Map::new();
            for (k, v) in kvs.into_iter().flatten() {
                m.insert(k.to_string(), v);
            }
            Value::Object(m)
        })
        .boxed()
}

fn list(s: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    prop_oneof![
        6 => prop::collection::vec(s, 0..4).prop_map(Value::Array),
        1 => scalar(),
    ]
    .boxed()
}

fn route() -> BoxedStrategy<Value> {
    object(vec![
        ("dst", cidr_text().boxed()),
        ("gw", ip_text().boxed()),
        ("mtu", small_int().boxed()),
        ("advmss", small_int().boxed()),
        ("priority", small_int().boxed()),
        ("table", small_int().boxed()),
        ("scope", small_int().boxed()),
    ])
}

fn dns() -> BoxedStrategy<Value> {
    let strings = || list(any_text().prop_map(Value::String).boxed());
    object(vec![
        ("nameservers", strings()),
        ("domain", any_text().prop_map(Value::String).boxed()),
        ("search", strings()),
        ("options", strings()),
    ])
}

/// A result-shaped value mixing the fields of every version.
fn result_json() -> BoxedStrategy<Value> {
    let ip02 = object(vec![
        ("ip", cidr_text().boxed()),
        ("gateway", ip_text().boxed()),
        ("routes", list(route())),
    ]);
    let ips = object(vec![
        ("address", cidr_text().boxed()),
        ("gateway", ip_text().boxed()),
        ("interface", small_int().boxed()),
        (
            "version",
            prop_oneof![Just(json!("4")), Just(json!("6")), scalar()].boxed(),
        ),
    ]);
    let iface = object(vec![
        ("name", any_text().prop_map(Value::String).boxed()),
        ("mac", any_text().prop_map(Value::String).boxed()),
        ("sandbox", any_text().prop_map(Value::String).boxed()),
        ("mtu", small_int().boxed()),
        ("socketPath", any_text().prop_map(Value::String).boxed()),
        ("pciID", any_text().prop_map(Value::String).boxed()),
    ]);
    object(vec![
        ("cniVersion", version_text().prop_map(Value::String).boxed()),
        ("ip4", ip02.clone()),
        ("ip6", ip02),
        ("interfaces", list(iface)),
        ("ips", list(ips)),
        ("routes", list(route())),
        ("dns", dns()),
    ])
}

/// A well-formed 1.1.0 result (every address valid), for the lossless
/// round-trip property.
fn valid_result_11() -> impl Strategy<Value = Result1> {
    let ip = (
        any::<bool>(),
        any::<u32>(),
        any::<u128>(),
        0u8..=32,
        0u8..=128,
    )
        .prop_map(|(v4, a4, a6, p4, p6)| {
            if v4 {
                format!("{}/{p4}", std::net::Ipv4Addr::from(a4))
            } else {
                format!("{}/{p6}", std::net::Ipv6Addr::from(a6))
            }
        });
    let ipc = (
        ip,
        prop::option::of(any::<u32>()),
        prop::option::of(0usize..3),
    )
        .prop_map(|(address, gw, interface)| {
            let mut o = json!({"address": address});
            if let Some(g) = gw {
                o["gateway"] = json!(std::net::Ipv4Addr::from(g).to_string());
            }
            if let Some(i) = interface {
                o["interface"] = json!(i);
            }
            o
        });
    let iface = ("[a-z0-9]{1,8}", prop::option::of(0i64..9000)).prop_map(|(name, mtu)| {
        let mut o = json!({"name": name, "mac": "02:00:00:00:00:01"});
        if let Some(m) = mtu {
            o["mtu"] = json!(m);
        }
        o
    });
    (
        prop::collection::vec(ipc, 0..4),
        prop::collection::vec(iface, 0..3),
    )
        .prop_map(|(ips, ifaces)| {
            serde_json::from_value(json!({
                "cniVersion": "1.1.0", "ips": ips, "interfaces": ifaces,
                "routes": [{"dst": "10.240.0.0/16", "gw": "10.240.0.1", "mtu": 1400, "scope": 0}]
            }))
            .expect("valid 1.1.0 result")
        })
}

/// A plugin config, usually with a valid name and version, with a
/// `prevResult` of any shape.
fn config_json() -> BoxedStrategy<Value> {
    let name = prop_oneof![
        8 => Just(Some(json!("net"))),
        1 => Just(None),
        1 => Just(Some(json!("a b"))),
        1 => scalar().prop_map(Some),
    ];
    let version = prop_oneof![
        8 => prop::sample::select(VERSIONS).prop_map(|v| Some(json!(v))),
        1 => Just(None),
        1 => version_text().prop_map(|v| Some(json!(v))),
        1 => scalar().prop_map(Some),
    ];
    let word = || "[a-z-]{1,8}".prop_map(Value::String);
    let ipam = object(vec![("type", word().boxed()), ("subnet", scalar().boxed())]);
    // A well-formed prevResult in any version, or anything result-shaped.
    let valid_prev = (valid_result_11(), prop::sample::select(VERSIONS)).prop_map(|(r, v)| {
        CniResult::from(r)
            .convert(v)
            .map(|c| c.to_value())
            .unwrap_or(Value::Null)
    });
    let rest = object(vec![
        ("type", prop_oneof![4 => word(), 1 => scalar()].boxed()),
        ("ipam", prop_oneof![4 => ipam, 1 => scalar()].boxed()),
        ("dns", prop_oneof![4 => dns(), 1 => scalar()].boxed()),
        (
            "prevResult",
            prop_oneof![3 => valid_prev, 2 => result_json(), 1 => scalar()].boxed(),
        ),
        ("runtimeConfig", scalar().boxed()),
        ("args", scalar().boxed()),
        ("capabilities", scalar().boxed()),
    ]);
    (rest, name, version)
        .prop_map(|(mut obj, name, version)| {
            for (key, v) in [("name", name), ("cniVersion", version)] {
                if let Some(v) = v {
                    obj[key] = v;
                }
            }
            obj
        })
        .boxed()
}

fn stdin_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => config_json().prop_map(|v| serde_json::to_vec(&v).unwrap()),
        1 => prop::collection::vec(any::<u8>(), 0..64),
        1 => any_text().prop_map(String::into_bytes),
    ]
}

// ------------------------------------------------------------ properties

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 400,
        // Integration tests have no lib.rs next to them for regression files.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn skel_run_keeps_the_protocol(env in env_map(), stdin in stdin_bytes()) {
        let o = run(&Echo, &env, &stdin);
        check_outcome(&o, &env, &stdin);
        let o = run(&EchoNetns, &env, &stdin);
        check_outcome(&o, &env, &stdin);
    }

    #[test]
    fn skel_run_with_valid_env(env in valid_env(), config in config_json()) {
        let stdin = serde_json::to_vec(&config).unwrap();
        let o = run(&Echo, &env, &stdin);
        check_outcome(&o, &env, &stdin);
        let o = run(&EchoNetns, &env, &stdin);
        check_outcome(&o, &env, &stdin);
    }

    #[test]
    fn results_parse_and_convert_everywhere(
        value in result_json(),
        default in version_text(),
    ) {
        let bytes = serde_json::to_vec(&value).unwrap();
        let Ok(parsed) = CniResult::parse_bytes(&bytes, &default) else { return Ok(()); };
        for to in VERSIONS {
            let Ok(converted) = parsed.clone().convert(to) else { continue };
            // Converting to X labels X, in the struct and on the wire.
            prop_assert_eq!(converted.version(), *to);
            prop_assert_eq!(&converted.to_value()["cniVersion"], &json!(to));
            // What we print, we can read back unchanged.
            let again = CniResult::parse_bytes(converted.to_json_pretty().as_bytes(), "")
                .expect("own output parses");
            prop_assert_eq!(&again, &converted);
            let compact = CniResult::parse_bytes(converted.to_json_compact().as_bytes(), "")
                .expect("own compact output parses");
            prop_assert_eq!(&compact, &converted);
        }
        let _ = parsed.into_v1();
    }

    #[test]
    fn arbitrary_bytes_never_panic_result_parser(bytes in prop::collection::vec(any::<u8>(), 0..128)) {
        for v in ["", "0.2.0", "0.4.0", "1.1.0", "x"] {
            if let Ok(r) = CniResult::parse_bytes(&bytes, v) {
                for to in VERSIONS {
                    let _ = r.clone().convert(to);
                }
            }
        }
    }

    #[test]
    fn v11_to_040_and_back_keeps_addresses(r in valid_result_11()) {
        let back = CniResult::from(r.clone())
            .convert("0.4.0").expect("1.1.0 -> 0.4.0")
            .convert("1.1.0").expect("0.4.0 -> 1.1.0");
        let CniResult::V1(back) = back else { panic!("not 1.x") };
        prop_assert_eq!(&back.ips, &r.ips);
        prop_assert_eq!(&back.routes, &r.routes);
        prop_assert_eq!(back.interfaces.len(), r.interfaces.len());
        for (a, b) in back.interfaces.iter().zip(&r.interfaces) {
            prop_assert_eq!((&a.name, &a.mac, &a.sandbox), (&b.name, &b.mac, &b.sandbox));
        }
        // 0.2.0 needs at least one address.
        let to02 = CniResult::from(r.clone()).convert("0.2.0");
        prop_assert_eq!(to02.is_err(), r.ips.is_empty());
        if let Ok(CniResult::V02(v02)) = to02 {
            let first4 = r.ips.iter().find(|ip| ip.address.is_ipv4() || is_mapped(ip.address.ip()));
            prop_assert_eq!(v02.ip4.map(|c| c.ip), first4.map(|ip| ip.address));
        }
    }

    #[test]
    fn cni_args_parser(raw in prop_oneof![
        any_text(),
        prop::collection::vec(("[A-Za-z]{0,4}", "[a-z0-9.:/]{0,6}", 0usize..3), 0..5).prop_map(|pairs| {
            pairs.iter().map(|(k, v, eqs)| match eqs {
                0 => k.clone(),
                1 => format!("{k}={v}"),
                _ => format!("{k}={v}={v}"),
            }).collect::<Vec<_>>().join(";")
        }),
    ]) {
        let known = [("IP", Kind::Ip), ("MAC", Kind::String), ("FLAG", Kind::Bool)];
        match Args::parse(&raw, &known) {
            Ok(args) => {
                // Accepted only if every pair had exactly one '='.
                if !raw.is_empty() {
                    prop_assert!(raw.split(';').all(|p| p.matches('=').count() == 1), "{raw:?}");
                }
                // The last value of a known key wins.
                for (key, _) in known {
                    let last = raw.split(';').filter_map(|p| p.split_once('='))
                        .filter(|(k, _)| *k == key).map(|(_, v)| v).next_back();
                    prop_assert_eq!(args.get(key), last);
                }
            }
            Err(e) => prop_assert!(e.starts_with("ARGS: "), "{e}"),
        }
    }

    #[test]
    fn version_parser(text in prop_oneof![any_text(), version_text()],
                      triple in (any::<i32>(), any::<i32>(), any::<i32>())) {
        if skel::version::parse(&text).is_ok() {
            prop_assert!(text.split('.').count() <= 3);
        }
        let (a, b, c) = triple;
        let s = format!("{a}.{b}.{c}");
        prop_assert_eq!(skel::version::parse(&s), Ok((a as i64, b as i64, c as i64)));
        let t = format!("{b}.{c}.{a}");
        prop_assert_eq!(
            skel::version::greater_or_equal(&s, &t),
            Ok((a, b, c) >= (b, c, a))
        );
    }

    #[test]
    fn netconf_and_prev_result(stdin in stdin_bytes()) {
        let Ok(conf) = NetConf::parse(&stdin) else { return Ok(()); };
        if let Ok(Some(prev)) = conf.prev_result() {
            let want = if conf.cni_version.is_empty() { "0.1.0" } else { conf.cni_version.as_str() };
            prop_assert_eq!(prev.version(), want);
        }
    }
}

fn is_mapped(ip: std::net::IpAddr) -> bool {
    matches!(ip, std::net::IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some())
}
