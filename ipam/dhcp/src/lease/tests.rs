//! The timers and the result of an ACK; the thread is tested against a
//! real server (tests/dnsmasq.rs).

use proptest::prelude::*;

use super::*;
use crate::packet::{BOOTREPLY, kind};

fn ack(options: &[(u8, &[u8])]) -> Bound {
    let mut m = Message::request(kind::ACK, 1, [2, 0, 0, 0, 0, 1]);
    m.op = BOOTREPLY;
    m.yiaddr = "10.240.3.7".parse().unwrap();
    for (c, v) in options {
        m.set(*c, v);
    }
    Bound {
        ack: m,
        server_mac: [2, 0, 0, 0, 0, 2],
        acked_at: SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000),
    }
}

fn secs(b: &Bound, t: SystemTime) -> u64 {
    t.duration_since(b.acked_at).unwrap().as_secs()
}

const MASK: (u8, &[u8]) = (opt::SUBNET_MASK, &[255, 255, 255, 0]);
const ROUTER: (u8, &[u8]) = (opt::ROUTER, &[10, 240, 3, 1, 10, 240, 3, 2]);

#[test]
fn timers_come_from_the_ack_or_the_rfcs_defaults() {
    let b = ack(&[(opt::LEASE_TIME, &120u32.to_be_bytes())]);
    let t = b.times();
    assert_eq!(
        (secs(&b, t.renew), secs(&b, t.rebind), secs(&b, t.expiry)),
        (60, 102, 120)
    );
    let b = ack(&[
        (opt::LEASE_TIME, &120u32.to_be_bytes()),
        (opt::RENEWAL_TIME, &10u32.to_be_bytes()),
        (opt::REBINDING_TIME, &30u32.to_be_bytes()),
    ]);
    let t = b.times();
    assert_eq!(
        (secs(&b, t.renew), secs(&b, t.rebind), secs(&b, t.expiry)),
        (10, 30, 120)
    );
    // T2 beyond the lease, T1 beyond T2: ignored.
    let b = ack(&[
        (opt::LEASE_TIME, &100u32.to_be_bytes()),
        (opt::RENEWAL_TIME, &90u32.to_be_bytes()),
        (opt::REBINDING_TIME, &200u32.to_be_bytes()),
    ]);
    let t = b.times();
    assert_eq!((secs(&b, t.renew), secs(&b, t.rebind)), (50, 85));
    // No lease time: an hour.
    let b = ack(&[]);
    assert_eq!(secs(&b, b.times().expiry), 3600);
}

proptest! {
    #[test]
    fn timers_are_ordered(lease in any::<u32>(), t1 in prop::option::of(any::<u32>()), t2 in prop::option::of(any::<u32>())) {
        let (l, a, b) = (lease.to_be_bytes(), t1.unwrap_or(0).to_be_bytes(), t2.unwrap_or(0).to_be_bytes());
        let mut o: Vec<(u8, &[u8])> = vec![(opt::LEASE_TIME, &l)];
        if t1.is_some() { o.push((opt::RENEWAL_TIME, &a)); }
        if t2.is_some() { o.push((opt::REBINDING_TIME, &b)); }
        let bound = ack(&o);
        let t = bound.times();
        prop_assert!(bound.acked_at <= t.renew && t.renew <= t.rebind && t.rebind <= t.expiry);
    }
}

fn json(b: &Bound, priority: i64) -> serde_json::Value {
    serde_json::to_value(b.result(priority).unwrap()).unwrap()
}

#[test]
fn the_result_has_the_address_the_first_router_and_a_default_route() {
    let b = ack(&[MASK, ROUTER]);
    assert_eq!(
        json(&b, 0),
        serde_json::json!({
            "cniVersion": skel::version::CURRENT,
            "ips": [{"address": "10.240.3.7/24", "gateway": "10.240.3.1"}],
            "routes": [{"dst": "0.0.0.0/0", "gw": "10.240.3.1"}]
        })
    );
    // Without a router: no gateway, no route.
    let r = json(&ack(&[MASK]), 0);
    assert_eq!(r["ips"][0].get("gateway"), None);
    assert_eq!(r.get("routes"), None);
}

#[test]
fn classless_routes_replace_router_and_static_routes() {
    let classless: &[u8] = &[16, 10, 99, 10, 240, 3, 9, 24, 10, 240, 4, 0, 0, 0, 0];
    let statics: &[u8] = &[10, 7, 0, 0, 10, 240, 3, 1];
    let b = ack(&[
        MASK,
        ROUTER,
        (opt::CLASSLESS_ROUTE, classless),
        (opt::STATIC_ROUTE, statics),
    ]);
    assert_eq!(
        json(&b, 100)["routes"],
        serde_json::json!([
            {"dst": "10.99.0.0/16", "gw": "10.240.3.9", "priority": 100},
            {"dst": "10.240.4.0/24", "gw": "0.0.0.0", "priority": 100, "scope": 253}
        ])
    );
    // A malformed option 121 is ignored: option 33 and the router count.
    // The destination keeps its host bits, as Go's IPNet prints it.
    let b = ack(&[
        MASK,
        ROUTER,
        (opt::CLASSLESS_ROUTE, &[40, 1]),
        (opt::STATIC_ROUTE, statics),
    ]);
    assert_eq!(
        json(&b, 0)["routes"],
        serde_json::json!([
            {"dst": "10.7.0.0/8", "gw": "10.240.3.1"},
            {"dst": "0.0.0.0/0", "gw": "10.240.3.1"}
        ])
    );
}

#[test]
fn no_mask_is_the_references_error() {
    assert_eq!(
        ack(&[ROUTER]).result(0).unwrap_err().to_string(),
        "DHCP option Subnet Mask not found in DHCPACK"
    );
}
