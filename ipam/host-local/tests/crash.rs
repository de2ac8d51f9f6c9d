//! SIGKILL at random moments during many concurrent ADDs: afterwards every
//! lease file is complete and belongs either to a container whose ADD
//! succeeded or to one that GC may release, and the index still finds
//! everything (DEL of the survivors leaves nothing behind).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Child;
use std::time::{Duration, Instant};

use common::*;
use testsupport::TempDir;

const BATCHES: usize = 40;
const PER_BATCH: usize = 6;

/// Twice the longest of a few ADDs timed here and now (DEL after each):
/// the window the kills are spread over, so they land before, inside and
/// after the critical part on an idle machine and on a busy one alike.
fn kill_window(c: &str, dir: &std::path::Path) -> u64 {
    let mut longest = Duration::ZERO;
    for i in 0..5 {
        let id = format!("calibrate{i}");
        let start = Instant::now();
        run(&ours(), "ADD", &id, c).ok();
        longest = longest.max(start.elapsed());
        run(&ours(), "DEL", &id, c).ok();
    }
    assert!(leases(dir).is_empty());
    2 * u64::try_from(longest.as_micros()).unwrap_or(u64::MAX)
}

#[test]
fn sigkill_never_leaves_a_torn_or_unowned_lease() {
    let d = TempDir::new("hl-crash");
    let c = conf(
        "1.0.0",
        d.path(),
        r#""ranges":[[{"subnet":"10.240.0.0/22"}],[{"subnet":"fd40::/118"}]]"#,
    );
    let window = kill_window(&c, d.path());
    let delays = random_u32s(BATCHES * PER_BATCH);
    let mut succeeded: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut killed = BTreeSet::new();
    for b in 0..BATCHES {
        let mut children: Vec<(String, Child)> = (0..PER_BATCH)
            .map(|i| {
                let id = format!("b{b}c{i}");
                let child = spawn(&ours(), "ADD", &id, &c);
                (id, child)
            })
            .collect();
        // Each child dies at its own random moment within about twice the
        // time an ADD takes, so kills land before, inside and after the
        // critical part; the first is killed at once and the last never,
        // so some ADDs are killed and some succeed however the machine's
        // load changes meanwhile.
        let start = Instant::now();
        let mut order: Vec<(u64, usize)> = (0..PER_BATCH - 1)
            .map(|i| match i {
                0 => (0, 0),
                _ => (u64::from(delays[b * PER_BATCH + i]) % window, i),
            })
            .collect();
        order.sort();
        for (delay, i) in order {
            let at = start + Duration::from_micros(delay);
            std::thread::sleep(at.saturating_duration_since(Instant::now()));
            let _ = children[i].1.kill();
        }
        for (id, child) in children {
            let out = child.wait_with_output().unwrap();
            if out.status.success() {
                let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                succeeded.insert(id, addresses(&v));
            } else {
                killed.insert(id);
            }
        }
    }
    eprintln!(
        "{} ADDs succeeded, {} killed, {} lease files",
        succeeded.len(),
        killed.len(),
        leases(d.path()).len()
    );
    assert!(
        !killed.is_empty() && !succeeded.is_empty(),
        "the kills should hit some but not all ADDs"
    );

    let started: BTreeSet<String> = succeeded.keys().chain(killed.iter()).cloned().collect();
    for (ip, content) in leases(d.path()) {
        let (id, ifname) = content
            .split_once("\r\n")
            .unwrap_or_else(|| panic!("torn lease {ip}: {content:?}"));
        assert_eq!(ifname, "eth0", "torn lease {ip}: {content:?}");
        assert!(
            started.contains(id),
            "lease {ip} of unknown container {content:?}"
        );
        if let Some(ips) = succeeded.get(id) {
            assert!(ips.contains(&ip), "{ip} is not in {id}'s result {ips:?}");
        }
    }
    for (id, ips) in &succeeded {
        for ip in ips {
            let content = std::fs::read_to_string(d.join(&format!("net1/{ip}"))).unwrap();
            assert_eq!(content, format!("{id}\r\neth0"));
        }
    }
    for entry in std::fs::read_dir(d.join("net1")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(
            name == "lock"
                || name.starts_with("last_reserved_ip.")
                || name.parse::<std::net::IpAddr>().is_ok(),
            "stray file {name} in the network directory"
        );
    }

    // GC with the survivors as valid keeps exactly their leases.
    let valid: Vec<String> = succeeded
        .keys()
        .map(|id| format!(r#"{{"containerID":"{id}","ifname":"eth0"}}"#))
        .collect();
    let gc_conf = format!(
        "{},\"cni.dev/valid-attachments\":[{}]}}",
        &c[..c.len() - 1].replace("1.0.0", "1.1.0"),
        valid.join(",")
    );
    run(&ours(), "GC", "", &gc_conf).ok();
    let left: BTreeSet<String> = leases(d.path()).into_iter().map(|(ip, _)| ip).collect();
    let want: BTreeSet<String> = succeeded.values().flatten().cloned().collect();
    assert_eq!(left, want);
    assert_eq!(
        std::fs::read_dir(d.join(".host-local/net1/tmp"))
            .unwrap()
            .count(),
        0
    );

    // The index survived the crashes: DEL finds every survivor's leases.
    for id in succeeded.keys() {
        run(&ours(), "DEL", id, &c).ok();
    }
    assert!(leases(d.path()).is_empty());
}
