//! The firewalld backend against Debian's firewalld on a private system
//! bus (testsupport's `PrivateBus` / `PrivateFirewalld`; the plugin runs
//! in the lab's host namespace with `DBUS_SYSTEM_BUS_ADDRESS` set): the
//! addresses become sources of the zone, the isolation rules go through
//! iptables (as the reference), CHECK sees a removed source, DEL without
//! prevResult removes them, auto picks firewalld when it runs, a failed
//! ADD unbinds what it bound, STATUS, and Debian's Go plugin and ours
//! remove each other's sources.

mod common;

use std::path::Path;

use cni_firewall::firewalld::Firewalld;
use common::*;
use serde_json::{Value, json};
use testsupport::firewalld::{PrivateBus, PrivateFirewalld};

struct Bus<'a> {
    lab: &'a Lab,
    address: String,
}

impl Bus<'_> {
    fn run(&self, bin: &Path, cmd: &str, conf: &Value, cid: &str) -> PluginRun {
        self.lab
            .host
            .request(cmd, conf, cid, "/x", "eth0")
            .env("DBUS_SYSTEM_BUS_ADDRESS", &self.address)
            .run_in(self.lab.host.ns.name(), bin)
    }

    fn ours(&self, cmd: &str, conf: &Value, cid: &str) -> PluginRun {
        self.run(bin(), cmd, conf, cid)
    }

    fn fail_at(&self, point: &str, conf: &Value, cid: &str) -> PluginRun {
        self.lab
            .host
            .request("ADD", conf, cid, "/x", "eth0")
            .env("DBUS_SYSTEM_BUS_ADDRESS", &self.address)
            .fail_at(point)
            .run_in(self.lab.host.ns.name(), bin())
    }
}

const V4: &str = "10.240.80.2/32";
const V6: &str = "fd40:80::2/128";

#[test]
fn firewalld_backend_on_a_private_bus() {
    let bus = PrivateBus::start();
    let _fwd = PrivateFirewalld::start(&bus);
    let lab = Lab::new("fwd");
    let b = Bus {
        lab: &lab,
        address: bus.address().to_string(),
    };
    let mut f = Firewalld::connect_to(bus.address()).unwrap();
    let zone_of = |f: &mut Firewalld, s: &str| f.zone_of_source(s).unwrap();
    let p = prev(&lab.a.bridge, &["10.240.80.2/24", "fd40:80::2/64"]);
    let conf = lab.conf(
        &lab.a.name,
        json!({"backend": "firewalld", "ingressPolicy": "same-bridge"}),
    );
    let with = with_prev(&conf, &p);

    b.ours(
        "STATUS",
        &json!({"cniVersion": "1.1.0", "name": "n", "backend": "firewalld"}),
        "",
    )
    .ok();
    assert_eq!(b.ours("ADD", &with, "c1").ok(), p);
    assert_eq!(zone_of(&mut f, V4).as_deref(), Some("trusted"));
    assert_eq!(zone_of(&mut f, V6).as_deref(), Some("trusted"));
    let ipt = lab.iptables();
    assert!(
        ipt.contains("-A CNI-ISOLATION-STAGE-2 -o "),
        "isolation through iptables: {ipt}"
    );
    assert!(
        !ipt.contains("CNI-FORWARD"),
        "no CNI-FORWARD with firewalld: {ipt}"
    );
    b.ours("CHECK", &with, "c1").ok();
    assert_eq!(f.remove_source("trusted", V6), Ok(true));
    let e = b.ours("CHECK", &with, "c1").err(999);
    assert_eq!(
        e["msg"],
        format!("expected the address {V6} in trusted zone, not found")
    );
    b.ours("ADD", &with, "c1").ok();
    for _ in 0..2 {
        b.ours("DEL", &conf, "c1").ok();
        assert_eq!((zone_of(&mut f, V4), zone_of(&mut f, V6)), (None, None));
    }

    // Another zone, and an address bound elsewhere: the reference's error.
    let public = with_prev(
        &lab.conf(
            &lab.a.name,
            json!({"backend": "firewalld", "firewalldZone": "public"}),
        ),
        &p,
    );
    assert_eq!(f.add_source("internal", V4), Ok(true));
    let e = b.ours("ADD", &public, "c2").err(999);
    assert!(
        e["msg"]
            .as_str()
            .unwrap()
            .starts_with(&format!("failed to add the address {V4} to public zone")),
        "{e}"
    );
    assert_eq!(
        zone_of(&mut f, V6),
        None,
        "a failed ADD unbinds what it bound"
    );
    assert_eq!(lab.records(), 0);
    assert_eq!(f.remove_source("internal", V4), Ok(true));

    // A zone firewalld does not know: ADD fails, and the DEL the runtime
    // sends after it succeeds, even with the address bound to another
    // zone (where firewalld, whatever its version, answers INVALID_ZONE):
    // nothing can be bound to a zone that is not there, and a failing
    // DEL has the runtime retry forever.
    let unknown = with_prev(
        &lab.conf(
            &lab.a.name,
            json!({"backend": "firewalld", "firewalldZone": "cnirs-nozone"}),
        ),
        &p,
    );
    let e = b.ours("ADD", &unknown, "c5").err(999);
    let msg = e["msg"].as_str().unwrap();
    assert!(msg.contains("INVALID_ZONE"), "{e}");
    assert_eq!(f.add_source("trusted", V4), Ok(true));
    b.ours("DEL", &unknown, "c5").ok();
    assert_eq!(zone_of(&mut f, V4).as_deref(), Some("trusted"));
    // Nor a zone no D-Bus string can carry (a NUL byte): ADD fails, DEL
    // succeeds.
    let nul = with_prev(
        &lab.conf(
            &lab.a.name,
            json!({"backend": "firewalld", "firewalldZone": "a\u{0}b"}),
        ),
        &p,
    );
    let e = b.ours("ADD", &nul, "c5").err(999);
    assert!(e["msg"].as_str().unwrap().contains("NUL"), "{e}");
    b.ours("DEL", &nul, "c5").ok();
    assert_eq!(zone_of(&mut f, V4).as_deref(), Some("trusted"));
    assert_eq!(f.remove_source("trusted", V4), Ok(true));
    assert_eq!(lab.records(), 0);

    // Auto: firewalld runs, so it is chosen, and the connection that
    // asked adds the sources (strace: one connect to the bus); DEL with
    // the backend unset finds it through the record.
    let auto = lab.conf(&lab.a.name, json!({}));
    let traced = testsupport::strace::Traced::new(
        "firewall",
        lab.host.ns.name(),
        &[&format!("DBUS_SYSTEM_BUS_ADDRESS={}", b.address)],
        "",
        "connect",
        bin(),
    );
    lab.host
        .request("ADD", &with_prev(&auto, &p), "c3", "/x", "eth0")
        .run(&traced.wrapper)
        .ok();
    let socket = b.address.trim_start_matches("unix:path=");
    let log = traced.log();
    assert_eq!(log.matches(socket).count(), 1, "{log}");
    assert_eq!(zone_of(&mut f, V4).as_deref(), Some("trusted"));
    b.ours("DEL", &auto, "c3").ok();
    assert_eq!(zone_of(&mut f, V4), None);

    // A failure at each step leaves no source bound and no record.
    for point in [
        "firewall/recorded",
        "firewall/firewalld",
        "firewall/iptables-v4",
        "firewall/iptables-v6",
    ] {
        let e = b.fail_at(point, &with, "c4").err(999);
        assert_eq!(e["msg"], format!("injected failure at {point}"));
        assert_eq!(
            (zone_of(&mut f, V4), zone_of(&mut f, V6)),
            (None, None),
            "{point}"
        );
        assert_eq!(lab.records(), 0, "{point}");
    }

    // Debian's Go plugin: each removes the other's sources.
    let go = Path::new(REFERENCE_FIREWALL);
    if go.is_file() {
        let plain = with_prev(&lab.conf(&lab.a.name, json!({"backend": "firewalld"})), &p);
        b.run(go, "ADD", &plain, "g1").ok();
        assert_eq!(zone_of(&mut f, V4).as_deref(), Some("trusted"));
        b.ours("CHECK", &plain, "g1").ok();
        b.ours("DEL", &plain, "g1").ok();
        assert_eq!((zone_of(&mut f, V4), zone_of(&mut f, V6)), (None, None));
        b.ours("ADD", &plain, "g2").ok();
        b.run(go, "CHECK", &plain, "g2").ok();
        b.run(go, "DEL", &plain, "g2").ok();
        assert_eq!((zone_of(&mut f, V4), zone_of(&mut f, V6)), (None, None));
    }
}

#[test]
fn without_firewalld_auto_is_iptables_and_status_says_why() {
    let bus = PrivateBus::start();
    let lab = Lab::new("fwd");
    let b = Bus {
        lab: &lab,
        address: bus.address().to_string(),
    };
    let p = prev(&lab.a.bridge, &["10.240.80.2/24"]);
    b.ours(
        "ADD",
        &with_prev(&lab.conf(&lab.a.name, json!({})), &p),
        "c1",
    )
    .ok();
    assert_eq!(
        lab.rules_of("10.240.80.2", "c1").len(),
        2,
        "iptables chosen"
    );
    b.ours("DEL", &lab.conf(&lab.a.name, json!({})), "c1").ok();
    assert!(lab.rules_of("10.240.80.2", "c1").is_empty());
    let status = json!({"cniVersion": "1.1.0", "name": "n", "backend": "firewalld"});
    let e = b.ours("STATUS", &status, "").err(999);
    assert_eq!(
        e["msg"],
        "firewall backend not usable: firewalld is not running on the system bus"
    );
    let e = b
        .ours(
            "ADD",
            &with_prev(&lab.conf(&lab.a.name, json!({"backend": "firewalld"})), &p),
            "c2",
        )
        .err(999);
    let msg = e["msg"].as_str().unwrap();
    assert!(
        msg.starts_with("failed to add the address 10.240.80.2/32 to trusted zone: "),
        "{e}"
    );
    assert_eq!(lab.records(), 0);
}
