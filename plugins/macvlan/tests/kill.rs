//! ADD and DEL killed (SIGKILL) at every point and at spread moments
//! (`testsupport::kill`), dual-stack: DEL (without prevResult after a
//! killed ADD, as a runtime has none) and GC leave no container interface
//! and no lease.
#![cfg(debug_assertions)]

mod common;

use common::*;
use serde_json::json;

fn kill(command: &str) {
    let h = host("kp");
    let conf = conf(&h, "1.1.0", &["10.240.61.0/24", "fd40:61::/64"], json!({}));
    testsupport::onelink::kill(&h, command, &conf);
}

#[test]
fn add_killed_anywhere_leaves_nothing_after_del_and_gc() {
    kill("ADD");
}

#[test]
fn del_killed_anywhere_leaves_nothing_after_del_and_gc() {
    kill("DEL");
}
