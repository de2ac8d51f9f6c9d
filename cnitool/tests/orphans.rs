//! No call leaves a process nobody reaps (`skel::orphans`): ADD/DEL cycles
//! of bridge with ipMasq (iptables: a link deletion, a netfilter socket
//! and `iptables-restore`, each of which may be left to a child) and of
//! podman's default network (bridge, portmap, firewall, tuning), driven
//! by `cnitool` under a PID 1 that never reaps (`cnirs-init`), in a cgroup
//! of at most 256 tasks. Before `skel::orphans`, every DEL left its
//! children to that PID 1 as zombies: calls failed from cycle 85 (bridge)
//! or 25 (podman) on, with `fork/exec ...: resource temporarily
//! unavailable`.
//!
//! - `never`: SIGCHLD at its default. No child is left: no zombie at all.
//! - `catch`: SIGCHLD caught, never reaped (a Go program as PID 1). PID 1
//!   looks like a reaper, so children are left until the cgroup counts
//!   more than `ZOMBIES_MAX` unreaped tasks; then every call waits: the
//!   count stays bounded, however many cycles.
//!
//! `CNIRS_ORPHAN_CYCLES` sets the cycles of every run (1,000 for the
//! issue's full run); by default enough to fail without the policy.

use serde_json::{Value, json};
use testsupport::orphans::{PidsCgroup, command_of, init_of, spawn_under_init, zombies_of};
use testsupport::{TempDir, TestNetns, cni_path_with, plugin_bin, require_root, unique_name};

/// What the cgroup allows, as in the issue's measurement.
const PIDS_MAX: u32 = 256;

/// A network list run by cnitool, and where its state goes.
struct Net {
    name: String,
    confs: TempDir,
    _state: TempDir,
    caps: Value,
}

fn bridge_masq(state: &TempDir) -> (Value, Value) {
    let list = json!({
        "cniVersion": "1.0.0",
        "plugins": [{
            "type": "bridge",
            "bridge": unique_name("cnirsob"),
            "isGateway": true,
            "ipMasq": true,
            "ipMasqBackend": "iptables",
            "ipam": {"type": "host-local", "dataDir": state.join("ipam"),
                     "ranges": [[{"subnet": "10.240.92.0/24"}]]},
        }],
    });
    (list, json!({}))
}

/// podman's `87-podman-bridge.conflist` with our names and state dirs.
fn podman(state: &TempDir) -> (Value, Value) {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../plugins/firewall/testdata/87-podman-bridge.conflist"
    );
    let mut list: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    for p in list["plugins"].as_array_mut().unwrap() {
        match p["type"].as_str() {
            Some("bridge") => {
                p["bridge"] = json!(unique_name("cnirsop"));
                p["ipam"]["dataDir"] = json!(state.join("ipam"));
                p["ipam"]["ranges"] = json!([[{"subnet": "10.240.93.0/24"}]]);
            }
            Some(_) => p["dataDir"] = json!(state.join(p["type"].as_str().unwrap_or("x"))),
            None => {}
        }
    }
    let caps =
        json!({"portMappings": [{"hostPort": 8093, "containerPort": 80, "protocol": "tcp"}]});
    (list, caps)
}

impl Net {
    fn new(make: fn(&TempDir) -> (Value, Value)) -> Net {
        let state = TempDir::new("orphstate");
        let (mut list, caps) = make(&state);
        let name = unique_name("cnirsorn");
        list["name"] = json!(name);
        let confs = TempDir::new("orphconf");
        std::fs::write(confs.join("net.conflist"), list.to_string()).unwrap();
        Net {
            name,
            confs,
            _state: state,
            caps,
        }
    }
}

/// Every `cycles` ADD/DEL of `net` for one container, failures counted.
const DRIVER: &str = r#"
n=0; failed=0
while [ "$n" -lt "$CYCLES" ]; do
    "$CNITOOL" --cache-dir "$CACHE" add "$NET" "$CONTAINER" >/dev/null 2>>"$ERRORS" || failed=$((failed + 1))
    "$CNITOOL" --cache-dir "$CACHE" del "$NET" "$CONTAINER" >/dev/null 2>>"$ERRORS" || failed=$((failed + 1))
    n=$((n + 1))
    echo "$n $failed" >"$PROGRESS"
done
"#;

/// What one run under a stand-in PID 1 saw.
#[derive(Debug)]
struct Outcome {
    cycles: u32,
    failed: u32,
    /// The most zombies PID 1 held at once, sampled while the cycles ran.
    max_zombies: usize,
    /// Forks the cgroup refused.
    refused: u64,
    errors: String,
}

fn cycles(default: u32) -> u32 {
    std::env::var("CNIRS_ORPHAN_CYCLES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// Run `cycles` of `net` under `cnirs-init <mode>` as PID 1, in a fresh
/// cgroup of [`PIDS_MAX`] tasks; `None` (said loudly) without a pids
/// controller.
fn run(net: &Net, mode: &str, cycles: u32) -> Option<Outcome> {
    require_root();
    let Some(cgroup) = PidsCgroup::new(PIDS_MAX) else {
        eprintln!("SKIPPED: this machine has no cgroup pids controller to limit the run with");
        return None;
    };
    let host = TestNetns::new("orh");
    host.exec(&["ip", "link", "set", "lo", "up"]);
    let container = TestNetns::new("orc");
    let (work, path) = (
        TempDir::new("orphrun"),
        cni_path_with(&["bridge", "host-local", "portmap", "firewall", "tuning"]),
    );
    let cnitool = plugin_bin("cnitool");
    let cycles_text = cycles.to_string();
    let caps = net.caps.to_string();
    let (errors, progress) = (work.join("errors"), work.join("progress"));
    let env = [
        ("CYCLES", cycles_text.as_str()),
        ("CNITOOL", cnitool.to_str().unwrap()),
        ("CACHE", work.to_str()),
        ("NET", net.name.as_str()),
        ("CONTAINER", container.path()),
        ("ERRORS", errors.to_str().unwrap()),
        ("PROGRESS", progress.to_str().unwrap()),
        ("NETCONFPATH", net.confs.to_str()),
        ("CNI_PATH", path.to_str()),
        ("CAP_ARGS", caps.as_str()),
        (
            "DBUS_SYSTEM_BUS_ADDRESS",
            "unix:path=/nonexistent/cnirs-no-bus",
        ),
    ];
    let mut child = spawn_under_init(&cgroup, host.name(), mode, &["sh", "-c", DRIVER], &env);
    let init = init_of(&child);
    let driver = command_of(init);
    let mut max_zombies = 0;
    // Each cycle must end within the tests' deadline (a stalled run fails
    // rather than hangs; the bound scales with the cycles).
    let (mut seen, mut since) = (String::new(), std::time::Instant::now());
    let status = loop {
        max_zombies = max_zombies.max(zombies_of(init, driver));
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        let now = std::fs::read_to_string(&progress).unwrap_or_default();
        if now != seen {
            (seen, since) = (now, std::time::Instant::now());
        } else if since.elapsed() > testsupport::deadline() {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the driver under {mode} made no progress within the deadline (at {seen:?})");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(
        status.success(),
        "the driver under {mode} failed: {status:?}"
    );
    let progress = std::fs::read_to_string(&progress).unwrap_or_default();
    let mut words = progress.split_whitespace().map(|w| w.parse().unwrap_or(0));
    Some(Outcome {
        cycles: words.next().unwrap_or(0),
        failed: words.next().unwrap_or(u32::MAX),
        max_zombies,
        refused: cgroup.refused(),
        errors: std::fs::read_to_string(&errors).unwrap_or_default(),
    })
}

fn check(what: &str, mode: &str, o: &Outcome, cycles: u32, bound: usize) {
    eprintln!("{what} under a PID 1 that {mode}: {o:?}");
    assert_eq!(o.cycles, cycles, "{what}: cycles run");
    assert_eq!(
        (o.failed, o.refused),
        (0, 0),
        "{what}: failed calls, refused forks: {}",
        o.errors
    );
    assert!(
        o.max_zombies <= bound,
        "{what}: {} zombies under a PID 1 that {mode} (at most {bound})",
        o.max_zombies
    );
}

/// With SIGCHLD at its default, PID 1 reaps nothing and nothing is left:
/// no zombie ever.
#[test]
fn bridge_masq_under_a_pid1_that_never_waits() {
    let net = Net::new(bridge_masq);
    let n = cycles(100);
    if let Some(o) = run(&net, "never", n) {
        check("bridge + ipMasq", "never waits", &o, n, 0);
    }
}

/// A PID 1 that catches SIGCHLD and never reaps: zombies up to the
/// cgroup guard's threshold and a call's worth more, never more.
#[test]
fn bridge_masq_under_a_pid1_that_catches_sigchld_but_never_waits() {
    let net = Net::new(bridge_masq);
    let n = cycles(100);
    if let Some(o) = run(&net, "catch", n) {
        check(
            "bridge + ipMasq",
            "catches SIGCHLD, never waits",
            &o,
            n,
            bound(),
        );
    }
}

#[test]
fn podman_chain_under_a_pid1_that_never_waits() {
    let net = Net::new(podman);
    let n = cycles(40);
    if let Some(o) = run(&net, "never", n) {
        check("podman chain", "never waits", &o, n, 0);
    }
}

#[test]
fn podman_chain_under_a_pid1_that_catches_sigchld_but_never_waits() {
    let net = Net::new(podman);
    let n = cycles(40);
    if let Some(o) = run(&net, "catch", n) {
        check(
            "podman chain",
            "catches SIGCHLD, never waits",
            &o,
            n,
            bound(),
        );
    }
}

/// The threshold, and what one process may leave once it decided (its
/// deletions and netfilter sockets, a few each) with room to spare.
fn bound() -> usize {
    skel::orphans::ZOMBIES_MAX as usize + 16
}
