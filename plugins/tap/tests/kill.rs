//! ADD and DEL killed (SIGKILL) at every point and at spread moments
//! (`testsupport::kill`): DEL (without prevResult after a killed ADD) and
//! GC leave no tap and no lease.
#![cfg(debug_assertions)]

mod common;

use common::*;
use serde_json::json;
use testsupport::TestNetns;

const CID: &str = "kill1";

fn kill(command: &str) {
    let h = host("tk");
    let c = TestNetns::new("tkc");
    let mut conf = conf(
        &h,
        &["10.240.74.0/24", "fd40:74::/64"],
        json!({"mtu": 1400}),
    );
    conf["cniVersion"] = json!("1.1.0");
    let leftovers = || {
        let mut left: Vec<String> = links(&c)
            .into_iter()
            .filter(|(n, _)| n != "lo")
            .map(|(n, _)| format!("container link {n}"))
            .collect();
        left.extend(h.leases().into_iter().map(|l| format!("lease {l}")));
        left
    };
    testsupport::kill::main_plugin(&h, command, &conf, CID, &c, &leftovers);
}

#[test]
fn add_killed_anywhere_leaves_nothing_after_del() {
    kill("ADD");
}

#[test]
fn del_killed_anywhere_leaves_nothing_after_del() {
    kill("DEL");
}
