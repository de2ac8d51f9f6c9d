//! Kill tests: whatever moment a call is killed at (`SIGKILL`: a runtime's
//! timeout, the OOM killer, a node shutting down), DEL and GC of the
//! attachment afterwards leave nothing: no file, rule, link or lease.
//!
//! [`kill_everywhere`] runs a [`Scenario`]'s call once cleanly, recording
//! every point it (and its delegated plugins) passes (`skel::failpoint`:
//! each step's failpoint and the points inside shared mechanisms, such as
//! a state file's temporary file written and not yet renamed); then once
//! per pass of each point, killed there (`CNI_RS_KILLPOINT`); then a few
//! times killed from outside after delays spread over the clean run's
//! length, to land between points too. After every attempt the scenario's
//! cleanup (DEL, GC) runs and nothing may be left.

use std::cell::RefCell;
use std::time::Instant;

use serde_json::{Value, json};

use crate::{Call, Failpoints, PluginHost, PluginRun, TestNetns, with_prev};

/// Adds a kill to a call.
pub type Killer<'k> = &'k dyn Fn(Call) -> Call;

/// One call to kill and what to check after it.
pub struct Scenario<'a> {
    /// A name for messages (`bridge ADD, iptables`).
    pub name: &'a str,
    /// Run the call under test, its [`Call`] passed through the given
    /// function (which adds the kill).
    pub run: &'a dyn Fn(Killer<'_>) -> PluginRun,
    /// Before each run: what the call needs (an ADD before a DEL).
    pub before: &'a dyn Fn(),
    /// After each run: DEL and GC of the attachment, which must succeed.
    pub cleanup: &'a dyn Fn(),
    /// What is left behind, one line each; empty when nothing.
    pub leftovers: &'a dyn Fn() -> Vec<String>,
}

/// What [`kill_everywhere`] did.
#[derive(Debug, Default)]
pub struct Report {
    /// The points killed at (`point#n`), in the clean run's order.
    pub points: Vec<String>,
    /// Runs that ended killed (the others failed, or finished before the
    /// kill: a point in a delegate kills the delegate only).
    pub killed: usize,
    pub runs: usize,
}

/// Kill `s`'s call at every point a clean run passes and at `spread`
/// moments over its length; after each, clean up and require that nothing
/// is left. Panics naming the point when something is.
pub fn kill_everywhere(s: &Scenario<'_>, spread: usize) -> Report {
    (s.before)();
    let log = Failpoints::new();
    let t = Instant::now();
    let clean = (s.run)(&|c| log.record(c));
    let length = t.elapsed();
    assert_eq!(clean.code, 0, "{}: the clean run failed: {clean:?}", s.name);
    (s.cleanup)();
    check(s, "after a clean run");
    let points = occurrences(&log.all());
    assert!(
        !points.is_empty(),
        "{}: a clean run passed no point",
        s.name
    );
    let mut report = Report {
        points: points.clone(),
        ..Report::default()
    };
    let mut attempt = |what: String, kill: &dyn Fn(Call) -> Call| {
        (s.before)();
        let run = (s.run)(kill);
        report.runs += 1;
        report.killed += usize::from(run.code == -1);
        // What the killed call started (an IPAM plugin, iptables-restore)
        // runs on; a runtime's DEL could come before or after it ends. Here
        // after, so that what is left is DEL's and GC's to find, whatever
        // the machine's load.
        wait_session_gone(run.pid, &what, s.name);
        (s.cleanup)();
        check(s, &what);
    };
    for p in &points {
        attempt(format!("killed at {p}"), &|c| c.kill_at(p));
    }
    for i in 0..spread {
        // Over the clean run and a little past it (a loaded machine).
        let after = length.mul_f64((i as f64 + 0.5) / spread as f64 * 1.2);
        attempt(format!("killed after {after:?}"), &move |c| {
            c.kill_after(after)
        });
    }
    eprintln!(
        "{}: {} runs, {} killed, points {:?}",
        s.name, report.runs, report.killed, report.points
    );
    report
}

/// [`kill_everywhere`] for an interface-creating plugin run on `h`:
/// `command` (ADD, or DEL after a clean ADD) of `cid`'s `eth0` in `c`
/// with `conf` (a version with GC, 1.1.0), cleaned up by DEL (with the
/// ADD's result as `prevResult` when a runtime would have one: not after
/// a killed ADD) and GC without valid attachments.
pub fn main_plugin(
    h: &PluginHost,
    command: &str,
    conf: &Value,
    cid: &str,
    c: &TestNetns,
    leftovers: &dyn Fn() -> Vec<String>,
) -> Report {
    let prev = RefCell::new(None::<Value>);
    let with = |p: &Option<Value>| {
        p.as_ref()
            .map_or_else(|| conf.clone(), |p| with_prev(conf, p))
    };
    let name = format!("{} {command}", conf["type"].as_str().unwrap_or("plugin"));
    kill_everywhere(
        &Scenario {
            name: &name,
            run: &|k| {
                h.run(k(h.request(
                    command,
                    &with(&prev.borrow()),
                    cid,
                    c.path(),
                    "eth0",
                )))
            },
            before: &|| {
                if command == "DEL" {
                    *prev.borrow_mut() = Some(h.add(conf, cid, c));
                }
            },
            cleanup: &|| {
                h.call("DEL", &with(&prev.borrow()), cid, c.path(), "eth0")
                    .ok();
                let mut gc = conf.clone();
                gc["cni.dev/valid-attachments"] = json!([]);
                h.call("GC", &gc, "", "", "").ok();
            },
            leftovers,
        },
        4,
    )
}

fn check(s: &Scenario<'_>, when: &str) {
    let left = (s.leftovers)();
    assert!(
        left.is_empty(),
        "{}: {when}, DEL and GC left:\n  {}",
        s.name,
        left.join("\n  ")
    );
}

/// Wait until no process of session `sid` runs (zombies aside: nobody may
/// reap them here).
fn wait_session_gone(sid: u32, what: &str, name: &str) {
    assert!(
        crate::wait::eventually(|| !session_alive(sid)),
        "{name}: {what}: what the call started still runs after {:?}",
        crate::wait::deadline()
    );
}

fn session_alive(sid: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .any(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            // "pid (comm) S ppid pgrp session ...", split after the comm.
            let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
            let w: Vec<&str> = rest.split_whitespace().collect();
            w.first() != Some(&"Z") && w.get(3).and_then(|s| s.parse().ok()) == Some(sid)
        })
}

/// Each pass of each point, as `point#n` (the n-th pass of that point).
fn occurrences(log: &[String]) -> Vec<String> {
    let mut seen: Vec<(String, usize)> = Vec::new();
    let mut out = Vec::new();
    for p in log {
        let n = match seen.iter_mut().find(|(q, _)| q == p) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                seen.push((p.clone(), 1));
                1
            }
        };
        out.push(format!("{p}#{n}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pass_is_named() {
        let log: Vec<String> = ["a/x", "b/y", "a/x"].map(String::from).to_vec();
        assert_eq!(occurrences(&log), vec!["a/x#1", "b/y#1", "a/x#2"]);
    }
}
