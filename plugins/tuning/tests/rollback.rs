//! A failed ADD leaves nothing changed, whatever step fails: the
//! failpoints (`skel::failpoint`, debug builds only) of a clean ADD with
//! every key are compared with the expected steps, then each step is
//! failed in turn on a fresh container, and the sysctls, the link and the
//! data directory must be as before; a normal ADD and DEL then work.
//! Also when a backup from an earlier ADD was there: it is kept as it was.
#![cfg(debug_assertions)]

mod common;

use common::*;
use serde_json::json;
use testsupport::Failpoints;

const STEPS: &[&str] = &["tuning/sysctls", "tuning/backup", "tuning/link"];

fn snapshot(c: &Container) -> (LinkState, Vec<String>, Vec<String>) {
    let sysctls = every_sysctl(&c.ifname)
        .iter()
        .map(|(k, _)| c.sysctl(k))
        .collect();
    (c.link(), sysctls, c.data_files())
}

#[test]
fn failed_add_at_each_step_changes_nothing() {
    let c = Container::new("fpd");
    let points = Failpoints::new();
    points
        .record(c.call("ADD", &c.conf("1.0.0", every_key())))
        .run(ours())
        .ok();
    assert_eq!(points.passed("tuning/"), STEPS, "failpoints of a clean ADD");

    for step in STEPS {
        let c = Container::new("fp");
        let conf = c.conf("1.0.0", every_key());
        let before = snapshot(&c);
        let r = c.call("ADD", &conf).fail_at(step).run(ours());
        let e = r.err(999);
        assert_eq!(e["msg"], format!("injected failure at {step}"));
        assert!(!r.stderr.contains("cleanup"), "{step}: {}", r.stderr);
        assert_eq!(snapshot(&c), before, "{step}");

        c.run("ADD", &conf).ok();
        assert_eq!(c.link().mtu, 1400);
        c.run("DEL", &conf).ok();
        let (link, _, files) = snapshot(&c);
        assert_eq!(
            (link, files),
            (before.0.clone(), before.2.clone()),
            "{step}"
        );
    }
}

/// A repeated ADD that fails leaves the first ADD's backup as it was, so
/// DEL still restores the originals.
#[test]
fn failed_repeated_add_keeps_the_first_backup() {
    for step in &STEPS[1..] {
        let c = Container::new("fpr");
        let original = c.link();
        let first = c.conf("1.0.0", json!({"mtu": 1450}));
        c.run("ADD", &first).ok();
        let backup = c.backup_text().unwrap();
        let tuned = c.link();
        let conf = c.conf("1.0.0", every_key());
        c.call("ADD", &conf).fail_at(step).run(ours()).err(999);
        assert_eq!(c.backup_text().unwrap(), backup, "{step}");
        assert_eq!(c.link(), tuned, "{step}");
        c.run("DEL", &conf).ok();
        assert_eq!(c.link(), original, "{step}");
        assert!(c.data_files().is_empty(), "{step}: {:?}", c.data_files());
    }
}
