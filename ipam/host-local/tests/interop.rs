//! Interoperability with the reference Go host-local (v1.1.1, Debian's
//! containernetworking-plugins): identical output for identical input, and
//! one dataDir shared by both on a "live node".

mod common;

use std::collections::BTreeSet;
use std::fs;
use std::path::PathBuf;
use std::thread;

use common::*;
use testsupport::TempDir;

const DUAL: &str = r#""ranges":[[{"subnet":"10.240.0.0/29"}],[{"subnet":"fd40::/125"}]]"#;

#[test]
fn output_and_files_are_byte_identical() {
    let d = TempDir::new("hl-interop");
    fs::write(
        d.join("resolv.conf"),
        "nameserver 10.240.0.53\nnameserver fd40::53\ndomain x.example\nsearch a.example b.example\noptions ndots:2\n",
    )
    .unwrap();
    let ipam = format!(
        r#""resolvConf":"{}","routes":[{{"dst":"0.0.0.0/0"}},{{"dst":"fd41::/16","gw":"fd40::9"}}],{DUAL}"#,
        d.join("resolv.conf").display()
    );
    for v in ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0"] {
        let (go_dir, our_dir) = (d.join(&format!("go-{v}")), d.join(&format!("rs-{v}")));
        for id in ["c1", "c2"] {
            let want = run(&reference(), "ADD", id, &conf(v, &go_dir, &ipam));
            let got = run(&ours(), "ADD", id, &conf(v, &our_dir, &ipam));
            assert_eq!(got.code, 0, "{got:?}");
            if v.starts_with("0.") {
                assert_eq!(got.stdout, want.stdout, "cniVersion {v}");
            } else {
                // skel prints 1.x keys sorted, like the newest reference;
                // v1.1.1 used struct order. Same document otherwise.
                assert_eq!(got.json(), want.json(), "cniVersion {v}");
            }
        }
        for name in [
            "10.240.0.2",
            "10.240.0.3",
            "fd40::3",
            "last_reserved_ip.0",
            "last_reserved_ip.1",
        ] {
            assert_eq!(
                fs::read(our_dir.join(format!("net1/{name}"))).unwrap(),
                fs::read(go_dir.join(format!("net1/{name}"))).unwrap(),
                "{name}"
            );
        }
        assert_eq!(fs::metadata(our_dir.join("net1/lock")).unwrap().len(), 0);
    }
}

#[test]
fn error_messages_match() {
    let d = TempDir::new("hl-interop");
    let cases: &[(&str, &str, &str)] = &[
        ("c1", "", DUAL),
        ("c1", "", DUAL),
        ("c2", "IP=10.240.0.1", DUAL),
        ("c2", "IP=10.240.0.2", DUAL),
        ("c2", "K8S_POD_NAME=x", DUAL),
        ("c2", "IP=10.240.0.3;", DUAL),
        ("c2", "", r#""ranges":[[{"subnet":"10.240.0.0/31"}]]"#),
        ("c2", "", r#""ranges":[[{"subnet":"10.240.0.1/29"}]]"#),
        (
            "c2",
            "",
            r#""ranges":[[{"subnet":"10.240.0.0/29","rangeStart":"10.240.1.1"}]]"#,
        ),
        (
            "c2",
            "",
            r#""ranges":[[{"subnet":"10.240.0.0/29"},{"subnet":"fd40::/64"}]]"#,
        ),
        (
            "c2",
            "",
            r#""ranges":[[{"subnet":"10.240.0.0/24"},{"subnet":"10.240.0.0/25"}]]"#,
        ),
        (
            "c2",
            "",
            r#""ranges":[[{"subnet":"10.240.0.0/24"}],[{"subnet":"10.240.0.0/25"}]]"#,
        ),
        ("c2", "", r#""ranges":[[]]"#),
        ("c2", "", r#""ranges":[]"#),
    ];
    for (i, (id, args, ipam)) in cases.iter().enumerate() {
        let run_one = |bin: PathBuf, dir: PathBuf| {
            call("ADD", id, "eth0")
                .args(args)
                .stdin(conf("1.0.0", &dir, ipam))
                .run(&bin)
        };
        let want = run_one(reference(), d.join("go"));
        let got = run_one(ours(), d.join("rs"));
        assert_eq!(got.code, want.code, "case {i}: {got:?} vs {want:?}");
        if want.code != 0 {
            assert_eq!(got.json()["msg"], want.json()["msg"], "case {i}");
            assert_eq!(got.json()["code"], want.json()["code"], "case {i}");
        }
    }
    let v02 = r#""ranges":[[{"subnet":"10.240.0.0/29"}],[{"subnet":"10.240.1.0/29"}]]"#;
    let want = run(
        &reference(),
        "ADD",
        "c3",
        &conf("0.2.0", &d.join("go"), v02),
    );
    let got = run(&ours(), "ADD", "c3", &conf("0.2.0", &d.join("rs"), v02));
    assert_eq!(got.json()["msg"], want.json()["msg"]);
}

#[test]
fn one_data_dir_shared_both_ways() {
    let d = TempDir::new("hl-interop");
    let c = conf("1.0.0", d.path(), DUAL);
    let (go, rs) = (reference(), ours());
    // Round robin continues across the two writers.
    assert_eq!(
        addresses(&run(&rs, "ADD", "r1", &c).ok()),
        ["10.240.0.2", "fd40::2"]
    );
    assert_eq!(
        addresses(&run(&go, "ADD", "g1", &c).ok()),
        ["10.240.0.3", "fd40::3"]
    );
    assert_eq!(
        addresses(&run(&rs, "ADD", "r2", &c).ok()),
        ["10.240.0.4", "fd40::4"]
    );
    // Each sees the other's leases: CHECK, and the duplicate refusal.
    run(&go, "CHECK", "r1", &c).ok();
    run(&rs, "CHECK", "g1", &c).ok();
    let dup = run(&rs, "ADD", "g1", &c).err(999);
    assert!(
        dup["msg"]
            .as_str()
            .unwrap()
            .contains("10.240.0.3 has been allocated to g1")
    );
    let dup = run(&go, "ADD", "r2", &c).err(999);
    assert!(
        dup["msg"]
            .as_str()
            .unwrap()
            .contains("10.240.0.4 has been allocated to r2")
    );
    // Each releases the other's.
    run(&go, "DEL", "r1", &c).ok();
    run(&rs, "DEL", "g1", &c).ok();
    let left: Vec<String> = leases(d.path()).into_iter().map(|(ip, _)| ip).collect();
    assert_eq!(left, ["10.240.0.4", "fd40::4"]);
    run(&rs, "CHECK", "g1", &c).err(999);
    run(&go, "CHECK", "r1", &c).err(999);
    // A temporary lease left by a killed ADD of ours is invisible to Go
    // (it lives outside the network directory Go walks) and is removed by
    // our next call.
    let ghost = d.join(".host-local/net1/tmp/4242.1");
    fs::write(&ghost, "ghost\r\neth0").unwrap();
    run(&go, "CHECK", "ghost", &c).err(999);
    run(&go, "ADD", "ghost", &c).ok();
    run(&go, "DEL", "ghost", &c).ok();
    assert!(ghost.exists(), "Go does not look there");
    run(&rs, "CHECK", "r2", &c).ok();
    assert!(!ghost.exists(), "stale temporary file not cleaned");
    run(&go, "CHECK", "r2", &c).ok();
    run(&go, "DEL", "r2", &c).ok();
    run(&rs, "CHECK", "r2", &c).err(999);
    assert!(leases(d.path()).is_empty());
}

#[test]
fn interleaved_adds_never_share_an_address() {
    let d = TempDir::new("hl-interop");
    let c = conf(
        "1.0.0",
        d.path(),
        r#""ranges":[[{"subnet":"10.240.0.0/24"}],[{"subnet":"fd40::/120"}]]"#,
    );
    let go_first = |i: usize| i.is_multiple_of(2);
    let spawn_all = |cmd: &'static str, swap: bool| {
        (0..48)
            .map(|i| {
                let (c, bin) = (
                    c.clone(),
                    if go_first(i) != swap {
                        reference()
                    } else {
                        ours()
                    },
                );
                thread::spawn(move || (i, run(&bin, cmd, &format!("x{i}"), &c)))
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    };
    let mut seen = BTreeSet::new();
    let mut expected = BTreeSet::new();
    for (i, out) in spawn_all("ADD", false) {
        let ips = addresses(&out.ok());
        assert_eq!(ips.len(), 2);
        for ip in ips {
            assert!(seen.insert(ip.clone()), "{ip} handed out twice");
            expected.insert((ip, format!("x{i}\r\neth0")));
        }
    }
    assert_eq!(
        leases(d.path()).into_iter().collect::<BTreeSet<_>>(),
        expected
    );
    // Each container is deleted by the other implementation.
    for (_, out) in spawn_all("DEL", true) {
        out.ok();
    }
    assert!(leases(d.path()).is_empty());
}
