//! 64 ADD processes at once into one dual-stack network, then 64 DELs at
//! once, a few rounds: every address distinct, the lease files exactly the
//! live set, nothing left after DEL.

mod common;

use std::collections::BTreeSet;
use std::thread;

use common::*;
use testsupport::TempDir;

const N: usize = 64;

fn all_at_once(cmd: &'static str, stdin: &str, round: usize) -> Vec<testsupport::PluginRun> {
    let handles: Vec<_> = (0..N)
        .map(|i| {
            let stdin = stdin.to_string();
            thread::spawn(move || run(&ours(), cmd, &format!("r{round}c{i}"), &stdin))
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

#[test]
fn concurrent_add_and_del() {
    let d = TempDir::new("hl-race");
    let c = conf(
        "1.0.0",
        d.path(),
        r#""ranges":[[{"subnet":"10.240.0.0/24"}],[{"subnet":"fd40::/120"}]]"#,
    );
    for round in 0..3 {
        let mut seen = BTreeSet::new();
        let mut expected = BTreeSet::new();
        for (i, out) in all_at_once("ADD", &c, round).iter().enumerate() {
            let ips = addresses(&out.ok());
            assert_eq!(ips.len(), 2, "{out:?}");
            for ip in ips {
                assert!(seen.insert(ip.clone()), "{ip} handed out twice");
                expected.insert((ip, format!("r{round}c{i}\r\neth0")));
            }
        }
        let on_disk: BTreeSet<_> = leases(d.path()).into_iter().collect();
        assert_eq!(on_disk, expected, "round {round}: lease files != live set");
        for out in all_at_once("DEL", &c, round) {
            out.ok();
        }
        assert!(
            leases(d.path()).is_empty(),
            "round {round}: leases left after DEL"
        );
        assert_eq!(
            std::fs::read_dir(d.join(".host-local/net1/tmp"))
                .unwrap()
                .count(),
            0,
            "temporary files left"
        );
    }
}
