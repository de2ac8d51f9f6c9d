//! Property tests over generated configurations and inputs: the parsers
//! (config, nftables conditions, saved iptables rules) never panic, the
//! rules read back give what was written (UDP targets, attachments), a
//! record reads back as the mappings it was written from, and every
//! nftables rule we generate compiles in its family.

use std::net::IpAddr;

use cni_firewall::iptables::Save;
use cni_net::IpNetwork;
use cni_net::nftables::{Family, Rule};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::config::Config;
use crate::{iptables, nft};

fn mapping() -> impl Strategy<Value = Value> {
    (
        1u16..,
        1u16..,
        prop::sample::select(vec!["tcp", "udp", "sctp", "TCP", "Udp"]),
        prop::sample::select(vec![
            "",
            "0.0.0.0",
            "::",
            "10.240.9.1",
            "fd40:9::1",
            "127.0.0.1",
        ]),
    )
        .prop_map(
            |(h, c, p, ip)| json!({"hostPort": h, "containerPort": c, "protocol": p, "hostIP": ip}),
        )
}

fn conf() -> impl Strategy<Value = Config> {
    (
        prop::collection::vec(mapping(), 1..20),
        any::<bool>(),
        any::<bool>(),
        "[a-z][a-z0-9-]{0,20}",
    )
        .prop_map(|(maps, snat, masq_all, name)| {
            let c = json!({"name": name, "snat": snat, "masqAll": masq_all,
                           "runtimeConfig": {"portMappings": maps}});
            Config::parse(c.to_string().as_bytes()).expect("generated configs are valid")
        })
}

fn addr() -> impl Strategy<Value = IpNetwork> {
    prop_oneof![
        (any::<[u8; 4]>(), 8u8..=32).prop_map(|(a, p)| IpNetwork::new(IpAddr::from(a), p).unwrap()),
        (any::<[u8; 16]>(), 48u8..=128)
            .prop_map(|(a, p)| IpNetwork::new(IpAddr::from(a), p).unwrap()),
    ]
}

proptest! {
    #[test]
    fn config_parser_never_panics(s in ".{0,200}") {
        let _ = Config::parse(s.as_bytes());
    }

    #[test]
    fn condition_parser_never_panics_and_what_it_takes_compiles(
        words in prop::collection::vec(prop::sample::select(vec![
            "ip", "ip6", "saddr", "daddr", "!=", "==", "iifname", "oifname", "\"eth0\"",
            "10.0.0.0/8", "fd40::/16", "10.0.0.1", "x", "{", "}", "tcp", "dport", "80",
        ]), 0..10),
        v6 in any::<bool>(),
    ) {
        let words: Vec<String> = words.into_iter().map(str::to_string).collect();
        if let Ok(m) = nft::conditions(&words, v6) {
            let r = Rule { matches: m, ..Rule::new() }.fib_daddr_local().jump("hostports_all");
            let family = if v6 { Family::Ip6 } else { Family::Ip };
            prop_assert!(r.compile(family).is_ok());
        }
    }

    #[test]
    fn generated_rules_compile_and_targets_read_back(c in conf(), a in addr(), cid in "[a-z0-9]{1,64}") {
        let family = if a.is_ipv6() { Family::Ip6 } else { Family::Ip };
        let rules = nft::rules(&c, &a, &cid);
        for r in rules.dnat.iter().chain(&rules.masq) {
            prop_assert!(r.compile(family).is_ok(), "{r:?}");
        }
        // iptables: the saved DNAT lines give the UDP targets back.
        let dn = iptables::dn_chain(&c.name, &cid);
        let mut text = format!("*nat\n:{dn} - [0:0]\n");
        for (_, saved) in iptables::dn_rules(&c, &a) {
            text.push_str(&format!("-A {dn} {saved}\n"));
        }
        text.push_str("COMMIT\n");
        let got = iptables::udp_targets(&Save::new(text), &dn);
        let want: Vec<_> = c.mappings.iter()
            .filter(|m| m.applies(a.is_ipv6()) && m.protocol.eq_ignore_ascii_case("udp"))
            .map(|m| crate::conntrack::Target { host_port: m.host_port, addr: a.ip(), port: m.container_port })
            .collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn entry_comments_name_their_attachment(net in "[a-zA-Z0-9][a-zA-Z0-9_.-]{0,40}", cid in "[a-zA-Z0-9][a-zA-Z0-9_.-]{0,60}") {
        let dn = iptables::dn_chain(&net, &cid);
        let comment = iptables::comment(&net, &cid);
        let line = format!(
            "-A {} -p tcp -m comment --comment {} -m multiport --dports 80 -j {dn}",
            iptables::TOP_DNAT,
            cni_firewall::iptables::quote_arg(&comment)
        );
        let save = Save::new(format!("*nat\n{line}\nCOMMIT\n"));
        prop_assert_eq!(iptables::attachments(&save, &net), vec![cid.clone()]);
        prop_assert!(iptables::stale(&save, &net, &[cid.as_str()]).is_empty());
    }

    #[test]
    fn records_read_back_as_written(c in conf(), a in addr()) {
        let dir = std::env::temp_dir().join(format!("cnirs-pmrec-{}", std::process::id()));
        let c = Config { data_dir: dir.clone(), ..c };
        crate::record::write(&c, "c1", "eth0", cni_firewall::Backend::Nftables, &[a]).unwrap();
        let recs = crate::record::of_network(&dir, &c.name);
        let _ = std::fs::remove_dir_all(&dir);
        prop_assert_eq!(recs.len(), 1);
        let r = &recs[0];
        prop_assert_eq!(&r.conf.mappings, &c.mappings);
        prop_assert_eq!((r.conf.snat, r.conf.masq_all), (c.snat, c.masq_all));
        prop_assert_eq!(&r.addrs, &vec![a]);
        prop_assert_eq!((r.container_id.as_str(), r.ifname.as_str()), ("c1", "eth0"));
    }
}
