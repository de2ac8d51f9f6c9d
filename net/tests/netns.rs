//! Root tests: switching namespaces and binding connections to them.

mod common;

use std::fs::File;

use cni_net::{Netlink, netns};
use testsupport::TestNetns;

fn open(ns: &TestNetns) -> File {
    File::open(ns.path()).unwrap()
}

#[test]
fn connection_in_netns_sees_only_that_namespace() {
    let ns = TestNetns::new("nsa");
    let nl = Netlink::in_netns(&open(&ns)).unwrap();
    let names: Vec<String> = nl.links().unwrap().into_iter().map(|l| l.name).collect();
    assert_eq!(names, ["lo"]);

    // The thread is back in its own namespace.
    let home = netns::current().unwrap();
    assert!(!netns::same(&home, &open(&ns)).unwrap());
    let host = Netlink::host().unwrap();
    let host_lo = host.link_by_name("lo").unwrap();
    let ns_lo = nl.link_by_name("lo").unwrap();
    assert_eq!(ns_lo.index, 1);
    assert_eq!(ns_lo.mac, vec![0; 6]);
    assert!(!ns_lo.up, "a new namespace starts with lo down");
    assert!(host_lo.up, "host lo must stay up");

    // A link made through the namespace's connection exists only there.
    let name = testsupport::unique_name("cnirsbr");
    nl.create_link(&common::bridge(&name, None, false)).unwrap();
    assert!(nl.find_link(&name).unwrap().is_some());
    assert!(host.find_link(&name).unwrap().is_none());
    assert!(!testsupport::try_sh(&["ip", "link", "show", &name]));
}

#[test]
fn run_switches_and_comes_back() {
    let ns = TestNetns::new("nsb");
    let target = open(&ns);
    let home = netns::current().unwrap();
    let inside = netns::run(&target, || netns::current().unwrap()).unwrap();
    assert!(netns::same(&inside, &target).unwrap());
    assert!(netns::same(&netns::current().unwrap(), &home).unwrap());
}

#[test]
fn run_comes_back_after_a_panic() {
    let ns = TestNetns::new("nsc");
    let target = open(&ns);
    let home = netns::current().unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        netns::run(&target, || panic!("boom")).unwrap();
    }));
    assert!(r.is_err());
    assert!(netns::same(&netns::current().unwrap(), &home).unwrap());
}

#[test]
fn connections_work_from_several_threads() {
    let nss: Vec<TestNetns> = (0..4).map(|_| TestNetns::new("nsd")).collect();
    std::thread::scope(|s| {
        for ns in &nss {
            s.spawn(move || {
                let nl = Netlink::in_netns(&open(ns)).unwrap();
                for _ in 0..20 {
                    let lo = nl.link_by_name("lo").unwrap();
                    nl.set_up(&lo).unwrap();
                    nl.set_down(&lo).unwrap();
                }
                nl.set_up(&nl.link_by_name("lo").unwrap()).unwrap();
            });
        }
    });
    for ns in &nss {
        assert!(
            ns.stdout(&["ip", "-o", "link", "show", "lo"])
                .contains(",UP")
        );
    }
    // The host's lo was never the target.
    let host = Netlink::host().unwrap();
    assert!(host.link_by_name("lo").unwrap().up);
}

#[test]
fn missing_link_is_enodev() {
    let ns = TestNetns::new("nse");
    let nl = Netlink::in_netns(&open(&ns)).unwrap();
    let e = nl.link_by_name("cnirsnothere").unwrap_err();
    assert!(e.is_not_found());
    assert_eq!(e.to_string(), "find link cnirsnothere: no such device");
    assert!(nl.find_link("cnirsnothere").unwrap().is_none());
}
