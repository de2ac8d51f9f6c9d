//! Golden tests: byte streams captured between Debian's v1.1.1 `dhcp`
//! plugin and daemon (a unix-socket tap in between), in
//! `testdata/gob/<call>.{c2s,s2c}`.

use std::net::IpAddr;

use proptest::prelude::*;

use super::*;
use crate::gob::{Decoder, Encoder};

const CONNECT: &[u8] = b"CONNECT /_goRPC_ HTTP/1.0\n\n";
const CONNECTED: &[u8] = b"HTTP/1.0 200 Connected to Go RPC\n\n";

fn golden(name: &str) -> Vec<u8> {
    let path = format!("{}/testdata/gob/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The values of a stream after its HTTP line.
fn values(stream: &[u8], http: &[u8]) -> Vec<(i64, Value)> {
    assert!(
        stream.starts_with(http),
        "{:?}",
        String::from_utf8_lossy(stream)
    );
    let mut r = &stream[http.len()..];
    let mut dec = Decoder::new();
    let mut out = Vec::new();
    while !r.is_empty() {
        out.push(dec.read(&mut r).unwrap());
    }
    out
}

fn stdin_of_capture() -> Vec<u8> {
    br#"{"cniVersion":"1.0.0","name":"dnet","type":"macvlan","ipam":{"type":"dhcp","daemonSocketPath":"/tmp/lab/tap.sock"}}
"#
    .to_vec()
}

fn args_of_capture() -> CmdArgs {
    CmdArgs {
        container_id: "ctrA".into(),
        netns: "/run/netns/cnirslabc1".into(),
        ifname: "eth0".into(),
        args: "IgnoreUnknown=1;K8S_POD_NAME=p1".into(),
        path: "/usr/lib/cni".into(),
        stdin_data: stdin_of_capture(),
    }
}

#[test]
fn the_go_plugins_request_decodes() {
    let v = values(&golden("allocate.c2s"), CONNECT);
    assert_eq!(v.len(), 2);
    assert_eq!(
        Request::from_value(&v[0].1),
        Request {
            method: ALLOCATE.into(),
            seq: 0
        }
    );
    assert_eq!(CmdArgs::from_value(&v[1].1), args_of_capture());
    let v = values(&golden("release.c2s"), CONNECT);
    assert_eq!(Request::from_value(&v[0].1).method, RELEASE);
}

#[test]
fn our_request_is_byte_for_byte_the_go_plugins() {
    let types = client_types();
    let mut enc = Encoder::new();
    let mut out = CONNECT.to_vec();
    let header = Request {
        method: ALLOCATE.into(),
        seq: 0,
    };
    enc.encode(&types, HEADER, &header.to_value(), &mut out)
        .unwrap();
    enc.encode(&types, CMD_ARGS, &args_of_capture().to_value(), &mut out)
        .unwrap();
    assert_eq!(out, golden("allocate.c2s"));
}

#[test]
fn the_go_daemons_reply_decodes_to_the_result_it_printed() {
    let v = values(&golden("allocate.s2c"), CONNECTED);
    assert_eq!(v.len(), 2);
    assert_eq!(
        Response::from_value(&v[0].1),
        Response {
            method: ALLOCATE.into(),
            seq: 0,
            error: String::new()
        }
    );
    let r = result_from(&v[1].1).unwrap();
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "cniVersion": skel::version::CURRENT,
            "ips": [{"address": "10.247.1.158/24", "gateway": "10.247.1.1"}],
            "routes": [{"dst": "0.0.0.0/0", "gw": "10.247.1.1"}]
        })
    );
}

#[test]
fn an_error_reply_has_an_empty_body() {
    let v = values(&golden("allocate-error.s2c"), CONNECTED);
    assert_eq!(v.len(), 2);
    assert_eq!(
        Response::from_value(&v[0].1).error,
        r#"error looking up "eth9": Link not found"#
    );
    assert_eq!(v[1], (76, Value::Struct(vec![])));
    let v = values(&golden("release.s2c"), CONNECTED);
    assert_eq!(Response::from_value(&v[0].1).method, RELEASE);
    assert_eq!(v[1].1, Value::Struct(vec![]));
}

#[test]
fn our_empty_reply_is_byte_for_byte_the_go_daemons() {
    // Response definition and header, then the empty struct as id 76.
    let types = server_types();
    let mut enc = Encoder::new();
    let mut out = CONNECTED.to_vec();
    let header = Response {
        method: RELEASE.into(),
        seq: 0,
        error: String::new(),
    };
    enc.encode(&types, HEADER, &header.to_value(), &mut out)
        .unwrap();
    enc.encode(&types, EMPTY, &Value::strukt(vec![]), &mut out)
        .unwrap();
    assert_eq!(out, golden("release.s2c"));
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn cidr(s: &str) -> Cidr {
    Cidr(s.parse().unwrap())
}

#[test]
fn routes_keep_priority_and_scope_and_on_link_gateways() {
    let mut on_link = Route::new(cidr("10.240.9.0/24"), Some(ip("0.0.0.0")));
    on_link.scope = Some(253);
    on_link.priority = 100;
    let r = Result1 {
        cni_version: skel::version::CURRENT.into(),
        ips: vec![IpConfig {
            address: cidr("10.240.1.7/20"),
            gateway: Some(ip("10.240.0.1")),
            interface: None,
        }],
        routes: vec![
            on_link,
            Route::new(cidr("0.0.0.0/0"), Some(ip("10.240.0.1"))),
        ],
        ..Default::default()
    };
    let mut out = Vec::new();
    Encoder::new()
        .encode(&server_types(), RESULT, &result_value(&r), &mut out)
        .unwrap();
    let (_, v) = Decoder::new().read(&mut &out[..]).unwrap();
    assert_eq!(result_from(&v).unwrap(), r);
}

#[test]
fn odd_addresses_are_refused_or_canonical() {
    let net = |ip: &[u8], mask: &[u8]| {
        Value::strukt(vec![
            ("IP", Value::Bytes(ip.to_vec())),
            ("Mask", Value::Bytes(mask.to_vec())),
        ])
    };
    let mapped = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 240, 0, 5];
    assert_eq!(
        net_from(&net(&mapped, &[255, 255, 255, 0])).unwrap(),
        "10.240.0.5/24".parse::<IpNetwork>().unwrap()
    );
    let mut mask16 = [0xffu8; 16];
    mask16[15] = 0;
    assert_eq!(
        net_from(&net(&mapped, &mask16)).unwrap(),
        "10.240.0.5/24".parse::<IpNetwork>().unwrap()
    );
    assert!(net_from(&net(&[10, 0, 0, 1], &[255, 0, 255, 0])).is_err());
    assert!(net_from(&net(&[10, 0, 0], &[255, 0, 0, 0])).is_err());
    assert!(net_from(&net(&[10, 0, 0, 1], &[255, 0])).is_err());
}

fn any_net() -> impl Strategy<Value = IpNetwork> {
    prop_oneof![
        (any::<[u8; 4]>(), 0u8..=32).prop_map(|(a, p)| IpNetwork::new(IpAddr::from(a), p).unwrap()),
        (any::<[u8; 16]>(), 0u8..=128).prop_map(|(a, p)| {
            let ip = IpAddr::from(a);
            // Go prints a v4-mapped address as IPv4: keep those out.
            let ip = if ip.to_canonical().is_ipv4() {
                IpAddr::from([0xfd, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])
            } else {
                ip
            };
            IpNetwork::new(ip, p).unwrap()
        }),
    ]
}

fn any_route() -> impl Strategy<Value = Route> {
    (
        any_net(),
        prop::option::of(any::<[u8; 4]>()),
        any::<i32>(),
        prop::option::of(1i64..300),
        prop::option::of(1i64..255),
    )
        .prop_map(|(dst, gw, prio, table, scope)| {
            let mut r = Route::new(Cidr(dst), gw.map(IpAddr::from));
            r.priority = i64::from(prio);
            r.table = table;
            r.scope = scope;
            r
        })
}

proptest! {
    /// Any result our daemon sends decodes back to itself.
    #[test]
    fn results_round_trip(
        ips in prop::collection::vec((any_net(), prop::option::of(any::<[u8; 4]>()), prop::option::of(1usize..5)), 0..3),
        routes in prop::collection::vec(any_route(), 0..4),
    ) {
        let r = Result1 {
            cni_version: skel::version::CURRENT.into(),
            ips: ips.into_iter().map(|(n, gw, i)| IpConfig {
                address: Cidr(n),
                gateway: gw.map(IpAddr::from),
                interface: i,
            }).collect(),
            routes,
            ..Default::default()
        };
        let mut out = Vec::new();
        Encoder::new().encode(&server_types(), RESULT, &result_value(&r), &mut out).unwrap();
        let (_, v) = Decoder::new().read(&mut &out[..]).unwrap();
        prop_assert_eq!(result_from(&v).unwrap(), r);
    }

    /// Any invocation our plugin sends decodes back to itself.
    #[test]
    fn cmd_args_round_trip(
        cid in "[a-z0-9]{0,20}", netns in "/[a-z/]{0,30}", ifname in "[a-z0-9]{0,15}",
        args in ".{0,40}", path in "[a-z/:]{0,30}",
        stdin in prop::collection::vec(any::<u8>(), 0..300),
    ) {
        let a = CmdArgs { container_id: cid, netns, ifname, args, path, stdin_data: stdin };
        let mut out = Vec::new();
        Encoder::new().encode(&client_types(), CMD_ARGS, &a.to_value(), &mut out).unwrap();
        let (_, v) = Decoder::new().read(&mut &out[..]).unwrap();
        prop_assert_eq!(CmdArgs::from_value(&v), a);
    }
}
