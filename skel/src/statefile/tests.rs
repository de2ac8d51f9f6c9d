use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::PathBuf;

use super::*;

/// A fresh directory for one test, removed at the end.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("cnirs-statefile-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

/// A victim file and a link to it at `at`.
fn plant(d: &Dir, at: &str) -> PathBuf {
    let victim = d.0.join("victim");
    fs::write(&victim, "precious").unwrap();
    symlink(&victim, d.0.join(at)).unwrap();
    victim
}

#[test]
fn atomic_write_never_follows_a_planted_link() {
    for planted in ["f.tmp", "f"] {
        let d = Dir::new(&format!("w{}", planted.len()));
        let victim = plant(&d, planted);
        write(&d.0, "f", "f.tmp", b"new", 0o600).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(fs::read_to_string(d.0.join("f")).unwrap(), "new");
        assert!(!fs::symlink_metadata(d.0.join("f")).unwrap().is_symlink());
        assert_eq!(mode(&d.0.join("f")), 0o600);
        assert!(!d.0.join("f.tmp").exists());
    }
}

#[test]
fn a_temporary_file_a_killed_call_left_is_replaced() {
    let d = Dir::new("stale");
    fs::write(d.0.join("f.tmp"), "half of an old recor").unwrap();
    write(&d.0, "f", "f.tmp", b"whole", 0o600).unwrap();
    assert_eq!(fs::read_to_string(d.0.join("f")).unwrap(), "whole");
    let names: Vec<_> = fs::read_dir(&d.0)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("f")]);
}

#[test]
fn in_place_writes_and_locks_replace_a_link_instead_of_following_it() {
    let d = Dir::new("inplace");
    let victim = plant(&d, "last");
    write_in_place(&d.0.join("last"), b"10.0.0.1", false, 0o600).unwrap();
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
    assert_eq!(fs::read_to_string(d.0.join("last")).unwrap(), "10.0.0.1");
    write_in_place(&d.0.join("last"), b"10.0.0.2x", false, 0o600).unwrap();
    write_in_place(&d.0.join("last"), b"10.0.0.3", false, 0o600).unwrap();
    assert_eq!(fs::read_to_string(d.0.join("last")).unwrap(), "10.0.0.3");
    write_in_place(&d.0.join("last"), b"1", true, 0o600).unwrap();
    assert_eq!(fs::read_to_string(d.0.join("last")).unwrap(), "1       ");

    symlink(&victim, d.0.join("lock")).unwrap();
    let f = open_lock(&d.0.join("lock"), 0o600).unwrap();
    lock(&f).unwrap();
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
    assert!(!fs::symlink_metadata(d.0.join("lock")).unwrap().is_symlink());
    assert_eq!(mode(&d.0.join("lock")), 0o600);
    // Reading never goes through a link either.
    symlink(&victim, d.0.join("read")).unwrap();
    assert_eq!(read_small(&d.0.join("read"), 100), None);
    assert_eq!(
        read_small(&d.0.join("last"), 100),
        Some(b"1       ".to_vec())
    );
    assert_eq!(read_small(&d.0.join("last"), 3), None);
}

#[test]
fn a_directory_that_is_a_link_is_refused() {
    let d = Dir::new("dir");
    let elsewhere = d.0.join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    symlink(&elsewhere, d.0.join("net")).unwrap();
    let e = create_dir(&d.0.join("net"), 0o700).unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    create_dir(&d.0.join("a/b"), 0o700).unwrap();
    assert_eq!(mode(&d.0.join("a/b")), 0o700);
    create_dir(&d.0.join("a/b"), 0o700).unwrap();
}

#[test]
fn removing_what_is_not_there_is_fine() {
    let d = Dir::new("rm");
    assert!(!remove(&d.0.join("none")).unwrap());
    fs::write(d.0.join("file"), "").unwrap();
    assert!(!remove(&d.0.join("file/below")).unwrap());
    assert!(remove(&d.0.join("file")).unwrap());
}

/// A lock held elsewhere is waited for within the deadline, then given up
/// with the holder named (here: this process, through another open file).
#[test]
fn a_held_lock_is_given_up_naming_its_holder() {
    let d = Dir::new("held");
    let path = d.0.join("lock");
    let held = open_lock(&path, 0o600).unwrap();
    held.lock().unwrap();
    let waiter = open_lock(&path, 0o600).unwrap();
    let mut failed = None;
    let got = crate::deadline::retry(
        std::time::Instant::now() + std::time::Duration::from_millis(30),
        || match waiter.try_lock() {
            Ok(()) => Some(()),
            Err(fs::TryLockError::WouldBlock) => None,
            Err(fs::TryLockError::Error(e)) => {
                failed = Some(e);
                Some(())
            }
        },
    );
    assert!(got.is_none() && failed.is_none());
    let who = holder(&waiter).unwrap_or_default();
    assert!(
        who.starts_with(&format!("process {} (", std::process::id())),
        "{who}"
    );
    drop(held);
    lock(&waiter).unwrap();
}
