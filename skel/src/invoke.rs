//! Delegation: running another plugin (an IPAM plugin) found on `CNI_PATH`
//! with our environment, `CNI_COMMAND` overridden and our full stdin, as
//! the reference's `invoke.Delegate*` does, through [`crate::exec`].
//!
//! In-process delegation: a multi-call binary (one executable installed
//! under every plugin's name) registers its plugins with [`in_process`].
//! When the file `CNI_PATH` resolves to is this very executable (same
//! device and inode as `/proc/self/exe`), exec would only start this code
//! again under another name; the plugin then runs on a thread of this
//! process instead: same stdin, same environment with `CNI_COMMAND`
//! overridden, stderr shared as a child's would be, and its stdout and exit
//! code read exactly as a child's. Any other file is exec'd.
//!
//! Either way the plugin's answer is waited for at most
//! [`crate::deadline::timeout`]: an exec'd plugin is then killed with what
//! it started (its process group), one run in-process is left to end with
//! ours; the error names the plugin and says it did not answer
//! ([`Failed::answered`] is false, as for a plugin that died: what it took
//! may still be held, see [`finish_add`]).

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use crate::error::{Error, code};
use crate::exec;
use crate::gojson::quote;
use crate::types::CniResult;

/// Find `name` in the `:`-separated `path`, as the reference's `FindInPath`:
/// any regular file of that name counts; names with `/` are refused.
pub fn find_in_path(name: &str, path: &str) -> Result<PathBuf, Error> {
    find(name, path).map(|(path, _)| path)
}

/// [`find_in_path`], with the file's metadata (followed through symlinks,
/// as exec follows them) from the stat that found it.
fn find(name: &str, path: &str) -> Result<(PathBuf, std::fs::Metadata), Error> {
    if name.is_empty() {
        return Err(Error::internal("no plugin name provided"));
    }
    if name.contains('/') || name == "." || name == ".." {
        return Err(Error::internal(format!("invalid plugin name: {name}")));
    }
    let dirs: Vec<&str> = path.split(':').filter(|d| !d.is_empty()).collect();
    if dirs.is_empty() {
        return Err(Error::internal("no paths provided"));
    }
    for dir in &dirs {
        let candidate = Path::new(dir).join(name);
        if let Ok(m) = candidate.metadata()
            && m.is_file()
        {
            return Ok((candidate, m));
        }
    }
    Err(Error::internal(format!(
        "failed to find plugin {name:?} in path [{}]",
        dirs.join(" ")
    )))
}

/// Run `plugin` with `CNI_COMMAND=command`, `stdin` and the rest of our
/// environment; its stderr goes to ours. Returns its stdout on success and
/// its decoded error otherwise.
pub fn exec(plugin: &str, command: &str, cni_path: &str, stdin: &[u8]) -> Result<Vec<u8>, Error> {
    start(plugin, command, cni_path, stdin)?.wait()
}

/// A plugin's whole run, as [`crate::run`]: environment, stdin, stdout,
/// stderr; returns the exit code.
pub type Entry =
    fn(&dyn Fn(&str) -> Option<String>, &mut dyn Read, &mut dyn Write, &mut dyn Write) -> i32;

/// The plugins a multi-call binary can run in-process, by name.
pub type Lookup = fn(&str) -> Option<Entry>;

static IN_PROCESS: OnceLock<Lookup> = OnceLock::new();

/// Register the plugins of this executable that delegation may run
/// in-process (once; later calls are ignored).
pub fn in_process(lookup: Lookup) {
    let _ = IN_PROCESS.set(lookup);
}

/// Whether the file of metadata `bin` (symlinks followed, as exec follows
/// them) is the file this process runs.
fn is_this_executable(bin: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    static SELF: OnceLock<Option<(u64, u64)>> = OnceLock::new();
    let id = |m: &std::fs::Metadata| (m.dev(), m.ino());
    let me = *SELF.get_or_init(|| std::fs::metadata("/proc/self/exe").ok().as_ref().map(id));
    me == Some(id(bin))
}

/// A delegated plugin started by [`start`] (plugin and command, for
/// messages).
#[derive(Debug)]
pub struct Running(Inner, String, String);

#[derive(Debug)]
enum Inner {
    Child(exec::Running),
    /// Run in-process: its exit code and stdout, when it ends.
    Thread(std::sync::mpsc::Receiver<(i32, Vec<u8>)>),
}

/// Why a delegated plugin gave no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failed {
    pub error: Error,
    /// It answered with an error of its own. Otherwise it died or was
    /// killed at the deadline, maybe holding what it had taken by then.
    pub answered: bool,
}

impl From<Failed> for Error {
    fn from(f: Failed) -> Error {
        f.error
    }
}

/// "text file busy" while a plugin binary is being replaced: a fresh
/// process up to this many times (the reference retries a spent one).
const BUSY_ATTEMPTS: u32 = 6;
const BUSY_DELAY: Duration = Duration::from_millis(200);

/// The first half of [`exec`]: find and start `plugin` and hand it `stdin`,
/// without waiting for it, so the caller can work while it runs. Finish
/// with [`Running::wait`] (also on the caller's error paths, before any
/// cleanup that must follow the plugin's own work).
pub fn start(plugin: &str, command: &str, cni_path: &str, stdin: &[u8]) -> Result<Running, Error> {
    // The stat that found the file tells whether it is this executable.
    let (bin, meta) = find(plugin, cni_path)?;
    if let Some(entry) = IN_PROCESS.get().and_then(|lookup| lookup(plugin))
        && is_this_executable(&meta)
        && let Some(thread) = start_thread(entry, plugin, command, stdin)
    {
        return Ok(Running(
            Inner::Thread(thread),
            plugin.to_string(),
            command.to_string(),
        ));
    }
    exec::Command::new(&bin)
        .env("CNI_COMMAND", command)
        .stdin(stdin)
        .inherit_stderr()
        .retry_busy(BUSY_ATTEMPTS, BUSY_DELAY)
        .timeout(crate::deadline::timeout())
        .own_process_group()
        .start()
        .map(|r| Running(Inner::Child(r), plugin.to_string(), command.to_string()))
        .map_err(|e| Error::internal(e.to_string()))
}

/// Run `entry` on a thread as the exec'd plugin would run: `CNI_COMMAND`
/// is `command`, every other variable ours. `None` when no thread can be
/// started (the caller execs instead).
fn start_thread(
    entry: Entry,
    plugin: &str,
    command: &str,
    stdin: &[u8],
) -> Option<std::sync::mpsc::Receiver<(i32, Vec<u8>)>> {
    let command = command.to_string();
    let input = stdin.to_vec();
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name(plugin.to_string())
        .spawn(move || {
            let env = |k: &str| match k {
                "CNI_COMMAND" => Some(command.clone()),
                _ => std::env::var(k).ok(),
            };
            let mut out = Vec::new();
            let code = entry(&env, &mut &input[..], &mut out, &mut std::io::stderr());
            // The waiter may have given up at the deadline.
            let _ = send.send((code, out));
        })
        .ok()?;
    Some(receive)
}

impl Running {
    /// Wait for the plugin: its stdout on success, else its error as the
    /// reference's `invoke` reports it (`pluginErr`).
    pub fn wait(self) -> Result<Vec<u8>, Error> {
        self.finish().map_err(Error::from)
    }

    /// [`Running::wait`], telling a plugin's own error from no answer.
    pub fn finish(self) -> Result<Vec<u8>, Failed> {
        let Running(inner, plugin, command) = self;
        let silent = |error| Failed {
            error,
            answered: false,
        };
        let out = match inner {
            Inner::Child(child) => child.wait().map_err(|e| {
                silent(match e {
                    exec::Error::TimedOut { after, .. } => {
                        no_answer(&plugin, &command, after, "killed")
                    }
                    e => Error::internal(e.to_string()),
                })
            })?,
            Inner::Thread(thread) => {
                let after = crate::deadline::timeout();
                let (code, stdout) = thread.recv_timeout(after).map_err(|e| {
                    silent(match e {
                        std::sync::mpsc::RecvTimeoutError::Timeout => {
                            no_answer(&plugin, &command, after, "no longer waited for")
                        }
                        _ => Error::internal("netplugin failed with no error message: panicked"),
                    })
                })?;
                exec::Output {
                    status: std::process::ExitStatus::from_raw((code & 0xff) << 8),
                    stdout,
                    stderr: Vec::new(),
                }
            }
        };
        if out.success() {
            return Ok(out.stdout);
        }
        if out.stdout.is_empty() {
            return Err(silent(Error::internal(format!(
                "netplugin failed with no error message: {}",
                exec::status_text(out.status)
            ))));
        }
        let error = Error::from_json(&out.stdout).unwrap_or_else(|e| {
            Error::internal(format!(
                "netplugin failed but error parsing its diagnostic message {}: {e}",
                quote(&String::from_utf8_lossy(&out.stdout))
            ))
        });
        Err(Failed {
            error,
            answered: true,
        })
    }
}

/// `plugin command` gave no answer within `after`, and what became of it.
fn no_answer(plugin: &str, command: &str, after: Duration, fate: &str) -> Error {
    Error::internal(format!(
        "plugin {plugin} ({command}) gave no answer within {} ({}): {fate}",
        crate::deadline::describe(after),
        crate::deadline::VAR
    ))
}

/// Delegate ADD and parse the result. A result without `cniVersion` is
/// taken to be in `cni_version` (the config's).
pub fn delegate_add(
    plugin: &str,
    cni_path: &str,
    stdin: &[u8],
    cni_version: &str,
) -> Result<CniResult, Error> {
    parse_add(plugin, exec(plugin, "ADD", cni_path, stdin)?, cni_version)
}

/// The result of an ADD started with [`start`], as [`delegate_add`] reads it.
pub fn wait_add(running: Running, plugin: &str, cni_version: &str) -> Result<CniResult, Error> {
    parse_add(plugin, running.wait()?, cni_version)
}

/// [`wait_add`], telling a plugin's own error (it holds nothing: the
/// plugin undid its failure) from no answer (killed at the deadline, or
/// dead: what it took may be held, and its DEL releases it).
pub fn finish_add(running: Running, plugin: &str, cni_version: &str) -> Result<CniResult, Failed> {
    let out = running.finish()?;
    parse_add(plugin, out, cni_version).map_err(|error| Failed {
        error,
        answered: true,
    })
}

fn parse_add(plugin: &str, out: Vec<u8>, cni_version: &str) -> Result<CniResult, Error> {
    if out.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::new(
            code::DECODING_FAILURE,
            format!("plugin {plugin} returned no result"),
        ));
    }
    CniResult::parse_bytes(&out, cni_version)
}

/// Delegate DEL, CHECK, STATUS or GC, where success prints nothing.
pub fn delegate(plugin: &str, command: &str, cni_path: &str, stdin: &[u8]) -> Result<(), Error> {
    exec(plugin, command, cni_path, stdin).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_names_with_separators_are_refused() {
        assert_eq!(
            find_in_path("", "/bin").unwrap_err().msg,
            "no plugin name provided"
        );
        assert_eq!(
            find_in_path("../sh", "/bin").unwrap_err().msg,
            "invalid plugin name: ../sh"
        );
        assert_eq!(
            find_in_path("a/b", "/bin").unwrap_err().msg,
            "invalid plugin name: a/b"
        );
    }

    #[test]
    fn finds_regular_files_only() {
        assert_eq!(
            find_in_path("sh", "/nonexistent:/bin").unwrap(),
            PathBuf::from("/bin/sh")
        );
        assert_eq!(
            find_in_path("nope-cni", "/a:/b").unwrap_err().msg,
            "failed to find plugin \"nope-cni\" in path [/a /b]"
        );
        assert!(find_in_path("sh", "").is_err());
    }

    #[test]
    fn decodes_child_errors_as_the_reference_invoke_does() {
        let dir = std::env::temp_dir().join(format!("skel-invoke-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("fails");
        std::fs::write(
            &script,
            "#!/bin/sh\ncat >/dev/null\necho '{\"code\":7,\"msg\":\"bad\"}'\nexit 1\n",
        )
        .unwrap();
        let silent = dir.join("silent");
        std::fs::write(&silent, "#!/bin/sh\nexit 3\n").unwrap();
        let garbage = dir.join("garbage");
        std::fs::write(&garbage, "#!/bin/sh\necho '{oops'\nexit 1\n").unwrap();
        let killed = dir.join("killed");
        std::fs::write(&killed, "#!/bin/sh\nkill -9 $$\n").unwrap();
        let ok = dir.join("ok");
        std::fs::write(
            &ok,
            "#!/bin/sh\ncat >/dev/null\necho '{\"ips\":[{\"address\":\"10.240.0.9/24\"}]}'\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        for f in [&script, &silent, &ok, &garbage, &killed] {
            std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let path = dir.to_str().unwrap();
        assert_eq!(
            exec("fails", "ADD", path, b"{}").unwrap_err(),
            Error::new(7, "bad")
        );
        assert_eq!(
            exec("silent", "DEL", path, b"{}").unwrap_err().msg,
            "netplugin failed with no error message: exit status 3"
        );
        assert_eq!(
            exec("killed", "DEL", path, b"{}").unwrap_err().msg,
            "netplugin failed with no error message: signal: killed"
        );
        assert!(
            exec("garbage", "DEL", path, b"{}")
                .unwrap_err()
                .msg
                .starts_with(
                    "netplugin failed but error parsing its diagnostic message \"{oops\\n\": "
                )
        );
        assert_eq!(
            exec("missing", "ADD", path, b"{}").unwrap_err().msg,
            format!("failed to find plugin \"missing\" in path [{path}]")
        );
        let r = delegate_add("ok", path, b"{}", "1.0.0").unwrap();
        assert_eq!(r.version(), "1.0.0");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The in-process stand-in of `fake-ipam`: answers with what it was
    /// given, fails as told by its stdin.
    fn fake_ipam(
        env: &dyn Fn(&str) -> Option<String>,
        stdin: &mut dyn std::io::Read,
        stdout: &mut dyn std::io::Write,
        _stderr: &mut dyn std::io::Write,
    ) -> i32 {
        let mut input = String::new();
        stdin.read_to_string(&mut input).unwrap();
        let cmd = env("CNI_COMMAND").unwrap_or_default();
        match input.as_str() {
            "fail" => {
                write!(stdout, "{{\"code\":7,\"msg\":\"bad {cmd}\"}}").unwrap();
                1
            }
            "silent" => 3,
            _ => {
                write!(stdout, "in-process {cmd} {input} {}", env("PATH").is_some()).unwrap();
                0
            }
        }
    }

    fn lookup(name: &str) -> Option<Entry> {
        (name == "fake-ipam").then_some(fake_ipam as Entry)
    }

    #[test]
    fn this_executable_runs_in_process_any_other_file_is_execd() {
        in_process(lookup);
        let exe = std::env::current_exe().unwrap();
        // Next to the test binary, so that a hard link is possible.
        let base = exe
            .parent()
            .unwrap()
            .join(format!("skel-inproc-{}", std::process::id()));
        let (same, linked, other) = (base.join("same"), base.join("linked"), base.join("other"));
        for d in [&same, &linked, &other] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::hard_link(&exe, same.join("fake-ipam")).unwrap();
        std::os::unix::fs::symlink(&exe, linked.join("fake-ipam")).unwrap();
        let script = other.join("fake-ipam");
        std::fs::write(&script, "#!/bin/sh\nread x\necho \"exec'd $CNI_COMMAND\"\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();

        for dir in [&same, &linked] {
            let path = dir.to_str().unwrap();
            let out = exec("fake-ipam", "ADD", path, b"hello").unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), "in-process ADD hello true");
            assert_eq!(
                exec("fake-ipam", "DEL", path, b"fail").unwrap_err(),
                Error::new(7, "bad DEL")
            );
            assert_eq!(
                exec("fake-ipam", "DEL", path, b"silent").unwrap_err().msg,
                "netplugin failed with no error message: exit status 3"
            );
        }
        // Same name, another file: exec'd as the spec says.
        let out = exec("fake-ipam", "CHECK", other.to_str().unwrap(), b"x\n").unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "exec'd CHECK\n");
        // CNI_PATH's first file of the name wins: another file before this
        // executable is exec'd, this executable before another runs here.
        let (o, s) = (other.to_str().unwrap(), same.to_str().unwrap());
        let out = exec("fake-ipam", "ADD", &format!("{o}:{s}"), b"x\n").unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "exec'd ADD\n");
        let out = exec("fake-ipam", "ADD", &format!("/nonexistent:{s}:{o}"), b"y").unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "in-process ADD y true");
        // A name the executable does not run in-process is exec'd too.
        std::fs::hard_link(&script, same.join("sh-ipam")).unwrap();
        let out = exec("sh-ipam", "ADD", same.to_str().unwrap(), b"x\n").unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "exec'd ADD\n");
        std::fs::remove_dir_all(&base).unwrap();
    }
}
