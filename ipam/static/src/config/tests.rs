use super::*;

fn conf(version: &str, extra: &str) -> String {
    format!(r#"{{"cniVersion":"{version}","name":"n","ipam":{{"type":"static"{extra}}}}}"#)
}

fn load(stdin: &str, args: &str) -> Result<Config, String> {
    Config::load(stdin.as_bytes(), args).map_err(|e| {
        assert_eq!(e.code, 999, "{e:?}");
        e.msg
    })
}

/// `(address, gateway)` of each result address.
fn addrs(c: &Config) -> Vec<(String, Option<String>)> {
    c.addresses
        .iter()
        .map(|a| {
            (
                format!("{}/{}", a.ip, a.prefix),
                a.gateway.map(|g| g.to_string()),
            )
        })
        .collect()
}

fn pairs(list: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
    list.iter()
        .map(|(a, g)| (a.to_string(), g.map(str::to_string)))
        .collect()
}

#[test]
fn go_cidr_rules() {
    let ok = [
        ("10.1.0.5/24", "10.1.0.5/24"),
        ("10.1.0.5/024", "10.1.0.5/24"),
        ("10.1.0.5/0", "10.1.0.5/0"),
        ("fd40::6/64", "fd40::6/64"),
        ("FD40:0::6/128", "fd40::6/128"),
        ("::ffff:10.1.0.5/120", "10.1.0.5/24"),
        ("::ffff:10.1.0.5/64", "10.1.0.5/0"),
    ];
    for (s, want) in ok {
        let a = parse_cidr(s).unwrap_or_else(|| panic!("{s}"));
        assert_eq!(format!("{}/{}", a.ip, a.prefix), want, "{s}");
    }
    for bad in [
        "10.1.0.5",
        "10.1.0.5/",
        "10.1.0.5/33",
        "10.1.0.5/-1",
        "10.1.0.5/+8",
        "10.1.0.5/ 8",
        "010.1.0.5/8",
        "fd40::6/129",
        "fe80::1%eth0/64",
        "10.1.0.5/24/1",
        "x/8",
        "",
    ] {
        assert!(parse_cidr(bad).is_none(), "{bad}");
    }
}

#[test]
fn addresses_routes_and_dns_from_the_config() {
    let c = load(
        &conf(
            "1.0.0",
            r#","addresses":[{"address":"10.240.0.5/24","gateway":"10.240.0.1"},{"address":"fd40::5/64"}],
               "routes":[{"dst":"0.0.0.0/0","gw":"10.240.0.1"}],"dns":{"nameservers":["10.240.0.53"],"search":["x"]}"#,
        ),
        "",
    )
    .unwrap();
    assert_eq!(
        addrs(&c),
        pairs(&[("10.240.0.5/24", Some("10.240.0.1")), ("fd40::5/64", None)])
    );
    assert_eq!(c.routes.len(), 1);
    assert_eq!(c.routes[0].gw.unwrap().to_string(), "10.240.0.1");
    assert_eq!(c.dns.nameservers, ["10.240.0.53"]);
    assert_eq!(c.cni_version, "1.0.0");
}

#[test]
fn keys_match_case_insensitively_as_in_go() {
    let c = load(
        r#"{"cniVersion":"1.0.0","name":"n","IPAM":{"Addresses":[{"ADDRESS":"10.240.0.5/24","Gateway":"10.240.0.1"}]},
            "RuntimeConfig":{"IPs":[]}}"#,
        "",
    )
    .unwrap();
    assert_eq!(addrs(&c), pairs(&[("10.240.0.5/24", Some("10.240.0.1"))]));
}

#[test]
fn no_address_is_not_an_error() {
    assert!(load(&conf("1.0.0", ""), "").unwrap().addresses.is_empty());
}

/// `(top-level keys, CNI_ARGS, expected addresses)`.
type Case<'a> = (&'a str, &'a str, &'a [(&'a str, Option<&'a str>)]);

/// Precedence: config < CNI_ARGS IP= (appended) < args.cni.ips <
/// runtimeConfig.ips (each replacing everything).
#[test]
fn precedence() {
    let base = r#","addresses":[{"address":"10.240.0.5/24","gateway":"10.240.0.254"}]"#;
    let cases: &[Case] = &[
        ("", "", &[("10.240.0.5/24", Some("10.240.0.254"))]),
        (
            "",
            "IP=10.240.1.5/24, 10.240.0.9/16;GATEWAY=10.240.0.1",
            &[
                ("10.240.0.5/24", Some("10.240.0.254")),
                ("10.240.1.5/24", None),
                ("10.240.0.9/16", Some("10.240.0.1")),
            ],
        ),
        (
            "",
            "GATEWAY=10.240.0.1",
            &[("10.240.0.5/24", Some("10.240.0.254"))],
        ),
        (
            "",
            "IP=fd40::9/64;GATEWAY=10.240.0.1,fd40::1",
            &[
                ("10.240.0.5/24", Some("10.240.0.254")),
                ("fd40::9/64", Some("fd40::1")),
            ],
        ),
        (
            r#","args":{"cni":{"ips":["10.240.2.5/24"]}}"#,
            "IP=10.240.1.5/24",
            &[("10.240.2.5/24", None)],
        ),
        (
            r#","args":{"cni":{"ips":["10.240.2.5/24"]}},"runtimeConfig":{"ips":["10.240.3.5/24","fd40::3/64"]}"#,
            "IP=10.240.1.5/24",
            &[("10.240.3.5/24", None), ("fd40::3/64", None)],
        ),
        (
            r#","args":{"cni":{"ips":[]}},"runtimeConfig":{"ips":[]}"#,
            "",
            &[("10.240.0.5/24", Some("10.240.0.254"))],
        ),
    ];
    for (top, args, want) in cases {
        let stdin =
            format!(r#"{{"cniVersion":"1.0.0","name":"n","ipam":{{"type":"static"{base}}}{top}}}"#);
        let c = load(&stdin, args).unwrap_or_else(|e| panic!("{top} {args}: {e}"));
        assert_eq!(addrs(&c), pairs(want), "{top} {args}");
    }
}

#[test]
fn every_error_of_the_reference() {
    let addr = |a: &str| conf("1.0.0", &format!(r#","addresses":[{{"address":"{a}"}}]"#));
    let cases: Vec<(String, &str, &str)> = vec![
        (
            r#"{"cniVersion":"1.0.0","name":"n"}"#.into(),
            "",
            "IPAM config missing 'ipam' key",
        ),
        (
            addr("10.240.0.5"),
            "",
            "the 'address' field is expected to be in CIDR notation, got: '10.240.0.5'",
        ),
        (
            conf("1.0.0", ""),
            "IP=10.240.0.5",
            "the 'ip' field is expected to be in CIDR notation, got: '10.240.0.5'",
        ),
        (
            conf("1.0.0", ""),
            "GATEWAY=1.2.3.4, x ",
            "invalid gateway address:  x ",
        ),
        (
            conf("1.0.0", "").replace("}}", r#"},"args":{"cni":{"ips":["bad"]}}}"#),
            "",
            "an entry in the 'ips' field is NOT in CIDR notation, got: 'bad'",
        ),
        (
            conf("1.0.0", "").replace("}}", r#"},"runtimeConfig":{"ips":["10.240.0.1/8","x"]}}"#),
            "",
            "an entry in the 'ips' field is NOT in CIDR notation, got: 'x'",
        ),
        (
            conf(
                "0.2.0",
                r#","addresses":[{"address":"10.240.0.5/24"},{"address":"10.240.0.6/24"}]"#,
            ),
            "",
            "CNI version 0.2.0 does not support more than 1 address per family",
        ),
        (
            conf("0.1.0", "").replace(
                "}}",
                r#"},"runtimeConfig":{"ips":["fd40::1/64","fd40::2/64"]}}"#,
            ),
            "",
            "CNI version 0.1.0 does not support more than 1 address per family",
        ),
        (
            conf(
                "1.0.0",
                r#","addresses":[{"address":"10.240.0.5/24","gateway":"bad"}]"#,
            ),
            "",
            "invalid IP address: bad",
        ),
        (
            conf("1.0.0", r#","routes":[{"dst":"x"}]"#),
            "",
            "invalid CIDR address: x",
        ),
        (
            conf("1.0.0", ""),
            "IP=1.2.3.4/8;FOO=1",
            r#"ARGS: unknown args ["FOO=1"]"#,
        ),
        (
            conf("1.0.0", r#","addresses":[{"address":5}]"#),
            "",
            "json: cannot unmarshal number into Go struct field Address.ipam.addresses.address of type string",
        ),
        (
            conf("1.0.0", r#","addresses":{}"#),
            "",
            "json: cannot unmarshal object into Go struct field IPAMConfig.ipam.addresses of type []main.Address",
        ),
        (
            r#"{"cniVersion":"1.0.0","name":"n","ipam":"x"}"#.into(),
            "",
            "json: cannot unmarshal string into Go struct field Net.ipam of type main.IPAMConfig",
        ),
        (
            r#"{"cniVersion":"1.0.0","name":"n","ipam":{},"runtimeConfig":{"ips":"x"}}"#.into(),
            "",
            "json: cannot unmarshal string into Go struct field .runtimeConfig.ips of type []string",
        ),
        (
            r#"{"cniVersion":"1.0.0","name":"n","ipam":{},"args":{"cni":{"ips":[1]}}}"#.into(),
            "",
            "json: cannot unmarshal number into Go struct field IPAMArgs.args.cni.ips of type string",
        ),
    ];
    for (stdin, args, want) in cases {
        assert_eq!(load(&stdin, args).unwrap_err(), want, "{stdin} {args}");
    }
}

/// A bad `ipam.addresses` entry is parsed only when nothing replaced it,
/// as in the reference.
#[test]
fn replaced_config_addresses_are_not_parsed() {
    let stdin = conf("1.0.0", r#","addresses":[{"address":"bad"}]"#)
        .replace("}}", r#"},"runtimeConfig":{"ips":["10.240.0.5/24"]}}"#);
    let c = load(&stdin, "").unwrap();
    assert_eq!(addrs(&c), pairs(&[("10.240.0.5/24", None)]));
}

#[test]
fn one_address_per_family_is_fine_below_0_3_0() {
    let c = load(
        &conf(
            "0.2.0",
            r#","addresses":[{"address":"10.240.0.5/24"},{"address":"fd40::5/64"}]"#,
        ),
        "",
    )
    .unwrap();
    assert_eq!(c.addresses.len(), 2);
}
