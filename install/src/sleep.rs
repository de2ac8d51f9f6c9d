//! Sleeping as a DaemonSet's main container (the pod's work was the init
//! container's install): until SIGTERM, SIGINT or SIGHUP, then exit 0.
//!
//! As a container's PID 1 a signal with the default action is dropped (the
//! kernel protects init), so a plain sleep would make every pod deletion
//! wait out its grace period for SIGKILL. Blocked signals are queued even
//! for init, and `sigwait` takes them.

use nix::sys::signal::{SigSet, Signal};

/// Wait for a signal to stop; the exit code.
pub fn until_signalled() -> i32 {
    let mut set = SigSet::empty();
    for s in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        set.add(s);
    }
    if let Err(e) = set.thread_block() {
        eprintln!("cni-plugins: block signals: {}", skel::errno_text(e));
        return 1;
    }
    // Said once the signals are blocked: from here on, one stops us.
    println!("==> sleeping until SIGTERM");
    let _ = std::io::Write::flush(&mut std::io::stdout());
    match set.wait() {
        Ok(sig) => {
            println!("==> {sig}: exiting");
            0
        }
        Err(e) => {
            eprintln!("cni-plugins: wait for a signal: {}", skel::errno_text(e));
            1
        }
    }
}
