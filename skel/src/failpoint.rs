//! Failure injection, for the tests that fail each step of a multi-step
//! command in turn and check that nothing is left behind.
//!
//! A plugin marks the point after each side effect:
//!
//! ```
//! # fn step() -> Result<(), skel::Error> {
//! skel::failpoint::hit("bridge/veth-created")?;
//! # Ok(()) }
//! ```
//!
//! In debug builds (the ones the tests run):
//!
//! - [`FAIL_VAR`]`=<point>` makes [`hit`] at that point return the error
//!   `injected failure at <point>` (code 999), as if the next step failed;
//! - [`LOG_VAR`]`=<file>` appends the name of every point reached, one a
//!   line, so a test can list the points of a clean run;
//! - [`KILL_VAR`]`=<point>` (or `<point>#<n>`: its n-th pass in this
//!   process) makes the process kill itself with `SIGKILL` there, as a
//!   runtime or the OOM killer may at any moment: the kill tests
//!   (`testsupport::kill`) then check that DEL and GC find what it left.
//!
//! [`pass`] marks a point that can be killed at and logged but not failed
//! at (inside a shared mechanism, such as a state file's temporary file
//! written and not yet renamed).
//!
//! Delegated plugins (IPAM) inherit both variables, so points are named
//! `<plugin>/<step>`. In release builds [`hit`] is `Ok(())`: no variable is
//! read and the binaries carry no hook.

use crate::error::Error;

/// Names the point at which [`hit`] fails.
pub const FAIL_VAR: &str = "CNI_RS_FAILPOINT";
/// Names the file that every point reached is appended to.
pub const LOG_VAR: &str = "CNI_RS_FAILPOINT_LOG";
/// Names the point (`<point>` or `<point>#<n>`) at which the process
/// kills itself.
pub const KILL_VAR: &str = "CNI_RS_KILLPOINT";

/// Pass the failpoint `point`: an error if [`FAIL_VAR`] names it.
#[cfg(debug_assertions)]
pub fn hit(point: &'static str) -> Result<(), Error> {
    pass(point);
    check(point, std::env::var_os(FAIL_VAR).as_deref())
}

/// Pass the failpoint `point`: nothing in a release build.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn hit(_point: &'static str) -> Result<(), Error> {
    Ok(())
}

/// Pass the point `point` without a way to fail there: logged, and the
/// process killed there if [`KILL_VAR`] says so.
#[cfg(debug_assertions)]
pub fn pass(point: &'static str) {
    if let Some(log) = std::env::var_os(LOG_VAR) {
        record(std::path::Path::new(&log), point);
    }
    if let Some(spec) = std::env::var_os(KILL_VAR)
        && kill_due(point, &spec.to_string_lossy())
    {
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
    }
}

/// Pass the point `point`: nothing in a release build.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn pass(_point: &'static str) {}

/// Whether this pass of `point` is the one `spec` names (`<point>`: the
/// first, `<point>#<n>`: the n-th in this process).
#[cfg(debug_assertions)]
fn kill_due(point: &str, spec: &str) -> bool {
    use std::sync::atomic::{AtomicU32, Ordering};
    static PASSED: AtomicU32 = AtomicU32::new(0);
    let (name, nth) = match spec.rsplit_once('#') {
        Some((name, n)) => (name, n.parse().unwrap_or(1)),
        None => (spec, 1),
    };
    // Only the named point is counted: one counter is enough.
    name == point && PASSED.fetch_add(1, Ordering::Relaxed) + 1 == nth
}

#[cfg(debug_assertions)]
fn check(point: &str, fail: Option<&std::ffi::OsStr>) -> Result<(), Error> {
    match fail {
        Some(f) if f == point => Err(Error::internal(format!("injected failure at {point}"))),
        _ => Ok(()),
    }
}

/// One `write` in append mode, so concurrent writers (a plugin and its
/// IPAM child) never interleave within a line.
#[cfg(debug_assertions)]
fn record(log: &std::path::Path, point: &str) {
    use std::io::Write;
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .and_then(|mut f| f.write_all(format!("{point}\n").as_bytes()));
    if let Err(e) = written {
        // The test that reads the log notices the missing point.
        eprintln!("failpoint {point}: write {}: {e}", log.display());
    }
}

#[cfg(all(test, debug_assertions))]
mod tests {
    use super::*;

    #[test]
    fn fails_only_at_the_named_point() {
        assert_eq!(check("p/a", None), Ok(()));
        assert_eq!(check("p/a", Some("p/b".as_ref())), Ok(()));
        assert_eq!(check("p/a", Some("p/a/x".as_ref())), Ok(()));
        let e = check("p/a", Some("p/a".as_ref())).unwrap_err();
        assert_eq!(e, Error::internal("injected failure at p/a"));
    }

    #[test]
    fn kills_at_the_nth_pass_of_the_named_point() {
        assert!(!kill_due("p/a", "p/b"));
        assert!(!kill_due("p/a", "p/a#2"));
        assert!(kill_due("p/a", "p/a#2"));
        assert!(!kill_due("p/a", "p/a#2"));
    }

    #[test]
    fn records_every_point_in_order() {
        let dir = std::env::temp_dir().join(format!("cnirs-fp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("log");
        record(&log, "p/a");
        record(&log, "p/b");
        record(&log, "p/a");
        let text = std::fs::read_to_string(&log).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(text, "p/a\np/b\np/a\n");
    }
}
