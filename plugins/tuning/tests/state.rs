//! Root tests of the saved state: repeated ADD keeps the originals, DEL
//! without a namespace or link forgets the backup, GC removes the backups
//! of attachments the runtime no longer has, the allowlist.

mod common;

use common::*;
use serde_json::{Value, json};
use testsupport::TempDir;

/// A second ADD must not record the tuned values as the originals (the
/// reference overwrites the backup), and gains only what it adds.
#[test]
fn repeated_add_keeps_the_original_values() {
    let c = Container::new("srep");
    let before = c.link();
    c.run("ADD", &c.conf("1.0.0", json!({"mtu": 1400}))).ok();
    let first = c.backup_text().unwrap();
    let conf = c.conf("1.0.0", json!({"mtu": 1300, "mac": "02:00:00:00:00:77"}));
    c.run("ADD", &conf).ok();
    assert_eq!(c.link().mtu, 1300);
    let second: Value = serde_json::from_str(&c.backup_text().unwrap()).unwrap();
    assert_eq!(second["mtu"], before.mtu, "{first} then {second}");
    assert_eq!(second["mac"], before.mac.as_str());
    c.run("DEL", &conf).ok();
    assert_eq!(c.link(), before);
}

/// Without the namespace nothing can be restored ever: the backup goes
/// (the reference keeps it forever).
#[test]
fn del_without_the_namespace_forgets_the_backup() {
    let mut c = Container::new("sgone");
    let conf = c.conf("1.0.0", json!({"mtu": 1400}));
    c.run("ADD", &conf).ok();
    assert!(c.backup_text().is_some());
    assert_eq!(c.data_files().len(), 2, "{:?}", c.data_files());
    let path = c.ns.path().to_string();
    c.ns.delete();
    let r = c.call("DEL", &conf).netns(&path).run(ours());
    r.ok();
    assert!(c.data_files().is_empty(), "{:?}", c.data_files());
    c.call("DEL", &conf).netns("").run(ours()).ok();
}

/// A `CNI_NETNS` that is there but no namespace (a netns bind mount
/// unmounted, its file left behind) reaches no link: DEL forgets the
/// backup and succeeds, as the Go plugin's DEL does (it failed forever
/// with `unknown FS magic`). ADD still refuses it.
#[test]
fn del_with_a_netns_path_that_is_no_namespace_forgets_the_backup() {
    let c = Container::new("sfile");
    let conf = c.conf("1.0.0", json!({"mtu": 1400}));
    c.run("ADD", &conf).ok();
    let file = c.data.join("netns-file");
    std::fs::write(&file, "").unwrap();
    let path = file.to_str().unwrap();
    c.call("ADD", &conf).netns(path).run(ours()).err(8);
    c.call("DEL", &conf).netns(path).run(ours()).ok();
    assert!(
        c.data_files().iter().all(|f| f == "netns-file"),
        "{:?}",
        c.data_files()
    );
}

#[test]
fn del_when_the_link_is_gone_forgets_the_backup() {
    let c = Container::new("slink");
    let conf = c.conf("1.0.0", json!({"mtu": 1400}));
    c.run("ADD", &conf).ok();
    c.ns.exec(&["ip", "link", "del", "eth0"]);
    c.run("DEL", &conf).ok();
    assert!(c.data_files().is_empty(), "{:?}", c.data_files());
}

/// A file that is not a backup (torn by a crashed writer of the Go
/// plugin, which writes in place) is removed, with a note.
#[test]
fn del_removes_an_invalid_backup() {
    let c = Container::new("sinv");
    let before = c.link();
    std::fs::write(c.backup(), "{\"mtu\": 9").unwrap();
    let conf = c.conf("1.0.0", json!({"mtu": 1400}));
    let r = c.run("DEL", &conf);
    r.ok();
    assert!(r.stderr.contains("not a backup"), "{r:?}");
    assert!(c.data_files().is_empty());
    assert_eq!(c.link(), before);
}

/// A backup cut short (the Go plugin writes in place): DEL restores the
/// attributes on its complete lines, not the cut one, and removes it (it
/// restored nothing before).
#[test]
fn del_restores_what_a_cut_backup_holds() {
    let c = Container::new("scut");
    let before = c.link();
    let conf = c.conf(
        "1.0.0",
        json!({"mac": "02:00:00:00:00:31", "promisc": true, "mtu": 1400}),
    );
    c.run("ADD", &conf).ok();
    let full = c.backup_text().unwrap();
    let cut = &full[..full.find("\"mtu\"").unwrap() + "\"mtu\": 1".len()];
    std::fs::write(c.backup(), cut).unwrap();
    let r = c.run("DEL", &conf);
    r.ok();
    assert!(r.stderr.contains("cut short"), "{r:?}");
    let after = c.link();
    assert_eq!(
        (&after.mac, after.promisc),
        (&before.mac, before.promisc),
        "{cut}"
    );
    assert_eq!(after.mtu, 1400);
    assert!(c.data_files().is_empty(), "{:?}", c.data_files());
}

/// GC removes the backups of this network's attachments that are not in
/// `cni.dev/valid-attachments`, and nothing of another network sharing
/// the data directory.
#[test]
fn gc_removes_backups_of_attachments_no_longer_valid() {
    let data = TempDir::new("tunegc");
    let mut keep = Vec::new();
    for (i, network) in ["gcnet", "gcnet", "othernet"].iter().enumerate() {
        let c = Container::new(&format!("sgc{i}"));
        let mut conf = c.conf("1.1.0", json!({"mtu": 1400, "name": network}));
        conf["dataDir"] = json!(data.to_str());
        c.run("ADD", &conf).ok();
        keep.push(c);
    }
    let files = |d: &TempDir| {
        let mut v: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".json"))
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        files(&data),
        [
            "cidsgc0_eth0.json",
            "cidsgc1_eth0.json",
            "cidsgc2_eth0.json"
        ]
    );
    let gc = |valid: Value| {
        let mut conf = keep[0].conf("1.1.0", json!({"name": "gcnet"}));
        conf["dataDir"] = json!(data.to_str());
        conf.as_object_mut().unwrap().remove("prevResult");
        if !valid.is_null() {
            conf["cni.dev/valid-attachments"] = valid;
        }
        keep[0].call("GC", &conf).run(ours())
    };
    // Without the list, nothing goes.
    let r = gc(Value::Null);
    r.ok();
    assert!(r.stderr.contains("removing nothing"), "{r:?}");
    assert_eq!(files(&data).len(), 3);
    gc(json!([{"containerID": "cidsgc1", "ifname": "eth0"}])).ok();
    assert_eq!(files(&data), ["cidsgc1_eth0.json", "cidsgc2_eth0.json"]);
    gc(json!([])).ok();
    assert_eq!(files(&data), ["cidsgc2_eth0.json"]);
    // A dataDir that is a file holds no records: GC succeeds (it failed
    // forever with `not a directory`).
    let mut conf = keep[0].conf("1.1.0", json!({"name": "gcnet"}));
    conf["dataDir"] = json!(data.join("cidsgc2_eth0.json").to_str());
    conf["cni.dev/valid-attachments"] = json!([]);
    keep[0].call("GC", &conf).run(ours()).ok();
}

/// A network name too long for a directory: the records directory is
/// hashed (ADD failed with `file name too long`; the reference keeps no
/// records and works), and GC still finds the network's backups.
#[test]
fn long_network_names_work() {
    let c = Container::new("slnet");
    let before = c.link();
    let name = "n".repeat(300);
    let conf = c.conf("1.1.0", json!({"mtu": 1400, "name": name}));
    c.run("ADD", &conf).ok();
    assert_eq!(c.link().mtu, 1400);
    c.run("DEL", &conf).ok();
    assert_eq!(c.link(), before);
    assert!(c.data_files().is_empty(), "{:?}", c.data_files());
    c.run("ADD", &conf).ok();
    let mut gc = conf.clone();
    gc.as_object_mut().unwrap().remove("prevResult");
    gc["cni.dev/valid-attachments"] = json!([]);
    c.call("GC", &gc).run(ours()).ok();
    assert!(c.data_files().is_empty(), "{:?}", c.data_files());
}

/// A disallowed sysctl is refused, and nothing changes: not the allowed
/// sysctls, not the link, no backup.
#[test]
fn allowlist_refuses_and_nothing_changes() {
    let c = Container::new("sallow");
    let list = TempDir::new("allowlist");
    let file = list.join("allowlist.conf");
    std::fs::write(
        &file,
        "^net\\.core\\.somaxconn$\n  \n  ^net\\.ipv4\\.conf\\.IFNAME\\.[a-z_]*$  \n",
    )
    .unwrap();
    let before = (
        c.link(),
        c.sysctl("net/core/somaxconn"),
        c.sysctl("net/ipv4/conf/eth0/arp_notify"),
    );
    let with_list = |conf: &Value| {
        c.call("ADD", conf)
            .env("CNI_RS_TUNING_ALLOWLIST", file.to_str().unwrap())
            .run(ours())
    };
    let bad = c.conf(
        "1.0.0",
        json!({"mtu": 1400, "sysctl": {"net.core.somaxconn": "999", "net.ipv4.conf.IFNAME.arp_notify": "1", "net.ipv4.ip_forward": "1"}}),
    );
    let e = with_list(&bad).err(999);
    assert_eq!(
        e["msg"],
        r"Sysctl net.ipv4.ip_forward is not allowed. Only the following sysctls are allowed: [^net\.core\.somaxconn$ ^net\.ipv4\.conf\.IFNAME\.[a-z_]*$]"
    );
    let after = (
        c.link(),
        c.sysctl("net/core/somaxconn"),
        c.sysctl("net/ipv4/conf/eth0/arp_notify"),
    );
    assert_eq!(after, before);
    assert!(c.data_files().is_empty());

    let good = c.conf(
        "1.0.0",
        json!({"sysctl": {"net.core.somaxconn": "999", "net.ipv4.conf.IFNAME.arp_notify": "1"}}),
    );
    with_list(&good).ok();
    assert_eq!(c.sysctl("net/core/somaxconn"), "999");

    // An unreadable allowlist (a directory here) fails ADD.
    let e = c
        .call("ADD", &good)
        .env("CNI_RS_TUNING_ALLOWLIST", list.to_str())
        .run(ours())
        .err(999);
    assert!(e["msg"].as_str().unwrap().contains("is a directory"), "{e}");
    // A missing one restricts nothing.
    c.call("ADD", &bad)
        .env(
            "CNI_RS_TUNING_ALLOWLIST",
            list.join("none").to_str().unwrap(),
        )
        .run(ours())
        .ok();
}

/// What can be restored is. A value no DEL could ever restore (invalid
/// in the file, or refused by the kernel for the device) is noted and the
/// backup goes: keeping it failed every DEL forever (the reference's DEL
/// always succeeds).
#[test]
fn del_restores_what_it_can_and_drops_what_it_never_can() {
    let c = Container::new("spart");
    let conf = c.conf("1.0.0", json!({"mtu": 1400}));
    let add = c.conf("1.0.0", json!({"mtu": 1400, "allmulti": true}));
    for bad in [
        "{\n \"mac\": \"zz\",\n \"mtu\": 1500\n}",
        "{\n \"mtu\": 1500,\n \"txQLen\": -1\n}",
        "{\n \"mtu\": 70000,\n \"allmulti\": false\n}",
        "{\n \"mac\": \"01:00:5e:00:00:01\",\n \"mtu\": 1500\n}",
    ] {
        c.run("ADD", &add).ok();
        std::fs::write(c.backup(), bad).unwrap();
        let r = c.run("DEL", &conf);
        r.ok();
        assert!(r.stderr.contains("cannot ever be restored"), "{bad}: {r:?}");
        assert!(c.data_files().is_empty(), "{bad}: {:?}", c.data_files());
        let link = c.link();
        if bad.contains("70000") {
            assert!(!link.allmulti, "{bad}: {link:?}");
        } else {
            assert_eq!(link.mtu, 1500, "{bad}: {link:?}");
        }
        c.run("DEL", &conf).ok();
    }
}

/// DEL with `dataDir` a file (no backup can be in it) succeeds, with and
/// without the namespace; it failed forever with `not a directory`. A
/// directory in the backup's place is not a backup: left, DEL succeeds.
#[test]
fn del_with_data_dir_a_file_or_backup_a_directory_succeeds() {
    let c = Container::new("sddf");
    let file = c.data.join("file");
    std::fs::write(&file, "x").unwrap();
    let mut conf = c.conf("1.0.0", json!({"mtu": 1400}));
    conf["dataDir"] = json!(file.to_str());
    c.run("DEL", &conf).ok();
    c.call("DEL", &conf).netns("").run(ours()).ok();

    let conf = c.conf("1.0.0", json!({"mtu": 1400}));
    std::fs::create_dir(c.backup()).unwrap();
    c.run("DEL", &conf).ok();
    c.call("DEL", &conf).netns("").run(ours()).ok();
    assert!(c.backup().is_dir());
}

/// A container ID whose backup name fits (the reference writes it) but
/// not with a temporary file's prefix and suffix: ADD failed with `file
/// name too long`. The Go plugin restores what ours saved under it.
#[test]
fn long_container_ids_are_saved_as_the_reference_saves_them() {
    let mut c = Container::new("slong");
    c.id = "a".repeat(255 - "_eth0.json".len());
    let before = c.link();
    let conf = c.conf("1.0.0", json!({"mtu": 1400}));
    c.run("ADD", &conf).ok();
    assert_eq!(c.link().mtu, 1400);
    assert!(c.backup_text().is_some(), "{:?}", c.data_files());
    if std::path::Path::new(GO).exists() {
        c.run_go("DEL", &conf).ok();
    } else {
        c.run("DEL", &conf).ok();
    }
    assert_eq!(c.link(), before);
    assert!(c.backup_text().is_none());
}

/// An allowlist with a line that is not UTF-8 (a Latin-1 comment) and
/// CRLF line ends: the entries before it still allow their keys (reading
/// the file as text failed every ADD); a key that reaches the line fails
/// with Go's regexp error.
#[test]
fn allowlist_lines_of_any_bytes() {
    let c = Container::new("salb");
    let list = TempDir::new("allowlist");
    let file = list.join("allowlist.conf");
    std::fs::write(
        &file,
        b"^net\\.core\\.somaxconn$\r\n# caf\xe9\r\n^net\\.ipv4\\.x$\r\n",
    )
    .unwrap();
    let run = |key: &str| {
        let conf = c.conf("1.0.0", json!({"sysctl": {key: "1"}}));
        c.call("ADD", &conf)
            .env("CNI_RS_TUNING_ALLOWLIST", file.to_str().unwrap())
            .run(ours())
    };
    run("net.core.somaxconn").ok();
    assert_eq!(c.sysctl("net/core/somaxconn"), "1");
    assert_eq!(
        run("net.ipv4.conf.all.arp_notify").err(999)["msg"],
        "error parsing regexp: invalid UTF-8: `\u{fffd}`"
    );
}

/// No state file is written through a link planted at its name (the
/// backup, its temporary file, its record for GC): the links' targets
/// stay as they were, ADD writes real files in their place, DEL removes
/// them.
#[test]
fn planted_links_are_never_followed() {
    let c = Container::new("splant");
    let conf = c.conf("1.0.0", json!({"mtu": 1400}));
    let file = format!("{}_{}.json", c.id, c.ifname);
    let temp = format!(".tuning-{}.tmp", skel::sha512::hex_prefix(&file, 32));
    let mut planted = testsupport::planted::Planted::new();
    planted.plant(&[
        c.backup(),
        c.data.join(&temp),
        c.data.join(&format!(".tuning/tunenet/{file}")),
    ]);
    c.run("ADD", &conf).ok();
    planted.check("ADD");
    assert!(
        planted.still_links().is_empty(),
        "{:?}",
        planted.still_links()
    );
    let saved: Value = serde_json::from_str(&c.backup_text().unwrap()).unwrap();
    assert!(saved["mtu"].as_u64().is_some(), "{saved}");
    c.run("DEL", &conf).ok();
    planted.check("DEL");
    assert!(c.data_files().is_empty(), "{:?}", c.data_files());
}

/// A temporary file an earlier version left when its ADD was killed
/// (named after its process, which is gone) goes with GC; one of a live
/// process stays.
#[test]
fn gc_removes_temporaries_of_earlier_versions_whose_process_is_gone() {
    let c = Container::new("stmp");
    let dead = c.data.join(".tuning-4194999.tmp");
    let live = c.data.join(&format!(".tuning-{}.tmp", std::process::id()));
    std::fs::write(&dead, "{").unwrap();
    std::fs::write(&live, "{").unwrap();
    let mut gc = c.conf("1.1.0", json!({}));
    gc["cni.dev/valid-attachments"] = json!([]);
    c.call("GC", &gc)
        .netns("")
        .ifname("")
        .container_id("")
        .run(ours())
        .ok();
    assert!(!dead.exists());
    assert!(live.exists());
}
