//! Every conversion of reference §2.3, round trips and error cases.

use super::*;
use serde_json::json;

fn parse(v: serde_json::Value) -> CniResult {
    CniResult::parse(&v, "").unwrap()
}

fn conv(v: serde_json::Value, to: &str) -> serde_json::Value {
    parse(v).convert(to).unwrap().to_value()
}

/// The §2.3b lease in its 1.1.0 shape.
fn full_1x() -> serde_json::Value {
    json!({
        "cniVersion": "1.1.0",
        "interfaces": [
            {"mac": "0a:78:fb:01:04:c6", "name": "cni0"},
            {"mac": "fe:9f:af:ae:a9:f8", "name": "veth89b51f06", "mtu": 1400},
            {"mac": "3a:bf:86:bb:81:8b", "name": "eth0", "sandbox": "/var/run/netns/x",
             "socketPath": "/s", "pciID": "0000:00:01.0"}
        ],
        "ips": [
            {"address": "10.22.0.2/24", "gateway": "10.22.0.1", "interface": 2},
            {"address": "fd22::2/64", "gateway": "fd22::1", "interface": 2}
        ],
        "routes": [{"dst": "0.0.0.0/0"}, {"dst": "::/0", "mtu": 1280, "priority": 5, "table": 100, "scope": 0}],
        "dns": {"nameservers": ["10.22.0.53"]}
    })
}

#[test]
fn same_family_relabels_only() {
    assert_eq!(conv(full_1x(), "1.0.0")["cniVersion"], "1.0.0");
    let mut expect = full_1x();
    expect["cniVersion"] = json!("1.0.0");
    assert_eq!(
        conv(full_1x(), "1.0.0"),
        expect,
        "1.1.0 -> 1.0.0 strips nothing"
    );
    let v04 =
        json!({"cniVersion":"0.3.0","ips":[{"version":"4","address":"10.1.0.2/16"}],"dns":{}});
    assert_eq!(conv(v04.clone(), "0.4.0")["cniVersion"], "0.4.0");
    assert_eq!(
        conv(v04, "0.3.1")["ips"],
        json!([{"version":"4","address":"10.1.0.2/16"}])
    );
    let v02 = json!({"cniVersion":"0.1.0","ip4":{"ip":"10.1.0.2/16"},"dns":{}});
    assert_eq!(
        conv(v02, "0.2.0"),
        json!({"cniVersion":"0.2.0","ip4":{"ip":"10.1.0.2/16"},"dns":{}})
    );
}

#[test]
fn v1_to_v04_adds_version_and_drops_11_interface_fields() {
    let out = conv(full_1x(), "0.4.0");
    assert_eq!(
        out,
        json!({
            "cniVersion": "0.4.0",
            "interfaces": [
                {"name": "cni0", "mac": "0a:78:fb:01:04:c6"},
                {"name": "veth89b51f06", "mac": "fe:9f:af:ae:a9:f8"},
                {"name": "eth0", "mac": "3a:bf:86:bb:81:8b", "sandbox": "/var/run/netns/x"}
            ],
            "ips": [
                {"version": "4", "interface": 2, "address": "10.22.0.2/24", "gateway": "10.22.0.1"},
                {"version": "6", "interface": 2, "address": "fd22::2/64", "gateway": "fd22::1"}
            ],
            "routes": [{"dst": "0.0.0.0/0"}, {"dst": "::/0", "mtu": 1280, "priority": 5, "table": 100, "scope": 0}],
            "dns": {"nameservers": ["10.22.0.53"]}
        })
    );
}

#[test]
fn v04_to_v1_drops_version_keeps_everything_else() {
    let v04 = conv(full_1x(), "0.3.1");
    let back = conv(v04, "1.1.0");
    let mut expect = full_1x();
    // What 0.x cannot carry is lost on the way.
    expect["interfaces"][1]
        .as_object_mut()
        .unwrap()
        .remove("mtu");
    for k in ["socketPath", "pciID"] {
        expect["interfaces"][2].as_object_mut().unwrap().remove(k);
    }
    assert_eq!(back, expect);
}

#[test]
fn v04_to_v02_selects_by_version_field_and_splits_routes() {
    let v04 = json!({
        "cniVersion": "0.4.0",
        "interfaces": [{"name": "eth0"}],
        "ips": [
            {"version": "4", "interface": 0, "address": "10.1.0.5/16", "gateway": "10.1.0.1"},
            {"version": "4", "address": "10.2.0.5/16"},
            {"version": "6", "address": "fd40::5/64"}
        ],
        "routes": [
            {"dst": "0.0.0.0/0", "gw": "10.1.0.1", "mtu": 1400},
            {"dst": "::/0"},
            {"dst": "192.168.0.0/16"}
        ],
        "dns": {"domain": "x"}
    });
    assert_eq!(
        conv(v04, "0.2.0"),
        json!({
            "cniVersion": "0.2.0",
            "ip4": {"ip": "10.1.0.5/16", "gateway": "10.1.0.1",
                    "routes": [{"dst": "0.0.0.0/0", "gw": "10.1.0.1"}, {"dst": "192.168.0.0/16"}]},
            "ip6": {"ip": "fd40::5/64", "routes": [{"dst": "::/0"}]},
            "dns": {"domain": "x"}
        })
    );
}

#[test]
fn v04_to_v02_drops_routes_of_a_family_without_ip() {
    let v04 = json!({"cniVersion":"0.3.1","ips":[{"version":"4","address":"10.1.0.5/16"}],
                     "routes":[{"dst":"::/0"},{"dst":"0.0.0.0/0"}]});
    assert_eq!(
        conv(v04, "0.1.0"),
        json!({"cniVersion":"0.1.0","ip4":{"ip":"10.1.0.5/16","routes":[{"dst":"0.0.0.0/0"}]},"dns":{}})
    );
}

#[test]
fn version_field_not_address_decides() {
    // A mislabelled entry is placed by its label, as the reference does.
    let v04 = json!({"cniVersion":"0.4.0","ips":[{"version":"6","address":"10.1.0.5/16"}]});
    assert_eq!(conv(v04, "0.2.0")["ip6"]["ip"], "10.1.0.5/16");
}

#[test]
fn no_ip_cannot_convert_to_v02() {
    for v in [
        json!({"cniVersion":"1.0.0","interfaces":[{"name":"eth0"}]}),
        json!({"cniVersion":"0.4.0","ips":[{"version":"","address":"10.1.0.5/16"}]}),
    ] {
        let e = parse(v).convert("0.2.0").unwrap_err();
        assert_eq!(e.msg, "cannot convert: no valid IP addresses");
        assert_eq!(e.code, crate::error::code::INTERNAL);
    }
}

#[test]
fn v02_to_v04_and_v1() {
    let v02 = json!({"cniVersion":"0.2.0",
        "ip4":{"ip":"10.22.0.2/24","gateway":"10.22.0.1","routes":[{"dst":"0.0.0.0/0"}]},
        "ip6":{"ip":"fd22::2/64","gateway":"fd22::1","routes":[{"dst":"::/0","gw":"fd22::1"}]},
        "dns":{}});
    assert_eq!(
        conv(v02.clone(), "0.4.0"),
        json!({"cniVersion":"0.4.0",
            "ips":[{"version":"4","address":"10.22.0.2/24","gateway":"10.22.0.1"},
                   {"version":"6","address":"fd22::2/64","gateway":"fd22::1"}],
            "routes":[{"dst":"0.0.0.0/0"},{"dst":"::/0","gw":"fd22::1"}],
            "dns":{}})
    );
    assert_eq!(
        conv(v02, "1.0.0"),
        json!({"cniVersion":"1.0.0",
            "ips":[{"address":"10.22.0.2/24","gateway":"10.22.0.1"},
                   {"address":"fd22::2/64","gateway":"fd22::1"}],
            "routes":[{"dst":"0.0.0.0/0"},{"dst":"::/0","gw":"fd22::1"}]})
    );
}

#[test]
fn v1_to_v02_goes_through_v04() {
    assert_eq!(
        conv(full_1x(), "0.2.0"),
        json!({"cniVersion":"0.2.0",
            "ip4":{"ip":"10.22.0.2/24","gateway":"10.22.0.1","routes":[{"dst":"0.0.0.0/0"}]},
            "ip6":{"ip":"fd22::2/64","gateway":"fd22::1","routes":[{"dst":"::/0"}]},
            "dns":{"nameservers":["10.22.0.53"]}})
    );
}

#[test]
fn round_trips_keep_addresses() {
    for via in [
        "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0",
    ] {
        let r = parse(full_1x())
            .convert(via)
            .unwrap()
            .convert("1.1.0")
            .unwrap()
            .into_v1()
            .unwrap();
        let addrs: Vec<String> = r.ips.iter().map(|i| i.address.to_string()).collect();
        assert_eq!(addrs, ["10.22.0.2/24", "fd22::2/64"], "via {via}");
        assert_eq!(r.cni_version, "1.1.0");
    }
}

#[test]
fn empty_target_means_010_and_unknown_is_refused() {
    assert_eq!(parse(full_1x()).convert("").unwrap().version(), "0.1.0");
    assert_eq!(
        parse(full_1x()).convert("2.0.0").unwrap_err().msg,
        "unsupported CNI result version \"2.0.0\""
    );
    assert_eq!(
        CniResult::parse(&json!({"cniVersion":"0.5.0"}), "")
            .unwrap_err()
            .msg,
        "unsupported CNI result version \"0.5.0\""
    );
}

#[test]
fn missing_label_takes_default() {
    let r = CniResult::parse(&json!({"ips":[{"address":"10.1.0.2/16"}]}), "1.0.0").unwrap();
    assert_eq!(r.version(), "1.0.0");
    let r = CniResult::parse(&json!({"ip4":{"ip":"10.1.0.2/16"}}), "").unwrap();
    assert_eq!(r.version(), "0.1.0");
}

#[test]
fn strict_address_parsing() {
    for bad in [
        "10.1.0.2",
        "10.1.0.2/33",
        "fd40::1/129",
        "x/24",
        "10.1.0.2/",
        "10.1.0.2/+4",
    ] {
        let v = json!({"cniVersion":"1.0.0","ips":[{"address": bad}]});
        assert!(CniResult::parse(&v, "").is_err(), "{bad}");
    }
    let v = json!({"cniVersion":"1.0.0","ips":[{"address":"10.1.0.2/24","gateway":""}]});
    assert!(
        CniResult::parse(&v, "").unwrap().into_v1().unwrap().ips[0]
            .gateway
            .is_none()
    );
}

#[test]
fn print_shapes_match_reference() {
    let r = parse(full_1x()).convert("1.1.0").unwrap();
    let text = r.to_json_pretty();
    assert!(
        text.starts_with("{\n    \"cniVersion\": \"1.1.0\",\n    \"dns\": {"),
        "{text}"
    );
    assert!(!text.ends_with('\n'));
    // 1.x drops an empty dns; 0.x always prints it, in struct order.
    let v = json!({"cniVersion":"1.0.0","ips":[{"address":"10.1.0.2/16","interface":0}]});
    assert_eq!(
        parse(v.clone()).to_json_pretty(),
        "{\n    \"cniVersion\": \"1.0.0\",\n    \"ips\": [\n        {\n            \"address\": \"10.1.0.2/16\",\n            \"interface\": 0\n        }\n    ]\n}"
    );
    assert_eq!(
        parse(v).convert("0.3.1").unwrap().to_json_pretty(),
        "{\n    \"cniVersion\": \"0.3.1\",\n    \"ips\": [\n        {\n            \"version\": \"4\",\n            \"interface\": 0,\n            \"address\": \"10.1.0.2/16\"\n        }\n    ],\n    \"dns\": {}\n}"
    );
}

#[test]
fn ipv6_is_printed_in_rfc5952_form() {
    let v = json!({"cniVersion":"1.0.0","ips":[{"address":"FD40:0:0:0::0001/64","gateway":"fd40:0::1"}]});
    let out = parse(v).to_value();
    assert_eq!(out["ips"][0]["address"], "fd40::1/64");
    assert_eq!(out["ips"][0]["gateway"], "fd40::1");
}

/// Go decodes a `prevResult` or an IPAM result with its usual key folding:
/// `IPs`, `Address` and `Interfaces` are the keys of `ips`, `address` and
/// `interfaces`.
#[test]
fn result_keys_match_case_insensitively_as_go() {
    let go_cased = json!({
        "CNIVersion": "1.0.0",
        "Interfaces": [{"Name": "eth0", "MAC": "3a:bf:86:bb:81:8b", "Sandbox": "/var/run/netns/x"}],
        "IPs": [{"Address": "10.22.0.2/24", "Gateway": "10.22.0.1", "Interface": 0}],
        "Routes": [{"Dst": "0.0.0.0/0"}],
        "DNS": {"Nameservers": ["10.22.0.53"]}
    });
    let want = json!({
        "cniVersion": "1.0.0",
        "interfaces": [{"name": "eth0", "mac": "3a:bf:86:bb:81:8b", "sandbox": "/var/run/netns/x"}],
        "ips": [{"address": "10.22.0.2/24", "gateway": "10.22.0.1", "interface": 0}],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dns": {"nameservers": ["10.22.0.53"]}
    });
    assert_eq!(
        CniResult::parse(&go_cased, "1.0.0").unwrap().to_value(),
        parse(want.clone()).to_value()
    );
}
