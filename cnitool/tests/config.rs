//! Finding a network in a config directory the way libcni does.

use cnitool::NetworkList;
use serde_json::json;
use testsupport::TempDir;

fn write(dir: &TempDir, name: &str, v: serde_json::Value) {
    std::fs::write(dir.join(name), v.to_string()).unwrap();
}

#[test]
fn first_sorted_conflist_with_the_name_wins() {
    let d = TempDir::new("cfg");
    write(
        &d,
        "20-b.conflist",
        json!({"cniVersion": "1.0.0", "name": "n", "plugins": [{"type": "second"}]}),
    );
    write(
        &d,
        "10-a.conflist",
        json!({"cniVersion": "1.0.0", "name": "n", "plugins": [{"type": "first"}]}),
    );
    write(
        &d,
        "05-other.conflist",
        json!({"cniVersion": "1.0.0", "name": "o", "plugins": [{"type": "x"}]}),
    );
    // A single-plugin config of the same name loses to any conflist.
    write(
        &d,
        "00-n.conf",
        json!({"cniVersion": "1.0.0", "name": "n", "type": "single"}),
    );
    let l = NetworkList::load(d.path(), "n").unwrap();
    assert_eq!(l.plugins[0].plugin_type, "first");
    assert_eq!(l.bytes, std::fs::read(d.join("10-a.conflist")).unwrap());
}

#[test]
fn single_plugin_configs_are_up_converted() {
    let d = TempDir::new("cfg");
    write(
        &d,
        "10-x.json",
        json!({"cniVersion": "0.3.1", "name": "j", "type": "bridge"}),
    );
    write(
        &d,
        "20-y.conf",
        json!({"cniVersion": "0.4.0", "name": "c", "type": "loopback"}),
    );
    let l = NetworkList::load(d.path(), "c").unwrap();
    assert_eq!(l.cni_version, "0.4.0");
    assert_eq!(l.plugins.len(), 1);
    assert_eq!(l.plugins[0].plugin_type, "loopback");
    assert_eq!(
        String::from_utf8(l.bytes).unwrap(),
        r#"{"cniVersion":"0.4.0","name":"c","plugins":[{"cniVersion":"0.4.0","name":"c","type":"loopback"}]}"#
    );
    assert_eq!(
        NetworkList::load(d.path(), "j").unwrap().plugins[0].plugin_type,
        "bridge"
    );
}

#[test]
fn plugin_files_in_the_network_directory_are_appended() {
    let d = TempDir::new("cfg");
    write(
        &d,
        "n.conflist",
        json!({"cniVersion": "1.0.0", "name": "n", "plugins": [{"type": "a"}]}),
    );
    std::fs::create_dir(d.join("n")).unwrap();
    write(&d, "n/2.conf", json!({"type": "c"}));
    write(&d, "n/1.conf", json!({"type": "b"}));
    write(&d, "n/ignored.json", json!({"type": "z"}));
    let l = NetworkList::load(d.path(), "n").unwrap();
    let types: Vec<&str> = l.plugins.iter().map(|p| p.plugin_type.as_str()).collect();
    assert_eq!(types, ["a", "b", "c"]);

    write(
        &d,
        "n.conflist",
        json!({"cniVersion": "1.0.0", "name": "n", "loadOnlyInlinedPlugins": true, "plugins": [{"type": "a"}]}),
    );
    assert_eq!(NetworkList::load(d.path(), "n").unwrap().plugins.len(), 1);

    // A list without inline plugins takes them all from the directory.
    write(
        &d,
        "n.conflist",
        json!({"cniVersion": "1.0.0", "name": "n"}),
    );
    assert_eq!(NetworkList::load(d.path(), "n").unwrap().plugins.len(), 2);
}

#[test]
fn errors_name_the_file() {
    let d = TempDir::new("cfg");
    assert_eq!(
        NetworkList::load(&d.join("absent"), "n").unwrap_err().msg,
        format!(
            "no net configurations found in {}",
            d.join("absent").display()
        )
    );
    std::fs::write(d.join("bad.conflist"), "{").unwrap();
    let e = NetworkList::load(d.path(), "n").unwrap_err();
    assert!(
        e.msg.starts_with(&format!(
            "load {}: error parsing configuration list: EOF",
            d.join("bad.conflist").display()
        )),
        "{}",
        e.msg
    );
    assert_eq!(e.kind, cnitool::Kind::Config);
    std::fs::remove_file(d.join("bad.conflist")).unwrap();
    write(&d, "n.conflist", json!({"name": "n"}));
    assert_eq!(
        NetworkList::load(d.path(), "n").unwrap_err().msg,
        format!(
            "load {}: no plugin configs found",
            d.join("n.conflist").display()
        )
    );
}
