//! No state file is written through a symbolic link planted at its name:
//! the lock, `last_reserved_ip.N`, and our index (its stamp and every
//! owner bucket). Lease temporaries are created with `O_EXCL` under names
//! of our process. A network directory that is a link is refused.

mod common;

use common::*;
use testsupport::TempDir;
use testsupport::planted::Planted;

#[test]
fn planted_links_are_never_followed() {
    let d = TempDir::new("hl-planted");
    let c = conf(
        "1.0.0",
        d.path(),
        r#""ranges":[[{"subnet":"10.240.0.0/24"}]]"#,
    );
    let mut at = vec![
        d.join("net1/lock"),
        d.join("net1/last_reserved_ip.0"),
        d.join(".host-local/net1/stamp"),
    ];
    at.extend((0..64).map(|b| d.join(&format!(".host-local/net1/owners/{b:02x}"))));
    let mut planted = Planted::new();
    planted.plant(&at);
    for id in ["c1", "c2"] {
        let r = run(&ours(), "ADD", id, &c).ok();
        assert_eq!(addresses(&r).len(), 1, "{r}");
        planted.check(&format!("ADD {id}"));
    }
    for id in ["c1", "c2"] {
        run(&ours(), "DEL", id, &c).ok();
        planted.check(&format!("DEL {id}"));
    }
    assert!(leases(d.path()).is_empty(), "{:?}", leases(d.path()));
    for p in [d.join("net1/lock"), d.join("net1/last_reserved_ip.0")] {
        let m = std::fs::symlink_metadata(&p).unwrap();
        assert!(m.is_file(), "{} is a file of ours now", p.display());
    }
}

#[test]
fn a_network_directory_that_is_a_link_is_refused() {
    let d = TempDir::new("hl-planted-dir");
    let elsewhere = TempDir::new("hl-elsewhere");
    std::os::unix::fs::symlink(elsewhere.path(), d.join("net1")).unwrap();
    let c = conf(
        "1.0.0",
        d.path(),
        r#""ranges":[[{"subnet":"10.240.0.0/24"}]]"#,
    );
    let e = run(&ours(), "ADD", "c1", &c).err(999);
    let msg = e["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("symbolic link"), "{e}");
    let names: Vec<_> = std::fs::read_dir(elsewhere.path()).unwrap().collect();
    assert!(names.is_empty(), "written through the link: {names:?}");
}
