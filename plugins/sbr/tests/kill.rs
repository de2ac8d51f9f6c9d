//! ADD and DEL killed (SIGKILL) at every point and at spread moments
//! (`testsupport::kill`): DEL afterwards leaves no rule from the
//! interface's addresses and no route in any table but `main` and
//! `local`.
#![cfg(debug_assertions)]

mod common;

use common::*;
use serde_json::json;
use testsupport::kill::{Scenario, kill_everywhere};

fn kill(command: &str) {
    let pod = Pod::new(if command == "ADD" { "sbrka" } else { "sbrkd" });
    let conf = pod.conf(1, json!({}));
    let name = format!("sbr {command}");
    kill_everywhere(
        &Scenario {
            name: &name,
            run: &|k| k(pod.call(command, 1, &conf)).run(ours()),
            before: &|| {
                if command == "DEL" {
                    pod.call("ADD", 1, &conf).run(ours()).ok();
                }
            },
            cleanup: &|| {
                pod.call("DEL", 1, &conf).run(ours()).ok();
            },
            leftovers: &|| {
                let mut left: Vec<String> = pod
                    .rule_tables()
                    .into_iter()
                    .map(|(from, t)| format!("rule from {from} lookup {t}"))
                    .collect();
                left.extend(
                    pod.all_tables()
                        .into_iter()
                        .filter(|r| r.contains(" table ") && !r.contains("table main"))
                        .map(|r| format!("route {r}")),
                );
                left
            },
        },
        4,
    );
}

#[test]
fn add_killed_anywhere_leaves_nothing_after_del() {
    kill("ADD");
}

#[test]
fn del_killed_anywhere_leaves_nothing_after_del() {
    kill("DEL");
}
