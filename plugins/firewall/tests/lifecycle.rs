//! The verbs without traffic, on both backends, with a bridge-shaped
//! prevResult in a throwaway host namespace: DEL without netns or
//! prevResult (twice), CHECK after a rule is removed, GC, the
//! reference's messages, an address another attachment holds, VERSION
//! and the about text nerdctl reads.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use serde_json::{Value, json};

const BACKENDS: [&str; 2] = ["iptables", "nftables"];

fn added(lab: &Lab, backend: &str, cid: &str, ips: &[&str]) -> Value {
    let conf = lab.conf(
        &lab.a.name,
        json!({"backend": backend, "ingressPolicy": "same-bridge"}),
    );
    let conf = with_prev(&conf, &prev(&lab.a.bridge, ips));
    lab.firewall("ADD", &conf, cid, "/x").ok();
    conf
}

fn bare(lab: &Lab, backend: &str) -> Value {
    lab.conf(&lab.a.name, json!({"backend": backend}))
}

#[test]
fn del_needs_neither_netns_nor_prev_result_and_is_idempotent() {
    let lab = Lab::new("fwl");
    for backend in BACKENDS {
        added(&lab, backend, "c1", &["10.240.80.2/24", "fd40:80::2/64"]);
        assert_eq!(
            lab.rules_of("10.240.80.2", "c1").len(),
            2 + 2 * (backend == "nftables") as usize
        );
        assert_eq!(lab.records(), 1);
        for _ in 0..2 {
            lab.firewall("DEL", &bare(&lab, backend), "c1", "").ok();
            assert_eq!(lab.rules_of("10.240.80.2", "c1"), Vec::<String>::new());
            assert_eq!(lab.rules_of("fd40:80::2", "c1"), Vec::<String>::new());
            assert_eq!(lab.records(), 0);
        }
    }
    // With the backend unset, DEL looks at both.
    added(&lab, "nftables", "c2", &["10.240.80.3/24"]);
    added(&lab, "iptables", "c3", &["10.240.80.4/24"]);
    for cid in ["c2", "c3"] {
        lab.firewall("DEL", &lab.conf(&lab.a.name, json!({})), cid, "")
            .ok();
    }
    assert_eq!(lab.rules_of("10.240.80.3", "c2"), Vec::<String>::new());
    assert_eq!(lab.rules_of("10.240.80.4", "c3"), Vec::<String>::new());
}

#[test]
fn check_fails_once_a_rule_is_gone() {
    let lab = Lab::new("fwl");
    let conf = added(&lab, "iptables", "c1", &["10.240.80.2/24"]);
    lab.firewall("CHECK", &conf, "c1", "/x").ok();
    lab.host.ns.exec(&[
        "iptables",
        "-D",
        "CNI-FORWARD",
        "-s",
        "10.240.80.2/32",
        "-j",
        "ACCEPT",
    ]);
    let e = lab.firewall("CHECK", &conf, "c1", "/x").err(999);
    assert_eq!(
        e["msg"],
        "expected rule [-s 10.240.80.2/32 -j ACCEPT] not found"
    );
    lab.firewall("ADD", &conf, "c1", "/x").ok();
    lab.firewall("CHECK", &conf, "c1", "/x").ok();
    lab.host
        .ns
        .exec(&["iptables", "-F", "CNI-ISOLATION-STAGE-2"]);
    let e = lab.firewall("CHECK", &conf, "c1", "/x").err(999);
    assert!(
        e["msg"]
            .as_str()
            .unwrap()
            .starts_with("expected CNI-ISOLATION-STAGE-2 rule [-o "),
        "{e}"
    );

    let conf = added(&lab, "nftables", "c2", &["fd40:80::3/64"]);
    lab.firewall("CHECK", &conf, "c2", "/x").ok();
    let listed = lab.host.sh(&[
        "nft",
        "-a",
        "list",
        "chain",
        "inet",
        "cni_plugins_firewall",
        "forward",
    ]);
    let handle = listed
        .lines()
        .find(|l| l.contains("ip6 saddr fd40:80::3 accept"))
        .and_then(|l| l.rsplit("# handle ").next())
        .unwrap()
        .trim()
        .to_string();
    lab.host.ns.exec(&[
        "nft",
        "delete",
        "rule",
        "inet",
        "cni_plugins_firewall",
        "forward",
        "handle",
        &handle,
    ]);
    let e = lab.firewall("CHECK", &conf, "c2", "/x").err(999);
    assert_eq!(
        e["msg"],
        format!(
            "expected rule [ip6 saddr fd40:80::3 accept comment \"name: {} if: eth0 id: c2\"] in chain inet cni_plugins_firewall forward not found",
            lab.a.name
        )
    );
}

#[test]
fn gc_removes_the_rules_of_attachments_no_longer_valid() {
    let lab = Lab::new("fwl");
    for backend in BACKENDS {
        added(&lab, backend, "old", &["10.240.80.2/24", "fd40:80::2/64"]);
        added(&lab, backend, "live", &["10.240.80.3/24"]);
        let mut conf = bare(&lab, backend);
        conf["cniVersion"] = json!("1.1.0");
        lab.firewall("GC", &conf, "", "").ok();
        assert_eq!(
            lab.rules_of("10.240.80.2", "old").len(),
            2 + 2 * (backend == "nftables") as usize
        );
        conf["cni.dev/valid-attachments"] = json!([{"containerID": "live", "ifname": "eth0"}]);
        lab.firewall("GC", &conf, "", "").ok();
        assert_eq!(lab.rules_of("10.240.80.2", "old"), Vec::<String>::new());
        assert_eq!(lab.rules_of("fd40:80::2", "old"), Vec::<String>::new());
        assert!(!lab.rules_of("10.240.80.3", "live").is_empty());
        assert_eq!(lab.records(), 1);
        lab.firewall("DEL", &conf, "live", "").ok();
        assert_eq!(lab.rules_of("10.240.80.3", "live"), Vec::<String>::new());
    }
}

/// GC of one network never touches another's rules, even when the other
/// network's name starts with this one's.
#[test]
fn gc_spares_other_networks() {
    let lab = Lab::new("fwl");
    for backend in BACKENDS {
        let longer = format!("{}x", lab.a.name);
        let add = |net: &str, cid: &str, ip: &str| {
            let conf = lab.conf(net, json!({"backend": backend}));
            let conf = with_prev(&conf, &prev(&lab.a.bridge, &[ip]));
            lab.firewall("ADD", &conf, cid, "/x").ok();
        };
        add(&lab.a.name, "a1", "10.240.82.2/24");
        add(&longer, "x1", "10.240.82.3/24");
        add(&lab.b.name, "b1", "10.240.82.4/24");
        let mut gc = lab.conf(
            &lab.a.name,
            json!({"backend": backend, "cniVersion": "1.1.0"}),
        );
        gc["cni.dev/valid-attachments"] = json!([]);
        lab.firewall("GC", &gc, "", "").ok();
        assert_eq!(lab.rules_of("10.240.82.2", "a1"), Vec::<String>::new());
        assert!(!lab.rules_of("10.240.82.3", "x1").is_empty(), "{backend}");
        assert!(!lab.rules_of("10.240.82.4", "b1").is_empty(), "{backend}");
        assert_eq!(lab.records(), 2);
        for (net, cid) in [(&longer, "x1"), (&lab.b.name, "b1")] {
            lab.firewall("DEL", &lab.conf(net, json!({})), cid, "").ok();
        }
        assert_eq!(lab.records(), 0);
    }
}

/// A record cut short (a crash while the disk filled) or a dataDir that
/// is a file: DEL still succeeds and removes what it can find (nftables
/// rules by comment, iptables rules by `prevResult`), and the broken
/// record goes.
#[test]
fn del_survives_a_broken_record_or_data_dir() {
    let lab = Lab::new("fwl");
    for backend in BACKENDS {
        let conf = added(&lab, backend, "c1", &["10.240.88.2/24"]);
        let net_dir = lab.records.join(&lab.a.name);
        for e in std::fs::read_dir(&net_dir).unwrap().flatten() {
            std::fs::write(e.path(), "{\"addrs\":[\"10.2").unwrap();
        }
        let del = match backend {
            "iptables" => conf.clone(),
            _ => bare(&lab, backend),
        };
        lab.firewall("DEL", &del, "c1", "").ok();
        assert_eq!(lab.rules_of("10.240.88.2", "c1"), Vec::<String>::new());
        assert_eq!(lab.records(), 0);
    }
    let file = lab.records.join("file");
    std::fs::write(&file, "").unwrap();
    let mut conf = bare(&lab, "nftables");
    conf["dataDir"] = json!(file.to_str().unwrap());
    lab.firewall("DEL", &conf, "c1", "").ok();
}

/// Two attachments of one container to one network (two interfaces, as
/// multus makes them): DEL of one leaves the other's rules, CHECK of the
/// other passes, GC with one of them valid takes the other's, on both
/// backends.
#[test]
fn del_of_one_interface_spares_the_containers_other_one() {
    let lab = Lab::new("fwl");
    for backend in BACKENDS {
        let run = |cmd: &str, conf: &Value, ifname: &str| {
            lab.host
                .request(cmd, conf, "c1", "/x", ifname)
                .env("DBUS_SYSTEM_BUS_ADDRESS", NO_BUS)
                .run_in(lab.host.ns.name(), bin())
        };
        let conf = bare(&lab, backend);
        let first = with_prev(&conf, &prev(&lab.a.bridge, &["10.240.83.2/24"]));
        let second = with_prev(&conf, &prev(&lab.a.bridge, &["10.240.83.3/24"]));
        run("ADD", &first, "net1").ok();
        run("ADD", &second, "net2").ok();
        run("DEL", &conf, "net1").ok();
        let all = lab.iptables() + &lab.nft();
        assert!(!all.contains("10.240.83.2"), "{backend}: {all}");
        assert!(all.contains("10.240.83.3"), "{backend}: {all}");
        run("CHECK", &second, "net2").ok();
        // GC with only the first attachment valid takes the second's.
        run("ADD", &first, "net1").ok();
        let mut gc = conf.clone();
        gc["cniVersion"] = json!("1.1.0");
        gc["cni.dev/valid-attachments"] = json!([{"containerID": "c1", "ifname": "net1"}]);
        lab.firewall("GC", &gc, "", "").ok();
        let all = lab.iptables() + &lab.nft();
        assert!(!all.contains("10.240.83.3"), "{backend}: {all}");
        run("CHECK", &first, "net1").ok();
        run("DEL", &conf, "net1").ok();
        let all = lab.iptables() + &lab.nft();
        assert!(!all.contains("10.240.83."), "{backend}: {all}");
        assert_eq!(lab.records(), 0);
    }
}

#[test]
fn a_stale_del_spares_an_address_another_attachment_holds() {
    let lab = Lab::new("fwl");
    let conf = added(&lab, "iptables", "old", &["10.240.80.2/24"]);
    added(&lab, "iptables", "new", &["10.240.80.2/24"]);
    // The runtime deletes the old container late, with its prevResult.
    lab.firewall("DEL", &conf, "old", "").ok();
    assert_eq!(lab.rules_of("10.240.80.2", "").len(), 2);
    lab.firewall("DEL", &bare(&lab, "iptables"), "new", "").ok();
    assert_eq!(lab.rules_of("10.240.80.2", ""), Vec::<String>::new());
}

#[test]
fn reference_messages_and_nothing_changed_on_refusal() {
    let lab = Lab::new("fwl");
    let before = (lab.iptables(), lab.nft());
    let e = lab
        .firewall("ADD", &bare(&lab, "iptables"), "c1", "/x")
        .err(999);
    assert_eq!(e["msg"], "missing prevResult from earlier plugin");
    let e = lab
        .firewall("CHECK", &bare(&lab, "iptables"), "c1", "/x")
        .err(999);
    assert_eq!(e["msg"], "missing prevResult from earlier plugin");
    let conf = lab.conf(&lab.a.name, json!({"ingressPolicy": "strict"}));
    let conf = with_prev(&conf, &prev(&lab.a.bridge, &["10.240.80.2/24"]));
    let e = lab.firewall("ADD", &conf, "c1", "/x").err(999);
    assert_eq!(e["msg"], "unknown ingress policy: \"strict\"");
    // DEL does not need the policy: it succeeds (the reference fails it).
    lab.firewall("DEL", &conf, "c1", "").ok();
    let conf = lab.conf(&lab.a.name, json!({"ingressPolicy": "isolated"}));
    let p = json!({"cniVersion": "1.0.0", "ips": [{"address": "10.240.80.2/24"}]});
    let e = lab
        .firewall("ADD", &with_prev(&conf, &p), "c1", "/x")
        .err(999);
    assert_eq!(
        e["msg"],
        "interface needs to be set for ingress policy \"isolated\", make sure to chain \"firewall\" plugin with \"bridge\""
    );
    assert_eq!((lab.iptables(), lab.nft()), before);
    assert_eq!(lab.records(), 0);
    // A 0.3.1 config: not a version the plugin supports, as the reference.
    let mut old = with_prev(
        &bare(&lab, "iptables"),
        &prev(&lab.a.bridge, &["10.240.80.2/24"]),
    );
    old["cniVersion"] = json!("0.3.1");
    lab.firewall("ADD", &old, "c1", "/x").err(1);
    assert_eq!((lab.iptables(), lab.nft()), before);
    assert_eq!(lab.records(), 0);
}

/// A bridge name no interface can have is refused before anything
/// changes (with iptables, `-i x y` would be installed for `x\ny` and
/// duplicated by every ADD). `a"b` is a valid name, but `iptables-save`
/// prints it unquoted, so our iptables ADD could not find its rules
/// again: refused with iptables, fine with nftables.
#[test]
fn bridge_names_no_interface_can_have_are_refused() {
    let lab = Lab::new("fwl");
    let before = (lab.iptables(), lab.nft());
    let odd = |backend: &str, br: &str| {
        let conf = lab.conf(
            &lab.a.name,
            json!({"backend": backend, "ingressPolicy": "isolated"}),
        );
        with_prev(&conf, &prev(br, &["10.240.84.2/24", "fd40:84::2/64"]))
    };
    for backend in BACKENDS {
        for br in ["x\ny", "a b", "a/b", "a:b", ".", "abcdefghijklmnop"] {
            let e = lab.firewall("ADD", &odd(backend, br), "c1", "/x").err(999);
            let quoted = serde_json::to_string(br).unwrap();
            assert_eq!(
                e["msg"],
                format!("invalid bridge name {quoted}: not a valid interface name"),
                "{backend}"
            );
            lab.firewall("CHECK", &odd(backend, br), "c1", "/x")
                .err(999);
            assert_eq!((lab.iptables(), lab.nft()), before, "{backend} {br:?}");
            assert_eq!(lab.records(), 0);
        }
    }
    let e = lab
        .firewall("ADD", &odd("iptables", "a\"b"), "c1", "/x")
        .err(999);
    assert_eq!(
        e["msg"],
        "bridge name \"a\\\"b\" holds a quote, which iptables-save does not print back"
    );
    assert_eq!((lab.iptables(), lab.nft()), before);
    // A trailing `+` is iptables' wildcard: `-i br+` would match `br0`.
    for br in ["br+", "+"] {
        let e = lab
            .firewall("ADD", &odd("iptables", br), "c1", "/x")
            .err(999);
        assert_eq!(
            e["msg"],
            format!(
                "bridge name \"{br}\" ends in +, which iptables reads as a wildcard over \
                 every interface starting with the rest"
            )
        );
        lab.firewall("CHECK", &odd("iptables", br), "c1", "/x")
            .err(999);
        assert_eq!((lab.iptables(), lab.nft()), before, "{br}");
        assert_eq!(lab.records(), 0);
    }
    // nftables compares the whole name.
    let conf = odd("nftables", "br+");
    lab.firewall("ADD", &conf, "c1", "/x").ok();
    lab.firewall("CHECK", &conf, "c1", "/x").ok();
    assert!(lab.nft().contains("oifname \"br+\" drop"), "{}", lab.nft());
    lab.firewall("DEL", &conf, "c1", "").ok();
    let conf = odd("nftables", "a\"b");
    for _ in 0..2 {
        lab.firewall("ADD", &conf, "c1", "/x").ok();
    }
    lab.firewall("CHECK", &conf, "c1", "/x").ok();
    assert_eq!(lab.nft().matches("oifname \"a\"b\" drop").count(), 2);
    lab.firewall("DEL", &conf, "c1", "").ok();
}

/// An `iptablesAdminChainName` iptables cannot take (blank, too long, a
/// target's name, the chain that jumps to it, a line break with a rule
/// after it) fails ADD with iptables' reason and changes nothing: the
/// batch of each family is all or nothing, and the failed ADD undoes the
/// other family's.
#[test]
fn admin_chain_names_iptables_refuses_change_nothing() {
    let lab = Lab::new("fwl");
    let before = (lab.iptables(), lab.nft());
    for (admin, why) in [
        ("A B", "Invalid chain name `A B'"),
        (&*"x".repeat(29), "too long (must be under 29 chars)"),
        ("DROP", "chain name may not clash with target name"),
        ("CNI-FORWARD", "Too many links"),
        ("X\n-A FORWARD -j DROP", "Invalid chain name"),
    ] {
        let conf = lab.conf(
            &lab.a.name,
            json!({"backend": "iptables", "iptablesAdminChainName": admin}),
        );
        let conf = with_prev(
            &conf,
            &prev(&lab.a.bridge, &["10.240.86.2/24", "fd40:86::2/64"]),
        );
        let e = lab.firewall("ADD", &conf, "c1", "/x").err(999);
        let msg = e["msg"].as_str().unwrap();
        assert!(
            msg.starts_with("iptables-restore: ") || msg.starts_with("ip6tables-restore: "),
            "{admin:?}: {msg}"
        );
        assert!(msg.contains(why), "{admin:?}: {msg}");
        assert_eq!((lab.iptables(), lab.nft()), before, "{admin:?}");
        assert_eq!(lab.records(), 0);
    }
}

#[test]
fn no_addresses_nothing_installed_check_passes_status() {
    let lab = Lab::new("fwl");
    let before = (lab.iptables(), lab.nft());
    for backend in BACKENDS {
        let conf = with_prev(&bare(&lab, backend), &prev(&lab.a.bridge, &[]));
        let out = lab.firewall("ADD", &conf, "c1", "/x").ok();
        let mut expected = prev(&lab.a.bridge, &[]);
        // Go's encoder leaves the empty list out.
        expected.as_object_mut().unwrap().remove("ips");
        assert_eq!(out, expected);
        lab.firewall("CHECK", &conf, "c1", "/x").ok();
        assert_eq!((lab.iptables(), lab.nft()), before);
        let mut status = bare(&lab, backend);
        status["cniVersion"] = json!("1.1.0");
        lab.firewall("STATUS", &status, "", "").ok();
    }
    assert_eq!(lab.records(), 0);
}

#[test]
fn version_lists_0_4_0_and_later() {
    let lab = Lab::new("fwl");
    let r = lab
        .firewall("VERSION", &json!({"cniVersion": "1.0.0"}), "", "")
        .ok();
    assert_eq!(r["supportedVersions"], json!(["0.4.0", "1.0.0", "1.1.0"]));
}

/// nerdctl's check (`pkg/netutil`, `FirewallPluginGEQVersion`): run the
/// bare binary, exit status 0, the first stderr line starting with `CNI
/// firewall plugin ` holds a semver (leading `v` allowed) compared with
/// `v1.7.1`; below it, nerdctl falls back from `isolated` to
/// `same-bridge`.
#[test]
fn the_about_text_makes_nerdctl_enable_isolated() {
    let out = Command::new(bin()).env_clear().output().unwrap();
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8(out.stderr).unwrap();
    let v = stderr
        .split('\n')
        .find_map(|l| l.strip_prefix("CNI firewall plugin "))
        .expect("no line starts with \"CNI firewall plugin \"");
    let v = semver(v).unwrap_or_else(|| panic!("not a semver: {v:?}"));
    assert!(v >= (1, 7, 1, true), "{stderr}");
    assert_eq!(semver("v1.7.1-rc1"), Some((1, 7, 1, false)));
    // Debian's Go plugin fails the same check: "version unknown".
    let go = Path::new(REFERENCE_FIREWALL);
    if go.is_file() {
        let out = Command::new(go).env_clear().output().unwrap();
        let text = String::from_utf8(out.stderr).unwrap();
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix("CNI firewall plugin "));
        assert_eq!(line, Some("version unknown"), "{text}");
        assert!(semver("version unknown").is_none());
    }
}

/// ADDs at once (a runtime starting a pod set) never duplicate a shared
/// chain or rule, on either backend: each attachment's rules are there
/// once, the jumps once.
#[test]
fn concurrent_adds_make_shared_objects_once() {
    let lab = Lab::new("fwl");
    for backend in BACKENDS {
        std::thread::scope(|s| {
            for i in 0..6 {
                let lab = &lab;
                s.spawn(move || {
                    let ip4 = format!("10.240.81.{}/24", 10 + i);
                    let ip6 = format!("fd40:81::{}/64", 10 + i);
                    added(lab, backend, &format!("p{i}"), &[&ip4, &ip6]);
                });
            }
        });
        let (ipt, nft) = (lab.iptables(), lab.nft());
        let count = |text: &str, what: &str| text.matches(what).count();
        match backend {
            "iptables" => {
                assert_eq!(
                    count(
                        &ipt,
                        "-A FORWARD -m comment --comment \"CNI firewall plugin rules\" -j CNI-FORWARD"
                    ),
                    2,
                    "{ipt}"
                );
                assert_eq!(count(&ipt, "-j CNI-ADMIN"), 2, "{ipt}");
                assert_eq!(count(&ipt, "-j CNI-ISOLATION-STAGE-1"), 2, "{ipt}");
                assert_eq!(count(&ipt, ":CNI-FORWARD "), 2, "{ipt}");
                assert_eq!(count(&ipt, "-A CNI-FORWARD -s "), 12, "{ipt}");
            }
            _ => {
                assert_eq!(count(&nft, "jump admin"), 1, "{nft}");
                assert_eq!(count(&nft, "jump isolation_stage_1"), 1, "{nft}");
                assert_eq!(count(&nft, "saddr 10.240.81."), 6, "{nft}");
                assert_eq!(count(&nft, "saddr fd40:81::"), 6, "{nft}");
            }
        }
        for i in 0..6 {
            lab.firewall("DEL", &bare(&lab, backend), &format!("p{i}"), "")
                .ok();
        }
        assert_eq!(lab.records(), 0);
    }
}

/// ADD, CHECK and DEL of many containers at once, and two DELs of each
/// at once (a runtime retrying a DEL that timed out while the first still
/// runs), on both backends: every call succeeds, no rule of any
/// container is left, the shared objects once, no record.
#[test]
fn concurrent_adds_and_dels_leave_nothing() {
    let lab = Lab::new("fwl");
    for backend in BACKENDS {
        std::thread::scope(|s| {
            for i in 0..6 {
                let lab = &lab;
                s.spawn(move || {
                    let cid = format!("q{i}");
                    for round in 0..3 {
                        let ip4 = format!("10.240.85.{}/24", 10 + i);
                        let ip6 = format!("fd40:85::{}/64", 10 + i);
                        let conf = added(lab, backend, &cid, &[&ip4, &ip6]);
                        lab.firewall("CHECK", &conf, &cid, "/x").ok();
                        std::thread::scope(|d| {
                            for _ in 0..2 {
                                d.spawn(|| {
                                    let r = lab.firewall("DEL", &bare(lab, backend), &cid, "");
                                    assert_eq!(r.code, 0, "{backend} {cid} round {round}: {r:?}");
                                });
                            }
                        });
                    }
                });
            }
        });
        let (ipt, nft) = (lab.iptables(), lab.nft());
        assert!(
            !ipt.contains("10.240.85.") && !ipt.contains("fd40:85::"),
            "{ipt}"
        );
        assert!(
            !nft.contains("10.240.85.") && !nft.contains("fd40:85::"),
            "{nft}"
        );
        if backend == "iptables" {
            assert_eq!(ipt.matches("-j CNI-ADMIN").count(), 2, "{ipt}");
        } else {
            assert_eq!(nft.matches("jump admin").count(), 1, "{nft}");
        }
        assert_eq!(lab.records(), 0);
    }
}

/// Masterminds' `NewVersion` reduced to what the comparison needs:
/// major, minor, patch and whether it is a release (a prerelease sorts
/// lower; build metadata is ignored).
fn semver(s: &str) -> Option<(u64, u64, u64, bool)> {
    let s = s.trim().strip_prefix('v').unwrap_or(s.trim());
    let s = s.split('+').next()?;
    let (core, pre) = match s.split_once('-') {
        Some((c, _)) => (c, true),
        None => (s, false),
    };
    let mut n = core.split('.').map(|p| p.parse::<u64>().ok());
    let v = (
        n.next()??,
        n.next().unwrap_or(Some(0))?,
        n.next().unwrap_or(Some(0))?,
    );
    if n.next().is_some() {
        return None;
    }
    Some((v.0, v.1, v.2, !pre))
}

/// The processes a firewall call starts (strace: every successful
/// `execve` but the plugin's own).
fn execs(lab: &Lab, cmd: &str, conf: &Value, cid: &str) -> Vec<String> {
    let bus = format!("DBUS_SYSTEM_BUS_ADDRESS={NO_BUS}");
    let traced = testsupport::strace::Traced::new(
        "firewall",
        lab.host.ns.name(),
        &[&bus],
        "-z",
        "execve",
        bin(),
    );
    lab.host
        .request(cmd, conf, cid, "", "eth0")
        .run(&traced.wrapper)
        .ok();
    traced
        .log()
        .lines()
        .filter(|l| l.contains("execve(") && !l.contains(&bin().display().to_string()))
        .map(str::to_string)
        .collect()
}

/// DEL with the backend unset goes by the record: an nftables
/// attachment's DEL starts no process; an iptables one's starts one
/// restore per family and no `iptables-save` (the deletions are sent
/// without reading first).
#[test]
fn del_by_record_starts_only_what_it_needs() {
    // scripts/test.sh installs strace; without it this test fails rather
    // than passing unseen.
    assert!(Path::new("/usr/bin/strace").is_file(), "strace is missing");
    let lab = Lab::new("fwl");
    let unset = lab.conf(&lab.a.name, json!({}));
    added(&lab, "nftables", "n1", &["10.240.80.2/24", "fd40:80::2/64"]);
    assert_eq!(execs(&lab, "DEL", &unset, "n1"), Vec::<String>::new());
    assert_eq!(lab.rules_of("10.240.80.2", "n1"), Vec::<String>::new());
    added(&lab, "iptables", "i1", &["10.240.80.3/24", "fd40:80::3/64"]);
    let started = execs(&lab, "DEL", &unset, "i1");
    assert_eq!(started.len(), 2, "{started:#?}");
    assert!(
        started.iter().all(|l| l.contains("tables-restore")),
        "{started:#?}"
    );
    assert_eq!(lab.rules_of("10.240.80.3", "i1"), Vec::<String>::new());
    assert_eq!(lab.rules_of("fd40:80::3", "i1"), Vec::<String>::new());
}

/// No record is written through a link planted at its name, its
/// temporary file's or the lock's, with either backend: the links'
/// targets stay as they were, ADD writes root-only files in their place,
/// DEL removes them.
#[test]
fn planted_links_are_never_followed() {
    use std::os::unix::fs::PermissionsExt;
    let lab = Lab::new("fwpl");
    for backend in BACKENDS {
        let dir = lab.records.join(&lab.a.name);
        let mut planted = testsupport::planted::Planted::new();
        planted.plant(&[
            dir.join("c1:eth0"),
            dir.join(".c1:eth0.tmp"),
            lab.records.join(".lock"),
        ]);
        added(&lab, backend, "c1", &["10.240.80.2/24"]);
        planted.check(backend);
        assert!(
            planted.still_links().is_empty(),
            "{:?}",
            planted.still_links()
        );
        let mode = std::fs::metadata(dir.join("c1:eth0"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        lab.firewall("DEL", &bare(&lab, backend), "c1", "").ok();
        planted.check(backend);
        assert_eq!(lab.records(), 0);
        assert_eq!(lab.rules_of("10.240.80.2", "c1"), Vec::<String>::new());
    }
}
