//! `CNI_NETNS` naming host-local's own network namespace: refused with code
//! 8 before anything is allocated or released, as the reference skel
//! refuses it (there only after the plugin already ran). A namespace that
//! is gone is no reason to refuse: DEL must still release the lease.

mod common;

use common::*;
use testsupport::TempDir;

const RANGE: &str = r#""ranges":[[{"subnet":"10.240.0.0/29"}]]"#;

fn own_namespaces() -> Vec<String> {
    vec![
        "/proc/self/ns/net".to_string(),
        format!("/proc/{}/ns/net", std::process::id()),
    ]
}

#[test]
fn add_in_own_netns_is_refused_and_allocates_nothing() {
    let d = TempDir::new("hl-ownns");
    let c = conf("1.0.0", d.path(), RANGE);
    for netns in own_namespaces() {
        let run = call("ADD", "c1", "eth0")
            .netns(&netns)
            .stdin(c.as_str())
            .run(&ours());
        let e = run.err(8);
        assert_eq!(
            e["msg"], "plugin's netns and netns from CNI_NETNS should not be the same",
            "{netns}"
        );
        assert_eq!(leases(d.path()), vec![], "{netns}: a lease was written");
    }
}

#[test]
fn del_in_own_netns_is_refused_and_keeps_the_lease() {
    let d = TempDir::new("hl-ownns");
    let c = conf("1.0.0", d.path(), RANGE);
    run(&ours(), "ADD", "c1", &c).ok();
    let before = leases(d.path());
    assert_eq!(before.len(), 1);
    for netns in own_namespaces() {
        let run = call("DEL", "c1", "eth0")
            .netns(&netns)
            .stdin(c.as_str())
            .run(&ours());
        run.err(8);
        assert_eq!(leases(d.path()), before, "{netns}: the lease was released");
    }
}

#[test]
fn override_lets_own_netns_through() {
    let d = TempDir::new("hl-ownns");
    let c = conf("1.0.0", d.path(), RANGE);
    let run = call("ADD", "c1", "eth0")
        .netns("/proc/self/ns/net")
        .env("CNI_NETNS_OVERRIDE", "1")
        .stdin(c.as_str())
        .run(&ours());
    assert_eq!(addresses(&run.ok()), vec!["10.240.0.2"]);
}

#[test]
fn del_with_a_vanished_netns_releases_the_lease() {
    let d = TempDir::new("hl-ownns");
    let c = conf("1.0.0", d.path(), RANGE);
    run(&ours(), "ADD", "c1", &c).ok();
    call("DEL", "c1", "eth0")
        .netns("/run/netns/cnirs-gone-long-ago")
        .stdin(c.as_str())
        .run(&ours())
        .ok();
    assert_eq!(leases(d.path()), vec![]);
}
