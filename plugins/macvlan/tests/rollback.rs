//! A failed ADD leaves nothing behind, whatever step fails
//! (`testsupport::onelink::fail_each_step`): nothing but `lo` in the
//! container, no lease; a normal ADD and DEL work after.
//!
//! Failpoints exist in debug builds only.
#![cfg(debug_assertions)]

mod common;

use common::*;
use serde_json::json;
use testsupport::onelink::fail_each_step;

#[test]
fn failed_add_at_each_step_leaves_nothing_dual_stack() {
    let h = host("fp");
    let conf = conf(&h, "1.0.0", &["10.240.60.0/24", "fd40:60::/64"], json!({}));
    fail_each_step(&h, &conf, testsupport::onelink::IPAM_STEPS);
}

#[test]
fn failed_add_at_each_step_leaves_nothing_without_ipam() {
    let h = host("fp");
    let mut conf = conf(&h, "1.0.0", &[], json!({}));
    conf.as_object_mut().unwrap().remove("ipam");
    fail_each_step(&h, &conf, &["onelink/link-created", "onelink/configured"]);
}
