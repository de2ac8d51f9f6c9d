//! Running a program: the one place this suite starts processes (IPAM
//! plugins it delegates to, the plugins `cnitool` runs, firewall tools).
//!
//! - The program gets its arguments, environment and stdin; stdout is
//!   captured, stderr captured or passed through.
//! - [`Command::start`] returns once the process runs and the stdin that
//!   fits the pipe is written, so the caller can work meanwhile;
//!   [`Running::wait`] finishes (the rest of stdin, output, exit status).
//!   Pipes are pumped with `poll` on the calling thread: no helper threads,
//!   and no deadlock whatever order the program reads and writes in.
//! - "text file busy" (a binary being replaced) is retried with a fresh
//!   process, when asked for ([`Command::retry_busy`]).
//! - [`Running::wait_or_leave`] also watches a descriptor of the caller's
//!   and stops as soon as the caller says the program has done what
//!   matters, leaving it to finish on its own ([`LeftRunning`]): used for
//!   a tool whose exit the kernel delays after its work is done.
//! - An optional deadline kills the program (its whole process group with
//!   [`Command::own_process_group`]) and reports what it printed so far.
//! - A program that does not exist is [`Error::NotFound`], distinct from
//!   other failures to start it; a finished program is an [`Output`]
//!   whatever its exit status, described in Go's words by [`status_text`].
//!
//! ```
//! use skel::exec::Command;
//!
//! let out = Command::new("sh").args(["-c", "cat; echo err >&2; exit 3"]).stdin("hi").run().unwrap();
//! assert_eq!((out.stdout.as_slice(), out.stderr.as_slice()), (&b"hi"[..], &b"err\n"[..]));
//! assert_eq!(skel::exec::status_text(out.status), "exit status 3");
//! assert!(matches!(
//!     Command::new("/nonexistent/tool").run(),
//!     Err(skel::exec::Error::NotFound { .. })
//! ));
//! ```

use std::ffi::OsStr;
use std::fmt;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

/// A program to run, built like `std::process::Command`.
#[derive(Debug)]
pub struct Command {
    inner: std::process::Command,
    program: String,
    stdin: Option<Vec<u8>>,
    capture_stderr: bool,
    timeout: Option<Duration>,
    busy_attempts: u32,
    busy_delay: Duration,
    own_group: bool,
}

/// Why a program could not be run to its end.
#[derive(Debug)]
pub enum Error {
    /// The program does not exist (`ENOENT` from exec).
    NotFound { program: String },
    /// It could not be started for another reason; `attempts` counts the
    /// tries when it was "text file busy".
    Spawn {
        program: String,
        errno: Errno,
        attempts: u32,
    },
    /// Feeding it, reading from it or waiting for it failed.
    Io { program: String, text: String },
    /// It ran past its deadline and was killed; what it printed until then.
    TimedOut {
        program: String,
        after: Duration,
        stdout: Vec<u8>,
        stderr: Vec<u8>,
    },
}

impl fmt::Display for Error {
    /// Go's `exec` wording where it has one.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotFound { program } if !program.contains('/') => {
                write!(f, "exec: {program:?}: executable file not found in $PATH")
            }
            Error::NotFound { program } => {
                write!(f, "fork/exec {program}: no such file or directory")
            }
            Error::Spawn {
                program,
                errno,
                attempts,
            } => {
                write!(f, "fork/exec {program}: {}", crate::errno_text(*errno))?;
                if *attempts > 1 {
                    write!(f, " (after {attempts} attempts)")?;
                }
                Ok(())
            }
            Error::Io { program, text } => write!(f, "{program}: {text}"),
            Error::TimedOut { program, after, .. } => write!(
                f,
                "{program}: no answer within {} ({}), killed",
                crate::deadline::describe(*after),
                crate::deadline::VAR
            ),
        }
    }
}

impl std::error::Error for Error {}

/// What a program that ran to its end printed, and how it ended.
#[derive(Debug, Clone)]
pub struct Output {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    /// Empty when stderr was passed through.
    pub stderr: Vec<u8>,
}

impl Output {
    pub fn success(&self) -> bool {
        self.status.success()
    }
}

impl Command {
    /// `program` is a path, or a name looked up in `PATH`.
    pub fn new(program: impl AsRef<OsStr>) -> Command {
        Command {
            inner: std::process::Command::new(program.as_ref()),
            program: program.as_ref().to_string_lossy().into_owned(),
            stdin: None,
            capture_stderr: true,
            timeout: None,
            busy_attempts: 1,
            busy_delay: Duration::ZERO,
            own_group: false,
        }
    }

    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Command {
        self.inner.arg(arg);
        self
    }

    pub fn args<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(&mut self, args: I) -> &mut Command {
        self.inner.args(args);
        self
    }

    /// Set one variable on top of the inherited environment.
    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Command {
        self.inner.env(key, value);
        self
    }

    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut Command
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.inner.envs(vars);
        self
    }

    /// Start from an empty environment instead of ours.
    pub fn env_clear(&mut self) -> &mut Command {
        self.inner.env_clear();
        self
    }

    /// Bytes for its stdin, closed after them. Without this, stdin is
    /// `/dev/null`.
    pub fn stdin(&mut self, data: impl Into<Vec<u8>>) -> &mut Command {
        self.stdin = Some(data.into());
        self
    }

    /// Let its stderr go to ours instead of capturing it.
    pub fn inherit_stderr(&mut self) -> &mut Command {
        self.capture_stderr = false;
        self
    }

    /// Kill it once it has run this long.
    pub fn timeout(&mut self, after: Duration) -> &mut Command {
        self.timeout = Some(after);
        self
    }

    /// Try up to `attempts` times, `delay` apart, while exec fails with
    /// "text file busy" (the binary is still open for writing, typically
    /// while being installed), each time with a fresh process.
    pub fn retry_busy(&mut self, attempts: u32, delay: Duration) -> &mut Command {
        self.busy_attempts = attempts.max(1);
        self.busy_delay = delay;
        self
    }

    /// Start it in a process group of its own, so that a timeout also
    /// kills what it started.
    pub fn own_process_group(&mut self) -> &mut Command {
        self.own_group = true;
        self
    }

    /// Start the program and write the stdin that fits the pipe; the rest
    /// is written by [`Running::wait`].
    pub fn start(&mut self) -> Result<Running, Error> {
        self.inner
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(if self.capture_stderr {
                Stdio::piped()
            } else {
                Stdio::inherit()
            });
        if self.own_group {
            self.inner.process_group(0);
        }
        let mut child = self.spawn()?;
        let deadline = self.timeout.map(|t| Instant::now() + t);
        let stdin = match child.stdin.take() {
            Some(pipe) => {
                // Non-blocking, so a program that does not read cannot stop
                // us; what does not fit now is written while waiting.
                let _ = fcntl(pipe.as_fd(), FcntlArg::F_SETFL(OFlag::O_NONBLOCK));
                Some((pipe, self.stdin.clone().unwrap_or_default(), 0))
            }
            None => None,
        };
        let mut process = Process {
            stdout_pipe: child.stdout.take(),
            stderr_pipe: child.stderr.take(),
            child,
            program: self.program.clone(),
            stdin,
            stdout: Vec::new(),
            stderr: Vec::new(),
            deadline,
            timeout: self.timeout.unwrap_or_default(),
            own_group: self.own_group,
        };
        process.feed();
        Ok(Running(Box::new(process)))
    }

    /// [`Command::start`], then [`Running::wait`].
    pub fn run(&mut self) -> Result<Output, Error> {
        self.start()?.wait()
    }

    fn spawn(&mut self) -> Result<Child, Error> {
        let mut attempt = 1;
        loop {
            let err = match self.inner.spawn() {
                Ok(child) => return Ok(child),
                Err(e) => e,
            };
            let errno = Errno::from_raw(err.raw_os_error().unwrap_or(0));
            if errno == Errno::ETXTBSY && attempt < self.busy_attempts {
                attempt += 1;
                std::thread::sleep(self.busy_delay);
                continue;
            }
            let program = self.program.clone();
            return Err(match errno {
                Errno::ENOENT => Error::NotFound { program },
                _ => Error::Spawn {
                    program,
                    errno,
                    attempts: attempt,
                },
            });
        }
    }
}

/// A started program. Finish it with [`Running::wait`], also on error
/// paths: dropping it leaves the process running unwatched.
#[derive(Debug)]
pub struct Running(Box<Process>);

/// Boxed, so that callers can keep a [`Running`] in small enums.
#[derive(Debug)]
struct Process {
    child: Child,
    program: String,
    /// The pipe, the bytes, and how many are written.
    stdin: Option<(ChildStdin, Vec<u8>, usize)>,
    stdout_pipe: Option<ChildStdout>,
    stderr_pipe: Option<ChildStderr>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    deadline: Option<Instant>,
    timeout: Duration,
    own_group: bool,
}

/// What the caller of [`Running::wait_or_leave`] makes of its descriptor
/// becoming readable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watch {
    /// Not yet: keep waiting (for the descriptor or the exit).
    Waiting,
    /// The program has done what matters: stop waiting for it.
    Done,
    /// The descriptor is of no more use: wait for the exit alone.
    Broken,
}

/// How [`Running::wait_or_leave`] ended.
#[derive(Debug)]
pub enum Finish {
    /// The program ran to its end first.
    Exited(Output),
    /// The caller's watch said done first; the program runs on.
    Left(LeftRunning),
}

/// A program left running by [`Running::wait_or_leave`]: its stdin was
/// written in full and closed, its other pipes are closed (what it still
/// prints is lost). Dropping this does not reap it: the process that
/// inherits it when we exit does (init or a subreaper; only left where
/// one will, see [`crate::orphans`]), as for the children `cni-net` leaves
/// to release netlink sockets.
#[derive(Debug)]
pub struct LeftRunning(Child);

impl LeftRunning {
    pub fn id(&self) -> u32 {
        self.0.id()
    }

    /// Wait for it after all (tests).
    pub fn wait(mut self) -> std::io::Result<ExitStatus> {
        self.0.wait()
    }
}

/// The caller's descriptor and what to do when it is readable.
type Watcher<'a> = (BorrowedFd<'a>, &'a mut dyn FnMut() -> Watch);

/// Why [`Process::pump`] stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pumped {
    /// Every pipe is closed: the program is ending.
    Closed,
    /// The deadline passed.
    Late,
    /// The caller's watch said done, and stdin is written.
    Watched,
}

/// How long a killed program's group gets to close its pipes.
const DRAIN_AFTER_KILL: Duration = Duration::from_millis(200);

impl Running {
    pub fn id(&self) -> u32 {
        self.0.child.id()
    }

    /// Write what is left of stdin, collect stdout (and stderr), and wait
    /// for the exit, within the deadline if there is one.
    pub fn wait(self) -> Result<Output, Error> {
        match self.0.wait(None)? {
            Finish::Exited(out) => Ok(out),
            Finish::Left(_) => unreachable!("left running without a watch"),
        }
    }

    /// As [`Running::wait`], but also poll `fd` and call `done` each time
    /// it is readable (it must consume what made `fd` readable): once
    /// `done` says [`Watch::Done`] and stdin is written in full, stop there
    /// and leave the program running. Whatever comes first decides; a
    /// deadline still applies until then. Where a program left running
    /// would not be reaped after we exit ([`crate::orphans`]), the exit is
    /// waited for.
    pub fn wait_or_leave(
        self,
        fd: BorrowedFd<'_>,
        mut done: impl FnMut() -> Watch,
    ) -> Result<Finish, Error> {
        match crate::orphans::reaped() {
            true => self.0.wait(Some((fd, &mut done))),
            false => self.0.wait(None),
        }
    }
}

impl Process {
    fn wait(mut self, watch: Option<Watcher<'_>>) -> Result<Finish, Error> {
        match self.pump(self.deadline, watch)? {
            Pumped::Watched => return Ok(Finish::Left(LeftRunning(self.child))),
            Pumped::Late => return Err(self.kill()),
            Pumped::Closed if !self.reap()? => return Err(self.kill()),
            Pumped::Closed => {}
        }
        let status = self.child.wait().map_err(|e| self.io(&e))?;
        Ok(Finish::Exited(Output {
            status,
            stdout: std::mem::take(&mut self.stdout),
            stderr: std::mem::take(&mut self.stderr),
        }))
    }

    fn io(&self, e: &std::io::Error) -> Error {
        Error::Io {
            program: self.program.clone(),
            text: crate::io_text(e),
        }
    }

    /// Write stdin until it is done (then close it) or the pipe is full. A
    /// program that exits without reading it is not an error here: its
    /// exit status tells what happened.
    fn feed(&mut self) {
        let Some((pipe, data, written)) = &mut self.stdin else {
            return;
        };
        while *written < data.len() {
            match pipe.write(&data[*written..]) {
                Ok(n) => *written += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(_) => break,
            }
        }
        self.stdin = None;
    }

    /// Move data through the pipes until all are closed, the deadline
    /// passes or the caller's `watch` says done (once stdin is written).
    fn pump(
        &mut self,
        deadline: Option<Instant>,
        mut watch: Option<Watcher<'_>>,
    ) -> Result<Pumped, Error> {
        let mut done = false;
        loop {
            if done && self.stdin.is_none() {
                return Ok(Pumped::Watched);
            }
            let Some(timeout) = poll_timeout(deadline) else {
                return Ok(Pumped::Late);
            };
            let fd = watch.as_ref().map(|(fd, _)| *fd);
            let Some(ready) = self.poll(timeout, fd)? else {
                return Ok(Pumped::Closed);
            };
            if ready[0] {
                self.feed();
            }
            if ready[1] {
                read_some(&mut self.stdout_pipe, &mut self.stdout);
            }
            if ready[2] {
                read_some(&mut self.stderr_pipe, &mut self.stderr);
            }
            if let (true, Some((_, f))) = (ready[3], &mut watch) {
                match f() {
                    Watch::Waiting => {}
                    Watch::Done => done = true,
                    Watch::Broken => watch = None,
                }
            }
        }
    }

    /// Poll stdin, stdout, stderr (those still open) and the caller's
    /// `watch`: which are ready, in that order; `None` when every pipe is
    /// closed (the watch alone is not waited for).
    fn poll(
        &self,
        timeout: PollTimeout,
        watch: Option<BorrowedFd<'_>>,
    ) -> Result<Option<[bool; 4]>, Error> {
        let pipes = [
            self.stdin
                .as_ref()
                .map(|(p, ..)| (p.as_fd(), PollFlags::POLLOUT)),
            self.stdout_pipe
                .as_ref()
                .map(|p| (p.as_fd(), PollFlags::POLLIN)),
            self.stderr_pipe
                .as_ref()
                .map(|p| (p.as_fd(), PollFlags::POLLIN)),
        ];
        if pipes.iter().all(Option::is_none) {
            return Ok(None);
        }
        let watched = watch.map(|fd| (fd, PollFlags::POLLIN));
        let all = pipes.into_iter().chain([watched]).enumerate();
        let (which, mut fds): (Vec<usize>, Vec<PollFd<'_>>) = all
            .filter_map(|(i, f)| f.map(|(fd, ev)| (i, PollFd::new(fd, ev))))
            .unzip();
        loop {
            match poll(&mut fds, timeout) {
                Ok(_) => break,
                Err(Errno::EINTR) => {}
                Err(e) => return Err(self.io(&std::io::Error::from(e))),
            }
        }
        let mut ready = [false; 4];
        for (fd, i) in fds.iter().zip(which) {
            ready[i] = fd.revents().is_some_and(|r| !r.is_empty());
        }
        Ok(Some(ready))
    }

    /// Whether the program exited before the deadline (it is not reaped:
    /// [`Running::wait`] collects the status).
    fn reap(&mut self) -> Result<bool, Error> {
        let Some(deadline) = self.deadline else {
            return Ok(true);
        };
        // Its pipes are closed, so it is usually exiting right now: look
        // again soon, then less and less often.
        let mut pause = Duration::from_micros(50);
        loop {
            if self.child.try_wait().map_err(|e| self.io(&e))?.is_some() {
                return Ok(true);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(false);
            }
            std::thread::sleep(pause.min(deadline - now));
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }

    fn kill(mut self) -> Error {
        use nix::sys::signal::{Signal, kill, killpg};
        use nix::unistd::Pid;
        // Not reaped yet, so the pid (and group id) cannot have been reused.
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let pid = Pid::from_raw(pid);
            let _ = if self.own_group {
                killpg(pid, Signal::SIGKILL)
            } else {
                kill(pid, Signal::SIGKILL)
            };
        }
        let _ = self.child.wait();
        self.stdin = None;
        let _ = self.pump(Some(Instant::now() + DRAIN_AFTER_KILL), None);
        Error::TimedOut {
            program: self.program.clone(),
            after: self.timeout,
            stdout: std::mem::take(&mut self.stdout),
            stderr: std::mem::take(&mut self.stderr),
        }
    }
}

/// How long `poll` may wait before `deadline`, rounded up so that it never
/// wakes just before it; `None` once it has passed.
fn poll_timeout(deadline: Option<Instant>) -> Option<PollTimeout> {
    let Some(d) = deadline else {
        return Some(PollTimeout::NONE);
    };
    let left = d.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return None;
    }
    let ms = left.as_millis().saturating_add(1);
    Some(PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX))
}

/// One read from a pipe `poll` found ready; the pipe is dropped at its end
/// or on an error.
fn read_some<R: Read>(pipe: &mut Option<R>, into: &mut Vec<u8>) {
    let Some(p) = pipe else { return };
    let mut buf = [0u8; 16 * 1024];
    match p.read(&mut buf) {
        Ok(0) => *pipe = None,
        Ok(n) => into.extend_from_slice(&buf[..n]),
        Err(e) if e.kind() == ErrorKind::Interrupted => {}
        Err(_) => *pipe = None,
    }
}

/// How a process ended, as Go's `ProcessState.String` says it (and so
/// `exec.ExitError`): `exit status 3`, `signal: killed`, with
/// ` (core dumped)` when it did.
pub fn status_text(status: ExitStatus) -> String {
    let mut text = match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(sig)) => format!("signal: {}", signal_name(sig)),
        _ => "unknown exit status".to_string(),
    };
    if status.core_dumped() {
        text.push_str(" (core dumped)");
    }
    text
}

/// Go's `syscall.Signal.String` on Linux.
fn signal_name(sig: i32) -> String {
    const NAMES: [&str; 31] = [
        "hangup",
        "interrupt",
        "quit",
        "illegal instruction",
        "trace/breakpoint trap",
        "aborted",
        "bus error",
        "floating point exception",
        "killed",
        "user defined signal 1",
        "segmentation fault",
        "user defined signal 2",
        "broken pipe",
        "alarm clock",
        "terminated",
        "stack fault",
        "child exited",
        "continued",
        "stopped (signal)",
        "stopped",
        "stopped (tty input)",
        "stopped (tty output)",
        "urgent I/O condition",
        "CPU time limit exceeded",
        "file size limit exceeded",
        "virtual timer expired",
        "profiling timer expired",
        "window changed",
        "I/O possible",
        "power failure",
        "bad system call",
    ];
    usize::try_from(sig)
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| NAMES.get(i))
        .map_or_else(|| format!("signal {sig}"), |s| s.to_string())
}

#[cfg(test)]
mod tests;
