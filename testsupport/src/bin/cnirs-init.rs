//! A stand-in PID 1 for the orphan tests: `cnirs-init <mode> <cmd> [args]`
//! runs `cmd` and exits with its status; run as `unshare --pid --fork
//! cnirs-init ...`, it is the PID 1 that inherits every orphan of `cmd`'s
//! process tree. `mode` is how it treats them:
//!
//! - `never`: `SIGCHLD` left at its default, nothing ever reaped (a
//!   minimal container entry point);
//! - `catch`: `SIGCHLD` caught, nothing ever reaped (a Go program as PID
//!   1: its runtime catches every signal);
//! - `reap`: `SIGCHLD` caught and every child reaped (a proper init).
//!
//! `cmd` itself is waited for without being reaped (`WNOWAIT`) except in
//! `reap` mode. It is started with a plain `fork` and `exec`: a spawn
//! through `posix_spawn` blocks every signal in this process until the
//! child has exec'd, and a plugin started at once would read that
//! moment's masks.

use std::process::ExitCode;

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid, waitpid};

extern "C" fn noop(_: nix::libc::c_int) {}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(mode), Some(_)) = (args.first(), args.get(1)) else {
        eprintln!("usage: cnirs-init never|catch|reap CMD [ARG]...");
        return ExitCode::from(2);
    };
    // Before the fork: the command may look at once (exec resets it there).
    if mode != "never" {
        let caught = SigAction::new(
            SigHandler::Handler(noop),
            SaFlags::SA_RESTART,
            SigSet::empty(),
        );
        // SAFETY: the handler does nothing.
        if let Err(e) = unsafe { sigaction(Signal::SIGCHLD, &caught) } {
            eprintln!("cnirs-init: sigaction: {e}");
            return ExitCode::from(2);
        }
    }
    let argv: Vec<std::ffi::CString> = args[1..]
        .iter()
        .map(|a| std::ffi::CString::new(a.as_bytes()).unwrap_or_default())
        .collect();
    // SAFETY: the child only calls execvp and _exit (async-signal-safe)
    // on memory prepared before the fork.
    let child = match unsafe { nix::unistd::fork() } {
        Ok(nix::unistd::ForkResult::Child) => {
            let _ = nix::unistd::execvp(&argv[0], &argv);
            // SAFETY: _exit is always safe to call.
            unsafe { nix::libc::_exit(127) }
        }
        Ok(nix::unistd::ForkResult::Parent { child }) => child,
        Err(e) => {
            eprintln!("cnirs-init: fork: {e}");
            return ExitCode::from(2);
        }
    };
    let status = match mode.as_str() {
        "reap" => loop {
            match waitpid(None, None) {
                Ok(WaitStatus::Exited(p, code)) if p == child => break code,
                Ok(WaitStatus::Signaled(p, sig, _)) if p == child => break 128 + sig as i32,
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(e) => {
                    eprintln!("cnirs-init: wait: {e}");
                    break 2;
                }
            }
        },
        "never" | "catch" => loop {
            match waitid(Id::Pid(child), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT) {
                Ok(WaitStatus::Exited(_, code)) => break code,
                Ok(WaitStatus::Signaled(_, sig, _)) => break 128 + sig as i32,
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(e) => {
                    eprintln!("cnirs-init: waitid: {e}");
                    break 2;
                }
            }
        },
        other => {
            eprintln!("cnirs-init: unknown mode {other:?}");
            2
        }
    };
    ExitCode::from(u8::try_from(status).unwrap_or(255))
}
