use super::*;

fn raw(subnet: &str) -> RawRange {
    RawRange {
        subnet: Some(Subnet::parse(subnet).unwrap()),
        ..Default::default()
    }
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn set(subnets: &[&str]) -> RangeSet {
    RangeSet::canonicalize(&subnets.iter().map(|s| raw(s)).collect::<Vec<_>>()).unwrap()
}

#[test]
fn defaults_follow_the_reference() {
    let r = raw("10.240.0.0/29").canonicalize().unwrap();
    assert_eq!(
        (r.start, r.end, r.gateway),
        (ip("10.240.0.1"), ip("10.240.0.6"), ip("10.240.0.1"))
    );
    // IPv6 keeps the all-ones address.
    let r = raw("fd40::/125").canonicalize().unwrap();
    assert_eq!(
        (r.start, r.end, r.gateway),
        (ip("fd40::1"), ip("fd40::7"), ip("fd40::1"))
    );
    assert_eq!(r.to_string(), "fd40::1-fd40::7");
}

#[test]
fn invalid_ranges_give_the_reference_errors() {
    let err = |r: RawRange| r.canonicalize().unwrap_err();
    assert_eq!(
        err(raw("10.240.0.0/31")),
        "Network 10.240.0.0/31 too small to allocate from"
    );
    assert_eq!(
        err(raw("fd40::/127")),
        "Network fd40::/127 too small to allocate from"
    );
    assert_eq!(
        err(raw("10.240.0.1/29")),
        "Network has host bits set. For a subnet mask of length 29 the network address is 10.240.0.0"
    );
    assert_eq!(err(RawRange::default()), "IP <nil> not v4 nor v6");
    assert_eq!(
        err(RawRange {
            range_start: Some(ip("10.240.1.1")),
            ..raw("10.240.0.0/29")
        }),
        "RangeStart 10.240.1.1 not in network 10.240.0.0/29"
    );
    // A start after an explicit end is "not in network", as in Go.
    assert_eq!(
        err(RawRange {
            range_start: Some(ip("10.240.0.5")),
            range_end: Some(ip("10.240.0.3")),
            ..raw("10.240.0.0/29")
        }),
        "RangeStart 10.240.0.5 not in network 10.240.0.0/29"
    );
    assert_eq!(
        err(RawRange {
            range_end: Some(ip("10.240.1.3")),
            ..raw("10.240.0.0/29")
        }),
        "RangeEnd 10.240.1.3 not in network 10.240.0.0/29"
    );
    assert_eq!(
        err(RawRange {
            range_start: Some(ip("fd40::1")),
            ..raw("10.240.0.0/29")
        }),
        "RangeStart fd40::1 not in network 10.240.0.0/29"
    );
    assert_eq!(
        Subnet::parse("bad").unwrap_err(),
        "invalid CIDR address: bad"
    );
    assert_eq!(
        Subnet::parse("10.0.0.0/33").unwrap_err(),
        "invalid CIDR address: 10.0.0.0/33"
    );
    let mapped = Subnet::parse("::ffff:10.240.0.0/120").unwrap();
    assert_eq!(
        RawRange {
            subnet: Some(mapped),
            ..Default::default()
        }
        .canonicalize()
        .unwrap_err(),
        "IPNet IP and Mask version mismatch"
    );
}

#[test]
fn explicit_bounds_may_be_network_and_broadcast() {
    let r = RawRange {
        range_start: Some(ip("10.240.0.0")),
        range_end: Some(ip("10.240.0.7")),
        gateway: Some(ip("10.240.0.6")),
        ..raw("10.240.0.0/29")
    }
    .canonicalize()
    .unwrap();
    let got: Vec<_> = RangeSet(vec![r])
        .iter_from(None)
        .map(|(a, _)| a.to_string())
        .collect();
    assert_eq!(
        got,
        [
            "10.240.0.0",
            "10.240.0.1",
            "10.240.0.2",
            "10.240.0.3",
            "10.240.0.4",
            "10.240.0.5",
            "10.240.0.7"
        ]
    );
}

#[test]
fn range_set_errors() {
    assert_eq!(RangeSet::canonicalize(&[]).unwrap_err(), "empty range set");
    assert_eq!(
        RangeSet::canonicalize(&[raw("10.240.0.0/29"), raw("fd40::/64")]).unwrap_err(),
        "mixed address families"
    );
    assert_eq!(
        RangeSet::canonicalize(&[raw("10.240.0.0/24"), raw("10.240.0.0/25")]).unwrap_err(),
        "subnets 10.240.0.1-10.240.0.254 and 10.240.0.1-10.240.0.126 overlap"
    );
    let a = set(&["10.240.0.0/24"]);
    assert!(a.overlaps(&set(&["10.240.0.128/25"])));
    assert!(!a.overlaps(&set(&["10.240.1.0/24"])));
    assert!(!a.overlaps(&set(&["fd40::/64"])));
}

#[test]
fn membership_and_range_for() {
    let s = set(&["10.240.0.0/29", "10.240.1.0/29"]);
    assert_eq!(s.to_string(), "10.240.0.1-10.240.0.6,10.240.1.1-10.240.1.6");
    assert!(s.contains(ip("10.240.1.6")));
    assert!(
        !s.contains(ip("10.240.1.7")),
        "broadcast is outside the default range"
    );
    assert!(
        s.contains(ip("::ffff:10.240.0.2")),
        "IPv4-mapped counts as IPv4"
    );
    assert_eq!(
        s.range_for(ip("10.240.2.1")).unwrap_err(),
        "10.240.2.1 not in range set 10.240.0.1-10.240.0.6,10.240.1.1-10.240.1.6"
    );
    assert_eq!(s.capacity(), 10, "two ranges of six minus their gateways");
}

#[test]
fn iterator_round_robin_skips_gateways_and_wraps() {
    let s = set(&["10.240.0.0/29", "10.240.1.0/29"]);
    let all: Vec<String> = s.iter_from(None).map(|(a, _)| a.to_string()).collect();
    assert_eq!(
        all,
        [
            "10.240.0.2",
            "10.240.0.3",
            "10.240.0.4",
            "10.240.0.5",
            "10.240.0.6",
            "10.240.1.2",
            "10.240.1.3",
            "10.240.1.4",
            "10.240.1.5",
            "10.240.1.6"
        ]
    );
    // After the last reserved address, wrapping through the next range
    // and back to the first, ending just before the start.
    let from: Vec<(String, usize)> = s
        .iter_from(Some(ip("10.240.1.5")))
        .map(|(a, r)| (a.to_string(), r))
        .collect();
    assert_eq!(from.first().unwrap(), &("10.240.1.6".to_string(), 1));
    assert_eq!(from[1], ("10.240.0.2".to_string(), 0));
    // As in Go, the turn ends with the last reserved address itself.
    assert_eq!(from.last().unwrap().0, "10.240.1.5");
    assert_eq!(from.len(), 10, "exactly one full turn");
    // A last address outside the set restarts at the first range.
    assert_eq!(
        s.iter_from(Some(ip("10.250.0.1"))).next().unwrap().0,
        ip("10.240.0.2")
    );
}

#[test]
fn iterator_terminates_on_a_gateway_only_range() {
    let r = RawRange {
        range_start: Some(ip("10.240.0.1")),
        range_end: Some(ip("10.240.0.1")),
        ..raw("10.240.0.0/29")
    };
    let s = RangeSet::canonicalize(&[r]).unwrap();
    assert_eq!(s.iter_from(None).count(), 0);
    assert_eq!(s.capacity(), 0);
}

#[test]
fn ipv6_iteration_is_u128() {
    let s = set(&["fd40::/64"]);
    let mut it = s.iter_from(Some(ip("fd40::ffff:ffff:ffff:fffe")));
    assert_eq!(it.next().unwrap().0, ip("fd40::ffff:ffff:ffff:ffff"));
    assert_eq!(it.next().unwrap().0, ip("fd40::2"));
    assert_eq!(s.capacity(), (1u128 << 64) - 2);
}

/// Up to `cap` candidates, so that an iterator that never ends fails the
/// test instead of hanging it.
fn turn(s: &RangeSet, last: Option<&str>, cap: usize) -> Vec<String> {
    s.iter_from(last.map(ip))
        .take(cap)
        .map(|(a, _)| a.to_string())
        .collect()
}

#[test]
fn a_turn_that_starts_in_the_next_range_ends() {
    // The set: after the end of the last range the turn starts in
    // range 0. It used to wait for range 1 and the first candidate at the
    // same time, which never happens, so a full set spun forever.
    let s = set(&["10.240.10.0/30", "10.240.11.0/30"]);
    assert_eq!(
        turn(&s, Some("10.240.11.2"), 100),
        ["10.240.10.2", "10.240.11.2"]
    );
    assert_eq!(
        turn(&s, Some("10.240.10.2"), 100),
        ["10.240.11.2", "10.240.10.2"]
    );
    let s = set(&["fd40::/126", "fd40:0:0:1::/126", "fd40:0:0:2::/126"]);
    let all = turn(&s, Some("fd40:0:0:1::3"), 100);
    assert_eq!(
        all,
        [
            "fd40:0:0:2::2",
            "fd40:0:0:2::3",
            "fd40::2",
            "fd40::3",
            "fd40:0:0:1::2",
            "fd40:0:0:1::3"
        ]
    );
}

#[test]
fn every_starting_point_gives_each_address_once() {
    // A gateway outside its own range, on an address of another range:
    // only a range's own gateway is skipped.
    let gw_outside = RawRange {
        gateway: Some(ip("10.240.2.5")),
        ..raw("10.240.3.0/29")
    };
    let bounded = RawRange {
        range_start: Some(ip("10.240.4.0")),
        range_end: Some(ip("10.240.4.3")),
        gateway: Some(ip("10.240.4.3")),
        ..raw("10.240.4.0/29")
    };
    let s = RangeSet::canonicalize(&[
        raw("10.240.1.0/30"),
        raw("10.240.2.0/29"),
        gw_outside,
        bounded,
    ])
    .unwrap();
    let mut every: Vec<String> = turn(&s, None, 1000);
    every.sort();
    assert_eq!(every.len() as u128, s.capacity());
    let mut starts: Vec<&str> = vec!["10.240.9.9", "fd40::1", "10.240.3.7"];
    let owned: Vec<String> = (0..=7)
        .flat_map(|h| [1, 2, 3, 4].map(|n| format!("10.240.{n}.{h}")))
        .collect();
    starts.extend(owned.iter().map(String::as_str));
    for last in starts {
        let mut got = turn(&s, Some(last), 1000);
        if s.contains(ip(last)) && !s.range_for(ip(last)).is_ok_and(|r| r.gateway == ip(last)) {
            assert_eq!(
                got.last().map(String::as_str),
                Some(last),
                "turn ends on {last}"
            );
        }
        got.sort();
        assert_eq!(got, every, "starting after {last}");
    }
}

#[test]
fn a_range_start_on_the_broadcast_address_is_refused() {
    // The reference accepts it and then hands out 10.240.0.3, 10.240.0.4,
    // ...: addresses of other networks.
    let r = RawRange {
        range_start: Some(ip("10.240.0.3")),
        ..raw("10.240.0.0/30")
    };
    assert_eq!(
        r.canonicalize().unwrap_err(),
        "RangeStart 10.240.0.3 is after the default RangeEnd 10.240.0.2 of network 10.240.0.0/30"
    );
    // With an explicit end the broadcast address is a valid one-address range.
    let r = RawRange {
        range_start: Some(ip("10.240.0.3")),
        range_end: Some(ip("10.240.0.3")),
        ..raw("10.240.0.0/30")
    };
    let s = RangeSet::canonicalize(&[r]).unwrap();
    assert_eq!(turn(&s, None, 10), ["10.240.0.3"]);
}

#[test]
fn a_range_without_addresses_ends_the_turn() {
    // Not reachable through canonicalize, but the turn is bounded anyway.
    let mut r = raw("10.240.0.0/29").canonicalize().unwrap();
    let good = raw("10.240.1.0/30").canonicalize().unwrap();
    r.start = ip("10.240.0.5");
    r.end = ip("10.240.0.4");
    let s = RangeSet(vec![r, good]);
    assert_eq!(turn(&s, None, 10), ["10.240.1.2"]);
    assert_eq!(turn(&s, Some("10.240.1.2"), 10), ["10.240.1.2"]);
    assert_eq!(RangeSet(vec![]).iter_from(None).count(), 0);
}
