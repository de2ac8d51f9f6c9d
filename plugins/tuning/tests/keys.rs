//! Root tests: every key changes the kernel's value inside the container's
//! namespace, CHECK reads them back, DEL restores the link attributes.

mod common;

use common::*;
use serde_json::json;

#[test]
fn every_key_changes_the_kernel_value_and_del_restores_the_link() {
    let c = Container::new("kall");
    let before = c.link();
    let sysctls_before: Vec<String> = every_sysctl("eth0")
        .iter()
        .map(|(k, _)| c.sysctl(k))
        .collect();
    let conf = c.conf("1.0.0", every_key());

    let result = c.run("ADD", &conf).ok();
    assert_eq!(result["interfaces"][0]["mac"], "02:42:0a:f0:28:02");
    assert_eq!(result["ips"][0]["address"], "10.240.40.2/24");
    assert_eq!(
        c.link(),
        LinkState {
            mac: "02:42:0a:f0:28:02".into(),
            mtu: 1400,
            promisc: true,
            allmulti: true,
            txqlen: 321,
        }
    );
    for (key, value) in every_sysctl("eth0") {
        assert_eq!(c.sysctl(&key), value, "{key}");
    }
    // The backup holds the originals, in the reference's format.
    assert_eq!(
        c.backup_text().unwrap(),
        format!(
            "{{\n \"mac\": \"{}\",\n \"promisc\": false,\n \"mtu\": {},\n \"allmulti\": false,\n \"txQLen\": {}\n}}",
            before.mac, before.mtu, before.txqlen
        )
    );
    c.run("CHECK", &conf).ok();

    c.run("DEL", &conf).ok();
    assert_eq!(c.link(), before);
    assert!(c.data_files().is_empty(), "{:?}", c.data_files());
    // Sysctls stay (the namespace goes with the container), as in the
    // reference.
    for (key, value) in every_sysctl("eth0") {
        assert_eq!(c.sysctl(&key), value, "{key}");
    }
    assert_ne!(sysctls_before[0], "1");
    c.run("DEL", &conf).ok();
}

/// Each key on its own: only that value changes, only it is backed up.
#[test]
fn each_key_alone() {
    let keys = [
        (json!({"mac": "02:00:00:00:aa:01"}), "mac"),
        (json!({"promisc": true}), "promisc"),
        (json!({"mtu": 1280}), "mtu"),
        (json!({"txQLen": 0}), "txQLen"),
        (json!({"allmulti": true}), "allmulti"),
    ];
    for (keys, name) in keys {
        let c = Container::new("kone");
        let before = c.link();
        let conf = c.conf("0.4.0", keys.clone());
        c.run("ADD", &conf).ok();
        let after = c.link();
        let changed = [
            ("mac", before.mac != after.mac),
            ("promisc", before.promisc != after.promisc),
            ("mtu", before.mtu != after.mtu),
            ("txQLen", before.txqlen != after.txqlen),
            ("allmulti", before.allmulti != after.allmulti),
        ];
        for (k, did) in changed {
            assert_eq!(did, k == name, "{keys}: {k} {before:?} {after:?}");
        }
        let saved: serde_json::Value = serde_json::from_str(&c.backup_text().unwrap()).unwrap();
        let saved_keys: Vec<&String> = saved.as_object().unwrap().keys().collect();
        assert_eq!(saved_keys, [name], "{keys}");
        c.run("CHECK", &conf).ok();
        c.run("DEL", &conf).ok();
        assert_eq!(c.link(), before, "{keys}");
    }
}

/// `promisc: false` and absent keys leave the kernel alone (promiscuous
/// mode turned on by someone else stays, and CHECK does not mind it).
#[test]
fn false_promisc_changes_nothing() {
    let c = Container::new("kpf");
    c.ip_link_set(&["promisc", "on"]);
    let conf = c.conf("1.0.0", json!({"promisc": false}));
    c.run("ADD", &conf).ok();
    assert!(c.link().promisc);
    assert!(c.backup_text().is_none());
    c.run("CHECK", &conf).ok();
    c.run("DEL", &conf).ok();
    assert!(c.link().promisc);
}

/// MAC sources: config < CNI_ARGS `MAC=` < `runtimeConfig.mac` <
/// `args.cni.mac`, by what the kernel ends up with.
#[test]
fn mac_precedence_in_the_kernel() {
    let cases = [
        (
            json!({"mac": "02:00:00:00:00:01"}),
            "IgnoreUnknown=1;MAC=02:00:00:00:00:02",
            "02:00:00:00:00:02",
        ),
        (
            json!({"mac": "02:00:00:00:00:01", "runtimeConfig": {"mac": "02:00:00:00:00:03"}}),
            "MAC=02:00:00:00:00:02",
            "02:00:00:00:00:03",
        ),
        (
            json!({"runtimeConfig": {"mac": "02:00:00:00:00:03"}, "args": {"cni": {"mac": "02:00:00:00:00:04"}}}),
            "MAC=02:00:00:00:00:02",
            "02:00:00:00:00:04",
        ),
    ];
    for (keys, args, want) in cases {
        let c = Container::new("kmac");
        let conf = c.conf("1.0.0", keys.clone());
        let r = c.call("ADD", &conf).args(args).run(ours()).ok();
        assert_eq!(c.link().mac, want, "{keys} {args}");
        assert_eq!(r["interfaces"][0]["mac"], want);
        c.call("CHECK", &conf).args(args).run(ours()).ok();
    }
}

/// A value changed behind the plugin's back, and what CHECK then says.
type Change = (&'static str, Box<dyn Fn(&Container)>, &'static str);

#[test]
fn check_fails_once_a_value_changes() {
    let changes: [Change; 6] = [
        (
            "sysctl",
            Box::new(|c| c.set_sysctl("net/core/somaxconn", "999")),
            "Error: Tuning configured value of /proc/sys/net/core/somaxconn is 1234, current value is 999",
        ),
        (
            "mac",
            Box::new(|c| c.ip_link_set(&["address", "02:00:00:00:00:09"])),
            "Error: Tuning configured Ethernet of eth0 is 02:42:0A:F0:28:02, current value is 02:00:00:00:00:09",
        ),
        (
            "promisc",
            Box::new(|c| c.ip_link_set(&["promisc", "off"])),
            "Error: Tuning link eth0 configured promisc is true, current value is 0",
        ),
        (
            "mtu",
            Box::new(|c| c.ip_link_set(&["mtu", "1300"])),
            "Error: Tuning configured MTU of eth0 is 1400, current value is 1300",
        ),
        (
            "allmulti",
            Box::new(|c| c.ip_link_set(&["allmulticast", "off"])),
            "Error: Tuning configured all-multicast mode of eth0 is true, current value is false",
        ),
        (
            "txQLen",
            Box::new(|c| c.ip_link_set(&["txqueuelen", "500"])),
            "Error: Tuning configured Transmit Queue Length of eth0 is 321, current value is 500",
        ),
    ];
    for (what, change, want) in changes {
        let c = Container::new("kchk");
        let conf = c.conf("1.0.0", every_key());
        c.run("ADD", &conf).ok();
        c.run("CHECK", &conf).ok();
        change(&c);
        assert_eq!(c.run("CHECK", &conf).err(999)["msg"], want, "{what}");
    }
    let c = Container::new("kchl");
    let conf = c.conf("1.0.0", json!({"mtu": 1400}));
    c.run("ADD", &conf).ok();
    c.ns.exec(&["ip", "link", "del", "eth0"]);
    let e = c.run("CHECK", &conf).err(999);
    assert_eq!(e["msg"], "Cannot find container link eth0");
}

/// Integers are read back in decimal however they were written (the
/// kernel parses `0x10` as 16, `010` as 8): CHECK compares them as
/// numbers, where the reference's text comparison fails forever. A value
/// that really changed still fails.
#[test]
fn check_compares_integers_as_the_kernel_reads_them() {
    let c = Container::new("kint");
    let conf = c.conf(
        "1.0.0",
        json!({"sysctl": {"net.ipv4.conf.IFNAME.arp_notify": "01",
                          "net.core.somaxconn": "0x400",
                          "net.ipv4.tcp_rmem": "4096 0x4000 010"}}),
    );
    c.run("ADD", &conf).ok();
    assert_eq!(c.sysctl("net/core/somaxconn"), "1024");
    assert_eq!(c.sysctl("net/ipv4/tcp_rmem"), "4096\t16384\t8");
    c.run("CHECK", &conf).ok();
    c.set_sysctl("net/core/somaxconn", "1025");
    let e = c.run("CHECK", &conf).err(999);
    assert_eq!(
        e["msg"],
        "Error: Tuning configured value of /proc/sys/net/core/somaxconn is 0x400, current value is 1025"
    );
}

/// Interface names with dots (VLAN-style) get their own per-interface
/// keys; the reference before v1.2.0 wrote elsewhere.
#[test]
fn ifname_substitution_with_a_dotted_name() {
    let c = Container::with_ifname("kdot", "eth0.100");
    let conf = c.conf(
        "1.0.0",
        json!({"sysctl": {"net.ipv4.conf.IFNAME.arp_notify": "1", "net/ipv6/conf/IFNAME/hop_limit": "44"}}),
    );
    c.run("ADD", &conf).ok();
    assert_eq!(c.sysctl("net/ipv4/conf/eth0.100/arp_notify"), "1");
    assert_eq!(c.sysctl("net/ipv6/conf/eth0.100/hop_limit"), "44");
    c.run("CHECK", &conf).ok();
}

/// A write-only key (a trigger) is written as the reference writes it;
/// there is nothing to read back or put back.
#[test]
fn write_only_sysctls_are_written() {
    let c = Container::new("kwo");
    let conf = c.conf("1.0.0", json!({"sysctl": {"net.ipv4.route.flush": "1"}}));
    c.run("ADD", &conf).ok();
    let e = c.run("CHECK", &conf).err(999);
    assert_eq!(
        e["msg"],
        "open /proc/sys/net/ipv4/route/flush: permission denied"
    );
}

/// A read-only key is refused with the write-only open's error, as the
/// reference's, before anything changes: the sysctl opened for reading and
/// writing at once falls back to that open.
#[test]
fn read_only_sysctls_are_refused_before_any_change() {
    let c = Container::new("kro");
    let conf = c.conf(
        "1.0.0",
        json!({"sysctl": {"net.ipv4.conf.IFNAME.arp_notify": "1", "net.ipv4.conf.all.mc_forwarding": "1"}}),
    );
    let e = c.run("ADD", &conf).err(999);
    assert_eq!(
        e["msg"],
        "open /proc/sys/net/ipv4/conf/all/mc_forwarding: permission denied"
    );
    assert_eq!(c.sysctl("net/ipv4/conf/eth0/arp_notify"), "0");
    assert_eq!(c.sysctl("net/ipv4/conf/all/mc_forwarding"), "0");
}

/// Keys outside /proc/sys/net are refused with the reference's words, and
/// `..` cannot climb out (its dots become slashes first); nothing is
/// written.
#[test]
fn sysctl_paths_cannot_escape_proc_sys_net() {
    let c = Container::new("kesc");
    let hostname = c.sysctl("kernel/hostname");
    let refused = [
        (
            json!({"kernel.hostname": "x"}),
            r#"invalid net sysctl key: "kernel/hostname""#,
        ),
        (
            json!({"/kernel/hostname": "x"}),
            r#"invalid net sysctl key: "/kernel/hostname""#,
        ),
        (json!({"net": "x"}), r#"invalid net sysctl key: "net""#),
        (
            json!({"net.core.somaxconn": "77", "net..kernel": "x"}),
            "open /proc/sys/net/kernel: no such file or directory",
        ),
        (
            json!({"net.core.somaxconn": "77", "net/../../kernel/hostname": "x"}),
            "open /proc/sys/net/kernel/hostname: no such file or directory",
        ),
    ];
    let somaxconn = c.sysctl("net/core/somaxconn");
    for (sysctl, want) in refused {
        let conf = c.conf("1.0.0", json!({"sysctl": sysctl, "mtu": 1300}));
        assert_eq!(c.run("ADD", &conf).err(999)["msg"], want, "{sysctl}");
        assert_eq!(c.sysctl("kernel/hostname"), hostname);
        assert_eq!(c.sysctl("net/core/somaxconn"), somaxconn, "{sysctl}");
        assert_eq!(c.link().mtu, 1500);
        assert!(c.data_files().is_empty());
    }
}

/// A write the kernel refuses half-way: the values written before it are
/// put back, the link is untouched.
#[test]
fn a_refused_sysctl_write_undoes_the_earlier_ones() {
    let c = Container::new("kund");
    let before = c.sysctl("net/core/somaxconn");
    // Key order: net.core.* is written before net.ipv4.*.
    let conf = c.conf(
        "1.0.0",
        json!({"sysctl": {"net.core.somaxconn": "4321", "net.ipv4.conf.IFNAME.arp_notify": "notanumber"}, "mtu": 1300}),
    );
    let e = c.run("ADD", &conf).err(999);
    assert_eq!(
        e["msg"],
        "write /proc/sys/net/ipv4/conf/eth0/arp_notify: invalid argument"
    );
    assert_eq!(c.sysctl("net/core/somaxconn"), before);
    assert_eq!(c.link().mtu, 1500);
    assert!(c.data_files().is_empty());
}

/// Values the device cannot take are refused before anything changes.
#[test]
fn link_values_are_validated_first() {
    let c = Container::new("kval");
    let before = c.link();
    let cases = [
        (
            json!({"mac": "zz"}),
            "invalid args zz for MAC addr: address zz: invalid MAC address",
        ),
        (
            json!({"mac": "02:00:00:00:00:01:02:03"}),
            "invalid MAC address 02:00:00:00:00:01:02:03 for eth0: it has 8 bytes, the device takes 6",
        ),
        (
            json!({"mtu": 70000}),
            "invalid MTU 70000 for eth0: the device takes 68 to 65535",
        ),
        (
            json!({"mtu": -1}),
            "invalid MTU -1: it must be a positive number",
        ),
        (
            json!({"txQLen": -1}),
            "invalid txQLen -1: it must be between 0 and 4294967295",
        ),
    ];
    for (keys, want) in cases {
        let mut keys = keys;
        keys["sysctl"] = json!({"net.core.somaxconn": "555"});
        keys["promisc"] = json!(true);
        let conf = c.conf("1.0.0", keys.clone());
        assert_eq!(c.run("ADD", &conf).err(999)["msg"], want, "{keys}");
        assert_eq!(c.link(), before);
        assert_ne!(c.sysctl("net/core/somaxconn"), "555");
        assert!(c.data_files().is_empty());
    }
    let gone = c.conf("1.0.0", json!({"mtu": 1300}));
    let r = c.call("ADD", &gone).ifname("eth9").run(ours());
    assert_eq!(r.err(999)["msg"], r#"failed to get "eth9": Link not found"#);
}

/// The reference panics here (nil map).
#[test]
fn args_cni_sysctl_without_a_sysctl_key() {
    let c = Container::new("knil");
    let conf = c.conf(
        "1.0.0",
        json!({"args": {"cni": {"sysctl": {"net.core.somaxconn": "2345"}}}}),
    );
    c.run("ADD", &conf).ok();
    assert_eq!(c.sysctl("net/core/somaxconn"), "2345");
    c.run("CHECK", &conf).ok();
    c.run("DEL", &conf).ok();
}

#[test]
fn prev_result_is_required_and_passed_through_in_the_configs_version() {
    let c = Container::new("kprv");
    let mut conf = c.conf("0.4.0", json!({"mtu": 1400}));
    let r = c.run("ADD", &conf).ok();
    assert_eq!(r["cniVersion"], "0.4.0");
    assert_eq!(r["ips"][0]["version"], "4");
    assert_eq!(r["interfaces"][0]["mac"], "00:11:22:33:44:55");
    conf.as_object_mut().unwrap().remove("prevResult");
    assert_eq!(
        c.run("ADD", &conf).err(999)["msg"],
        "Required prevResult missing"
    );
    assert_eq!(
        c.run("CHECK", &conf).err(999)["msg"],
        "Required prevResult missing"
    );
    // DEL needs none.
    c.run("DEL", &conf).ok();
}
