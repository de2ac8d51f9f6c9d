//! The iptables backend against the real tools, in a throwaway namespace:
//! a shared chain made between ADD's save and its restore is not flushed,
//! and (property test) the rules of generated addresses, among them IPv6
//! spellings where `inet_ntop` and Rust differ (`::10.0.0.2`, `::a00:2`),
//! once `iptables-restore` has applied them and `iptables-save` printed
//! them, pass CHECK, stay single on a repeated ADD, and go on DEL; DEL
//! planned from a table another DEL has since emptied succeeds.

use std::net::IpAddr;

use cni_firewall::iptables::{self as ipt, Family, Save};
use cni_net::IpNetwork;
use portmap::config::Config;
use portmap::iptables::{self, TOP_DNAT, dn_chain};
use proptest::prelude::*;
use serde_json::json;
use testsupport::TestNetns;

fn conf(mappings: serde_json::Value) -> Config {
    let c = json!({"cniVersion": "1.0.0", "name": "cnirs-pmsave", "type": "portmap",
        "snat": true, "runtimeConfig": {"portMappings": mappings}});
    Config::parse(c.to_string().as_bytes()).unwrap()
}

fn saved(fam: Family) -> Save {
    ipt::save(fam, "nat").unwrap()
}

/// A shared chain someone made between ADD's save and its restore (the Go
/// plugin's ADD of another container, or ours with another `dataDir`:
/// neither under our lock) is not flushed: ADD creates the chains it found
/// missing with `-N`, so the batch fails (the runtime retries the ADD)
/// and the other container keeps its rules.
#[test]
fn a_shared_chain_made_meanwhile_is_not_flushed() {
    let ns = TestNetns::new("pmsave");
    ns.enter(|| {
        let c = conf(json!([{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}]));
        let addr: IpNetwork = "10.240.61.2/24".parse().unwrap();
        let stale = saved(Family::V4);
        let mut other = ipt::Batch::new();
        other.declare("nat", TOP_DNAT).append(
            "nat",
            TOP_DNAT,
            &[
                "-p",
                "tcp",
                "--dport",
                "9999",
                "-j",
                "DNAT",
                "--to-destination",
                "10.240.61.3:80",
            ],
        );
        ipt::restore(Family::V4, &other).unwrap();
        let r = ipt::restore(Family::V4, &iptables::setup_batch(&stale, &c, &addr, "c1"));
        let now = saved(Family::V4);
        assert!(r.is_err(), "{}", now.text());
        assert!(
            now.text().contains("--to-destination 10.240.61.3:80"),
            "{}",
            now.text()
        );
        // The retried ADD reads the table again and succeeds.
        iptables::setup(&c, &addr, "c1").unwrap();
        iptables::check(&c, &addr, "c1").unwrap();
        assert!(
            saved(Family::V4)
                .text()
                .contains("--to-destination 10.240.61.3:80")
        );
    });
}

/// DEL's teardown planned from a table another DEL has since emptied
/// (ours with another dataDir, or the Go plugin's: not under our lock)
/// succeeds, with the UDP targets it read.
#[test]
fn teardown_after_another_succeeds() {
    let ns = TestNetns::new("pmsave");
    ns.enter(|| {
        let c = conf(json!([{"hostPort": 5353, "containerPort": 53, "protocol": "udp"}]));
        let addr: IpNetwork = "10.240.61.2/24".parse().unwrap();
        iptables::setup(&c, &addr, "c1").unwrap();
        let stale = saved(Family::V4);
        iptables::teardown(&stale, false, &c.name, &["c1"]).unwrap();
        let t = iptables::teardown(&stale, false, &c.name, &["c1"]).unwrap();
        assert_eq!(t.len(), 1);
        let left = saved(Family::V4);
        assert!(
            naming(&left, &dn_chain(&c.name, "c1")).is_empty(),
            "{}",
            left.text()
        );
    });
}

fn v6() -> impl Strategy<Value = IpAddr> {
    let seg = prop_oneof![Just(0u16), 1u16..16, any::<u16>()];
    prop_oneof![
        prop::array::uniform8(seg).prop_map(IpAddr::from),
        // IPv4-compatible and IPv4-mapped: `::10.0.0.2`, `::ffff:10.0.0.2`.
        (1u32..).prop_map(|v| IpAddr::from(u128::from(v).to_be_bytes())),
        any::<u32>().prop_map(|v| IpAddr::from(((0xffffu128 << 32) | u128::from(v)).to_be_bytes())),
    ]
}

fn v4() -> impl Strategy<Value = IpAddr> {
    any::<[u8; 4]>().prop_map(IpAddr::from)
}

/// Lines of `table` that name `what`.
fn naming(save: &Save, what: &str) -> Vec<String> {
    save.text()
        .lines()
        .filter(|l| l.contains(what))
        .map(str::to_string)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn our_rules_read_back_from_iptables_save(
        is_v6 in any::<bool>(),
        a4 in v4(), a6 in v6(), h4 in v4(), h6 in v6(),
        len in 8u8..=32,
        host_ip in any::<bool>(),
        snat in any::<bool>(),
        masq_all in any::<bool>(),
    ) {
        let (ip, host, len, fam) = match is_v6 {
            true => (a6, h6, len + 96, Family::V6),
            false => (a4, h4, len, Family::V4),
        };
        let addr = IpNetwork::new(ip, len).unwrap();
        let mut maps = vec![
            json!({"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}),
            json!({"hostPort": 5353, "containerPort": 53, "protocol": "udp"}),
        ];
        if host_ip {
            maps[1]["hostIP"] = json!(host.to_string());
        }
        let mut c = conf(json!(maps));
        c.snat = snat;
        c.masq_all = masq_all;
        let ns = TestNetns::new("pmsave");
        let dn = dn_chain(&c.name, "c1");
        ns.enter(|| -> Result<(), TestCaseError> {
            iptables::setup(&c, &addr, "c1").unwrap();
            let added = saved(fam);
            prop_assert_eq!(iptables::check(&c, &addr, "c1"), Ok(()), "{}", added.text());
            // A repeated ADD leaves the same rules, once.
            iptables::setup(&c, &addr, "c1").unwrap();
            let again = saved(fam);
            prop_assert_eq!(naming(&again, &dn), naming(&added, &dn));
            prop_assert_eq!(iptables::check(&c, &addr, "c1"), Ok(()), "{}", again.text());
            let udp = iptables::teardown(&again, is_v6, &c.name, &["c1"]).unwrap();
            // A v4-mapped hostIP is IPv4 (as Go's To4 says): no IPv6 rule.
            let want = usize::from(c.mappings[1].applies(is_v6));
            prop_assert_eq!(udp.len(), want);
            prop_assert!(udp.iter().all(|t| t.addr == ip));
            let deleted = saved(fam);
            prop_assert!(naming(&deleted, &dn).is_empty(), "{}", deleted.text());
            prop_assert!(iptables::check(&c, &addr, "c1").is_err());
            Ok(())
        })?;
    }
}
