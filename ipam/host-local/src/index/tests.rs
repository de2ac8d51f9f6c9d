use std::fs::File;

use testsupport::TempDir;

use std::net::IpAddr;

use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// The addresses `key` holds according to the index.
fn ips(index: &Index, s: &Store, key: &str) -> Vec<IpAddr> {
    index
        .lookup(s, key)
        .unwrap()
        .into_iter()
        .map(|f| f.ip)
        .collect()
}

#[test]
fn rebuilds_from_reference_files_including_legacy_and_empty_ones() {
    let d = TempDir::new("hl-index");
    fs::create_dir_all(d.join("net1")).unwrap();
    fs::write(d.join("net1/10.240.0.2"), "c1\r\neth0").unwrap();
    fs::write(d.join("net1/fd40::2"), "c1\r\neth0\n").unwrap();
    fs::write(d.join("net1/10.240.0.3"), "old").unwrap();
    fs::write(d.join("net1/10.240.0.4"), "").unwrap();
    fs::write(d.join("net1/last_reserved_ip.0"), "10.240.0.4").unwrap();
    let mut s = Store::open_existing(d.path(), "net1").unwrap().unwrap();
    let index = Index::load(&mut s).unwrap();
    assert!(index.rebuilt);
    let mut c1 = ips(&index, &s, "c1\r\neth0");
    c1.sort();
    assert_eq!(c1, vec![ip("10.240.0.2"), ip("fd40::2")]);
    assert_eq!(ips(&index, &s, "old"), vec![ip("10.240.0.3")]);
    assert!(index.lookup(&s, "c1\r\neth1").unwrap().is_empty());
    drop(index);
    // Sealed: the next load trusts the index.
    assert!(!Index::load(&mut s).unwrap().rebuilt);
}

#[test]
fn foreign_changes_force_a_rebuild() {
    let d = TempDir::new("hl-index");
    let mut s = Store::open(d.path(), "net1").unwrap();
    let mut index = Index::load(&mut s).unwrap();
    assert!(s.reserve(ip("10.240.0.2"), "c1\r\neth0").unwrap());
    index.add("c1\r\neth0", "10.240.0.2").unwrap();
    index.commit(&mut s).unwrap();
    assert!(!Index::load(&mut s).unwrap().rebuilt);

    // What the Go plugin does: create a lease in place, right after us.
    fs::write(d.join("net1/10.240.0.3"), "g1\r\neth0").unwrap();
    let index = Index::load(&mut s).unwrap();
    assert!(index.rebuilt);
    assert_eq!(ips(&index, &s, "g1\r\neth0"), vec![ip("10.240.0.3")]);

    fs::remove_file(d.join("net1/10.240.0.2")).unwrap();
    let index = Index::load(&mut s).unwrap();
    assert!(index.rebuilt);
    assert!(index.lookup(&s, "c1\r\neth0").unwrap().is_empty());
}

#[test]
fn lookups_are_checked_against_the_lease_file() {
    let d = TempDir::new("hl-index");
    let mut s = Store::open(d.path(), "net1").unwrap();
    let mut index = Index::load(&mut s).unwrap();
    // An index entry whose lease says otherwise is not believed.
    assert!(s.reserve(ip("10.240.0.2"), "other\r\neth0").unwrap());
    index.add("c1\r\neth0", "10.240.0.2").unwrap();
    assert!(index.lookup(&s, "c1\r\neth0").unwrap().is_empty());
    index.remove("c1\r\neth0", "10.240.0.2").unwrap();
    index.commit(&mut s).unwrap();
    for bucket in fs::read_dir(d.join(".host-local/net1/owners")).unwrap() {
        let text = fs::read_to_string(bucket.unwrap().path()).unwrap();
        assert_eq!(text.trim(), "{}");
    }
}

#[test]
fn a_lost_stamp_means_rebuild() {
    let d = TempDir::new("hl-index");
    let mut s = Store::open(d.path(), "net1").unwrap();
    Index::load(&mut s).unwrap().invalidate();
    assert!(Index::load(&mut s).unwrap().rebuilt);
    fs::write(d.join(".host-local/net1/stamp"), "junk").unwrap();
    assert!(Index::load(&mut s).unwrap().rebuilt);
}

#[test]
fn a_foreign_change_that_lands_on_the_sealed_mtime_still_forces_a_rebuild() {
    // With one-second timestamps (ext4 with 128-byte inodes, ext3) and a
    // wall clock stepped back by a second or so, the Go plugin's create
    // gives the directory exactly the mtime our seal set. Simulate that
    // by putting the sealed mtime back after the create.
    let d = TempDir::new("hl-index");
    let mut s = Store::open(d.path(), "net1").unwrap();
    Index::load(&mut s).unwrap().commit(&mut s).unwrap();
    assert!(!Index::load(&mut s).unwrap().rebuilt);
    let sealed = fs::metadata(d.join("net1")).unwrap().modified().unwrap();

    fs::write(d.join("net1/10.240.0.3"), "g1\r\neth0").unwrap();
    File::open(d.join("net1"))
        .unwrap()
        .set_times(fs::FileTimes::new().set_modified(sealed))
        .unwrap();

    let index = Index::load(&mut s).unwrap();
    assert!(
        index.rebuilt,
        "a directory changed since the seal was trusted"
    );
    assert_eq!(ips(&index, &s, "g1\r\neth0"), vec![ip("10.240.0.3")]);
}

#[test]
fn a_stamp_from_an_earlier_boot_is_not_trusted() {
    // After a power loss the stamp (overwritten in place, no fsync) can be
    // on disk while a bucket written just before it is not.
    let d = TempDir::new("hl-index");
    let mut s = Store::open(d.path(), "net1").unwrap();
    Index::load(&mut s).unwrap().commit(&mut s).unwrap();
    assert!(!Index::load(&mut s).unwrap().rebuilt);
    let stamp = d.join(".host-local/net1/stamp");
    let text = fs::read_to_string(&stamp).unwrap();
    let boot = boot_id();
    assert!(!boot.is_empty() && text.contains(&boot), "{text:?}");
    let other = "00000000-0000-0000-0000-000000000000";
    fs::write(&stamp, stamp_text(other, s.dir_stamp().unwrap())).unwrap();
    assert!(Index::load(&mut s).unwrap().rebuilt);
}
