//! Root tests of restore batches that remove rules: they return once the
//! kernel has committed them (the tool left to exit on its own), with the
//! rules gone by then; failures and adds still wait for the tool's exit.

use std::fs::File;

use cni_firewall::iptables::{self, Batch, Ended, Family};
use cni_net::netns;
use testsupport::TestNetns;

/// Run `f` with the calling thread (and the tools it starts) in `ns`.
fn inside<T>(ns: &TestNetns, f: impl FnOnce() -> T) -> T {
    let file = File::open(ns.path()).unwrap();
    netns::run(&file, f).unwrap()
}

/// Apply `batch` in `family` and say how it ended.
fn apply(family: Family, batch: &Batch) -> cni_firewall::Result<Ended> {
    // The mechanism, whatever this machine's PID 1 would make of orphans.
    assert!(skel::orphans::assume(true));
    let run = iptables::start_restore(family, batch)?.expect("a batch to run");
    run.finish()
}

/// A chain in `nat` and one in `filter`, one rule each, as portmap's and
/// the firewall's rules sit in two tables.
fn setup(family: Family, src: &str) -> Batch {
    let mut b = Batch::new();
    b.create_chain("nat", "CNI-W1")
        .append("nat", "CNI-W1", &["-s", src, "-j", "ACCEPT"])
        .create_chain("filter", "CNI-W2")
        .append("filter", "CNI-W2", &["-s", src, "-j", "ACCEPT"]);
    let ended = apply(family, &b).unwrap();
    // Adds are not watched: the exit is waited for.
    assert!(matches!(ended, Ended::Exited), "{ended:?}");
    let mut del = Batch::new();
    del.delete("nat", "CNI-W1", &["-s", src, "-j", "ACCEPT"])
        .delete_chain("nat", "CNI-W1")
        .flush("filter", "CNI-W2")
        .delete_chain("filter", "CNI-W2");
    del
}

#[test]
fn a_removal_returns_at_its_commits_with_the_rules_gone() {
    let ns = TestNetns::new("fwc");
    for (family, src) in [(Family::V4, "10.240.3.2"), (Family::V6, "fd40::3:2")] {
        let left = inside(&ns, || {
            let del = setup(family, src);
            let ended = apply(family, &del).unwrap();
            let Ended::Committed(left) = ended else {
                panic!("{family:?}: waited for the exit: {ended:?}")
            };
            // Read back at once, before the tool has necessarily exited.
            for table in ["nat", "filter"] {
                let save = iptables::save(family, table).unwrap();
                assert!(!save.text().contains("CNI-W"), "{}", save.text());
            }
            left
        });
        // The tool ends on its own, successfully.
        let status = left.wait().unwrap();
        assert!(status.success(), "{family:?}: {status:?}");
    }
}

#[test]
fn a_failed_removal_is_the_tools_error() {
    let ns = TestNetns::new("fwc2");
    inside(&ns, || {
        let mut b = Batch::new();
        b.delete("filter", "FORWARD", &["-s", "10.240.3.9", "-j", "ACCEPT"]);
        let e = apply(Family::V4, &b).unwrap_err();
        assert_eq!(
            e.to_string(),
            "iptables-restore: iptables-restore: line 2 failed: Bad rule (does a matching rule exist in that chain?)."
        );
        // The first table commits, the second fails: not every commit is
        // seen, so the failure is still reported.
        let mut del = setup(Family::V4, "10.240.3.3");
        del.delete("filter", "FORWARD", &["-s", "10.240.3.9", "-j", "ACCEPT"]);
        let e = apply(Family::V4, &del).unwrap_err();
        assert!(e.to_string().contains("line 8 failed"), "{e}");
    });
}
