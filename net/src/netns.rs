//! The only place that switches network namespaces.
//!
//! A namespace is switched per thread: [`run`] moves the calling thread into
//! a namespace, runs a short synchronous closure there and moves it back,
//! also when the closure fails or panics. If moving back fails the process
//! aborts, because every later step would silently act on the wrong
//! namespace (the failure mode of plugins #714, where a DEL downed the
//! host's `lo`). Nothing async runs while switched, so no other task can
//! observe the foreign namespace.

use std::cell::Cell;
use std::fs::File;

use nix::sched::{CloneFlags, setns};

use crate::error::{Error, Result};

/// The calling thread's own network namespace, opened.
pub fn current() -> Result<File> {
    // thread-self, not self: the main thread may sit in another namespace.
    File::open("/proc/thread-self/ns/net")
        .map_err(|e| Error::io("open current netns /proc/thread-self/ns/net", &e))
}

/// Run `f` with the calling thread inside the namespace `ns`, then return
/// to the original namespace.
pub fn run<T>(ns: &File, f: impl FnOnce() -> T) -> Result<T> {
    let original = current()?;
    setns(ns, CloneFlags::CLONE_NEWNET).map_err(|e| Error::errno("enter netns", e))?;
    // Restores on every exit from this function, unwinding included.
    let _back = Restore(original);
    SWITCHED.with(|d| d.set(d.get() + 1));
    Ok(f())
}

thread_local! {
    /// How many [`run`] calls the thread is inside.
    static SWITCHED: Cell<u32> = const { Cell::new(0) };
}

/// Whether the calling thread is inside [`run`], i.e. not in the namespace
/// it started in.
pub(crate) fn switched() -> bool {
    SWITCHED.with(|d| d.get() > 0)
}

/// Puts the thread back into its namespace when dropped.
struct Restore(File);

impl Drop for Restore {
    fn drop(&mut self) {
        SWITCHED.with(|d| d.set(d.get().saturating_sub(1)));
        if let Err(e) = setns(&self.0, CloneFlags::CLONE_NEWNET) {
            eprintln!(
                "fatal: return to original netns: {}",
                crate::error::errno_text(e)
            );
            std::process::abort();
        }
    }
}

/// Whether two open namespace files are the same namespace.
pub fn same(a: &File, b: &File) -> Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let ma = a.metadata().map_err(|e| Error::io("stat netns", &e))?;
    let mb = b.metadata().map_err(|e| Error::io("stat netns", &e))?;
    Ok(ma.dev() == mb.dev() && ma.ino() == mb.ino())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_in_own_namespace_returns_the_value() {
        let me = current().unwrap();
        let v = run(&me, || 42).unwrap();
        assert_eq!(v, 42);
        assert!(same(&me, &current().unwrap()).unwrap());
    }

    #[test]
    fn a_regular_file_is_refused_without_running() {
        let f = File::open("/proc/self/status").unwrap();
        let mut ran = false;
        let e = run(&f, || ran = true).unwrap_err();
        assert!(!ran);
        assert_eq!(e.to_string(), "enter netns: invalid argument");
    }
}
