//! The one place this crate starts a process (the iptables tools): found
//! on `PATH` like Go's `exec.Command`, stdin written and closed, stdout and
//! stderr captured. Starting and waiting are separate so a plugin can let
//! `iptables-restore` run while it configures the container.

use std::io::Write;
use std::process::{Child, Command, Stdio};

/// Why a tool could not be run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ExecError {
    /// The program is not on `PATH`.
    NotFound(String),
    /// It could not be started, or it failed: the message says how.
    Failed(String),
}

/// A started tool, its input already written.
#[derive(Debug)]
pub(crate) struct Running {
    program: String,
    child: Child,
}

/// Start `program` with `args`, `stdin` written to it and closed.
pub(crate) fn start(program: &str, args: &[&str], stdin: &[u8]) -> Result<Running, ExecError> {
    let spawned = Command::new(program)
        .args(args)
        .stdin(if stdin.is_empty() {
            Stdio::null()
        } else {
            Stdio::piped()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ExecError::NotFound(format!(
                "exec: {program:?}: executable file not found in $PATH"
            )));
        }
        Err(e) => {
            return Err(ExecError::Failed(format!(
                "run {program}: {}",
                skel::io_text(&e)
            )));
        }
    };
    if let Some(mut input) = child.stdin.take() {
        // A tool that stops reading fails, and says why on stderr.
        let _ = input.write_all(stdin);
    }
    Ok(Running {
        program: program.to_string(),
        child,
    })
}

impl Running {
    /// Wait for the tool: its stdout, or its first stderr line.
    pub(crate) fn wait(self) -> Result<String, ExecError> {
        let program = self.program;
        let out = self
            .child
            .wait_with_output()
            .map_err(|e| ExecError::Failed(format!("wait for {program}: {}", skel::io_text(&e))))?;
        if out.status.success() {
            return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        let why = stderr.trim();
        let why = if why.is_empty() {
            out.status.to_string()
        } else {
            why.to_string()
        };
        Err(ExecError::Failed(format!("{program}: {why}")))
    }
}

/// Whether `program` is a file in one of `PATH`'s directories (no process
/// is started). An unset or empty `PATH` finds nothing.
pub(crate) fn on_path(program: &str) -> bool {
    let path = std::env::var("PATH").unwrap_or_default();
    skel::invoke::find_in_path(program, &path).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_programs_are_not_found() {
        let e = start("cnirs-no-such-tool", &[], b"").unwrap_err();
        assert_eq!(
            e,
            ExecError::NotFound(
                "exec: \"cnirs-no-such-tool\": executable file not found in $PATH".into()
            )
        );
        assert!(!on_path("cnirs-no-such-tool"));
        assert!(on_path("sh"));
    }

    #[test]
    fn output_and_failures() {
        let out = start("sh", &["-c", "cat"], b"in").unwrap().wait().unwrap();
        assert_eq!(out, "in");
        let e = start("sh", &["-c", "echo bad >&2; exit 3"], b"")
            .unwrap()
            .wait()
            .unwrap_err();
        assert_eq!(e, ExecError::Failed("sh: bad".into()));
    }
}
