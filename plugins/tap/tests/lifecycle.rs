//! tap ADD / CHECK / DEL: the device as the keys say (also `mtu` and
//! `mac` with `owner` and `group` both set, which the reference ignores),
//! a port of the container's bridge, IPAM's addresses; frames pass
//! through a queue opened in the container as a VM opens it; bad input
//! leaves nothing.

mod common;

use common::*;

use serde_json::json;
use testsupport::TestNetns;

const VM_MAC: [u8; 6] = [2, 0, 0, 0, 0, 9];

#[test]
fn every_key_applies_and_del_is_idempotent() {
    let h = host("tk");
    let c = TestNetns::new("tkc");
    let keys = json!({"mtu": 1400, "mac": "02:00:00:00:00:07", "owner": 54321, "group": 54322,
                      "multiQueue": true});
    let conf = conf(&h, &[], keys);
    let r = h.call("ADD", &conf, "c1", c.path(), "tap0").ok();
    assert_eq!(
        r["interfaces"],
        json!([{"name": "tap0", "mac": "02:00:00:00:00:07", "sandbox": c.path()}])
    );
    let l = link(&c, "tap0").expect("tap0");
    assert_eq!(
        (&l["mtu"], &l["address"]),
        (&json!(1400), &json!("02:00:00:00:00:07"))
    );
    let info = &l["linkinfo"]["info_data"];
    assert_eq!(info["type"], "tap", "{l}");
    assert_eq!(
        (&info["multi_queue"], &info["persist"]),
        (&json!(true), &json!(true))
    );
    assert_eq!(
        (&info["user"], &info["group"]),
        (&json!(54321), &json!(54322)),
        "{l}"
    );
    // Two queues, as a multi-queue VM opens them.
    let _q = [true, true].map(|mq| Queue::open(&c, "tap0", mq).expect("a queue"));
    h.call("CHECK", &with_prev(&conf, &r), "c1", c.path(), "tap0")
        .ok();
    for _ in 0..2 {
        h.call("DEL", &conf, "c1", c.path(), "tap0").ok();
        assert!(is_empty(&c), "{:?}", links(&c));
    }
    h.call("DEL", &conf, "c1", "", "tap0").ok();
}

#[test]
fn ipam_addresses_and_frames_through_the_queue() {
    let h = host("ti");
    let c = TestNetns::new("tic");
    let conf = conf(&h, &["10.240.70.0/24"], json!({}));
    let r = h.call("ADD", &conf, "c1", c.path(), "eth0").ok();
    assert_eq!(r["ips"][0]["interface"], 0);
    assert_eq!(r["ips"][0]["address"], "10.240.70.2/24");
    let l = link(&c, "eth0").expect("eth0");
    assert_eq!(l["linkinfo"]["info_data"]["type"], "tap");
    h.call("CHECK", &with_prev(&conf, &r), "c1", c.path(), "eth0")
        .ok();
    assert_eq!(
        c.stdout(&["sysctl", "-n", "net.ipv4.conf.eth0.arp_notify"])
            .trim(),
        "1"
    );

    let mut q = Queue::open(&c, "eth0", false).expect("queue");
    // The VM asks who has the container's address: the container answers
    // through the tap.
    let vm_ip = [10, 240, 70, 9];
    let reply = q.ask(&arp_request(VM_MAC, vm_ip, [10, 240, 70, 2]), |f| {
        is_arp_reply(f, [10, 240, 70, 2], VM_MAC)
    });
    assert!(reply.is_some(), "no ARP reply from the container");
    // The container sends to the VM (whose address it learnt): the frames
    // come out of the queue. Pings for 10 s, not a count: a frame lost on a
    // busy machine is followed by others.
    let pinger = std::thread::scope(|s| {
        let t = s.spawn(|| c.exec_output(&["ping", "-i", "0.5", "-w", "10", "10.240.70.9"]));
        let echo = q.recv(|f| f.len() > 34 && f[..6] == VM_MAC && f[12..14] == [8, 0]);
        t.join().unwrap();
        echo
    });
    assert!(pinger.is_some(), "no IPv4 frame for the VM");

    h.call("DEL", &conf, "c1", c.path(), "eth0").ok();
    assert!(h.leases().is_empty());
    assert!(is_empty(&c));
}

#[test]
fn a_port_of_the_containers_bridge() {
    let h = host("tb");
    let c = TestNetns::new("tbc");
    c.exec(&["ip", "link", "add", "br0", "type", "bridge"]);
    c.exec(&["ip", "addr", "add", "10.240.71.1/24", "dev", "br0"]);
    c.exec(&["ip", "link", "set", "br0", "up"]);
    let conf = conf(&h, &[], json!({"bridge": "br0"}));
    h.call("ADD", &conf, "c1", c.path(), "tap0").ok();
    assert_eq!(link(&c, "tap0").expect("tap0")["master"], "br0");
    // A frame from the VM reaches the bridge, whose answer comes back.
    let mut q = Queue::open(&c, "tap0", false).expect("queue");
    let bridge_ip = [10, 240, 71, 1];
    let answered = q.ask(&arp_request(VM_MAC, [10, 240, 71, 9], bridge_ip), |f| {
        is_arp_reply(f, bridge_ip, VM_MAC)
    });
    assert!(answered.is_some(), "no ARP reply from the bridge");
    h.call("DEL", &conf, "c1", c.path(), "tap0").ok();
    assert!(link(&c, "tap0").is_none());
    assert!(link(&c, "br0").is_some());
}

/// Bad input: a clear error, nothing left in the container, no lease.
#[test]
fn bad_input_leaves_nothing() {
    let h = host("tx");
    let c = TestNetns::new("txc");
    let cases = [
        (
            json!({"bridge": "cnirsnobr"}),
            999,
            "failed to get bridge cnirsnobr: Link not found",
        ),
        (
            json!({"mac": "02:00:00:00:00"}),
            7,
            "invalid args 02:00:00:00:00 for MAC addr: address 02:00:00:00:00: invalid MAC address",
        ),
        (json!({"mtu": -5}), 7, "invalid MTU -5"),
    ];
    for (extra, code, msg) in cases {
        let conf = conf(&h, &["10.240.72.0/24"], extra);
        let e = h.call("ADD", &conf, "c1", c.path(), "eth0").err(code);
        assert_eq!(e["msg"], msg);
        assert!(is_empty(&c), "{msg}: {:?}", links(&c));
        assert!(h.leases().is_empty(), "{msg}");
    }
    // The bridge is not one: refused, the tap removed.
    c.exec(&[
        "ip", "link", "add", "notabr", "type", "veth", "peer", "name", "notabr1",
    ]);
    let conf = common::conf(&h, &["10.240.72.0/24"], json!({"bridge": "notabr"}));
    let e = h.call("ADD", &conf, "c1", c.path(), "eth0").err(999);
    assert!(
        e["msg"]
            .as_str()
            .unwrap()
            .starts_with("failed to set tap eth0 as a port of bridge notabr: "),
        "{e}"
    );
    assert!(link(&c, "eth0").is_none());
    assert!(h.leases().is_empty());
    // A name the container has: refused, that link untouched.
    let conf = common::conf(&h, &["10.240.72.0/24"], json!({}));
    let e = h.call("ADD", &conf, "c1", c.path(), "notabr").err(999);
    assert_eq!(
        e["msg"],
        "failed to create tap notabr: the container already has a link of that name"
    );
    assert_eq!(
        link(&c, "notabr").expect("kept")["linkinfo"]["info_kind"],
        "veth"
    );
    let conf = common::conf(&h, &[], json!({}));
    let e = h.call("ADD", &conf, "c1", c.path(), "notabr").err(999);
    assert!(
        e["msg"]
            .as_str()
            .unwrap()
            .starts_with("failed to create tap notabr"),
        "{e}"
    );
    assert_eq!(
        link(&c, "notabr").expect("kept")["linkinfo"]["info_kind"],
        "veth"
    );
    // CHECK of an interface that is no tap.
    let prev = json!({"cniVersion": "1.0.0",
                      "interfaces": [{"name": "notabr", "sandbox": c.path()}]});
    let e = h
        .call("CHECK", &with_prev(&conf, &prev), "c1", c.path(), "notabr")
        .err(999);
    assert_eq!(e["msg"], "container interface notabr is a veth, not a tap");
}

/// Where SELinux is off (this machine) `selinuxContext` has nothing to
/// label and is ignored; the reference fails ADD there.
#[test]
fn selinux_context_is_ignored_without_selinux() {
    assert!(
        !std::path::Path::new("/sys/fs/selinux/enforce").exists(),
        "this test is for a machine without SELinux"
    );
    let h = host("ts");
    let c = TestNetns::new("tsc");
    let ctx = json!({"selinuxContext": "system_u:system_r:container_t:s0"});
    let conf = conf(&h, &[], ctx);
    h.call("ADD", &conf, "c1", c.path(), "tap0").ok();
    assert!(link(&c, "tap0").is_some());
    h.call("DEL", &conf, "c1", c.path(), "tap0").ok();
    let mut status = conf.clone();
    status["cniVersion"] = json!("1.1.0");
    h.call("STATUS", &status, "", "", "").ok();
}

/// DEL after the namespace is gone, or without `CNI_NETNS`: the lease is
/// released, DEL succeeds.
#[test]
fn del_without_the_namespace_releases_the_lease() {
    let h = host("tg");
    let conf = conf(&h, &["10.240.78.0/24"], json!({}));
    let c = TestNetns::new("tgc");
    h.call("ADD", &conf, "c1", c.path(), "eth0").ok();
    h.call("DEL", &conf, "c1", "", "eth0").ok();
    assert!(h.leases().is_empty());
    h.call("DEL", &conf, "c1", c.path(), "eth0").ok();
    assert!(is_empty(&c));
    let mut c = TestNetns::new("tgd");
    h.call("ADD", &conf, "c2", c.path(), "eth0").ok();
    let path = c.path().to_string();
    c.delete();
    h.call("DEL", &conf, "c2", &path, "eth0").ok();
    assert!(h.leases().is_empty());
}
