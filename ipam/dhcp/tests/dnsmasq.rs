//! The plugin and daemon against a real DHCP server (dnsmasq) on a LAN
//! of namespaces: leases taken, renewed, rebound, released, and the
//! faults around them. Timing bounds are generous on purpose: the
//! machine is shared; what is asserted is what happened, never how fast.

mod common;

use std::time::Duration;

use common::{Daemon, Lan, addr, call, conf, configure, ours, wait_for};
use serde_json::json;

const LONG: Duration = Duration::from_secs(90);

#[test]
fn a_lease_is_taken_kept_on_disk_and_released_on_del() {
    let lan = Lan::new(1);
    let srv = lan.server(1, &[]);
    let c = lan.container();
    let d = Daemon::ours(&lan.ns, &["-timeout=5s"]);
    let conf = conf("dnet", &d.socket, "1.0.0", json!({}));
    let r = call(&ours(), "ADD", &conf, "ctra", c.path()).ok();
    let ip = addr(&r);
    assert!(ip.starts_with("10.247.1."), "{r}");
    assert_eq!(r["ips"][0]["gateway"], "10.247.1.1");
    assert_eq!(
        r["routes"],
        json!([{"dst": "0.0.0.0/0", "gw": "10.247.1.1"}])
    );
    assert_eq!(srv.lease_of("ctra/dnet/eth0"), Some(ip.clone()));
    assert!(
        d.acked_at("ctra/dnet/eth0").is_some(),
        "no record: {:?}",
        d.records()
    );
    // A second ADD (and CHECK) answers from the lease held.
    assert_eq!(call(&ours(), "ADD", &conf, "ctra", c.path()).ok(), r);
    call(&ours(), "DEL", &conf, "ctra", c.path()).ok();
    wait_for("the server to drop the lease", LONG, || {
        srv.lease_of("ctra/dnet/eth0").is_none()
    });
    assert_eq!(srv.logged("DHCPRELEASE").len(), 1);
    assert!(d.records().is_empty());
    // DEL is idempotent.
    call(&ours(), "DEL", &conf, "ctra", c.path()).ok();
}

#[test]
fn the_lease_is_renewed_at_t1() {
    let lan = Lan::new(2);
    let srv = lan.server(1, &["--dhcp-option=option:T1,4s"]);
    let c = lan.container();
    let d = Daemon::ours(&lan.ns, &["-timeout=5s"]);
    let conf = conf("dnet", &d.socket, "1.0.0", json!({}));
    let r = call(&ours(), "ADD", &conf, "ctrr", c.path()).ok();
    configure(&c, &r);
    let first = d.acked_at("ctrr/dnet/eth0").unwrap();
    let mut seen = vec![first];
    wait_for("two renewals", LONG, || {
        let t = d.acked_at("ctrr/dnet/eth0").unwrap_or(0);
        if t > *seen.last().unwrap() {
            seen.push(t);
        }
        seen.len() >= 3
    });
    // The server saw renewals: REQUESTs after the first ACK, all ACKed.
    let acks = srv.logged("DHCPACK");
    assert!(acks.len() >= 3, "{acks:?}");
    assert!(srv.logged("DHCPNAK").is_empty());
    assert_eq!(srv.lease_of("ctrr/dnet/eth0"), Some(addr(&r)));
    assert!(
        d.logs().contains("ctrr/dnet/eth0: lease renewed"),
        "{}",
        d.logs()
    );
}

#[test]
fn the_lease_is_rebound_when_its_server_is_replaced() {
    let lan = Lan::new(3);
    let first = lan.server(
        1,
        &["--dhcp-option=option:T1,4s", "--dhcp-option=option:T2,8s"],
    );
    let c = lan.container();
    let d = Daemon::ours(&lan.ns, &["-timeout=2s"]);
    let conf = conf("dnet", &d.socket, "1.0.0", json!({}));
    let r = call(&ours(), "ADD", &conf, "ctrb", c.path()).ok();
    configure(&c, &r);
    drop(first);
    let second = lan.server(2, &["--dhcp-option=option:T1,30s"]);
    wait_for("the new server to hold the lease", LONG, || {
        second.lease_of("ctrb/dnet/eth0").is_some()
    });
    assert_eq!(second.lease_of("ctrb/dnet/eth0"), Some(addr(&r)));
    wait_for("the daemon to record it", LONG, || {
        d.logs().contains("ctrb/dnet/eth0: lease rebound")
    });
    // Released at the new server.
    call(&ours(), "DEL", &conf, "ctrb", c.path()).ok();
    wait_for("the release", LONG, || {
        second.lease_of("ctrb/dnet/eth0").is_none()
    });
}

#[test]
fn without_a_server_add_fails_with_a_clear_timeout_and_leaves_nothing() {
    let lan = Lan::new(4);
    let c = lan.container();
    let d = Daemon::ours(&lan.ns, &["-timeout=1s", "-resendtimeout=4s"]);
    let conf = conf("dnet", &d.socket, "1.0.0", json!({}));
    let e = call(&ours(), "ADD", &conf, "ctrt", c.path()).err(999);
    let msg = e["msg"].as_str().unwrap();
    assert!(
        msg.starts_with("error calling DHCP.Allocate: no more tries: no DHCPOFFER on \"eth0\" within 1s (gave up after "),
        "{msg}"
    );
    assert!(d.records().is_empty());
    // Nothing held: once a server is there, the same ADD succeeds.
    let srv = lan.server(1, &[]);
    let r = call(&ours(), "ADD", &conf, "ctrt", c.path()).ok();
    assert_eq!(srv.lease_of("ctrt/dnet/eth0"), Some(addr(&r)));
}

#[test]
fn a_daemon_killed_mid_lease_is_replaced_and_the_new_one_renews_and_releases() {
    let lan = Lan::new(5);
    let srv = lan.server(1, &["--dhcp-option=option:T1,4s"]);
    let c = lan.container();
    let d = Daemon::ours(&lan.ns, &["-timeout=5s"]);
    let conf = conf("dnet", &d.socket, "1.0.0", json!({}));
    let r = call(&ours(), "ADD", &conf, "ctrk", c.path()).ok();
    configure(&c, &r);
    // SIGKILL: the socket file stays behind, the record too.
    let before = d.acked_at("ctrk/dnet/eth0").unwrap();
    let d = Daemon::restart(&lan.ns, d, &["-timeout=5s"]);
    assert!(d.logs().contains("1 lease resumed"), "{}", d.logs());
    wait_for("a renewal by the new daemon", LONG, || {
        d.acked_at("ctrk/dnet/eth0").unwrap_or(0) > before
    });
    assert!(
        d.logs().contains("ctrk/dnet/eth0: lease renewed"),
        "{}",
        d.logs()
    );
    // The new daemon holds it: ADD answers the same, DEL releases it.
    assert_eq!(
        addr(&call(&ours(), "ADD", &conf, "ctrk", c.path()).ok()),
        addr(&r)
    );
    call(&ours(), "DEL", &conf, "ctrk", c.path()).ok();
    wait_for("the release", LONG, || {
        srv.lease_of("ctrk/dnet/eth0").is_none()
    });
}

#[test]
fn thirty_two_adds_at_once_get_thirty_two_addresses() {
    let lan = Lan::new(6);
    let srv = lan.server(1, &[]);
    let d = Daemon::ours(&lan.ns, &["-timeout=10s"]);
    let conf = conf("dnet", &d.socket, "1.0.0", json!({}));
    let containers: Vec<_> = (0..32).map(|_| lan.container()).collect();
    let results: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = containers
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let conf = &conf;
                s.spawn(move || {
                    addr(&call(&ours(), "ADD", conf, &format!("ctr{i}"), c.path()).ok())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut distinct = results.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 32, "{results:?}");
    assert_eq!(srv.leases().len(), 32);
    assert_eq!(d.records().len(), 32);
    std::thread::scope(|s| {
        for (i, c) in containers.iter().enumerate() {
            let conf = &conf;
            s.spawn(move || call(&ours(), "DEL", conf, &format!("ctr{i}"), c.path()).ok());
        }
    });
    wait_for("every release", LONG, || srv.leases().is_empty());
    assert!(d.records().is_empty());
}

#[test]
fn a_lease_ends_with_its_interface_and_add_then_takes_a_new_one() {
    let lan = Lan::new(7);
    let _srv = lan.server(1, &["--dhcp-option=option:T1,4s"]);
    let c = lan.container();
    let d = Daemon::ours(&lan.ns, &["-timeout=3s"]);
    let conf = conf("dnet", &d.socket, "1.0.0", json!({}));
    call(&ours(), "ADD", &conf, "ctrg", c.path()).ok();
    c.exec(&["ip", "link", "delete", "eth0"]);
    wait_for("the lease to end", LONG, || d.records().is_empty());
    assert!(
        d.logs().contains("interface eth0 no longer exists"),
        "{}",
        d.logs()
    );
    // CHECK and ADD of the ended lease answer (the reference hangs here
    // for ever): without the interface an error, with a new one a lease.
    let e = call(&ours(), "CHECK", &conf, "ctrg", c.path()).err(999);
    assert_eq!(
        e["msg"],
        "error calling DHCP.Allocate: error looking up \"eth0\": Link not found"
    );
    lan.plug(&c, "eth0");
    let r = call(&ours(), "ADD", &conf, "ctrg", c.path()).ok();
    assert!(addr(&r).starts_with("10.247.7."));
}

#[test]
fn a_gone_namespace_ends_the_lease_and_del_still_succeeds() {
    let lan = Lan::new(8);
    let _srv = lan.server(1, &["--dhcp-option=option:T1,4s"]);
    let mut c = lan.container();
    let d = Daemon::ours(&lan.ns, &["-timeout=3s"]);
    let conf = conf("dnet", &d.socket, "1.0.0", json!({}));
    call(&ours(), "ADD", &conf, "ctrn", c.path()).ok();
    let path = c.path().to_string();
    c.delete();
    wait_for("the lease to end", LONG, || d.records().is_empty());
    call(&ours(), "DEL", &conf, "ctrn", &path).ok();
}

#[test]
fn a_lease_whose_namespace_went_while_no_daemon_ran_is_forgotten_at_start() {
    let lan = Lan::new(13);
    let _srv = lan.server(1, &[]);
    let mut c = lan.container();
    let d = Daemon::ours(&lan.ns, &["-timeout=5s"]);
    let conf = conf("dnet", &d.socket, "1.0.0", json!({}));
    call(&ours(), "ADD", &conf, "ctrw", c.path()).ok();
    let path = c.path().to_string();
    let mut d = d;
    d.proc.kill();
    c.delete();
    // The lease lasts two minutes and T1 is one: the new daemon must not
    // wait for T1 to notice.
    let d = Daemon::restart(&lan.ns, d, &["-timeout=5s"]);
    wait_for("the record to go", Duration::from_secs(30), || {
        d.records().is_empty()
    });
    assert!(d.logs().contains("not resuming the lease"), "{}", d.logs());
    call(&ours(), "DEL", &conf, "ctrw", &path).ok();
}

#[test]
fn status_tells_whether_the_daemon_answers_and_del_goes_on_without_it() {
    let lan = Lan::new(9);
    let srv = lan.server(1, &[]);
    let c = lan.container();
    let mut d = Daemon::ours(&lan.ns, &["-timeout=5s"]);
    let conf = conf("dnet", &d.socket, "1.1.0", json!({}));
    call(&ours(), "STATUS", &conf, "", "").ok();
    let r = call(&ours(), "ADD", &conf, "ctrs", c.path()).ok();
    d.proc.terminate();
    assert!(!d.socket.exists(), "the daemon left its socket");
    let e = call(&ours(), "STATUS", &conf, "", "").err(50);
    assert_eq!(
        e["msg"],
        "is the dhcp daemon running? start it with `dhcp daemon` or enable cni-dhcp.socket"
    );
    assert_eq!(
        e["details"],
        format!(
            "error dialing DHCP daemon: dial unix {}: connect: no such file or directory",
            d.socket.display()
        )
    );
    let e = call(&ours(), "ADD", &conf, "ctrs2", c.path()).err(999);
    assert!(
        e["msg"]
            .as_str()
            .unwrap()
            .starts_with("error dialing DHCP daemon: dial unix "),
        "{e}"
    );
    let del = call(&ours(), "DEL", &conf, "ctrs", c.path());
    del.ok();
    assert!(del.stderr.contains("not released"), "{del:?}");
    // The lease stays at the server (it expires there); the record too,
    // for the next daemon, which releases it on DEL.
    assert_eq!(srv.lease_of("ctrs/dnet/eth0"), Some(addr(&r)));
    let d = Daemon::restart(&lan.ns, d, &["-timeout=5s"]);
    call(&ours(), "DEL", &conf, "ctrs", c.path()).ok();
    wait_for("the release", LONG, || {
        srv.lease_of("ctrs/dnet/eth0").is_none()
    });
    assert!(d.records().is_empty());
}

#[test]
fn gc_releases_the_leases_of_attachments_not_in_use() {
    let lan = Lan::new(10);
    let srv = lan.server(1, &[]);
    let (c1, c2) = (lan.container(), lan.container());
    let d = Daemon::ours(&lan.ns, &["-timeout=5s"]);
    let conf = conf("dnet", &d.socket, "1.1.0", json!({}));
    call(&ours(), "ADD", &conf, "keep", c1.path()).ok();
    call(&ours(), "ADD", &conf, "gone", c2.path()).ok();
    let other = common::conf("other", &d.socket, "1.1.0", json!({}));
    call(&ours(), "ADD", &other, "gone", c2.path()).ok();
    let mut gc = conf.clone();
    gc["cni.dev/valid-attachments"] = json!([{"containerID": "keep", "ifname": "eth0"}]);
    call(&ours(), "GC", &gc, "", "").ok();
    // Another network's lease is not this GC's to collect. Waited for as
    // one reading: the kept leases must still be there when the collected
    // one is gone.
    wait_for("the release of the collected lease only", LONG, || {
        srv.lease_of("gone/dnet/eth0").is_none()
            && srv.lease_of("keep/dnet/eth0").is_some()
            && srv.lease_of("gone/other/eth0").is_some()
    });
    assert_eq!(d.records().len(), 2);
    // Without the key, GC collects nothing.
    call(&ours(), "GC", &conf, "", "").ok();
    assert_eq!(d.records().len(), 2);
}

#[test]
fn options_are_sent_and_priority_applied() {
    let lan = Lan::new(11);
    let srv = lan.server(
        1,
        &["--dhcp-option=121,10.99.0.0/16,10.247.11.9,10.247.12.0/24,0.0.0.0"],
    );
    let c = lan.container();
    let d = Daemon::ours(&lan.ns, &["-timeout=5s"]);
    let conf = conf(
        "dnet",
        &d.socket,
        "1.0.0",
        json!({
            "provide": [{"option": "host-name", "fromArg": "K8S_POD_NAME"}],
            "request": [{"option": "121"}],
            "priority": 50
        }),
    );
    let r = testsupport::Call::new("ADD")
        .container_id("ctro")
        .netns(c.path())
        .ifname("eth0")
        .args("IgnoreUnknown=1;K8S_POD_NAME=pod-o")
        .path("/nonexistent")
        .stdin(conf.to_string())
        .run(&ours())
        .ok();
    assert_eq!(
        r["routes"],
        json!([
            {"dst": "10.99.0.0/16", "gw": "10.247.11.9", "priority": 50},
            {"dst": "10.247.12.0/24", "gw": "0.0.0.0", "priority": 50, "scope": 253}
        ])
    );
    // dnsmasq records the host name the client sent.
    let lease = std::fs::read_to_string(&srv.lease_file).unwrap();
    assert!(lease.contains(" pod-o "), "{lease}");
}

#[test]
fn a_config_without_ipam_does_not_crash_the_daemon() {
    use dhcp::rpc::Client;
    use dhcp::wire::{self, CmdArgs};
    let lan = Lan::new(12);
    let srv = lan.server(1, &[]);
    let c = lan.container();
    let d = Daemon::ours(&lan.ns, &["-timeout=5s"]);
    let args = CmdArgs {
        container_id: "ctri".into(),
        netns: c.path().into(),
        ifname: "eth0".into(),
        stdin_data: br#"{"cniVersion":"1.0.0","name":"dnet","type":"dhcp"}"#.to_vec(),
        ..Default::default()
    };
    let mut client = Client::dial(&d.socket, Duration::from_secs(60)).unwrap();
    let reply = client
        .call(wire::ALLOCATE, wire::CMD_ARGS, &args.to_value())
        .unwrap();
    let r = wire::result_from(&reply).unwrap();
    assert_eq!(
        srv.lease_of("ctri/dnet/eth0"),
        Some(r.ips[0].address.ip().to_string())
    );
}

#[test]
fn pidfile_and_flag_errors() {
    let dir = testsupport::TempDir::new("flags");
    let run = |args: &[&str]| {
        std::process::Command::new(ours())
            .arg("daemon")
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["-nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .starts_with("flag provided but not defined: -nope\nUsage of daemon:")
    );
    let out = run(&["-pidfile=rel.pid"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("Error writing pidfile \"rel.pid\": path not absolute"),
        "{out:?}"
    );
    let ns = testsupport::TestNetns::new("pid");
    let pid = dir.join("d.pid");
    let mut d = Daemon::ours(&ns, &[&format!("-pidfile={}", pid.display())]);
    assert_eq!(
        std::fs::read_to_string(&pid).unwrap(),
        d.proc.pid().to_string()
    );
    assert_eq!(d.proc.terminate().and_then(|s| s.code()), Some(0));
    assert!(!pid.exists());
}
