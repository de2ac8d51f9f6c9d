//! Waiting in tests without asserting how long anything took: a busy
//! machine (shared CI runners, other builds) stretches every duration, so
//! tests wait for what should happen, up to one generous deadline, and
//! judge by what happened (flags, counters, answers), never by a clock.

use std::time::{Duration, Instant};

/// How long a test waits for something that should happen: 60 s, or
/// `CNIRS_TEST_DEADLINE` seconds. Generous, because it is only ever spent
/// when the thing does not happen, or on a machine busy enough to delay
/// it; a test never asserts that anything took less.
pub fn deadline() -> Duration {
    std::env::var("CNIRS_TEST_DEADLINE")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(Duration::from_secs(60), Duration::from_secs_f64)
}

/// `attempt` until it succeeds or [`deadline`] passes (every 20 ms at
/// first, then less often); the last attempt starts before the deadline,
/// so a slow attempt is never cut short.
pub fn retry(mut attempt: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + deadline();
    let mut pause = Duration::from_millis(20);
    loop {
        if attempt() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(500));
    }
}

/// Whether `cond` becomes true within [`deadline`].
pub fn eventually(cond: impl Fn() -> bool) -> bool {
    retry(cond)
}

/// `f`'s value, run on a thread of its own; a panic naming `what` when it
/// does not return within [`deadline`] (a watchdog for calls that would
/// otherwise hang: the test fails instead, and the thread is left).
pub fn within_deadline<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(deadline())
        .unwrap_or_else(|_| panic!("{what} did not return within {:?}", deadline()))
}

/// Whether process `pid` is gone, or a zombie its parent has yet to reap,
/// within [`deadline`].
pub fn process_gone(pid: u32) -> bool {
    let stat = format!("/proc/{pid}/stat");
    eventually(|| {
        let text = std::fs::read_to_string(&stat).unwrap_or_default();
        let state = text.rsplit_once(") ").and_then(|(_, r)| r.chars().next());
        matches!(state, None | Some('Z' | 'X'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_stops_at_the_first_success() {
        let mut n = 0;
        assert!(retry(|| {
            n += 1;
            n == 3
        }));
        assert_eq!(n, 3);
    }

    #[test]
    fn a_dead_process_is_gone_and_a_live_one_is_not() {
        let mut child = std::process::Command::new("sleep")
            .arg("3600")
            .spawn()
            .unwrap();
        let pid = child.id();
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        assert!(!state.contains(") Z"), "{state}");
        child.kill().unwrap();
        // Killed, not yet reaped: a zombie counts as gone.
        assert!(process_gone(pid));
        child.wait().unwrap();
        assert!(process_gone(pid));
        assert_eq!(within_deadline("a quick call", || 7), 7);
    }
}
