//! Each allocation, release and GC rule on a temporary dataDir, calling the
//! command functions directly (no process).

use std::fs;

use skel::CniResult;
use testsupport::TempDir;

use super::*;

struct Net {
    dir: TempDir,
    conf: String,
}

impl Net {
    fn new(ipam: &str) -> Net {
        Net::with_version("1.1.0", ipam)
    }

    fn with_version(version: &str, ipam: &str) -> Net {
        let dir = TempDir::new("hl-plugin");
        let conf = format!(
            r#"{{"cniVersion":"{version}","name":"net1","ipam":{{"type":"host-local","dataDir":"{}",{ipam}}}}}"#,
            dir.to_str()
        );
        Net { dir, conf }
    }

    fn args(&self, id: &str, ifname: &str, cni_args: &str, extra: &str) -> CmdArgs {
        let stdin = if extra.is_empty() {
            self.conf.clone()
        } else {
            format!("{},{extra}}}", &self.conf[..self.conf.len() - 1])
        };
        CmdArgs {
            container_id: id.into(),
            ifname: ifname.into(),
            args: cni_args.into(),
            stdin: stdin.into_bytes(),
            cni_version: "1.1.0".into(),
            ..Default::default()
        }
    }

    fn add_full(
        &self,
        id: &str,
        ifname: &str,
        cni_args: &str,
        extra: &str,
    ) -> Result<Vec<String>, String> {
        match add(&self.args(id, ifname, cni_args, extra)) {
            Ok(Reply::Result(CniResult::V1(r))) => {
                Ok(r.ips.iter().map(|i| i.address.to_string()).collect())
            }
            Ok(other) => panic!("unexpected reply {other:?}"),
            Err(e) => Err(e.to_string()),
        }
    }

    fn add(&self, id: &str) -> Result<Vec<String>, String> {
        self.add_full(id, "eth0", "", "")
    }

    fn del(&self, id: &str, ifname: &str) {
        del(&self.args(id, ifname, "", "")).unwrap();
    }

    fn check(&self, id: &str, ifname: &str) -> Result<(), String> {
        check(&self.args(id, ifname, "", ""))
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Lease files and their contents, sorted.
    fn leases(&self) -> Vec<(String, String)> {
        testsupport::lease_files(&self.dir.join("net1"))
    }
}

const V4_29: &str = r#""ranges":[[{"subnet":"10.240.0.0/29"}]]"#;

#[test]
fn round_robin_from_last_reserved_with_wrap_and_reuse() {
    let n = Net::new(V4_29);
    for (i, want) in [
        "10.240.0.2",
        "10.240.0.3",
        "10.240.0.4",
        "10.240.0.5",
        "10.240.0.6",
    ]
    .iter()
    .enumerate()
    {
        assert_eq!(n.add(&format!("c{i}")).unwrap(), [format!("{want}/29")]);
    }
    assert_eq!(
        n.add("c9").unwrap_err(),
        "failed to allocate for range 0: no IP addresses available in range set: 10.240.0.1-10.240.0.6"
    );
    // A freed address is handed out again only when the scan wraps to it.
    n.del("c1", "eth0");
    assert_eq!(n.add("c9").unwrap(), ["10.240.0.3/29"]);
    assert_eq!(
        fs::read_to_string(n.dir.join("net1/last_reserved_ip.0")).unwrap(),
        "10.240.0.3"
    );
}

#[test]
fn duplicate_allocation_is_refused_per_container_and_ifname() {
    let n = Net::new(V4_29);
    n.add("c1").unwrap();
    assert_eq!(
        n.add("c1").unwrap_err(),
        "failed to allocate for range 0: 10.240.0.2 has been allocated to c1, duplicate allocation is not allowed"
    );
    assert_eq!(n.add_full("c1", "eth1", "", "").unwrap(), ["10.240.0.3/29"]);
    // The failed duplicate did not release the first lease (the reference would).
    assert_eq!(n.leases().len(), 2);
}

#[test]
fn requested_addresses() {
    let n = Net::new(V4_29);
    assert_eq!(
        n.add_full("c1", "eth0", "IP=10.240.0.5", "").unwrap(),
        ["10.240.0.5/29"]
    );
    assert_eq!(
        n.add_full("c2", "eth0", "IP=10.240.0.5", "").unwrap_err(),
        "failed to allocate for range 0: requested IP address 10.240.0.5 is not available in range set 10.240.0.1-10.240.0.6"
    );
    assert_eq!(
        n.add_full("c2", "eth0", "IP=10.240.0.1", "").unwrap_err(),
        "failed to allocate for range 0: requested ip 10.240.0.1 is subnet's gateway"
    );
    assert_eq!(
        n.add_full("c2", "eth0", "IP=10.250.0.1", "").unwrap_err(),
        "failed to allocate all requested IPs: 10.250.0.1"
    );
    assert_eq!(
        n.add_full(
            "c3",
            "eth0",
            "",
            r#""runtimeConfig":{"ips":["10.240.0.6/24"]}"#
        )
        .unwrap(),
        ["10.240.0.6/29"]
    );
    assert_eq!(
        n.add_full("c4", "eth0", "", r#""args":{"cni":{"ips":["10.240.0.2"]}}"#)
            .unwrap(),
        ["10.240.0.2/29"]
    );
    // Round robin continues after the last requested address.
    assert_eq!(n.add("c5").unwrap(), ["10.240.0.3/29"]);
    assert_eq!(n.leases().len(), 4, "failed requests left nothing behind");
}

#[test]
fn dual_stack_is_all_or_nothing() {
    let n = Net::new(
        r#""ranges":[[{"subnet":"10.240.0.0/29"}],[{"subnet":"fd40::/125","rangeEnd":"fd40::2"}]]"#,
    );
    assert_eq!(n.add("c1").unwrap(), ["10.240.0.2/29", "fd40::2/125"]);
    assert_eq!(
        n.add("c2").unwrap_err(),
        "failed to allocate for range 1: no IP addresses available in range set: fd40::1-fd40::2"
    );
    assert_eq!(
        n.leases().len(),
        2,
        "the IPv4 lease of the failed ADD was rolled back"
    );
    assert!(n.check("c2", "eth0").is_err());
}

#[test]
fn del_is_idempotent_and_releases_every_lease_of_the_attachment() {
    let n = Net::new(r#""ranges":[[{"subnet":"10.240.0.0/29"}],[{"subnet":"fd40::/125"}]]"#);
    n.add("c1").unwrap();
    n.add_full("c1", "eth1", "", "").unwrap();
    n.del("c1", "eth0");
    assert_eq!(
        n.leases(),
        [
            ("10.240.0.3".into(), "c1\r\neth1".into()),
            ("fd40::3".into(), "c1\r\neth1".into())
        ]
    );
    n.del("c1", "eth0");
    n.del("nobody", "eth0");
    // DEL on a network that never existed succeeds and creates nothing.
    let empty = Net::new(V4_29);
    empty.del("c1", "eth0");
    assert!(!empty.dir.join("net1").exists());
}

#[test]
fn legacy_id_only_leases() {
    let n = Net::new(V4_29);
    fs::create_dir_all(n.dir.join("net1")).unwrap();
    fs::write(n.dir.join("net1/10.240.0.4"), "old").unwrap();
    fs::write(n.dir.join("net1/10.240.0.5"), "old").unwrap();
    // A legacy lease counts as the container's for CHECK and duplicates.
    n.check("old", "eth3").unwrap();
    assert!(
        n.add("old")
            .unwrap_err()
            .contains("duplicate allocation is not allowed")
    );
    n.add_full("old", "eth1", "", "IgnoreUnknown=1")
        .unwrap_err();
    // DEL of (old, eth0): no exact match, so every legacy lease of "old" goes.
    n.add("new").unwrap();
    n.del("old", "eth0");
    assert_eq!(n.leases(), [("10.240.0.2".into(), "new\r\neth0".into())]);
    // With an exact match present, legacy leases are left alone.
    fs::write(n.dir.join("net1/10.240.0.6"), "new").unwrap();
    n.del("new", "eth0");
    assert_eq!(n.leases(), [("10.240.0.6".into(), "new".into())]);
}

#[test]
fn check_finds_any_lease_of_the_attachment() {
    let n = Net::new(V4_29);
    assert_eq!(
        n.check("c1", "eth0").unwrap_err(),
        "host-local: Failed to find address added by container c1"
    );
    n.add("c1").unwrap();
    n.check("c1", "eth0").unwrap();
    assert!(n.check("c1", "eth1").is_err());
}

fn gc_with(n: &Net, valid: &str) {
    let extra = if valid.is_empty() {
        String::new()
    } else {
        format!(r#""cni.dev/valid-attachments":{valid}"#)
    };
    gc(&n.args("", "", "", &extra)).unwrap();
}

#[test]
fn gc_releases_what_is_not_valid() {
    let n = Net::new(r#""ranges":[[{"subnet":"10.240.0.0/28"}]]"#);
    for id in ["a", "b", "c"] {
        n.add(id).unwrap();
    }
    fs::write(n.dir.join("net1/10.240.0.10"), "").unwrap();
    fs::write(n.dir.join("net1/10.240.0.11"), "legacy").unwrap();
    // Key absent: nothing is released.
    gc_with(&n, "");
    assert_eq!(n.leases().len(), 5);
    gc_with(
        &n,
        r#"[{"containerID":"a","ifname":"eth0"},{"containerID":"legacy","ifname":"eth9"},{"containerID":"b","ifname":"eth1"}]"#,
    );
    let left: Vec<String> = n.leases().into_iter().map(|(_, c)| c).collect();
    assert_eq!(left, ["legacy", "a\r\neth0"], "sorted by file name");
    // The index follows: b is gone for DEL/CHECK too.
    assert!(n.check("b", "eth0").is_err());
    n.check("a", "eth0").unwrap();
    // The older key name works, and null means none is valid.
    let extra = r#""cni.dev/attachments":null"#;
    gc(&n.args("", "", "", extra)).unwrap();
    assert!(n.leases().is_empty());
    assert!(
        !n.dir
            .join(".host-local/net1/tmp")
            .read_dir()
            .unwrap()
            .any(|_| true)
    );
}

#[test]
fn gc_with_an_empty_list_releases_everything() {
    let n = Net::new(V4_29);
    n.add("a").unwrap();
    gc_with(&n, "[]");
    assert!(n.leases().is_empty());
    assert_eq!(
        n.add("b").unwrap(),
        ["10.240.0.3/29"],
        "round robin state survives GC"
    );
}

#[test]
fn status_reports_an_exhausted_range_set() {
    let n = Net::new(
        r#""ranges":[[{"subnet":"10.240.0.0/29","rangeEnd":"10.240.0.3"}],[{"subnet":"fd40::/64"}]]"#,
    );
    status(&n.args("", "", "", "")).unwrap();
    n.add("a").unwrap();
    status(&n.args("", "", "", "")).unwrap();
    n.add("b").unwrap();
    let e: skel::Error = status(&n.args("", "", "", "")).unwrap_err().into();
    assert_eq!(e.code, 50);
    assert_eq!(
        e.msg,
        "network net1: no IP addresses available in range set 0 (10.240.0.1-10.240.0.3): all 2 addresses are leased"
    );
    n.del("a", "eth0");
    status(&n.args("", "", "", "")).unwrap();
}

#[test]
fn dns_from_resolv_conf_and_routes_in_the_result() {
    let d = TempDir::new("hl-resolv");
    fs::write(
        d.join("resolv.conf"),
        "nameserver 10.240.0.53\nsearch a.example\n",
    )
    .unwrap();
    let n = Net::new(&format!(
        r#""resolvConf":"{}","routes":[{{"dst":"0.0.0.0/0"}}],{V4_29}"#,
        d.join("resolv.conf").display()
    ));
    let Reply::Result(CniResult::V1(r)) = add(&n.args("c1", "eth0", "", "")).unwrap() else {
        panic!("no result")
    };
    assert_eq!(r.dns.nameservers, ["10.240.0.53"]);
    assert_eq!(r.dns.search, ["a.example"]);
    assert_eq!(r.routes.len(), 1);
    assert_eq!(r.ips[0].gateway, Some("10.240.0.1".parse().unwrap()));
    assert_eq!(r.ips[0].interface, None);
}

#[test]
fn go_written_leases_are_seen() {
    let n = Net::new(V4_29);
    n.add("warm").unwrap();
    // The Go plugin wrote a lease for c1 after our last call.
    fs::write(n.dir.join("net1/10.240.0.3"), "c1\r\neth0").unwrap();
    assert!(
        n.add("c1")
            .unwrap_err()
            .contains("10.240.0.3 has been allocated to c1")
    );
    n.check("c1", "eth0").unwrap();
    n.del("c1", "eth0");
    assert!(!n.dir.join("net1/10.240.0.3").exists());
    // And a taken address is skipped without being clobbered.
    fs::write(n.dir.join("net1/10.240.0.4"), "g2\r\neth0").unwrap();
    assert_eq!(n.add("c2").unwrap(), ["10.240.0.3/29"]);
    assert_eq!(n.add("c3").unwrap(), ["10.240.0.5/29"]);
    assert_eq!(
        fs::read_to_string(n.dir.join("net1/10.240.0.4")).unwrap(),
        "g2\r\neth0"
    );
}

#[test]
fn a_long_run_of_taken_addresses_is_skipped() {
    let n = Net::new(r#""ranges":[[{"subnet":"10.240.0.0/26"}]]"#);
    fs::create_dir_all(n.dir.join("net1")).unwrap();
    for i in 2..=45 {
        fs::write(
            n.dir.join(&format!("net1/10.240.0.{i}")),
            format!("g{i}\r\neth0"),
        )
        .unwrap();
    }
    assert_eq!(n.add("c1").unwrap(), ["10.240.0.46/26"]);
    assert_eq!(n.leases().len(), 45);
    assert_eq!(
        fs::read_dir(n.dir.join(".host-local/net1/tmp"))
            .unwrap()
            .count(),
        0
    );
}

#[test]
fn a_last_reserved_address_with_a_newline_is_no_address() {
    // Go parses the raw content: "10.240.0.4\n" is no address, and round
    // robin starts over at the range start.
    for (content, want) in [
        ("10.240.0.4\n", "10.240.0.2/29"),
        ("10.240.0.4\r\n", "10.240.0.2/29"),
        (" 10.240.0.4", "10.240.0.2/29"),
        ("10.240.0.04", "10.240.0.2/29"),
        ("10.240.0.4", "10.240.0.5/29"),
        ("::ffff:10.240.0.4", "10.240.0.5/29"),
    ] {
        let n = Net::new(V4_29);
        fs::create_dir_all(n.dir.join("net1")).unwrap();
        fs::write(n.dir.join("net1/last_reserved_ip.0"), content).unwrap();
        assert_eq!(n.add("c1").unwrap(), [want], "after {content:?}");
    }
}

#[test]
fn leases_under_other_names_count_as_go_counts_them() {
    let n = Net::new(V4_29);
    fs::create_dir_all(n.dir.join("net1/sub")).unwrap();
    // Named by an address, but not by Go's IP.String(): not taken, yet a
    // lease of its owner for the duplicate check, CHECK and DEL.
    fs::write(n.dir.join("net1/::ffff:10.240.0.3"), "c1\r\neth0").unwrap();
    // Go's walk goes into subdirectories.
    fs::write(n.dir.join("net1/sub/10.240.0.6"), "c4\r\neth0\n").unwrap();
    assert_eq!(
        n.add("c1").unwrap_err(),
        "failed to allocate for range 0: 10.240.0.3 has been allocated to c1, duplicate allocation is not allowed"
    );
    assert_eq!(
        n.add("c4").unwrap_err(),
        "failed to allocate for range 0: 10.240.0.6 has been allocated to c4, duplicate allocation is not allowed"
    );
    assert_eq!(n.add("c2").unwrap(), ["10.240.0.2/29"]);
    assert_eq!(n.add("c3").unwrap(), ["10.240.0.3/29"]);
    n.check("c1", "eth0").unwrap();
    n.check("c4", "eth0").unwrap();
    n.del("c1", "eth0");
    n.del("c4", "eth0");
    assert!(!n.dir.join("net1/::ffff:10.240.0.3").exists());
    assert!(!n.dir.join("net1/sub/10.240.0.6").exists());
    assert!(n.check("c4", "eth0").is_err());
    // A lease written into the subdirectory after our last call is seen:
    // with subdirectories around, the index is never trusted.
    fs::write(n.dir.join("net1/sub/10.240.0.5"), "c5\r\neth0").unwrap();
    n.check("c5", "eth0").unwrap();
}
