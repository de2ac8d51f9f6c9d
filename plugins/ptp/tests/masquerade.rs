//! Masquerade with both backends: an "outside" namespace, which has no
//! route back to the containers, sees the host's address as the peer of a
//! container's UDP datagram and answers it through the host; CHECK sees
//! the rules; DEL removes them even after the namespace is gone; GC
//! removes the rules of attachments that are no longer valid.

mod common;

use std::net::{IpAddr, UdpSocket};
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use testsupport::{PluginHost, TestNetns, retry};

const OUTSIDE: &str = "10.250.0.2";

/// Send datagrams from `c` to `out` until one arrives; returns the source
/// address `out` saw and whether `out`'s answer came back to `c`. When
/// `answer_expected`, answers are sent until one comes back (or the
/// tests' deadline passes); otherwise one answer is given a second.
fn exchange(c: &TestNetns, out: &TestNetns, answer_expected: bool) -> (IpAddr, bool) {
    let tick = Some(Duration::from_secs(1));
    let server = out.enter(|| UdpSocket::bind((OUTSIDE, 0))).unwrap();
    server.set_read_timeout(tick).unwrap();
    let port = server.local_addr().unwrap().port();
    let client = c.enter(|| UdpSocket::bind(("0.0.0.0", 0))).unwrap();
    client.set_read_timeout(tick).unwrap();
    let mut buf = [0u8; 16];
    let mut peer = None;
    retry(|| {
        client.send_to(b"ping", (OUTSIDE, port)).unwrap();
        peer = server.recv_from(&mut buf).ok().map(|(_, p)| p);
        peer.is_some()
    });
    let peer = peer.expect("a datagram reaches outside");
    let mut answer = || {
        // Without masquerade the answer has no route back, and may fail here.
        let _ = server.send_to(b"pong", peer);
        client
            .recv_from(&mut buf)
            .is_ok_and(|(n, _)| &buf[..n] == b"pong")
    };
    let answered = if answer_expected {
        retry(answer)
    } else {
        answer()
    };
    (peer.ip(), answered)
}

fn masq_conf(h: &PluginHost, subnet: &str, backend: Option<&str>) -> Value {
    let mut extra = json!({"ipMasq": true});
    if let Some(b) = backend {
        extra["ipMasqBackend"] = json!(b);
    }
    conf(h, "1.0.0", &[subnet], extra)
}

fn outside_sees_the_host(backend: &str, subnet: &str) {
    let h = host("mq");
    let out = h.outside();
    let conf = masq_conf(&h, subnet, Some(backend));
    let c = TestNetns::new("mqc");
    let r = h.add(&conf, "c1", &c);
    let (peer, answered) = exchange(&c, &out, true);
    assert_eq!(peer, "10.250.0.1".parse::<IpAddr>().unwrap());
    assert!(answered, "the answer comes back through the host");
    let rules = rules_of(&h, "c1");
    assert!(!rules.is_empty());
    let in_nft = h.sh(&["nft", "list", "ruleset"]).contains("id: c1\"");
    assert_eq!(in_nft, backend == "nftables", "{rules:#?}");
    let prev = with_prev(&conf, &r);
    h.call("CHECK", &prev, "c1", c.path(), "eth0").ok();

    // DEL once the namespace is gone (the veth with it) still removes the
    // rules, by name, without prevResult.
    let mut c = c;
    let path = c.path().to_string();
    c.delete();
    h.del(&conf, "c1", &path);
    assert!(rules_of(&h, "c1").is_empty(), "{:#?}", rules_of(&h, "c1"));
    assert!(h.leases().is_empty());
}

#[test]
fn outside_sees_the_host_nftables() {
    outside_sees_the_host("nftables", "10.240.46.0/24");
}

#[test]
fn outside_sees_the_host_iptables() {
    outside_sees_the_host("iptables", "10.240.47.0/24");
}

#[test]
fn without_masquerade_outside_sees_the_container() {
    let h = host("nm");
    let out = h.outside();
    let conf = conf(&h, "1.0.0", &["10.240.48.0/24"], json!({}));
    let c = TestNetns::new("nmc");
    let r = h.add(&conf, "c1", &c);
    let (peer, answered) = exchange(&c, &out, false);
    assert_eq!(peer.to_string(), ip_of(&r, false));
    assert!(!answered);
    h.del(&conf, "c1", c.path());
}

/// CHECK notices a masquerade rule that went missing.
#[test]
fn check_fails_without_the_rules() {
    let h = host("mk");
    let conf = masq_conf(&h, "10.240.49.0/24", Some("nftables"));
    let c = TestNetns::new("mkc");
    let r = h.add(&conf, "c1", &c);
    h.ns.exec(&["nft", "delete", "table", "inet", "cni_plugins_masquerade"]);
    let e = h
        .call("CHECK", &with_prev(&conf, &r), "c1", c.path(), "eth0")
        .err(999);
    let msg = e["msg"].as_str().unwrap();
    assert!(
        msg.contains(&format!(
            "ip masquerade rule for {} not found",
            ip_of(&r, false)
        )),
        "{e}"
    );
    h.del(&conf, "c1", c.path());
}

/// GC with the valid attachments removes the rules of the others (of this
/// network only), in both backends when none is configured, and their
/// leases through IPAM.
#[test]
fn gc_removes_rules_of_stale_attachments() {
    let h = host("mg");
    let mut conf = masq_conf(&h, "10.240.50.0/24", None);
    conf["cniVersion"] = json!("1.1.0");
    let ipt = {
        let mut c = conf.clone();
        c["ipMasqBackend"] = json!("iptables");
        c
    };
    let nft = {
        let mut c = conf.clone();
        c["ipMasqBackend"] = json!("nftables");
        c
    };
    let cs: Vec<TestNetns> = (0..3).map(|_| TestNetns::new("mgc")).collect();
    h.add(&ipt, "keep", &cs[0]);
    h.add(&ipt, "stale4", &cs[1]);
    h.add(&nft, "stalenft", &cs[2]);
    for cid in ["keep", "stale4", "stalenft"] {
        assert!(!rules_of(&h, cid).is_empty(), "{cid} has rules before GC");
    }
    let mut gc = conf.clone();
    gc["cni.dev/valid-attachments"] = json!([{"containerID": "keep", "ifname": "eth0"}]);
    h.call("GC", &gc, "", "", "").ok();
    assert!(!rules_of(&h, "keep").is_empty());
    assert!(
        rules_of(&h, "stale4").is_empty(),
        "{:#?}",
        rules_of(&h, "stale4")
    );
    assert!(rules_of(&h, "stalenft").is_empty());
    assert_eq!(h.leases().len(), 1);
    h.del(&ipt, "keep", cs[0].path());
    assert!(rules_of(&h, "keep").is_empty());
}
