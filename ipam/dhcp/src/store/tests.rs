use std::os::unix::fs::PermissionsExt;

use super::*;
use crate::packet::{BOOTREPLY, kind, opt};

fn record(id: &str) -> Record {
    let mut ack = Message::request(kind::ACK, 7, [2, 0, 0, 0, 0, 1]);
    ack.op = BOOTREPLY;
    ack.yiaddr = "10.240.3.7".parse().unwrap();
    ack.set(opt::LEASE_TIME, &120u32.to_be_bytes());
    Record {
        att: Attachment {
            client_id: id.into(),
            container_id: "ctr".into(),
            network: "net".into(),
            ifname: "eth0".into(),
            netns: "/run/netns/x".into(),
            netns_id: (4, 4026532000),
            mac: [2, 0, 0, 0, 0, 1],
            options: Options {
                send: vec![(12, b"pod".to_vec())],
                request: vec![121, 3, 1],
            },
        },
        bound: Bound {
            ack,
            server_mac: [2, 0, 0, 0, 0, 2],
            acked_at: UNIX_EPOCH + Duration::from_millis(1_764_000_000_123),
        },
    }
}

#[test]
fn records_round_trip_and_are_private() {
    let dir = testsupport::TempDir::new("store");
    let s = Store::open(&dir.join("state")).unwrap();
    let a = record("ctr/net/eth0");
    s.save(&a).unwrap();
    s.save(&a).unwrap();
    assert_eq!(s.load("ctr/net/eth0"), Some(a.clone()));
    assert_eq!(s.load("other/net/eth0"), None);
    assert_eq!(s.list(), vec![a]);
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir.join("state")), 0o700);
    assert_eq!(mode(&s.path("ctr/net/eth0")), 0o600);
    // No temporary file is left.
    let names: Vec<String> = fs::read_dir(dir.join("state"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    s.remove("ctr/net/eth0");
    s.remove("ctr/net/eth0");
    assert!(s.list().is_empty());
}

#[test]
fn one_daemon_per_directory() {
    let dir = testsupport::TempDir::new("store");
    let _first = Store::open(dir.path()).unwrap();
    let e = Store::open(dir.path()).err().unwrap();
    assert!(e.to_string().contains("another dhcp daemon"), "{e}");
}

#[test]
fn planted_symlinks_and_junk_are_not_followed() {
    let dir = testsupport::TempDir::new("store");
    let s = Store::open(&dir.join("state")).unwrap();
    let secret = dir.join("secret");
    fs::write(&secret, "do not read").unwrap();
    let target = s.path("ctr/net/eth0");
    std::os::unix::fs::symlink(&secret, &target).unwrap();
    assert_eq!(s.load("ctr/net/eth0"), None);
    // Saving replaces the link itself, never writes through it.
    s.save(&record("ctr/net/eth0")).unwrap();
    assert_eq!(fs::read_to_string(&secret).unwrap(), "do not read");
    assert!(s.load("ctr/net/eth0").is_some());
    fs::write(dir.join("state/junk.json"), "{not json").unwrap();
    assert_eq!(s.list().len(), 1);
    // A link planted at a record's temporary name is not written through.
    let tmp = dir.join(&format!("state/{TMP}{}", Store::hash("ctr/net/eth0")));
    std::os::unix::fs::symlink(&secret, &tmp).unwrap();
    s.save(&record("ctr/net/eth0")).unwrap();
    assert_eq!(fs::read_to_string(&secret).unwrap(), "do not read");
    assert!(fs::symlink_metadata(&tmp).is_err());
    // A temporary file a killed daemon left is cleaned on the next open.
    fs::write(dir.join("state/.tmp-1-1"), "half").unwrap();
    drop(s);
    let _s = Store::open(&dir.join("state")).unwrap();
    assert!(!dir.join("state/.tmp-1-1").exists());
}

#[test]
fn a_directory_others_can_write_is_refused() {
    let dir = testsupport::TempDir::new("store");
    let open = dir.join("open");
    fs::create_dir(&open).unwrap();
    fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
    assert!(Store::open(&open).is_err());
    let link = dir.join("link");
    std::os::unix::fs::symlink(dir.path(), &link).unwrap();
    assert!(Store::open(&link).is_err());
}
