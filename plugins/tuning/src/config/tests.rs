use super::*;

fn parse(stdin: &str, args: &str) -> Result<Config, String> {
    Config::parse(stdin.as_bytes(), args).map_err(|e| e.to_string())
}

fn dup(stdin: &str) -> Result<(), String> {
    check_duplicate_sysctl_keys(stdin.as_bytes()).map_err(|e| e.to_string())
}

#[test]
fn defaults() {
    let c = parse(r#"{"cniVersion":"1.0.0","name":"n","type":"tuning"}"#, "").unwrap();
    assert_eq!(c.data_dir, PathBuf::from("/run/cni/tuning"));
    assert!(!c.changes_link() && c.sysctl.is_empty() && c.prev_result.is_none());
}

#[test]
fn every_key_and_go_cased_keys() {
    let c = parse(
        r#"{"cniVersion":"1.0.0","name":"n","DataDir":"/tmp/x","Sysctl":{"net.core.somaxconn":"500"},
            "MAC":"02:00:00:00:00:01","promisc":true,"Mtu":1400,"txqlen":0,"AllMulti":false,
            "prevResult":{"cniVersion":"1.0.0"}}"#,
        "",
    )
    .unwrap();
    assert_eq!(c.data_dir, PathBuf::from("/tmp/x"));
    assert_eq!(c.sysctl["net.core.somaxconn"], "500");
    assert_eq!(c.mac, "02:00:00:00:00:01");
    assert!(c.promisc);
    assert_eq!((c.mtu, c.txqlen, c.allmulti), (1400, Some(0), Some(false)));
    assert!(c.prev_result.is_some() && c.changes_link());
}

/// MAC: config < CNI_ARGS `MAC=` < `runtimeConfig.mac` < `args.cni.mac`.
#[test]
fn mac_precedence() {
    let with = |top: &str| {
        format!(r#"{{"cniVersion":"1.0.0","name":"n","mac":"02:00:00:00:00:01"{top}}}"#)
    };
    let cases = [
        ("", "", "02:00:00:00:00:01"),
        (
            "",
            "IgnoreUnknown=1;MAC=02:00:00:00:00:02",
            "02:00:00:00:00:02",
        ),
        ("", "MAC=", "02:00:00:00:00:01"),
        (
            r#","runtimeConfig":{"mac":"02:00:00:00:00:03"}"#,
            "MAC=02:00:00:00:00:02",
            "02:00:00:00:00:03",
        ),
        (
            r#","runtimeConfig":{"Mac":"02:00:00:00:00:03"},"args":{"cni":{"mac":"02:00:00:00:00:04"}}"#,
            "MAC=02:00:00:00:00:02",
            "02:00:00:00:00:04",
        ),
        // A present but empty args.cni.mac means "leave the MAC alone".
        (r#","args":{"cni":{"mac":""}}"#, "MAC=02:00:00:00:00:02", ""),
        (r#","runtimeConfig":{"mac":""}"#, "", "02:00:00:00:00:01"),
    ];
    for (top, args, want) in cases {
        assert_eq!(parse(&with(top), args).unwrap().mac, want, "{top} {args}");
    }
}

#[test]
fn args_cni_overrides_every_key() {
    let c = parse(
        r#"{"cniVersion":"1.0.0","name":"n","sysctl":{"net.a":"1","net.b":"1"},"promisc":true,"mtu":1400,
            "args":{"cni":{"sysctl":{"net.b":"2","net.c":"3"},"promisc":false,"mtu":1300,"allmulti":true,"txQLen":7}}}"#,
        "",
    )
    .unwrap();
    let sysctl: Vec<_> = c.sysctl.iter().map(|(k, v)| format!("{k}={v}")).collect();
    assert_eq!(sysctl, ["net.a=1", "net.b=2", "net.c=3"]);
    assert!(!c.promisc);
    assert_eq!((c.mtu, c.allmulti, c.txqlen), (1300, Some(true), Some(7)));
}

/// The reference panics (nil map) on `args.cni.sysctl` without a
/// top-level `sysctl`.
#[test]
fn args_cni_sysctl_alone_is_fine() {
    let c = parse(
        r#"{"cniVersion":"1.0.0","name":"n","args":{"cni":{"sysctl":{"net.core.somaxconn":"5"}}}}"#,
        "",
    )
    .unwrap();
    assert_eq!(c.sysctl["net.core.somaxconn"], "5");
}

#[test]
fn decoding_errors_read_as_the_references() {
    let cases = [
        (
            r#"{"name":"n","sysctl":["a"]}"#,
            "failed to load netconf: json: cannot unmarshal array into Go struct field TuningConf.sysctl of type map[string]string",
        ),
        (
            r#"{"name":"n","mtu":"1400"}"#,
            "failed to load netconf: json: cannot unmarshal string into Go struct field TuningConf.mtu of type int",
        ),
        (
            r#"{"name":"n","promisc":"yes"}"#,
            "failed to load netconf: json: cannot unmarshal string into Go struct field TuningConf.promisc of type bool",
        ),
        (
            r#"{"name":"n","args":{"cni":{"mtu":"x"}}}"#,
            "failed to load netconf: json: cannot unmarshal string into Go struct field IPAMArgs.args.cni.mtu of type int",
        ),
    ];
    for (stdin, want) in cases {
        assert_eq!(parse(stdin, "").unwrap_err(), want, "{stdin}");
    }
    assert_eq!(
        parse(r#"{"name":"n"}"#, "FOO=1").unwrap_err(),
        r#"ARGS: unknown args ["FOO=1"]"#
    );
}

#[test]
fn duplicate_sysctl_keys() {
    dup(r#"{"sysctl":{"net.a":"1","net.b":"2"}}"#).unwrap();
    dup(r#"{"sysctl":null,"other":{"a":1,"a":2}}"#).unwrap();
    dup(r#"{"name":"x"}"#).unwrap();
    let refused = "duplicated sysctl keys are not allowed";
    assert_eq!(
        dup(r#"{"sysctl":{"net.a":"1","net.a":"2"}}"#).unwrap_err(),
        refused
    );
    // Go fills one map from every key it matches to the field.
    assert_eq!(
        dup(r#"{"sysctl":{"net.a":"1"},"SYSCTL":{"net.a":"2"}}"#).unwrap_err(),
        refused
    );
    assert_eq!(
        dup(r#"{"sysctl":["x"]}"#).unwrap_err(),
        "json: cannot unmarshal array into Go struct field sysctlCheck.sysctl of type map[main.sysctlKey]string"
    );
    assert_eq!(
        dup(r#"{"sysctl":{"net.a":1}}"#).unwrap_err(),
        "json: cannot unmarshal number into Go struct field sysctlCheck.sysctl of type string"
    );
}

fn plan(stdin: &str) -> Result<Plan, String> {
    Plan::new(&parse(stdin, "").unwrap(), "eth0").map_err(|e| e.to_string())
}

#[test]
fn plan_validates_every_value() {
    let p = plan(
        r#"{"name":"n","mac":"02-00-00-00-00-0A","mtu":1400,"txQLen":0,"allmulti":false,
            "sysctl":{"net.ipv4.conf.IFNAME.arp_notify":"1","net.core.somaxconn":"512"}}"#,
    )
    .unwrap();
    assert_eq!(p.mac, Some(vec![2, 0, 0, 0, 0, 10]));
    assert_eq!(
        (p.mtu, p.txqlen, p.allmulti),
        (Some(1400), Some(0), Some(false))
    );
    assert_eq!(
        p.sysctls,
        [
            (
                "/proc/sys/net/core/somaxconn".to_string(),
                "512".to_string()
            ),
            (
                "/proc/sys/net/ipv4/conf/eth0/arp_notify".to_string(),
                "1".to_string()
            ),
        ]
    );
    let cases = [
        (
            r#"{"name":"n","mac":"zz"}"#,
            "invalid args zz for MAC addr: address zz: invalid MAC address",
        ),
        (
            r#"{"name":"n","mtu":-1}"#,
            "invalid MTU -1: it must be a positive number",
        ),
        (
            r#"{"name":"n","txQLen":-1}"#,
            "invalid txQLen -1: it must be between 0 and 4294967295",
        ),
        (
            r#"{"name":"n","txQLen":4294967296}"#,
            "invalid txQLen 4294967296: it must be between 0 and 4294967295",
        ),
        (
            r#"{"name":"n","sysctl":{"kernel.hostname":"x"}}"#,
            r#"invalid net sysctl key: "kernel/hostname""#,
        ),
    ];
    for (stdin, want) in cases {
        assert_eq!(plan(stdin).unwrap_err(), want, "{stdin}");
    }
}

#[test]
fn link_limits_are_checked_before_changes() {
    let link = cni_net::Link {
        index: 2,
        name: "eth0".into(),
        kind: cni_net::Kind::Veth,
        mac: vec![2, 0, 0, 0, 0, 1],
        mtu: 1500,
        up: true,
        oper_state: cni_net::OperState::Up,
        master: None,
        link: None,
        link_netnsid: None,
        promisc: false,
        promiscuity: 0,
        alias: None,
        allmulti: false,
        txqlen: 1000,
        min_mtu: Some(68),
        max_mtu: Some(65535),
    };
    let check = |stdin: &str| {
        plan(stdin)
            .unwrap()
            .check_link(&link)
            .map_err(|e| e.to_string())
    };
    check(r#"{"name":"n","mac":"02:00:00:00:00:02","mtu":9000}"#).unwrap();
    assert_eq!(
        check(r#"{"name":"n","mac":"02:00:00:00:00:01:02:03"}"#).unwrap_err(),
        "invalid MAC address 02:00:00:00:00:01:02:03 for eth0: it has 8 bytes, the device takes 6"
    );
    assert_eq!(
        check(r#"{"name":"n","mtu":65536}"#).unwrap_err(),
        "invalid MTU 65536 for eth0: the device takes 68 to 65535"
    );
    assert_eq!(
        check(r#"{"name":"n","mtu":67}"#).unwrap_err(),
        "invalid MTU 67 for eth0: the device takes 68 to 65535"
    );
}
