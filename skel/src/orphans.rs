//! Whether this process may leave a child process behind when it exits,
//! for another process to reap: the one place that decides it.
//!
//! A few steps of a call only wait for the kernel (a link deletion's RCU
//! barrier, the release of a netfilter socket, `iptables-restore` exiting
//! after its commit). They can be left to a child process that ends on
//! its own after the plugin has returned (`cni-net`'s detached requests,
//! [`crate::exec::Running::wait_or_leave`]). When the plugin exits, such a
//! child is re-parented to the nearest child subreaper or to the PID 1 of
//! its PID namespace, and stays a zombie, holding a PID, until that
//! process reaps it. Where nobody does (a runtime in a container whose
//! PID 1 never calls `wait`), every call would leave zombies until PIDs
//! run out. Waiting is always correct; leaving is faster where a reaper
//! exists. So a child is left only when:
//!
//! 1. **PID 1 may reap.** Our namespace's PID 1 catches, ignores (the
//!    kernel then reaps for it) or blocks `SIGCHLD` (a `sigwait` or
//!    `signalfd` loop, as systemd, tini and dumb-init do), as its
//!    signal masks in `/proc/<pid>/stat` tell. With the default disposition,
//!    unblocked, it cannot be waiting for orphans. A subreaper cannot be
//!    seen from outside: [`VAR`]`=reaped` declares that orphans are reaped
//!    here (a runtime that is a reaping subreaper), `wait` forbids leaving
//!    any child.
//! 2. **No harm is measured.** A PID 1 that catches `SIGCHLD` and still
//!    never reaps (a Go program as PID 1) passes the first test. Zombies
//!    are still charged to their cgroup's `pids.current` but are no longer
//!    listed in its tasks (`cgroup.threads`, v2; `tasks`, v1), so the
//!    difference in this process's own cgroup (and its descendants) counts
//!    the tasks that exited and were not reaped. Above [`ZOMBIES_MAX`], or
//!    with fewer than [`HEADROOM_MIN`] PIDs left under `pids.max`, nothing
//!    is left: the number of zombies stays bounded whoever PID 1 is. Where
//!    it cannot be read (no pids controller, the root cgroup), the first
//!    test alone decides.
//!
//! Decided once per process, on first use (some tens of µs: a few small
//! `/proc` and cgroup files). A PID 1 caught at the moment it blocks every
//! signal (while it starts a thread or a process) reads as one that
//! blocks `SIGCHLD`; the second test bounds what that costs.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Overrides the first test: `reaped` (orphans are reaped here, by a
/// subreaper PID 1 cannot show), `wait` (never leave a child). Unset or
/// anything else: decide.
pub const VAR: &str = "CNI_RS_ORPHANS";

/// More tasks that exited and were not reaped than this in our cgroup:
/// leave nothing more.
pub const ZOMBIES_MAX: u64 = 16;

/// Fewer PIDs than this left under `pids.max`: leave nothing.
pub const HEADROOM_MIN: u64 = 16;

/// `SIGCHLD`'s bit in the signal masks of `/proc/<pid>/stat`.
const SIGCHLD_BIT: u64 = 1 << (17 - 1);

/// At most this many cgroups are counted (ours and its descendants);
/// beyond, the measure is given up.
const CGROUPS_MAX: usize = 64;

static DECISION: OnceLock<bool> = OnceLock::new();

/// Whether a child left running when this process exits will be reaped.
pub fn reaped() -> bool {
    *DECISION.get_or_init(|| decide(std::env::var(VAR).ok().as_deref()))
}

/// Settle the decision for this process before anything asks (tests of
/// one mode, a program embedding the plugins). `false` when it was
/// already decided otherwise.
pub fn assume(reaped: bool) -> bool {
    *DECISION.get_or_init(|| reaped) == reaped
}

/// The decision, with [`VAR`] set to `var`.
fn decide(var: Option<&str>) -> bool {
    verdict(var, init_may_reap, pids_count)
}

/// The decision from [`VAR`]'s value `var`, what PID 1 looks like and what
/// our cgroup counts (each looked at only when needed).
fn verdict(
    var: Option<&str>,
    init: impl FnOnce() -> Option<bool>,
    count: impl FnOnce() -> Option<PidsCount>,
) -> bool {
    let may = match var {
        Some("wait") => return false,
        Some("reaped") => true,
        _ => init().unwrap_or(false),
    };
    may && !count().is_some_and(|c| c.harm())
}

/// What the decision found, for tests and for people: PID 1's verdict,
/// the zombies counted and the PIDs left (when readable), the decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub init_may_reap: Option<bool>,
    pub zombies: Option<u64>,
    pub headroom: Option<u64>,
    pub reaped: bool,
}

/// Look again, without caching (the decision of [`reaped`] is unchanged):
/// as the decision does, from one reading of each file.
pub fn report() -> Report {
    let count = pids_count();
    let init = init_may_reap();
    let var = std::env::var(VAR).ok();
    let reaped = verdict(var.as_deref(), || init, || count.clone());
    Report {
        init_may_reap: init,
        zombies: count.as_ref().map(PidsCount::zombies),
        headroom: count.as_ref().and_then(PidsCount::headroom),
        reaped,
    }
}

/// Whether our PID namespace's PID 1 may reap, from its
/// `/proc/<pid>/stat` (which the kernel makes in about half the time of
/// `status`, with the same masks).
fn init_may_reap() -> Option<bool> {
    let mut buf = [0u8; BUF];
    may_reap(read(&init_proc_dir()?.join("stat"), &mut buf)?)
}

/// What [`read`] reads at most: `/proc/<pid>/stat` is some 300 bytes,
/// `/proc/self/cgroup` rarely 1 KiB.
const BUF: usize = 4096;

/// A small `/proc` or cgroup file, read into `buf` in one go (such files
/// report no size; reading them in growing pieces, or into fresh heap
/// buffers, costs system calls); `None` when it does not fit.
fn read<'b>(path: &Path, buf: &'b mut [u8]) -> Option<&'b str> {
    use std::io::Read;
    let mut f = fs::File::open(path).ok()?;
    let mut len = 0;
    loop {
        if len == buf.len() {
            return None;
        }
        match f.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    std::str::from_utf8(&buf[..len]).ok()
}

/// The lines of `path`, counted as they are read (a task list may be
/// long).
fn count_lines(path: &Path) -> Option<u64> {
    use std::io::Read;
    let mut f = fs::File::open(path).ok()?;
    let mut buf = [0u8; BUF];
    let mut lines = 0;
    loop {
        match f.read(&mut buf) {
            Ok(0) => return Some(lines),
            Ok(n) => lines += buf[..n].iter().filter(|b| **b == b'\n').count() as u64,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

/// Our PID 1's directory in `/proc`: `/proc/1` when `/proc` is our PID
/// namespace's, else (a namespace made without mounting its own `/proc`)
/// by the number `/proc`'s namespace gives it, read from the `fdinfo` of
/// a pidfd of our PID 1 (Linux 5.3 on). `None` when it cannot be found.
fn init_proc_dir() -> Option<PathBuf> {
    use nix::libc;
    // The common case, two readlinks: /proc is our namespace's. Reading
    // PID 1's link takes the right to inspect it, which a sandbox may
    // withhold even from root.
    let ours = fs::read_link("/proc/self/ns/pid").ok()?;
    if fs::read_link("/proc/1/ns/pid").is_ok_and(|theirs| theirs == ours) {
        return Some(PathBuf::from("/proc/1"));
    }
    // SAFETY: pidfd_open takes a PID and flags and returns a new
    // descriptor or -1; no memory is passed.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, 1, 0) };
    let fd = i32::try_from(fd).ok().filter(|fd| *fd >= 0)?;
    // SAFETY: `fd` was just returned to us and is owned by nothing else.
    let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let mut buf = [0u8; 512];
    let info = read(
        Path::new(&format!(
            "/proc/self/fdinfo/{}",
            std::os::fd::AsRawFd::as_raw_fd(&fd)
        )),
        &mut buf,
    )?;
    // "Pid:" is in the numbering of /proc's namespace (0: not seen there).
    let pid: u32 = field(info, "Pid:")?.parse().ok()?;
    (pid > 0).then(|| PathBuf::from(format!("/proc/{pid}")))
}

/// The value of the `name` line of a `/proc` status-like text.
fn field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .map(str::trim)
}

/// Whether the process of `stat` (its `/proc/<pid>/stat`) catches,
/// ignores or blocks `SIGCHLD`: fields 32 to 34 (blocked, ignored,
/// caught; decimal masks), counted after the command name, which may
/// hold anything but ends at the last `)`. `None` when unreadable.
fn may_reap(stat: &str) -> Option<bool> {
    let (_, rest) = stat.rsplit_once(')')?;
    // `rest` starts with field 3 (the state).
    let masks = rest.split_whitespace().skip(32 - 3).take(3);
    let masks: Vec<u64> = masks.map(|m| m.parse().ok()).collect::<Option<_>>()?;
    (masks.len() == 3).then(|| masks.iter().any(|m| m & SIGCHLD_BIT != 0))
}

/// The pids controller's view of our cgroup, and the tasks alive in it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PidsCount {
    current: u64,
    max: Option<u64>,
    live: u64,
}

impl PidsCount {
    /// Tasks charged to the cgroup that are not alive: exited, unreaped.
    fn zombies(&self) -> u64 {
        self.current.saturating_sub(self.live)
    }

    fn headroom(&self) -> Option<u64> {
        self.max.map(|m| m.saturating_sub(self.current))
    }

    /// Leaving a child would do harm: too many tasks exited and unreaped,
    /// or too few PIDs left.
    fn harm(&self) -> bool {
        self.zombies() > ZOMBIES_MAX || self.headroom().is_some_and(|h| h < HEADROOM_MIN)
    }
}

/// Read our cgroup's pids counters and count its live tasks.
fn pids_count() -> Option<PidsCount> {
    let mut buf = [0u8; BUF];
    let (dir, tasks) = pids_dir(read(Path::new("/proc/self/cgroup"), &mut buf)?)?;
    let current = read_u64(&dir.join("pids.current"))?;
    let mut buf = [0u8; 64];
    let max = match read(&dir.join("pids.max"), &mut buf)?.trim() {
        "max" => None,
        n => Some(n.parse().ok()?),
    };
    let live = live_tasks(&dir, tasks)?;
    Some(PidsCount { current, max, live })
}

fn read_u64(path: &Path) -> Option<u64> {
    let mut buf = [0u8; 64];
    read(path, &mut buf)?.trim().parse().ok()
}

/// The directory of our cgroup that has `pids.current`, and the name of
/// the file listing its live tasks there, from `/proc/self/cgroup`: the
/// v1 hierarchy holding `pids` (mounted under its controllers' names, as
/// systemd and Docker do), else the v2 one (`/sys/fs/cgroup`, or its
/// `unified` directory in the hybrid layout).
fn pids_dir(self_cgroup: &str) -> Option<(PathBuf, &'static str)> {
    let base = Path::new("/sys/fs/cgroup");
    let mut candidates = Vec::new();
    for line in self_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let rel = path.trim_start_matches('/');
        if controllers.split(',').any(|c| c == "pids") {
            candidates.insert(0, (base.join(controllers).join(rel), "tasks"));
        } else if controllers.is_empty() {
            candidates.push((base.join(rel), "cgroup.threads"));
            candidates.push((base.join("unified").join(rel), "cgroup.threads"));
        }
    }
    candidates
        .into_iter()
        .find(|(dir, _)| dir.join("pids.current").exists())
}

/// The tasks listed in `dir`'s `tasks` file and in its descendants'
/// (`pids.current` counts the whole subtree); `None` past
/// [`CGROUPS_MAX`] cgroups or when a list cannot be read.
fn live_tasks(dir: &Path, tasks: &str) -> Option<u64> {
    let mut todo = vec![dir.to_path_buf()];
    let mut seen = 0;
    let mut live = 0;
    while let Some(d) = todo.pop() {
        seen += 1;
        if seen > CGROUPS_MAX {
            return None;
        }
        live += count_lines(&d.join(tasks))?;
        for entry in fs::read_dir(&d).ok()?.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push(entry.path());
            }
        }
    }
    Some(live)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `/proc/<pid>/stat` line with these blocked, ignored and caught
    /// masks, and a command name that looks like more fields.
    fn stat(blk: u64, ign: u64, cgt: u64) -> String {
        let head = "1 (init) 1 2 (x) S 0 1 1 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 50 1000 300";
        let tail = "18446744073709551615 1 1 0 0 0 0";
        format!("{head} {tail} {blk} {ign} {cgt} 0 0 0 17 0 0 0 0 0")
    }

    #[test]
    fn sigchld_caught_ignored_or_blocked_may_reap() {
        let chld = 1 << 16;
        // This sandbox's PID 1: SIGPIPE ignored, SIGILL.. SIGSEGV caught.
        assert_eq!(may_reap(&stat(0, 0x1000, 0x4e8)), Some(false));
        assert_eq!(may_reap(&stat(chld, 0, 0)), Some(true));
        assert_eq!(may_reap(&stat(0, chld, 0)), Some(true));
        assert_eq!(may_reap(&stat(0, 0, 0xfffffffe7ffbfeff)), Some(true));
        assert_eq!(may_reap(&stat(0x14002, 0, 0)), Some(true));
        assert_eq!(may_reap(&stat(0, 0, 0xfffffffffffeffff)), Some(false));
        assert_eq!(may_reap("1 (init) S 0"), None);
        assert_eq!(may_reap("garbage"), None);
    }

    /// The masks are at the fields `status` shows them under, cut to the
    /// 31 classic signals (`stat` leaves the real-time ones out; SIGCHLD
    /// is 17). Read from a `sleep`, whose masks stay put (this process's
    /// main thread blocks every signal for a moment whenever a test thread
    /// starts).
    #[test]
    fn stat_masks_are_status_masks() {
        let mut sleep = std::process::Command::new("sleep")
            .arg("10")
            .spawn()
            .unwrap();
        let dir = PathBuf::from(format!("/proc/{}", sleep.id()));
        let (mut a, mut b) = ([0u8; BUF], [0u8; BUF]);
        let stat = read(&dir.join("stat"), &mut a).unwrap().to_string();
        let status = read(&dir.join("status"), &mut b).unwrap().to_string();
        let _ = sleep.kill();
        let _ = sleep.wait();
        let hex =
            |name| u64::from_str_radix(field(&status, name).unwrap(), 16).unwrap() & 0x7fff_ffff;
        let (_, rest) = stat.rsplit_once(')').unwrap();
        let masks: Vec<u64> = rest
            .split_whitespace()
            .skip(29)
            .take(3)
            .map(|m| m.parse().unwrap())
            .collect();
        assert_eq!(masks, vec![hex("SigBlk:"), hex("SigIgn:"), hex("SigCgt:")]);
    }

    #[test]
    fn pids_cgroup_found_in_v1_and_v2_layouts() {
        // Paths that do not exist here are never chosen.
        assert_eq!(pids_dir("12:pids:/cnirs-nonexistent\n0::/\n"), {
            let v2 = Path::new("/sys/fs/cgroup/pids.current").is_file();
            v2.then(|| (PathBuf::from("/sys/fs/cgroup/"), "cgroup.threads"))
        });
        assert_eq!(pids_dir("garbage"), None);
        assert_eq!(pids_dir(""), None);
    }

    #[test]
    fn zombies_are_charged_minus_live() {
        let c = PidsCount {
            current: 30,
            max: Some(40),
            live: 10,
        };
        assert_eq!((c.zombies(), c.headroom()), (20, Some(10)));
        let racing = PidsCount {
            current: 3,
            max: None,
            live: 5,
        };
        assert_eq!((racing.zombies(), racing.headroom()), (0, None));
    }

    #[test]
    fn overrides() {
        assert!(!decide(Some("wait")));
        // `reaped` skips PID 1's test, not the cgroup's.
        let harm = pids_count().is_some_and(|c| c.harm());
        assert_eq!(decide(Some("reaped")), !harm);
    }

    #[test]
    fn small_files_are_read_whole_or_not_at_all() {
        let mut buf = [0u8; BUF];
        let status = read(Path::new("/proc/self/status"), &mut buf).unwrap();
        assert!(status.contains("SigCgt:"), "{status}");
        let mut tiny = [0u8; 8];
        assert_eq!(read(Path::new("/proc/self/status"), &mut tiny), None);
        assert!(count_lines(Path::new("/proc/self/status")).unwrap() > 10);
    }
}
