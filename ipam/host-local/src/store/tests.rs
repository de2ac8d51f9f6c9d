use std::os::unix::fs::PermissionsExt;

use testsupport::TempDir;

use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn open(d: &TempDir) -> Store {
    Store::open(d.path(), "net1").unwrap()
}

#[test]
fn lease_bytes_and_mode_match_the_reference() {
    let d = TempDir::new("hl-store");
    let mut s = open(&d);
    assert!(
        s.reserve(ip("10.240.0.2"), &lease_key(" c1 ", "eth0"))
            .unwrap()
    );
    let path = d.join("net1/10.240.0.2");
    assert_eq!(fs::read(&path).unwrap(), b"c1\r\neth0");
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert!(d.join("net1/lock").is_file());
    assert_eq!(fs::metadata(d.join("net1/lock")).unwrap().len(), 0);
    assert!(s.reserve(ip("fd40::2"), "c1\r\neth0").unwrap());
    assert!(
        d.join("net1/fd40::2").is_file(),
        "file named by the canonical address"
    );
}

#[test]
fn reserve_is_exclusive_and_leaves_no_temporary_files() {
    let d = TempDir::new("hl-store");
    let mut s = open(&d);
    assert!(s.reserve(ip("10.240.0.2"), "a\r\neth0").unwrap());
    assert!(!s.reserve(ip("10.240.0.2"), "b\r\neth0").unwrap());
    assert_eq!(
        s.read_lease(ip("10.240.0.2")).unwrap().as_deref(),
        Some("a\r\neth0")
    );
    assert!(s.reserve(ip("10.240.0.3"), "b\r\neth0").unwrap());
    drop(s);
    assert_eq!(
        fs::read_dir(d.join(".host-local/net1/tmp"))
            .unwrap()
            .count(),
        0
    );
    let names: Vec<String> = fs::read_dir(d.join("net1"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
}

#[test]
fn release_and_last_reserved() {
    let d = TempDir::new("hl-store");
    let mut s = open(&d);
    assert!(s.reserve(ip("10.240.0.2"), "a\r\neth0").unwrap());
    assert!(s.release(ip("10.240.0.2")).unwrap());
    assert!(!s.release(ip("10.240.0.2")).unwrap());
    assert_eq!(s.read_lease(ip("10.240.0.2")).unwrap(), None);
    assert_eq!(s.last_reserved(0), None);
    s.set_last_reserved(0, ip("10.240.0.5")).unwrap();
    assert_eq!(
        fs::read(d.join("net1/last_reserved_ip.0")).unwrap(),
        b"10.240.0.5"
    );
    assert_eq!(s.last_reserved(0), Some(ip("10.240.0.5")));
    fs::write(d.join("net1/last_reserved_ip.1"), "garbage").unwrap();
    assert_eq!(s.last_reserved(1), None);
}

#[test]
fn stale_temporary_files_are_removed_under_the_lock() {
    let d = TempDir::new("hl-store");
    drop(open(&d));
    fs::write(d.join(".host-local/net1/tmp/999.1"), "dead\r\neth0").unwrap();
    let s = open(&d);
    s.clean_tmp().unwrap();
    assert!(!d.join(".host-local/net1/tmp/999.1").exists());
}

#[test]
fn missing_network_is_none_without_create() {
    let d = TempDir::new("hl-store");
    assert!(Store::open_existing(d.path(), "net1").unwrap().is_none());
    assert!(!d.join("net1").exists());
    assert!(Store::open(d.path(), "../x").is_err());
}

#[test]
fn the_lock_excludes_other_holders() {
    let d = TempDir::new("hl-store");
    let s = open(&d);
    let other = File::open(d.join("net1/lock")).unwrap();
    assert!(
        other.try_lock().is_err(),
        "flock must be held while the store is open"
    );
    drop(s);
    assert!(other.try_lock().is_ok());
}

#[test]
fn seal_is_broken_by_any_change() {
    let d = TempDir::new("hl-store");
    let s = open(&d);
    let sealed = s.seal().unwrap();
    assert_eq!(s.dir_stamp().unwrap(), sealed);
    fs::write(d.join("net1/10.240.0.9"), "x\r\neth0").unwrap();
    assert_ne!(s.dir_stamp().unwrap(), sealed);
    let sealed = s.seal().unwrap();
    fs::remove_file(d.join("net1/10.240.0.9")).unwrap();
    assert_ne!(s.dir_stamp().unwrap(), sealed);
}

#[test]
fn scan_lists_only_address_names() {
    let d = TempDir::new("hl-store");
    let mut s = open(&d);
    s.set_last_reserved(0, ip("10.240.0.2")).unwrap();
    assert!(s.reserve(ip("10.240.0.2"), "a\r\neth0").unwrap());
    fs::write(d.join("net1/README"), "x").unwrap();
    let scan = scan_dir(s.net_dir()).unwrap();
    assert_eq!(
        scan.taken.into_iter().collect::<Vec<_>>(),
        vec![ip("10.240.0.2")]
    );
}
