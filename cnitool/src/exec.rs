//! Running one plugin process through [`skel::exec`]: an explicit
//! environment (ours, with the `CNI_*` variables replaced; our own is never
//! modified), the config on stdin, stdout and stderr captured, a fresh
//! process for every retry after "text file busy", and an optional
//! deadline after which the plugin's whole process group is killed; then
//! the outcome decoded into cnitool's errors.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;

use crate::error::Error;

/// The `CNI_*` variables of one invocation. Empty strings are exported as
/// empty variables, as libcni does.
#[derive(Debug, Clone, Default)]
pub struct Invocation {
    pub command: String,
    pub container_id: String,
    pub netns: String,
    pub ifname: String,
    /// `K=V;K2=V2`.
    pub args: String,
    /// `:`-separated plugin directories.
    pub path: String,
}

impl Invocation {
    fn vars(&self) -> [(&'static str, &str); 6] {
        [
            ("CNI_COMMAND", &self.command),
            ("CNI_CONTAINERID", &self.container_id),
            ("CNI_NETNS", &self.netns),
            ("CNI_IFNAME", &self.ifname),
            ("CNI_ARGS", &self.args),
            ("CNI_PATH", &self.path),
        ]
    }
}

/// How plugins are run.
#[derive(Debug, Clone)]
pub struct Exec {
    /// The environment every plugin inherits before the `CNI_*` variables
    /// are set (a snapshot of ours by default).
    pub base_env: Vec<(OsString, OsString)>,
    /// Kill a plugin that runs longer than this.
    pub timeout: Option<Duration>,
    /// Attempts when exec fails with ETXTBSY (libcni: 6, one second apart).
    pub busy_attempts: u32,
    pub busy_delay: Duration,
    /// Copy each plugin's stderr to ours once it finishes.
    pub forward_stderr: bool,
}

impl Default for Exec {
    fn default() -> Exec {
        Exec {
            base_env: std::env::vars_os().collect(),
            timeout: None,
            busy_attempts: 6,
            busy_delay: Duration::from_secs(1),
            forward_stderr: true,
        }
    }
}

/// Why a plugin run did not succeed. Messages say what happened without
/// naming the plugin; the caller adds `plugin type=".." failed (verb)`.
#[derive(Debug)]
pub enum Failure {
    /// The process could not be started.
    Spawn(String),
    /// Killed after the deadline.
    TimedOut { after: Duration, stderr: Vec<u8> },
    /// Non-zero exit or death by signal.
    Exited {
        status: ExitStatus,
        stdout: Vec<u8>,
        stderr: Vec<u8>,
    },
}

impl Failure {
    /// Decode into an error: a CNI error object on stdout keeps its code,
    /// anything else becomes a readable description.
    pub fn into_error(self) -> Error {
        match self {
            Failure::Spawn(msg) => Error::plugin(skel::code::INTERNAL, msg),
            Failure::TimedOut { after, stderr } => Error::plugin(
                skel::code::INTERNAL,
                format!(
                    "timed out after {} and was killed{}",
                    fmt_duration(after),
                    stderr_suffix(&stderr)
                ),
            ),
            Failure::Exited {
                status,
                stdout,
                stderr,
            } => {
                let how = exit_text(status);
                if stdout.iter().all(u8::is_ascii_whitespace) {
                    return Error::plugin(
                        skel::code::INTERNAL,
                        format!("{how} without an error message{}", stderr_suffix(&stderr)),
                    );
                }
                match skel::Error::from_json(&stdout) {
                    Ok(e) => {
                        let mut err = Error::plugin(e.code, e.msg);
                        err.details = e.details;
                        err
                    }
                    Err(_) => Error::plugin(
                        skel::code::DECODING_FAILURE,
                        format!(
                            "{how} and printed an unparsable error {}{}",
                            excerpt(&stdout),
                            stderr_suffix(&stderr)
                        ),
                    ),
                }
            }
        }
    }
}

/// What a successful run printed.
#[derive(Debug)]
pub struct Output {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Exec {
    /// Run `bin` with `stdin` and the invocation's variables, in a process
    /// group of its own so that a timeout also kills what it started (an
    /// IPAM plugin it delegated to).
    pub fn run(
        &self,
        bin: &Path,
        stdin: &[u8],
        inv: &Invocation,
    ) -> std::result::Result<Output, Failure> {
        let mut cmd = skel::exec::Command::new(bin);
        cmd.env_clear()
            .envs(
                self.base_env
                    .iter()
                    .filter(|(k, _)| !inv.vars().iter().any(|(name, _)| k == name))
                    .map(|(k, v)| (k, v)),
            )
            .envs(inv.vars())
            .stdin(stdin)
            .own_process_group()
            .retry_busy(self.busy_attempts, self.busy_delay);
        if let Some(t) = self.timeout {
            cmd.timeout(t);
        }
        match cmd.run() {
            Ok(out) if out.success() => {
                self.forward(&out.stderr);
                Ok(Output {
                    stdout: out.stdout,
                    stderr: out.stderr,
                })
            }
            Ok(out) => {
                // Without an error object, stderr goes into the message.
                if !out.stdout.iter().all(u8::is_ascii_whitespace) {
                    self.forward(&out.stderr);
                }
                Err(Failure::Exited {
                    status: out.status,
                    stdout: out.stdout,
                    stderr: out.stderr,
                })
            }
            Err(skel::exec::Error::TimedOut { after, stderr, .. }) => {
                self.forward(&stderr);
                Err(Failure::TimedOut { after, stderr })
            }
            Err(e) => Err(Failure::Spawn(e.to_string())),
        }
    }

    fn forward(&self, stderr: &[u8]) {
        if self.forward_stderr && !stderr.is_empty() {
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(stderr);
            let _ = err.flush();
        }
    }
}

/// How a plugin ended, in cnitool's own messages (the wording its users
/// and scripts know; delegation inside plugins uses Go's, see
/// [`skel::exec::status_text`]).
fn exit_text(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("was killed by signal {s}"),
        _ => "exited abnormally".to_string(),
    }
}

fn fmt_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.3}s", d.as_secs_f64())
    }
}

/// Up to 200 characters of plugin output, quoted.
pub fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    if text.chars().count() > 200 {
        let cut: String = text.chars().take(200).collect();
        format!("{cut:?}...")
    } else {
        format!("{text:?}")
    }
}

fn stderr_suffix(stderr: &[u8]) -> String {
    if stderr.iter().all(u8::is_ascii_whitespace) {
        String::new()
    } else {
        format!("; stderr: {}", excerpt(stderr))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::path::PathBuf;

    struct Dir(PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn script(dir: &Dir, name: &str, body: &str) -> PathBuf {
        let p = dir.0.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    fn tmp(tag: &str) -> Dir {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = std::env::temp_dir().join(format!("cnitool-exec-{tag}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    fn quiet() -> Exec {
        Exec {
            forward_stderr: false,
            ..Exec::default()
        }
    }

    fn inv(cmd: &str) -> Invocation {
        Invocation {
            command: cmd.into(),
            container_id: "c1".into(),
            ifname: "eth0".into(),
            path: "/x".into(),
            ..Default::default()
        }
    }

    #[test]
    fn passes_env_and_stdin_explicitly() {
        let d = tmp("env");
        let p = script(
            &d,
            "p",
            r#"printf '%s|%s|%s|%s|%s|' "$CNI_COMMAND" "$CNI_CONTAINERID" "${CNI_NETNS-unset}" "$CNI_IFNAME" "$KEEP"; cat"#,
        );
        let mut exec = quiet();
        exec.base_env = vec![
            ("KEEP".into(), "yes".into()),
            ("CNI_COMMAND".into(), "STALE".into()),
        ];
        let out = exec.run(&p, b"{\"a\":1}", &inv("ADD")).unwrap();
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            "ADD|c1||eth0|yes|{\"a\":1}"
        );
    }

    #[test]
    fn decodes_failures_into_cnitool_messages() {
        let d = tmp("fail");
        let cni = script(
            &d,
            "cni",
            r#"cat >/dev/null; echo '{"code":7,"msg":"banana","details":"d"}'; exit 1"#,
        );
        let silent = script(&d, "silent", "echo oops >&2; exit 3");
        let garbage = script(&d, "garbage", "echo 'not json'; exit 1");
        let e = quiet()
            .run(&cni, b"{}", &inv("ADD"))
            .unwrap_err()
            .into_error();
        assert_eq!(
            (e.code, e.msg.as_str(), e.details.as_str()),
            (7, "banana", "d")
        );
        let e = quiet()
            .run(&silent, b"{}", &inv("DEL"))
            .unwrap_err()
            .into_error();
        assert_eq!(
            e.msg,
            "exited with status 3 without an error message; stderr: \"oops\""
        );
        let e = quiet()
            .run(&garbage, b"{}", &inv("DEL"))
            .unwrap_err()
            .into_error();
        assert_eq!(
            e.msg,
            "exited with status 1 and printed an unparsable error \"not json\""
        );
        assert_eq!(e.code, 6);
        let e = quiet()
            .run(&d.0.join("missing"), b"{}", &inv("ADD"))
            .unwrap_err()
            .into_error();
        assert!(
            e.msg.ends_with("missing: no such file or directory"),
            "{}",
            e.msg
        );
    }

    /// The plugin starts a child that holds its pipes; both die at the
    /// deadline. Nothing is timed: both would run for an hour, so the call
    /// returning at all is the timeout's doing, and the child is looked for
    /// by its pid.
    #[test]
    fn timeout_kills_the_process_group() {
        let d = tmp("timeout");
        let pidfile = d.0.join("child");
        let p = script(
            &d,
            "slow",
            &format!(
                "sleep 3600 & echo $! >{}; exec sleep 3600",
                pidfile.display()
            ),
        );
        let mut exec = quiet();
        // Long enough for the script to write the pid, however busy the
        // machine.
        exec.timeout = Some(Duration::from_secs(3));
        let e = testsupport::within_deadline("run with a timeout", move || {
            exec.run(&p, b"", &inv("ADD")).unwrap_err().into_error()
        });
        assert_eq!(e.msg, "timed out after 3s and was killed");
        let pid = std::fs::read_to_string(&pidfile).unwrap();
        assert!(
            testsupport::process_gone(pid.trim().parse().unwrap()),
            "the plugin's child survived the timeout"
        );
    }

    #[test]
    fn retries_text_file_busy_with_a_fresh_process() {
        let d = tmp("busy");
        let p = d.0.join("busy");
        std::fs::write(&p, "#!/bin/sh\necho ok\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        // Hold the binary open for writing: exec fails with ETXTBSY until
        // the writer closes it.
        let writer = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        let mut exec = quiet();
        exec.busy_delay = Duration::from_millis(100);
        exec.busy_attempts = 2;
        let e = exec.run(&p, b"", &inv("ADD")).unwrap_err().into_error();
        assert!(
            e.msg.contains("text file busy (after 2 attempts)"),
            "{}",
            e.msg
        );
        // The writer closes a little later; the retries outlast a late
        // close on a busy machine.
        exec.busy_attempts = (testsupport::deadline().as_millis() / 100) as u32;
        let closer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(250));
            drop(writer);
        });
        let out = exec.run(&p, b"", &inv("ADD")).unwrap();
        closer.join().unwrap();
        assert_eq!(out.stdout, b"ok\n");
    }
}
