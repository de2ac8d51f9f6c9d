//! ADD and DEL killed (SIGKILL) at every point and at spread moments
//! (`testsupport::kill`), with each backend: DEL and GC leave no rule
//! and no file in the records' directory (no record, no temporary file).
#![cfg(debug_assertions)]

mod common;

use common::*;
use serde_json::{Value, json};
use testsupport::TestNetns;
use testsupport::kill::{Scenario, kill_everywhere};

const CID: &str = "ck";

/// Every file under the records' directory, dot files included.
fn files(lab: &Lab) -> Vec<String> {
    let mut out = Vec::new();
    for d in std::fs::read_dir(lab.records.path()).unwrap().flatten() {
        if d.path().is_dir() {
            for f in std::fs::read_dir(d.path()).unwrap().flatten() {
                out.push(format!("file {}", f.path().display()));
            }
        }
    }
    out
}

fn leftovers(lab: &Lab) -> Vec<String> {
    let mut left = files(lab);
    left.extend(
        lab.rules_of(None, CID)
            .into_iter()
            .map(|r| format!("rule {r}")),
    );
    left
}

fn cleanup(lab: &Lab, conf: &Value, c: &TestNetns) {
    lab.portmap("DEL", conf, CID, c.path()).ok();
    let mut gc = conf.clone();
    gc["cni.dev/valid-attachments"] = json!([]);
    lab.portmap("GC", &gc, "", "").ok();
}

fn kill(command: &str, backend: &str) {
    let lab = Lab::new("kpm");
    let (c, prev) = lab.container(CID);
    let mut conf = lab.conf(None, both(8090, None), json!({"backend": backend}));
    conf["cniVersion"] = json!("1.1.0");
    let conf = with_prev(&conf, &prev);
    let name = format!("portmap {command}, {backend}");
    let add = || lab.portmap("ADD", &conf, CID, c.path()).ok();
    kill_everywhere(
        &Scenario {
            name: &name,
            run: &|k| {
                let call = lab.host.request(command, &conf, CID, c.path(), "eth0");
                k(call).run_in(lab.host.ns.name(), bin())
            },
            before: &|| {
                if command == "DEL" {
                    add();
                }
            },
            cleanup: &|| cleanup(&lab, &conf, &c),
            leftovers: &|| leftovers(&lab),
        },
        4,
    );
}

#[test]
fn add_killed_anywhere_leaves_nothing_after_del_and_gc_iptables() {
    kill("ADD", "iptables");
}

#[test]
fn add_killed_anywhere_leaves_nothing_after_del_and_gc_nftables() {
    kill("ADD", "nftables");
}

#[test]
fn del_killed_anywhere_leaves_nothing_after_del_and_gc_iptables() {
    kill("DEL", "iptables");
}

#[test]
fn del_killed_anywhere_leaves_nothing_after_del_and_gc_nftables() {
    kill("DEL", "nftables");
}
