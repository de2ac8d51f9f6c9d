//! ADD and DEL killed (SIGKILL) at every point and at spread moments
//! (`testsupport::kill`): DEL and GC leave the veth as it was and no IFB;
//! and GC alone (the runtime lost the attachment) removes any IFB a
//! killed ADD made, which now carries its ownership alias from its
//! creation on (it was set after the qdisc, and an ADD killed in between
//! left an IFB GC could not tell for this network's).
#![cfg(debug_assertions)]

mod common;

use common::*;
use serde_json::{Value, json};
use testsupport::kill::{Scenario, kill_everywhere};

fn limits() -> Value {
    json!({"ingressRate": 1_000_000, "ingressBurst": 100_000,
           "egressRate": 2_000_000, "egressBurst": 200_000})
}

fn gc(pod: &Pod, conf: &Value) {
    let mut gc = conf.clone();
    gc["cni.dev/valid-attachments"] = json!([]);
    pod.call("GC", &gc).ok();
}

fn kill(command: &str, del: bool) {
    let pod = Pod::new("kbw");
    let conf = pod.conf("1.1.0", limits());
    let name = format!(
        "bandwidth {command}, cleanup by {}",
        if del { "DEL and GC" } else { "GC" }
    );
    kill_everywhere(
        &Scenario {
            name: &name,
            run: &|k| k(pod.request(command, &conf)).run_in(pod.host.name(), bin()),
            before: &|| {
                if command == "DEL" {
                    pod.call("ADD", &conf).ok();
                }
            },
            cleanup: &|| {
                if del {
                    pod.call("DEL", &conf).ok();
                }
                gc(&pod, &conf);
                if !del {
                    // GC's part is the IFB; the veth goes with its
                    // container: cleared here for the next run.
                    for at in ["root", "ingress"] {
                        pod.host
                            .exec_output(&["tc", "qdisc", "del", "dev", &pod.veth, at]);
                    }
                }
            },
            leftovers: &|| {
                let now = pod.state();
                let want = match del {
                    true => pristine(),
                    false => json!({"ifbs": []}),
                };
                let seen = match del {
                    true => now.clone(),
                    false => json!({"ifbs": now["ifbs"]}),
                };
                match seen == want {
                    true => Vec::new(),
                    false => vec![format!("{seen}")],
                }
            },
        },
        4,
    );
}

#[test]
fn add_killed_anywhere_leaves_nothing_after_del_and_gc() {
    kill("ADD", true);
}

#[test]
fn add_killed_anywhere_leaves_no_ifb_after_gc_alone() {
    kill("ADD", false);
}

#[test]
fn del_killed_anywhere_leaves_nothing_after_del_and_gc() {
    kill("DEL", true);
}
