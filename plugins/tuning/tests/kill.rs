//! ADD and DEL killed (SIGKILL) at every point and at spread moments
//! (`testsupport::kill`): DEL and GC leave no file in `dataDir` (no
//! backup, no record, no temporary file), and the link as it was.
#![cfg(debug_assertions)]

mod common;

use common::*;
use serde_json::{Value, json};
use testsupport::kill::{Scenario, kill_everywhere};

fn kill(command: &str) {
    let c = Container::new(if command == "ADD" { "kta" } else { "ktd" });
    let conf = c.conf("1.1.0", json!({"mtu": 1400, "promisc": true, "txQLen": 77}));
    let before = c.link();
    let name = format!("tuning {command}");
    kill_everywhere(
        &Scenario {
            name: &name,
            run: &|k| k(c.call(command, &conf)).run(ours()),
            before: &|| {
                if command == "DEL" {
                    c.run("ADD", &conf).ok();
                }
            },
            cleanup: &|| {
                c.run("DEL", &conf).ok();
                let mut gc: Value = conf.clone();
                gc["cni.dev/valid-attachments"] = json!([]);
                c.call("GC", &gc)
                    .netns("")
                    .ifname("")
                    .container_id("")
                    .run(ours())
                    .ok();
            },
            leftovers: &|| {
                let mut left: Vec<String> = c
                    .data_files()
                    .into_iter()
                    .map(|f| format!("file {f}"))
                    .collect();
                if c.link() != before {
                    left.push(format!("link {:?}, was {before:?}", c.link()));
                }
                left
            },
        },
        4,
    );
}

#[test]
fn add_killed_anywhere_leaves_nothing_after_del_and_gc() {
    kill("ADD");
}

#[test]
fn del_killed_anywhere_leaves_nothing_after_del_and_gc() {
    kill("DEL");
}
