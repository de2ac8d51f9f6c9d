//! For the tests of what plugin calls leave behind for another process to
//! reap: a throwaway cgroup with a `pids.max`, a stand-in PID 1
//! (`cnirs-init`, see its source) in a PID namespace of its own, and
//! counts of the zombies it inherits.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use crate::{plugin_bin, unique_name};

/// A cgroup of the pids controller made for one test (cgroup v2 where its
/// pids controller is available, else v1's pids hierarchy), removed on
/// drop once empty.
pub struct PidsCgroup {
    dir: PathBuf,
}

impl PidsCgroup {
    /// A new cgroup limited to `max` tasks; `None` when this machine has
    /// no pids controller to make one with.
    pub fn new(max: u32) -> Option<PidsCgroup> {
        let dir = pids_root()?.join(unique_name("cnirspid"));
        std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
        let cg = PidsCgroup { dir };
        std::fs::write(cg.dir.join("pids.max"), max.to_string()).unwrap();
        Some(cg)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file a process writes its PID to, to join.
    pub fn procs(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// The pids controller's count (live and zombie tasks).
    pub fn current(&self) -> u64 {
        let text = std::fs::read_to_string(self.dir.join("pids.current")).unwrap_or_default();
        text.trim().parse().unwrap_or(0)
    }

    /// Times a fork was refused for the limit (`pids.events`' `max`).
    pub fn refused(&self) -> u64 {
        let text = std::fs::read_to_string(self.dir.join("pids.events")).unwrap_or_default();
        text.lines()
            .find_map(|l| l.strip_prefix("max "))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for PidsCgroup {
    fn drop(&mut self) {
        // Its last tasks may still be exiting.
        if !crate::wait::retry(|| std::fs::remove_dir(&self.dir).is_ok()) {
            eprintln!("left cgroup {} (still in use)", self.dir.display());
        }
    }
}

/// Where to make a pids cgroup: the v2 mount if its root offers the pids
/// controller (enabled for children there), else the v1 hierarchy that
/// holds it.
fn pids_root() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    let mut v1 = None;
    for line in mounts.lines() {
        let w: Vec<&str> = line.split(' ').collect();
        let (Some(dir), Some(fs), Some(opts)) = (w.get(1), w.get(2), w.get(3)) else {
            continue;
        };
        let dir = PathBuf::from(dir);
        if *fs == "cgroup2" {
            let ctl = std::fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
            if ctl.split_whitespace().any(|c| c == "pids") {
                let _ = std::fs::write(dir.join("cgroup.subtree_control"), "+pids");
                let on =
                    std::fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
                if on.split_whitespace().any(|c| c == "pids") {
                    return Some(dir);
                }
            }
        } else if *fs == "cgroup" && opts.split(',').any(|o| o == "pids") {
            v1 = Some(dir);
        }
    }
    v1
}

/// The PIDs of `pid`'s children.
pub fn children(pid: u32) -> Vec<u32> {
    let path = format!("/proc/{pid}/task/{pid}/children");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// How many children of `pid` are zombies (exited, not reaped), leaving out
/// `own`: the child `pid` started itself and waits for, a zombie only
/// between its exit and that wait (a sample taken then saw one zombie
/// under a PID 1 that leaves none).
pub fn zombies_of(pid: u32, own: u32) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            // "pid (comm) S ppid ...": the comm may hold anything, so split
            // after its last parenthesis.
            let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
            let mut w = rest.split_whitespace();
            let (state, ppid) = (w.next(), w.next().and_then(|x| x.parse::<u32>().ok()));
            state == Some("Z") && ppid == Some(pid) && *p != own
        })
        .count()
}

/// `cmd` run inside network namespace `netns`, in `cgroup`, under a new
/// PID namespace whose PID 1 is `cnirs-init <mode>`; the child is the
/// process that becomes `unshare` (whose only child is the PID 1). The
/// namespace is entered with `nsenter`, not `ip netns exec`, which mounts
/// a new `/sys` and so hides the cgroup files a runtime's plugins see.
pub fn spawn_under_init(
    cgroup: &PidsCgroup,
    netns: &str,
    mode: &str,
    cmd: &[&str],
    env: &[(&str, &str)],
) -> Child {
    let init = plugin_bin("cnirs-init");
    let script = format!(
        "echo $$ > {} && exec nsenter --net=/run/netns/{netns} unshare --pid --fork {} {mode} \"$@\"",
        cgroup.procs().display(),
        init.display()
    );
    Command::new("sh")
        .args(["-c", &script, "sh"])
        .args(cmd)
        .envs(env.iter().copied())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn sh: {e}"))
}

/// The PID 1 (as we number it) that `unshare`, started by
/// [`spawn_under_init`] as `child`, made; waits for it to exist.
pub fn init_of(child: &Child) -> u32 {
    let mut init = None;
    crate::wait::retry(|| {
        init = children(child.id()).first().copied();
        init.is_some()
    });
    init.unwrap_or_else(|| panic!("unshare ({}) made no PID 1", child.id()))
}

/// The child PID 1 `init` started for the command (and waits for);
/// waits for it to exist.
pub fn command_of(init: u32) -> u32 {
    let mut cmd = None;
    crate::wait::retry(|| {
        cmd = children(init).first().copied();
        cmd.is_some()
    });
    cmd.unwrap_or_else(|| panic!("PID 1 ({init}) started no command"))
}
