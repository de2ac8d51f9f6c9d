//! ADD and DEL killed (SIGKILL) at every point and at spread moments
//! (`testsupport::kill`), with each backend and the `isolated` policy: DEL
//! and GC leave no rule and no file in the records' directory (no record,
//! no temporary file).
#![cfg(debug_assertions)]

mod common;

use common::*;
use serde_json::{Value, json};
use testsupport::kill::{Scenario, kill_everywhere};

const CID: &str = "ck";
const IPS: [&str; 2] = ["10.240.80.9/24", "fd40:80::9/64"];

fn leftovers(lab: &Lab) -> Vec<String> {
    let mut left = Vec::new();
    for d in std::fs::read_dir(lab.records.path()).unwrap().flatten() {
        if d.path().is_dir() {
            for f in std::fs::read_dir(d.path()).unwrap().flatten() {
                left.push(format!("file {}", f.path().display()));
            }
        }
    }
    for ip in ["10.240.80.9", "fd40:80::9"] {
        left.extend(
            lab.rules_of(ip, CID)
                .into_iter()
                .map(|r| format!("rule {r}")),
        );
    }
    left
}

fn kill(command: &str, backend: &str) {
    let lab = Lab::new("kfw");
    let mut conf = lab.conf(
        &lab.a.name,
        json!({"backend": backend, "ingressPolicy": "isolated"}),
    );
    conf["cniVersion"] = json!("1.1.0");
    let with = with_prev(&conf, &prev(&lab.a.bridge, &IPS));
    let name = format!("firewall {command}, {backend}");
    let cleanup = |c: &Value| {
        lab.firewall("DEL", c, CID, "").ok();
        let mut gc = c.clone();
        gc["cni.dev/valid-attachments"] = json!([]);
        lab.firewall("GC", &gc, "", "").ok();
    };
    kill_everywhere(
        &Scenario {
            name: &name,
            run: &|k| {
                let call = lab.host.request(command, &with, CID, "/x", "eth0");
                let call = call.env("DBUS_SYSTEM_BUS_ADDRESS", NO_BUS);
                k(call).run_in(lab.host.ns.name(), bin())
            },
            before: &|| {
                if command == "DEL" {
                    lab.firewall("ADD", &with, CID, "/x").ok();
                }
            },
            cleanup: &|| cleanup(&with),
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
