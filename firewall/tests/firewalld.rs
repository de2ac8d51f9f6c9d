//! Root tests of the firewalld client against Debian's firewalld on a
//! private system bus (`testsupport::firewalld`): firewalld runs in a
//! throwaway network namespace and mount namespace, so its rules and
//! files never reach the machine. Effects are read back with
//! `firewall-cmd` on the same bus and with `nft` in firewalld's namespace.

use cni_firewall::firewalld::{self, EXCEPTION, Firewalld};
use cni_firewall::{Backend, ErrorKind, System, select};
use testsupport::firewalld::{PrivateBus, PrivateFirewalld};

/// The nft rules firewalld made for `addr` in its namespace.
fn rules_for(fwd: &PrivateFirewalld, addr: &str) -> Vec<String> {
    fwd.netns()
        .stdout(&["nft", "list", "ruleset"])
        .lines()
        .filter(|l| l.contains(&format!("addr {addr} ")))
        .map(|l| l.trim().to_string())
        .collect()
}

#[test]
fn not_running_without_a_bus_or_without_firewalld() {
    let bus = PrivateBus::start();
    let gone = bus.dir().join("no-such-socket");
    let gone = format!("unix:path={}", gone.display());
    assert!(!firewalld::running_at(&gone));
    let e = Firewalld::connect_to(&gone).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Unavailable(Backend::Firewalld));
    assert_eq!(
        e.to_string(),
        format!(
            "connect to the system bus at {gone}: connect to {gone}: no such file or directory"
        )
    );

    // A bus without firewalld on it.
    assert!(!firewalld::running_at(bus.address()));
    let mut f = Firewalld::connect_to(bus.address()).unwrap();
    assert!(!f.running());
    let e = f.add_source("trusted", "10.240.0.2/32").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable(Backend::Firewalld));
    assert_eq!(
        e.dbus_name(),
        Some("org.freedesktop.DBus.Error.ServiceUnknown")
    );
    assert!(
        e.to_string()
            .starts_with("failed to add the address 10.240.0.2/32 to trusted zone: "),
        "{e}"
    );
}

#[test]
fn sources_against_a_real_firewalld() {
    let bus = PrivateBus::start();
    let mut fwd = PrivateFirewalld::start(&bus);
    let host_rules = std::process::Command::new("nft")
        .args(["list", "ruleset"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    assert!(firewalld::running_at(bus.address()));
    let mut f = Firewalld::connect_to(bus.address()).unwrap();
    assert!(f.running());
    // The firewall plugin's auto selection picks it.
    let nl = cni_net::Netlink::host().unwrap();
    let running = || firewalld::running_at(bus.address());
    let system = System::new(&nl).with_firewalld(&running);
    assert_eq!(select::firewall(None, &system), Ok(Backend::Firewalld));

    let (v4, v6) = ("10.240.0.2/32", "fd40::2/128");
    assert_eq!(f.zone_of_source(v4), Ok(None));
    assert_eq!(f.add_source("trusted", v4), Ok(true));
    assert_eq!(f.add_source("trusted", v6), Ok(true));
    // Read back through firewall-cmd and in the kernel of firewalld's netns.
    let (ok, listed) = bus.firewall_cmd(&["--zone=trusted", "--list-sources"]);
    assert!(ok, "{listed}");
    assert_eq!(listed, format!("{v4} {v6}"));
    let rules = rules_for(&fwd, "10.240.0.2");
    assert!(
        rules.contains(&"ip saddr 10.240.0.2 goto filter_IN_trusted".to_string()),
        "{rules:?}"
    );
    assert!(!rules_for(&fwd, "fd40::2").is_empty());
    // Nothing reached the machine's own ruleset.
    let host_now = std::process::Command::new("nft")
        .args(["list", "ruleset"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    assert_eq!(host_now, host_rules);
    assert!(!host_now.contains("10.240.0.2"));

    // Adding again is fine (ZONE_ALREADY_SET); the zone is known.
    assert_eq!(f.add_source("trusted", v4), Ok(false));
    assert_eq!(f.zone_of_source(v4), Ok(Some("trusted".to_string())));
    assert_eq!(f.query_source("trusted", v4), Ok(true));
    assert_eq!(f.query_source("public", v4), Ok(false));

    // Refusals carry firewalld's D-Bus error, its code and what we tried.
    let e = f.add_source("public", v4).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Dbus);
    assert_eq!(e.dbus_name(), Some(EXCEPTION));
    assert_eq!(e.firewalld_code(), Some("ZONE_CONFLICT"));
    assert_eq!(
        e.to_string(),
        "failed to add the address 10.240.0.2/32 to public zone: ZONE_CONFLICT: '10.240.0.2/32' already bound to a zone"
    );
    let e = f.add_source("cnirsnozone", "10.240.0.3/32").unwrap_err();
    assert_eq!(e.firewalld_code(), Some("INVALID_ZONE"));
    let e = f.query_source("cnirsnozone", v4).unwrap_err();
    assert_eq!(
        e.to_string(),
        "failed to find the address 10.240.0.2/32 in cnirsnozone zone: INVALID_ZONE: cnirsnozone"
    );
    let e = f.add_source("trusted", "not-an-address").unwrap_err();
    assert_eq!(e.firewalld_code(), Some("INVALID_ADDR"));

    // Removal from another zone leaves the binding; from its own removes it.
    assert_eq!(f.remove_source("public", v4), Ok(false));
    assert_eq!(f.zone_of_source(v4), Ok(Some("trusted".to_string())));
    assert_eq!(f.remove_source("trusted", v4), Ok(true));
    assert_eq!(f.remove_source("trusted", v6), Ok(true));
    assert_eq!(f.zone_of_source(v4), Ok(None));
    assert_eq!(
        bus.firewall_cmd(&["--zone=trusted", "--list-sources"]),
        (true, String::new())
    );
    assert!(rules_for(&fwd, "10.240.0.2").is_empty());
    assert!(rules_for(&fwd, "fd40::2").is_empty());
    // Removing what is gone is fine (UNKNOWN_SOURCE).
    assert_eq!(f.remove_source("trusted", v4), Ok(false));

    // firewalld gone: not running, calls unavailable.
    fwd.stop();
    assert!(!firewalld::running_at(bus.address()));
    let e = f.add_source("trusted", v4).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable(Backend::Firewalld));
}

/// Debian's Go firewall plugin (v1.1.1) with `backend: firewalld` on the
/// same private bus: what it binds we read and remove, what we bind it
/// finds and removes, so both speak the same calls and source form.
#[test]
fn go_plugin_and_we_share_sources() {
    let go = std::path::Path::new("/usr/lib/cni/firewall");
    assert!(go.is_file(), "apt-get install containernetworking-plugins");
    let bus = PrivateBus::start();
    let _fwd = PrivateFirewalld::start(&bus);
    let container = testsupport::TestNetns::new("fwdc");
    let conf = serde_json::json!({
        "cniVersion": "1.0.0", "name": "cnirsfwd", "type": "firewall",
        "backend": "firewalld", "zone": "trusted",
        "prevResult": {
            "cniVersion": "1.0.0",
            "interfaces": [{"name": "eth0", "sandbox": container.path()}],
            "ips": [{"address": "10.240.0.5/24", "gateway": "10.240.0.1", "interface": 0}],
        },
    });
    let go_run = |cmd: &str| {
        testsupport::Call::new(cmd)
            .container_id("cnirsfwd1")
            .netns(container.path())
            .ifname("eth0")
            .path("/usr/lib/cni")
            .env("DBUS_SYSTEM_BUS_ADDRESS", bus.address())
            .stdin(conf.to_string())
            .run(go)
    };
    let mut f = Firewalld::connect_to(bus.address()).unwrap();
    let src = "10.240.0.5/32";

    go_run("ADD").ok();
    assert_eq!(f.zone_of_source(src), Ok(Some("trusted".to_string())));
    assert_eq!(f.query_source("trusted", src), Ok(true));
    assert_eq!(f.add_source("trusted", src), Ok(false));
    assert_eq!(f.remove_source("trusted", src), Ok(true));
    go_run("DEL").ok();

    assert_eq!(f.add_source("trusted", src), Ok(true));
    go_run("CHECK").ok();
    go_run("DEL").ok();
    assert_eq!(f.zone_of_source(src), Ok(None));
}
