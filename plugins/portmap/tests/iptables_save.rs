//! The iptables backend against the real tools, in a throwaway namespace:
//! a shared chain made between ADD's save and its restore is not flushed,
//! and (property test) the rules of generated addresses, among them IPv6
//! spellings where `inet_ntop` and Rust differ (`::10.0.0.2`, `::a00:2`),
//! once `iptables-restore` has applied them and `iptables-save` printed
//! them, pass CHECK, stay single on a repeated ADD, and go on DEL.

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
