use super::*;

/// The reference document's example (§11.4): network `pmnet`, container
/// `c1` at 10.44.0.3/24 and fd44::3/64.
fn conf(extra: &str) -> Config {
    Config::parse(
        format!(
            r#"{{"cniVersion":"1.0.0","name":"pmnet"{extra},"runtimeConfig":{{"portMappings":[
            {{"hostPort":8080,"containerPort":80,"protocol":"tcp"}},
            {{"hostPort":8443,"containerPort":443,"protocol":"tcp","hostIP":"127.0.0.1"}},
            {{"hostPort":5353,"containerPort":53,"protocol":"udp"}},
            {{"hostPort":9090,"containerPort":90,"protocol":"tcp","hostIP":"::"}}]}}}}"#
        )
        .as_bytes(),
    )
    .unwrap()
}

fn addr(s: &str) -> IpNetwork {
    s.parse().unwrap()
}

const DN: &str = "CNI-DN-0e9965f3b290e853e3753";

#[test]
fn names_match_the_reference() {
    assert_eq!(dn_chain("pmnet", "c1"), DN);
    assert!(sn_chain("pmnet", "c1").starts_with("CNI-SN-"));
    assert_eq!(sn_chain("pmnet", "c1").len(), 28);
    assert_eq!(comment("pmnet", "c1"), r#"dnat name: "pmnet" id: "c1""#);
    let long = comment(&"n".repeat(300), "c1");
    assert_eq!(long.len(), 256);
    assert!(long.ends_with("..."));
    assert_eq!(mark_def(0x2000), "0x2000/0x2000");
    assert_eq!(mark_def(1), "0x1/0x1");
}

#[test]
fn saved_forms_are_the_references_lines() {
    let c = conf("");
    let saved: Vec<String> = dn_rules(&c, &addr("10.44.0.3/24"))
        .into_iter()
        .map(|(_, s)| format!("-A {DN} {s}"))
        .collect();
    // Observed from the Go plugin v1.1.1 (`iptables-save -t nat`).
    let want = [
        "-s 10.44.0.0/24 -p tcp -m tcp --dport 8080 -j CNI-HOSTPORT-SETMARK",
        "-s 127.0.0.1/32 -p tcp -m tcp --dport 8080 -j CNI-HOSTPORT-SETMARK",
        "-p tcp -m tcp --dport 8080 -j DNAT --to-destination 10.44.0.3:80",
        "-s 10.44.0.0/24 -d 127.0.0.1/32 -p tcp -m tcp --dport 8443 -j CNI-HOSTPORT-SETMARK",
        "-s 127.0.0.1/32 -d 127.0.0.1/32 -p tcp -m tcp --dport 8443 -j CNI-HOSTPORT-SETMARK",
        "-d 127.0.0.1/32 -p tcp -m tcp --dport 8443 -j DNAT --to-destination 10.44.0.3:443",
        "-s 10.44.0.0/24 -p udp -m udp --dport 5353 -j CNI-HOSTPORT-SETMARK",
        "-s 127.0.0.1/32 -p udp -m udp --dport 5353 -j CNI-HOSTPORT-SETMARK",
        "-p udp -m udp --dport 5353 -j DNAT --to-destination 10.44.0.3:53",
    ];
    let want: Vec<String> = want.iter().map(|l| format!("-A {DN} {l}")).collect();
    assert_eq!(saved, want);
    let v6: Vec<String> = dn_rules(&c, &addr("fd44::3/64"))
        .into_iter()
        .map(|(_, s)| s)
        .collect();
    assert_eq!(
        v6[0],
        "-s fd44::/64 -p tcp -m tcp --dport 8080 -j CNI-HOSTPORT-SETMARK"
    );
    assert_eq!(
        v6[1],
        "-p tcp -m tcp --dport 8080 -j DNAT --to-destination [fd44::3]:80"
    );
    assert!(v6.iter().any(|l| l.contains("--dport 9090")));
    assert!(!v6.iter().any(|l| l.contains("8443")));
    // snat off: DNAT rules only; masqAll: no source match.
    let off = dn_rules(&conf(r#","snat":false"#), &addr("10.44.0.3/24"));
    assert_eq!(off.len(), 3);
    let all = dn_rules(&conf(r#","masqAll":true"#), &addr("10.44.0.3/24"));
    assert_eq!(
        all[0].1,
        "-p tcp -m tcp --dport 8080 -j CNI-HOSTPORT-SETMARK"
    );
    assert_eq!(all[0].0[4..6], ["-s".to_string(), "0.0.0.0/0".to_string()]);
}

#[test]
fn entry_rules_group_every_port_by_protocol() {
    let c = conf("");
    assert_eq!(
        entry_groups(&c),
        vec![
            ("tcp".to_string(), "8080,8443,9090".to_string()),
            ("udp".to_string(), "5353".to_string())
        ]
    );
    let many: Vec<String> = (1..=16)
        .map(|p| format!(r#"{{"hostPort":{p},"containerPort":1,"protocol":"tcp"}}"#))
        .collect();
    let c = Config::parse(
        format!(
            r#"{{"name":"n","runtimeConfig":{{"portMappings":[{}]}}}}"#,
            many.join(",")
        )
        .as_bytes(),
    )
    .unwrap();
    let g = entry_groups(&c);
    assert_eq!(g.len(), 2);
    assert_eq!(g[1].1, "16");
}

#[test]
fn setup_writes_shared_objects_only_when_missing() {
    let c = conf("");
    let empty = Save::new("*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n".into());
    let text = setup_batch(&empty, &c, &addr("10.44.0.3/24"), "c1").text();
    for line in [
        "-N CNI-HOSTPORT-DNAT",
        "-N CNI-HOSTPORT-SETMARK",
        "-N CNI-HOSTPORT-MASQ",
        "-A CNI-HOSTPORT-SETMARK -m comment --comment \"CNI portfwd masquerade mark\" -j MARK --set-xmark 0x2000/0x2000",
        "-A CNI-HOSTPORT-MASQ -m mark --mark 0x2000/0x2000 -j MASQUERADE",
        "-I POSTROUTING 1 -m comment --comment \"CNI portfwd requiring masquerade\" -j CNI-HOSTPORT-MASQ",
        "-A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT",
        "-A OUTPUT -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT",
        ":CNI-DN-0e9965f3b290e853e3753 - [0:0]",
        "-A CNI-HOSTPORT-DNAT -m comment --comment \"dnat name: \\\"pmnet\\\" id: \\\"c1\\\"\" -m multiport -p tcp --destination-ports 8080,8443,9090 -j CNI-DN-0e9965f3b290e853e3753",
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line}\n{text}");
    }
    // Everything shared present as the Go plugin saved it: only the
    // attachment's objects are written, its old entry rule removed.
    let present = format!(
        "*nat\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n\
:CNI-HOSTPORT-DNAT - [0:0]\n:CNI-HOSTPORT-MASQ - [0:0]\n:CNI-HOSTPORT-SETMARK - [0:0]\n:{DN} - [0:0]\n\
-A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT\n\
-A OUTPUT -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT\n\
-A POSTROUTING -m comment --comment \"CNI portfwd requiring masquerade\" -j CNI-HOSTPORT-MASQ\n\
-A CNI-HOSTPORT-DNAT -p udp -m comment --comment \"dnat name: \\\"pmnet\\\" id: \\\"c1\\\"\" -m multiport --dports 5353 -j {DN}\n\
-A {DN} -p udp -m udp --dport 5353 -j DNAT --to-destination 10.44.0.9:53\n\
-A CNI-HOSTPORT-MASQ -m mark --mark 0x2000/0x2000 -j MASQUERADE\n\
-A CNI-HOSTPORT-SETMARK -m comment --comment \"CNI portfwd masquerade mark\" -j MARK --set-xmark 0x2000/0x2000\nCOMMIT\n"
    );
    let save = Save::new(present);
    let text = setup_batch(&save, &c, &addr("10.44.0.3/24"), "c1").text();
    assert!(!text.contains("CNI-HOSTPORT-SETMARK -m"), "{text}");
    assert!(!text.contains("PREROUTING"), "{text}");
    assert!(!text.contains("POSTROUTING"), "{text}");
    assert!(
        text.contains("-D CNI-HOSTPORT-DNAT -p udp -m comment"),
        "{text}"
    );
    assert!(text.contains(&format!(":{DN} - [0:0]")), "{text}");
    assert_eq!(
        udp_targets(&save, DN),
        vec![Target {
            host_port: 5353,
            addr: "10.44.0.9".parse().unwrap(),
            port: 53
        }]
    );
    assert_eq!(attachments(&save, "pmnet"), vec!["c1".to_string()]);
    assert!(attachments(&save, "pm").is_empty());
    assert!(stale(&save, "pmnet", &["c1"]).is_empty());
    // An external mark chain: no shared mark chains, marks jump there.
    let ext = conf(r#","externalSetMarkChain":"KUBE-MARK-MASQ""#);
    let text = setup_batch(&empty, &ext, &addr("10.44.0.3/24"), "c1").text();
    assert!(!text.contains("CNI-HOSTPORT-SETMARK"), "{text}");
    assert!(text.contains("-j KUBE-MARK-MASQ"), "{text}");
}
