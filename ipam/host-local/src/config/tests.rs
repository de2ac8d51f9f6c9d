use super::*;

fn load(json: &str, args: &str) -> Result<IpamConfig, String> {
    IpamConfig::load(json.as_bytes(), args).map_err(|e| e.to_string())
}

fn sets(c: &IpamConfig) -> Vec<String> {
    c.ranges.iter().map(|s| s.to_string()).collect()
}

const BASE: &str = r#"{"cniVersion":"1.0.0","name":"net1","ipam":{"type":"host-local","ranges":[[{"subnet":"10.240.0.0/29"}],[{"subnet":"fd40::/125"}]]}}"#;

#[test]
fn ranges_routes_and_defaults() {
    let c = load(
        r#"{"cniVersion":"1.0.0","name":"net1","ipam":{"type":"host-local","dataDir":"/tmp/x","resolvConf":"/r",
            "ranges":[[{"subnet":"10.240.0.0/29"},{"subnet":"10.240.1.0/29","gateway":"10.240.1.6"}]],
            "routes":[{"dst":"0.0.0.0/0"},{"Dst":"fd40::/16","GW":"fd40::1"}]}}"#,
        "",
    )
    .unwrap();
    assert_eq!(sets(&c), ["10.240.0.1-10.240.0.6,10.240.1.1-10.240.1.6"]);
    assert_eq!(c.ranges[0].0[1].gateway.to_string(), "10.240.1.6");
    assert_eq!(c.data_dir, PathBuf::from("/tmp/x"));
    assert_eq!(c.resolv_conf, "/r");
    assert_eq!(c.routes.len(), 2);
    assert_eq!(c.routes[0].gw, None, "a missing gw stays missing");
    assert_eq!(c.routes[1].gw, Some("fd40::1".parse().unwrap()));
    let c = load(BASE, "").unwrap();
    assert_eq!(c.data_dir, PathBuf::from(DEFAULT_DATA_DIR));
    assert_eq!(c.name, "net1");
}

#[test]
fn legacy_range_then_runtime_ranges_are_prepended() {
    let c = load(
        r#"{"cniVersion":"1.0.0","name":"net1",
            "runtimeConfig":{"ipRanges":[[{"Subnet":"10.240.8.0/29","RangeStart":"10.240.8.3","Gateway":"10.240.8.6"}]]},
            "ipam":{"type":"host-local","subnet":"10.240.4.0/29","rangeEnd":"10.240.4.4",
                    "ranges":[[{"subnet":"fd40::/125"}]]}}"#,
        "",
    )
    .unwrap();
    assert_eq!(
        sets(&c),
        [
            "10.240.8.3-10.240.8.6",
            "10.240.4.1-10.240.4.4",
            "fd40::1-fd40::7"
        ]
    );
    assert_eq!(c.ranges[0].0[0].gateway.to_string(), "10.240.8.6");
    // A flat list (one range object per entry) is read as one set each.
    let c = load(
        r#"{"cniVersion":"1.0.0","name":"net1","runtimeConfig":{"ipRanges":[{"subnet":"10.240.8.0/29"},{"subnet":"fd40:8::/125"}]},
            "ipam":{"type":"host-local"}}"#,
        "",
    )
    .unwrap();
    assert_eq!(sets(&c), ["10.240.8.1-10.240.8.6", "fd40:8::1-fd40:8::7"]);
    // rangeStart without subnet at the top level is ignored, as in Go.
    let c = load(
        r#"{"cniVersion":"1.0.0","name":"net1","ipam":{"rangeStart":"10.1.1.1","ranges":[[{"subnet":"10.240.0.0/29"}]]}}"#,
        "",
    )
    .unwrap();
    assert_eq!(c.ranges.len(), 1);
}

#[test]
fn requested_addresses_in_order_without_duplicates() {
    let c = load(
        r#"{"cniVersion":"1.0.0","name":"net1","args":{"cni":{"ips":["fd40::5/64","10.240.0.3"]}},
            "runtimeConfig":{"ips":["10.240.0.3/29","10.240.0.4"]},
            "ipam":{"type":"host-local","ranges":[[{"subnet":"10.240.0.0/29"}],[{"subnet":"fd40::/125"}]]}}"#,
        "IgnoreUnknown=1;K8S_POD_NAME=x;IP=10.240.0.2/24",
    )
    .unwrap();
    let got: Vec<String> = c.requested.iter().map(|i| i.to_string()).collect();
    assert_eq!(got, ["10.240.0.2", "fd40::5", "10.240.0.3", "10.240.0.4"]);
}

#[test]
fn cni_args_errors_are_the_reference_ones() {
    assert_eq!(
        load(BASE, "K8S_POD_NAME=x").unwrap_err(),
        "ARGS: unknown args [\"K8S_POD_NAME=x\"]"
    );
    assert_eq!(
        load(BASE, "IP=10.240.0.2;").unwrap_err(),
        "ARGS: invalid pair \"\""
    );
    assert!(
        load(BASE, "IP=nope")
            .unwrap_err()
            .starts_with("ARGS: error parsing value of pair \"IP=nope\"")
    );
    // `ip=` is not `IP=`: ignored with IgnoreUnknown.
    assert!(
        load(BASE, "ip=10.240.0.5;IgnoreUnknown=1")
            .unwrap()
            .requested
            .is_empty()
    );
}

#[test]
fn structural_errors() {
    assert_eq!(
        load(r#"{"cniVersion":"1.0.0","name":"net1"}"#, "").unwrap_err(),
        "IPAM config missing 'ipam' key"
    );
    assert_eq!(
        load(r#"{"cniVersion":"1.0.0","name":"net1","ipam":null}"#, "").unwrap_err(),
        "IPAM config missing 'ipam' key"
    );
    assert_eq!(
        load(
            r#"{"cniVersion":"1.0.0","name":"net1","ipam":{"type":"host-local"}}"#,
            ""
        )
        .unwrap_err(),
        "no IP ranges specified"
    );
    assert_eq!(
        load(
            r#"{"cniVersion":"1.0.0","name":"net1","ipam":{"ranges":[[]]}}"#,
            ""
        )
        .unwrap_err(),
        "invalid range set 0: empty range set"
    );
    assert_eq!(
        load(r#"{"cniVersion":"1.0.0","name":"net1","ipam":{"ranges":[[{"subnet":"10.240.0.0/29"}],[{"subnet":"10.240.0.0/31"}]]}}"#, "")
            .unwrap_err(),
        "invalid range set 1: Network 10.240.0.0/31 too small to allocate from"
    );
    assert_eq!(
        load(r#"{"cniVersion":"1.0.0","name":"net1","ipam":{"ranges":[[{"subnet":"10.240.0.0/24"}],[{"subnet":"10.240.0.0/28"}]]}}"#, "")
            .unwrap_err(),
        "range set 0 overlaps with 1"
    );
    assert_eq!(
        load(
            r#"{"cniVersion":"1.0.0","name":"net1","ipam":{"ranges":[[{"subnet":"x"}]]}}"#,
            ""
        )
        .unwrap_err(),
        "invalid CIDR address: x"
    );
    assert_eq!(
        load(r#"{"cniVersion":"1.0.0","name":"net1","ipam":{"ranges":[[{"subnet":"10.240.0.0/29","gateway":"x"}]]}}"#, "")
            .unwrap_err(),
        "invalid IP address: x"
    );
    assert!(
        load(r#"{"cniVersion":"1.0.0","name":"net1","ipam":{"dataDir":5,"ranges":[[{"subnet":"10.240.0.0/29"}]]}}"#, "")
            .unwrap_err()
            .starts_with("json: cannot unmarshal number")
    );
}

#[test]
fn one_address_per_family_below_0_3_0() {
    let two_v4 = |v: &str| {
        format!(
            r#"{{"cniVersion":"{v}","name":"net1","ipam":{{"ranges":[[{{"subnet":"10.240.0.0/29"}}],[{{"subnet":"10.240.1.0/29"}}]]}}}}"#
        )
    };
    assert_eq!(
        load(&two_v4("0.2.0"), "").unwrap_err(),
        "CNI version 0.2.0 does not support more than 1 address per family"
    );
    assert!(load(&two_v4("0.3.0"), "").is_ok());
    // One of each family is fine for 0.2.0.
    assert!(load(&BASE.replace("1.0.0", "0.2.0"), "").is_ok());
}

#[test]
fn network_name_cannot_escape_data_dir() {
    for name in ["../etc", ".host-local", "a/b", ""] {
        let json = BASE.replace("\"net1\"", &format!("{name:?}"));
        assert!(load(&json, "").is_err(), "{name:?} accepted");
    }
}
