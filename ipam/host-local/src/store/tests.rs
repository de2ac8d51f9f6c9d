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
    assert_eq!(s.read_lease("10.240.0.2").as_deref(), Some("a\r\neth0"));
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
    assert_eq!(s.read_lease("10.240.0.2"), None);
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

#[test]
fn last_reserved_is_read_as_go_reads_it() {
    let d = TempDir::new("hl-store");
    let s = open(&d);
    // Go's net.ParseIP gets the raw content: with any white space the file
    // holds no address (gotext's tests list the rest of the language).
    for (text, want) in [
        ("10.240.0.5", Some("10.240.0.5")),
        ("10.240.0.5\n", None),
        ("::ffff:10.240.0.5", Some("10.240.0.5")),
    ] {
        fs::write(d.join("net1/last_reserved_ip.0"), text).unwrap();
        assert_eq!(s.last_reserved(0), want.map(ip), "{text:?}");
    }
}

#[test]
fn odd_files_under_lease_names_never_block() {
    let d = TempDir::new("hl-store");
    let s = open(&d);
    let fifo = d.join("net1/10.240.0.7");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    std::os::unix::fs::symlink("/dev/zero", d.join("net1/10.240.0.8")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", d.join("net1/last_reserved_ip.0")).unwrap();
    fs::create_dir(d.join("net1/10.240.0.9")).unwrap();
    fs::write(d.join("net1/10.240.0.10"), vec![b'x'; LEASE_MAX + 1]).unwrap();
    // Each of these would block or read forever in a plain open + read.
    for name in ["10.240.0.7", "10.240.0.8", "10.240.0.9", "10.240.0.10"] {
        assert_eq!(s.read_lease(name), None, "{name}");
    }
    assert_eq!(s.last_reserved(0), None);
    // They still take their address: the name exists.
    assert_eq!(scan_dir(s.net_dir()).unwrap().taken.len(), 4);
}

#[test]
fn lease_owners_are_trimmed_as_go_trims() {
    let d = TempDir::new("hl-store");
    let s = open(&d);
    for (content, owner) in [
        (&b" c1\r\neth0\r\n"[..], "c1\r\neth0"),
        ("\u{a0}c1\r\neth0\u{85}".as_bytes(), "c1\r\neth0"),
        (b"c1\r\neth\xff", ""),
    ] {
        fs::write(d.join("net1/10.240.0.2"), content).unwrap();
        assert_eq!(s.read_lease("10.240.0.2").as_deref(), Some(owner));
    }
}

#[test]
fn only_exact_names_take_an_address() {
    let d = TempDir::new("hl-store");
    let s = open(&d);
    for name in ["FD40::5", "::ffff:10.240.0.5", "fd40:0::6", "10.240.0.7"] {
        fs::write(d.join("net1").join(name), "x\r\neth0").unwrap();
    }
    let mut taken: Vec<IpAddr> = scan_dir(s.net_dir()).unwrap().taken.into_iter().collect();
    taken.sort();
    assert_eq!(taken, [ip("10.240.0.7")]);
}

#[test]
fn the_walk_sees_what_go_walks() {
    let d = TempDir::new("hl-store");
    let s = open(&d);
    assert!(!walk_leases(s.net_dir()).unwrap().nested);
    for name in ["10.240.0.5", "FD40::5", "::ffff:10.240.0.6", "README"] {
        fs::write(d.join("net1").join(name), "x").unwrap();
    }
    fs::create_dir_all(d.join("net1/10.240.0.9/sub")).unwrap();
    fs::write(d.join("net1/10.240.0.9/10.240.0.8"), "x").unwrap();
    fs::write(d.join("net1/10.240.0.9/sub/fd40::1"), "x").unwrap();
    fs::write(d.join("net1/10.240.0.9.1"), "x").unwrap();
    std::os::unix::fs::symlink("10.240.0.9", d.join("net1/10.240.0.4")).unwrap();
    let walk = walk_leases(s.net_dir()).unwrap();
    assert!(walk.nested);
    let got: Vec<(&str, String)> = walk
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.ip.to_string()))
        .collect();
    assert_eq!(
        got,
        [
            ("10.240.0.4", "10.240.0.4".to_string()),
            ("10.240.0.5", "10.240.0.5".into()),
            ("10.240.0.9/10.240.0.8", "10.240.0.8".into()),
            ("10.240.0.9/sub/fd40::1", "fd40::1".into()),
            ("::ffff:10.240.0.6", "10.240.0.6".into()),
            ("FD40::5", "fd40::5".into()),
        ]
    );
    // "10.240.0.9.1" sorts after "10.240.0.9" but is no address; a walk
    // path sorts component by component.
    assert_eq!(
        walk_order("10.240.0.9/x", "10.240.0.9.1"),
        std::cmp::Ordering::Less
    );
    assert_eq!(lease_path_ip("10.240.0.9/sub/fd40::1"), Some(ip("fd40::1")));
    for bad in [
        "../10.240.0.5",
        "/10.240.0.5",
        "a/./10.240.0.5",
        "10.240.0.9/",
        "",
    ] {
        assert_eq!(lease_path_ip(bad), None, "{bad:?}");
    }
}
