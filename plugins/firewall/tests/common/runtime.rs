//! A runtime's default network (bridge + portmap + firewall, and tuning
//! where the runtime chains it) end to end through our `cnitool` on our binaries alone: two
//! containers that ping each other, a host port reached from outside,
//! the firewall's rules present, CHECK, DEL, nothing left (links, leases,
//! portmap and firewall rules, records).

use serde_json::json;
use testsupport::traffic::{Server, tcp_ask, tcp_ask_once};
use testsupport::{TempDir, ip_of, ping, unique_name};

use super::chain::Chain;

pub fn end_to_end(tag: &str, fixture: &str) {
    let bridge = unique_name("cnirsrt");
    let tuning = TempDir::new("tuning");
    let firewall = TempDir::new("fwrec");
    let fw_dir = firewall.to_str().to_string();
    let chain = Chain::new(
        tag,
        fixture,
        &["bridge", "host-local", "portmap", "firewall", "tuning"],
        |list| {
            for plugin in list["plugins"].as_array_mut().unwrap() {
                match plugin["type"].as_str() {
                    Some("bridge") => plugin["bridge"] = json!(bridge),
                    Some("firewall") => plugin["dataDir"] = json!(fw_dir),
                    Some("tuning") => plugin["dataDir"] = json!(tuning.to_str()),
                    _ => {}
                }
            }
        },
    );
    let caps =
        json!({"portMappings": [{"hostPort": 8086, "containerPort": 80, "protocol": "tcp"}]});
    let (a, ra) = chain.container(&caps);
    let (b, rb) = chain.container(&json!({}));
    let (ia, ib) = (ip_of(&ra, false), ip_of(&rb, false));
    assert!(ping(&a, &ib) && ping(&b, &ia), "containers of one network");
    let _s = Server::start(&a, 80, tag);
    let host_port = "10.250.0.1:8086".parse().unwrap();
    let got = tcp_ask(&chain.lab.outside, host_port).map(|a| a.tag);
    assert_eq!(got.as_deref(), Some(tag), "host port from outside");
    for ip in [&ia, &ib] {
        assert_eq!(
            chain.lab.rules_of(ip, "-").len(),
            2,
            "firewall rules of {ip}"
        );
    }

    chain.cnitool("check", &a, &caps);
    chain.cnitool("check", &b, &json!({}));
    chain.cnitool("del", &a, &caps);
    chain.cnitool("del", &b, &json!({}));
    assert!(tcp_ask_once(&chain.lab.outside, host_port).is_none());
    assert_eq!(chain.links_but(&[&bridge]), Vec::<String>::new());
    assert!(chain.leases().is_empty(), "{:?}", chain.leases());
    assert!(chain.rules().is_empty(), "{:?}", chain.rules());
    for ip in [&ia, &ib] {
        assert_eq!(chain.lab.rules_of(ip, "-"), Vec::<String>::new());
    }
    let records = std::fs::read_dir(firewall.path()).unwrap().flatten();
    let left: Vec<_> = records
        .filter(|d| d.path().is_dir())
        .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // DEL again: nothing to do, still a success.
    chain.cnitool("del", &a, &caps);
}
