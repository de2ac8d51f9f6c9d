//! Test harness shared by every plugin's tests: throwaway network
//! namespaces and temporary directories that clean up after themselves even
//! when a test panics, and a runner that executes a built plugin binary with
//! env + stdin exactly like a container runtime does.
//!
//! Every object created here carries the `cnirs` prefix plus the test's pid
//! and a counter, so parallel tests and parallel runs never collide.
//!
//! [`PluginHost`] is a plugin's throwaway "host" namespace with its
//! `CNI_PATH` and IPAM data, and the helpers the root tests of the main
//! plugins share (ping, links, firewall rules, an "outside" namespace).
//! [`traffic`] has TCP and UDP servers and clients for real traffic;
//! [`wait`] the one deadline every wait of a test is bounded by;
//! [`firewalld`] a private system bus with a real firewalld on it.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

pub mod firewalld;
mod host;
pub mod kill;
pub mod onelink;
pub mod orphans;
pub mod planted;
pub mod seccomp;
pub mod strace;
pub mod traffic;

pub mod wait;

pub use host::{PluginHost, has_link, ip_of, links, ping, ping_unanswered, ping_with, with_prev};
pub use wait::{deadline, eventually, process_gone, retry, within_deadline};

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A short name unique to this process and call: `<tag><pid36><n>`, at most
/// 15 bytes so it is also a valid interface name.
pub fn unique_name(tag: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let pid = std::process::id();
    let s = format!("{tag}{}{}", radix36(pid), radix36(n));
    assert!(s.len() <= 15, "name {s} too long: shorten the tag");
    s
}

fn radix36(mut v: u32) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(v % 36) as usize]);
        v /= 36;
        if v == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// Fail loudly when not root: CI runs as root, and a silently skipped root
/// test would hide breakage.
pub fn require_root() {
    mark_root_test();
    let uid = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
        })
        .unwrap_or_default();
    assert_eq!(
        uid, "0",
        "this test needs root (run scripts/test.sh as root)"
    );
}

/// Note this test executable in `$CNIRS_ROOT_TESTS_LOG` (once per
/// process), when set: scripts/test.sh counts the results of executables
/// with tests that need root (every namespace is made through
/// [`require_root`]) as the root tier.
fn mark_root_test() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let (Some(log), Ok(exe)) = (
            std::env::var_os("CNIRS_ROOT_TESTS_LOG"),
            std::env::current_exe(),
        ) else {
            return;
        };
        let name = exe.file_name().unwrap_or_default().to_string_lossy();
        let line = format!("{name}\n");
        // One write of a short line to an O_APPEND file: whole, whatever
        // other test processes append at the same time.
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
    });
}

/// Run a command, panicking with its output when it fails.
pub fn sh(cmd: &[&str]) -> Output {
    let out = Command::new(cmd[0])
        .args(&cmd[1..])
        .output()
        .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Run a command and return whether it succeeded, ignoring output.
pub fn try_sh(cmd: &[&str]) -> bool {
    Command::new(cmd[0])
        .args(&cmd[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// A named network namespace (`ip netns add`), deleted on drop.
pub struct TestNetns {
    name: String,
    path: String,
}

impl TestNetns {
    pub fn new(tag: &str) -> TestNetns {
        require_root();
        // Namespace names are not interface names: no 15-byte limit here.
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = format!("cnirs{tag}{}{}", radix36(std::process::id()), radix36(n));
        sh(&["ip", "netns", "add", &name]);
        let path = format!("/run/netns/{name}");
        TestNetns { name, path }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The bind-mounted namespace file, what a runtime puts in `CNI_NETNS`.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Run a command inside the namespace; panics if it fails.
    pub fn exec(&self, cmd: &[&str]) -> Output {
        let mut full = vec!["ip", "netns", "exec", &self.name];
        full.extend_from_slice(cmd);
        sh(&full)
    }

    /// Run a command inside the namespace and return its output whatever
    /// its exit status.
    pub fn exec_output(&self, cmd: &[&str]) -> Output {
        Command::new("ip")
            .args(["netns", "exec", &self.name])
            .args(cmd)
            .output()
            .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"))
    }

    /// Stdout of a command inside the namespace, as a string.
    pub fn stdout(&self, cmd: &[&str]) -> String {
        String::from_utf8_lossy(&self.exec(cmd).stdout).into_owned()
    }

    /// The namespace's IPv6 counter `key` (`/proc/net/snmp6`, e.g.
    /// `Icmp6OutNeighborSolicits`): what the kernel did, read without a
    /// clock.
    pub fn snmp6(&self, key: &str) -> u64 {
        let snmp = self.stdout(&["cat", "/proc/net/snmp6"]);
        snmp.lines()
            .find_map(|l| l.strip_prefix(key).filter(|v| v.starts_with([' ', '\t'])))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {key} in {snmp}"))
    }

    /// Whether this kernel has bridge VLAN filtering
    /// (CONFIG_BRIDGE_VLAN_FILTERING), as iproute2 finds out: by creating a
    /// VLAN-filtering bridge here.
    pub fn bridge_vlan_filtering(&self) -> bool {
        let probe = unique_name("cnirsvl");
        let add = [
            "ip",
            "link",
            "add",
            &probe,
            "type",
            "bridge",
            "vlan_filtering",
            "1",
        ];
        let ok = self.exec_output(&add).status.success();
        self.exec_output(&["ip", "link", "delete", &probe]);
        ok
    }

    /// Run `f` inside the namespace, on a thread of its own (`setns`
    /// moves only the calling thread), and return what it returns. Sockets
    /// created there stay in the namespace, so a test can make a socket in
    /// a container and use it from its own thread.
    pub fn enter<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        let ns =
            std::fs::File::open(&self.path).unwrap_or_else(|e| panic!("open {}: {e}", self.path));
        std::thread::scope(|s| {
            s.spawn(|| {
                nix::sched::setns(&ns, nix::sched::CloneFlags::CLONE_NEWNET)
                    .unwrap_or_else(|e| panic!("setns {}: {e}", self.path));
                f()
            })
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e))
        })
    }

    /// `nft -f` of `text` inside the namespace: the oracle of the
    /// nftables tests. Panics with nft's error when it fails.
    pub fn nft_f(&self, text: &str) {
        let dir = TempDir::new("nft");
        let file = dir.join("rules.nft");
        std::fs::write(&file, text).unwrap_or_else(|e| panic!("write {}: {e}", file.display()));
        let out = self.exec_output(&["nft", "-f", file.to_str().unwrap_or_default()]);
        assert!(
            out.status.success(),
            "nft -f failed: {}\n{text}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `nft -j list table <family> <table>` inside the namespace, without
    /// the metainfo entry and the handles: what two namespaces' tables are
    /// compared by.
    pub fn nft_json(&self, family: &str, table: &str) -> serde_json::Value {
        let out = self.stdout(&["nft", "-j", "list", "table", family, table]);
        let mut v: serde_json::Value = serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("nft -j output is not JSON ({e}): {out}"));
        if let Some(items) = v["nftables"].as_array_mut() {
            items.retain(|i| i.get("metainfo").is_none());
        }
        strip_handles(&mut v);
        v
    }

    /// `ip -j -d link show <name>` inside the namespace: the link's details
    /// as iproute2 reads them back, `None` when there is no such link.
    pub fn link_json(&self, name: &str) -> Option<serde_json::Value> {
        let out = self.exec_output(&["ip", "-j", "-d", "link", "show", name]);
        if !out.status.success() {
            return None;
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        v.get(0).cloned()
    }

    /// Delete now (to test DEL after the namespace is gone).
    pub fn delete(&mut self) {
        if !self.name.is_empty() {
            try_sh(&["ip", "netns", "delete", &self.name]);
            self.name.clear();
        }
    }
}

impl Drop for TestNetns {
    fn drop(&mut self) {
        self.delete();
    }
}

fn strip_handles(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            m.remove("handle");
            m.values_mut().for_each(strip_handles);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(strip_handles),
        _ => {}
    }
}

/// An exclusive `flock` on a file held by another process (`flock -o`,
/// which holds it alone: killing it releases the lock) until dropped; for
/// the tests of bounded lock waits. `flock` and its `sleep` are a process
/// group of their own, killed together: a `sleep` left running kept the
/// test's stderr, the pipe `scripts/test.sh` reads `cargo test` through,
/// open for its 600 s after every test had ended.
pub struct HeldLock(std::process::Child);

impl HeldLock {
    /// Held once this returns.
    pub fn new(path: &Path) -> HeldLock {
        let child = Command::new("flock")
            .arg("-o")
            .arg(path)
            .args(["sleep", "600"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("flock {}: {e}", path.display()));
        // flock runs its command once it holds the lock.
        let held = HeldLock(child);
        assert!(
            wait::eventually(|| !orphans::children(held.0.id()).is_empty()),
            "flock {} did not take the lock within {:?}",
            path.display(),
            wait::deadline()
        );
        held
    }

    /// The holder's PID, as `/proc/locks` names it.
    pub fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        // Not reaped yet, so its group id cannot have been reused.
        if let Ok(pgid) = i32::try_from(self.0.id()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pgid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A host link (bridge, veth end, ...) deleted on drop if it still exists.
pub struct LinkGuard(pub String);

impl Drop for LinkGuard {
    fn drop(&mut self) {
        try_sh(&["ip", "link", "delete", &self.0]);
    }
}

/// A temporary directory removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        // Not `unique_name`: directory names need not fit an interface name.
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let p =
            std::env::temp_dir().join(format!("cnirs-{tag}-{}-{n}", radix36(std::process::id())));
        std::fs::create_dir_all(&p).unwrap_or_else(|e| panic!("create {}: {e}", p.display()));
        TempDir(p)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, p: &str) -> PathBuf {
        self.0.join(p)
    }

    pub fn to_str(&self) -> &str {
        self.0.to_str().unwrap_or_default()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The target directory holding the built binaries (`target/debug`),
/// derived from the running test executable (`target/debug/deps/x-hash`);
/// `CNIRS_BIN_DIR` overrides it, so that scripts/test.sh can run black-box
/// tests on the release binaries it would install.
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CNIRS_BIN_DIR") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().unwrap_or_default();
    exe.parent()
        .and_then(|d| {
            if d.ends_with("deps") {
                d.parent()
            } else {
                Some(d)
            }
        })
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// Path of a built plugin binary of this workspace. Cargo builds a
/// package's own binary for its integration tests; other packages' binaries
/// must be built first (`cargo build --workspace`, as scripts/test.sh does).
pub fn plugin_bin(name: &str) -> PathBuf {
    let p = bin_dir().join(name);
    assert!(
        p.is_file(),
        "{} not built: run `cargo build --workspace` before the tests",
        p.display()
    );
    p
}

/// A `CNI_PATH` directory holding symlinks to the named workspace binaries,
/// so tests never depend on /opt/cni/bin.
pub fn cni_path_with(names: &[&str]) -> TempDir {
    let dir = TempDir::new("path");
    for n in names {
        std::os::unix::fs::symlink(plugin_bin(n), dir.join(n))
            .unwrap_or_else(|e| panic!("symlink {n}: {e}"));
    }
    dir
}

/// One plugin invocation, as a runtime makes it.
#[derive(Debug, Clone, Default)]
pub struct Call {
    pub command: String,
    pub container_id: String,
    pub netns: String,
    pub ifname: String,
    pub args: String,
    pub path: String,
    pub stdin: Vec<u8>,
    /// Extra variables (e.g. `CNI_NETNS_OVERRIDE`).
    pub env: Vec<(String, String)>,
    /// Kill the process (`SIGKILL`) this long after it started.
    pub kill_after: Option<std::time::Duration>,
    /// Start it in a session of its own (see [`PluginRun::pid`]).
    pub new_session: bool,
}

impl Call {
    pub fn new(command: &str) -> Call {
        Call {
            command: command.into(),
            ..Default::default()
        }
    }
    pub fn container_id(mut self, v: &str) -> Call {
        self.container_id = v.into();
        self
    }
    pub fn netns(mut self, v: &str) -> Call {
        self.netns = v.into();
        self
    }
    pub fn ifname(mut self, v: &str) -> Call {
        self.ifname = v.into();
        self
    }
    pub fn args(mut self, v: &str) -> Call {
        self.args = v.into();
        self
    }
    pub fn path(mut self, v: &str) -> Call {
        self.path = v.into();
        self
    }
    pub fn stdin(mut self, v: impl Into<Vec<u8>>) -> Call {
        self.stdin = v.into();
        self
    }
    pub fn env(mut self, k: &str, v: &str) -> Call {
        self.env.push((k.into(), v.into()));
        self
    }
    /// Make the plugin fail at the failpoint `point` (`skel::failpoint`;
    /// debug builds only).
    pub fn fail_at(self, point: &str) -> Call {
        self.env(skel::failpoint::FAIL_VAR, point)
    }

    /// Make the plugin kill itself at the point `spec` (`<point>` or
    /// `<point>#<n>`, see `skel::failpoint`; debug builds only).
    pub fn kill_at(mut self, spec: &str) -> Call {
        self.new_session = true;
        self.env(skel::failpoint::KILL_VAR, spec)
    }

    /// Kill the plugin with `SIGKILL` `after` it started (if it still
    /// runs), as a runtime's timeout or the OOM killer would.
    pub fn kill_after(mut self, after: std::time::Duration) -> Call {
        self.kill_after = Some(after);
        self.new_session = true;
        self
    }

    /// Run `bin` the way libcni does: every `CNI_*` variable exported (empty
    /// when unset), config on stdin, stdout and stderr captured.
    pub fn run(&self, bin: &Path) -> PluginRun {
        self.spawn(Command::new(bin), bin)
    }

    /// Like [`Call::run`], with the plugin started inside the named network
    /// namespace (`ip netns exec`), so that the plugin's "host" side (bridge,
    /// firewall rules, forwarding sysctls) is a throwaway namespace too.
    pub fn run_in(&self, netns_name: &str, bin: &Path) -> PluginRun {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", netns_name]).arg(bin);
        self.spawn(cmd, bin)
    }

    fn spawn(&self, mut cmd: Command, bin: &Path) -> PluginRun {
        use std::io::Write;
        cmd.env("CNI_COMMAND", &self.command)
            .env("CNI_CONTAINERID", &self.container_id)
            .env("CNI_NETNS", &self.netns)
            .env("CNI_IFNAME", &self.ifname)
            .env("CNI_ARGS", &self.args)
            .env("CNI_PATH", &self.path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        if self.new_session {
            use std::os::unix::process::CommandExt;
            // SAFETY: setsid is async-signal-safe and touches no memory.
            unsafe {
                cmd.pre_exec(|| {
                    nix::unistd::setsid()
                        .map(drop)
                        .map_err(std::io::Error::from)
                });
            }
        }
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", bin.display()));
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(&self.stdin);
        }
        if let Some(after) = self.kill_after {
            std::thread::sleep(after);
            // Not reaped yet: the pid is still the child's.
            let _ = child.kill();
        }
        let pid = child.id();
        let out = child
            .wait_with_output()
            .unwrap_or_else(|e| panic!("wait {}: {e}", bin.display()));
        PluginRun {
            pid,
            ..PluginRun::from_output(out)
        }
    }
}

/// A record of the failpoints (`skel::failpoint`) plugin runs pass, for
/// the tests that fail every step of a command in turn: record a clean
/// run, compare [`Failpoints::passed`] with the steps expected, then run
/// once per step with [`Call::fail_at`].
pub struct Failpoints {
    dir: TempDir,
}

impl Failpoints {
    pub fn new() -> Failpoints {
        Failpoints {
            dir: TempDir::new("failpoints"),
        }
    }

    /// `call` with every failpoint it passes recorded here (its delegated
    /// plugins' too).
    pub fn record(&self, call: Call) -> Call {
        let log = self.dir.join("log");
        call.env(skel::failpoint::LOG_VAR, log.to_str().unwrap_or_default())
    }

    /// Every point recorded so far, in order, with repeats.
    pub fn all(&self) -> Vec<String> {
        self.passed("")
    }

    /// The points recorded so far whose names start with `prefix`
    /// (`"bridge/"`), in order.
    pub fn passed(&self, prefix: &str) -> Vec<String> {
        std::fs::read_to_string(self.dir.join("log"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with(prefix))
            .map(str::to_string)
            .collect()
    }
}

impl Default for Failpoints {
    fn default() -> Failpoints {
        Failpoints::new()
    }
}

/// What a plugin invocation produced.
#[derive(Debug)]
pub struct PluginRun {
    /// Exit code; -1 when killed by a signal.
    pub code: i32,
    /// The process's id; with [`Call::kill_at`] or [`Call::kill_after`]
    /// also its session's, which the processes it started keep.
    pub pid: u32,
    pub stdout: String,
    pub stderr: String,
}

impl PluginRun {
    fn from_output(out: Output) -> PluginRun {
        PluginRun {
            code: out.status.code().unwrap_or(-1),
            pid: 0,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Stdout parsed as JSON; panics with the whole run when it is not.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }

    /// Assert success and return the parsed result (or `Null` when stdout
    /// is empty, as for DEL).
    pub fn ok(&self) -> serde_json::Value {
        assert_eq!(self.code, 0, "plugin failed: {self:?}");
        if self.stdout.trim().is_empty() {
            serde_json::Value::Null
        } else {
            self.json()
        }
    }

    /// Assert a CNI error with `code` and return the error object.
    pub fn err(&self, code: u64) -> serde_json::Value {
        assert_eq!(self.code, 1, "expected an error exit: {self:?}");
        let v = self.json();
        assert_eq!(v["code"], code, "unexpected error: {self:?}");
        v
    }
}

/// The host-local lease files in `dir` (entries named by an IP address)
/// as sorted `(name, content)` pairs; none when `dir` does not exist.
pub fn lease_files(dir: &Path) -> Vec<(String, String)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(String, String)> = entries
        .map(|e| e.unwrap())
        .filter_map(|e| {
            let name = e.file_name().into_string().unwrap();
            name.parse::<std::net::IpAddr>().ok()?;
            Some((name, std::fs::read_to_string(e.path()).unwrap()))
        })
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_short() {
        let a = unique_name("cnirsx");
        let b = unique_name("cnirsx");
        assert_ne!(a, b);
        assert!(a.len() <= 15);
    }

    #[test]
    fn temp_dir_is_removed() {
        let p = {
            let d = TempDir::new("t");
            std::fs::write(d.join("f"), "x").unwrap();
            d.path().to_path_buf()
        };
        assert!(!p.exists());
    }
}
