//! The plugin as a runtime sees it: versions, about text, every
//! validation error, pass-through, CHECK's verdicts, DEL's leniency,
//! STATUS and GC with several networks sharing a host.

mod common;

use common::*;
use serde_json::{Value, json};
use testsupport::Call;

const LIMITS: fn() -> Value = || {
    json!({"ingressRate": 1_000_000, "ingressBurst": 100_000,
           "egressRate": 2_000_000, "egressBurst": 200_000})
};

#[test]
fn version_and_about() {
    let v = Call::new("VERSION").run(bin()).ok();
    assert_eq!(
        v["supportedVersions"],
        json!(["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"])
    );
    let about = Call::new("").run(bin());
    assert_eq!(about.code, 0);
    assert!(
        about.stderr.starts_with("CNI bandwidth plugin v"),
        "{about:?}"
    );
    assert!(
        about
            .stderr
            .contains("CNI protocol versions supported: 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0")
    );
    let pod = Pod::new("bwv");
    let e = pod.call("ADD", &pod.conf("0.2.0", LIMITS())).err(1);
    assert_eq!(e["msg"], "incompatible CNI versions");
}

#[test]
fn every_validation_error() {
    let pod = Pod::new("bwx");
    let cases = [
        (
            json!({"ingressRate": 8}),
            "if rate is set, burst must also be set",
        ),
        (
            json!({"ingressBurst": 8}),
            "if burst is set, rate must also be set",
        ),
        (
            json!({"egressRate": 8}),
            "if rate is set, burst must also be set",
        ),
        (
            json!({"egressBurst": 8}),
            "if burst is set, rate must also be set",
        ),
        (
            json!({"egressRate": 8, "egressBurst": 34_359_738_360u64}),
            "burst cannot be more than 4GB",
        ),
        (
            json!({"runtimeConfig": {"bandwidth": {"IngressRate": 8}}}),
            "if rate is set, burst must also be set",
        ),
        (
            json!({"ingressRate": -1}),
            "failed to parse network configuration: json: cannot unmarshal number -1 into Go struct field PluginConf.ingressRate of type uint64",
        ),
        (
            json!({"runtimeConfig": {"bandwidth": {"egressRate": "fast"}}}),
            "failed to parse network configuration: json: cannot unmarshal string into Go struct field BandwidthEntry.runtimeConfig.bandwidth.egressRate of type uint64",
        ),
    ];
    for (keys, msg) in cases {
        for cmd in ["ADD", "CHECK"] {
            let e = pod.call(cmd, &pod.conf("1.0.0", keys.clone())).err(999);
            assert_eq!(e["msg"], msg, "{cmd} {keys}");
        }
    }
    // Nothing was made.
    assert_eq!(pod.state(), pristine());
}

#[test]
fn without_prev_result_an_error_never_a_panic() {
    let pod = Pod::new("bwp");
    for keys in [json!({}), LIMITS()] {
        let mut conf = pod.conf("1.0.0", keys);
        conf.as_object_mut().unwrap().remove("prevResult");
        let e = pod.call("ADD", &conf).err(999);
        assert_eq!(e["msg"], "must be called as chained plugin");
        let e = pod.call("CHECK", &conf).err(999);
        assert_eq!(e["msg"], "must be called as a chained plugin");
    }
}

#[test]
fn without_limits_the_result_passes_through() {
    let pod = Pod::new("bwt");
    for keys in [
        json!({}),
        json!({"ingressRate": 0, "egressBurst": 0}),
        json!({"runtimeConfig": {"bandwidth": {}}}),
        // The top-level entry wins, and it is all zeros.
        json!({"ingressRate": null, "runtimeConfig": {"bandwidth": {"egressRate": 8, "egressBurst": 8}}}),
    ] {
        for version in ["1.0.0", "0.4.0", "0.3.0"] {
            let conf = pod.conf(version, keys.clone());
            let out = pod.call("ADD", &conf).ok();
            assert_eq!(out, pod.prev_in(version), "{keys} {version}");
            if version != "0.3.0" {
                pod.call("CHECK", &conf).ok();
            }
        }
    }
    assert_eq!(pod.state(), pristine());
}

#[test]
fn check_finds_what_changed() {
    let pod = Pod::new("bwk");
    let conf = pod.conf("1.0.0", LIMITS());
    pod.call("ADD", &conf).ok();
    pod.call("CHECK", &conf).ok();
    let check_err = |c: &Value| {
        pod.call("CHECK", c).err(999)["msg"]
            .as_str()
            .unwrap()
            .to_string()
    };

    // Other limits than the ones in place.
    for (key, msg) in [
        ("ingressRate", "Rate doesn't match"),
        ("egressRate", "Rate doesn't match"),
        ("egressBurst", "Limit doesn't match"),
    ] {
        let mut other = conf.clone();
        other[key] = json!(conf[key].as_u64().unwrap() * 2);
        assert_eq!(check_err(&other), msg, "{key}");
    }
    // Same rate and limit, another bucket.
    let limit = format!("{}b", 125_000 / 40 + 12_500);
    pod.tc(&format!(
        "qdisc replace dev {} root handle 1: tbf rate 125000bps burst 5000b limit {}",
        pod.veth, limit
    ));
    assert_eq!(check_err(&conf), "Buffer doesn't match");
    // tc's own numbers for the reference's example are the reference's.
    pod.tc(&format!(
        "qdisc replace dev {} root handle 1: tbf rate 125000bps burst 12500b limit {}",
        pod.veth, limit
    ));
    pod.call("CHECK", &conf).ok();
    // The redirect is gone.
    pod.tc(&format!("filter del dev {} ingress", pod.veth));
    assert_eq!(
        check_err(&conf),
        format!(
            "no filter on {} redirects its traffic to {}",
            pod.veth,
            pod.ifb()
        )
    );
    // The tbf is gone (the reference passed this one).
    pod.tc(&format!("qdisc del dev {} root", pod.veth));
    assert_eq!(
        check_err(&conf),
        format!(
            "no tbf qdisc on {}: its root qdisc is noqueue 0: root",
            pod.veth
        )
    );
    // The IFB is gone.
    pod.call("DEL", &conf).ok();
    let egress = pod.conf("1.0.0", json!({"egressRate": 8000, "egressBurst": 800}));
    assert!(check_err(&egress).starts_with("get ifb device: "));
    // Not a veth, or not the one in prevResult.
    let mut other = conf.clone();
    other["prevResult"]["interfaces"][0]["name"] = json!("veth-other");
    assert_eq!(
        check_err(&other),
        "no veth peer of container interface found in host ns"
    );
    let e = pod
        .request("CHECK", &conf)
        .ifname("lo")
        .run_in(pod.host.name(), bin())
        .err(999);
    assert_eq!(
        e["msg"],
        "container interface lo has no veth peer: interface \"lo\" was not a veth interface"
    );
}

/// A `CNI_NETNS` that is there but no namespace (a netns bind mount
/// unmounted, its file left behind): DEL removes the IFB and succeeds, as
/// the Go plugin's (it failed forever with `unknown FS magic`).
#[test]
fn del_with_a_netns_path_that_is_no_namespace_removes_the_ifb() {
    let pod = Pod::new("bwnf");
    let conf = pod.conf("1.0.0", LIMITS());
    pod.call("ADD", &conf).ok();
    pod.clear_veth();
    let dir = testsupport::TempDir::new("bwnf");
    let file = dir.join("netns-file");
    std::fs::write(&file, "").unwrap();
    pod.request("DEL", &conf)
        .netns(file.to_str().unwrap())
        .run_in(pod.host.name(), bin())
        .ok();
    assert!(!pod.has_link(&pod.ifb()));
}

#[test]
fn del_needs_neither_netns_nor_prev_result_nor_valid_limits() {
    let pod = Pod::new("bwd");
    let conf = pod.conf("1.0.0", LIMITS());
    let mut bare = conf.clone();
    bare.as_object_mut().unwrap().remove("prevResult");
    for del in [
        pod.request("DEL", &bare).netns(""),
        pod.request("DEL", &conf).netns("/run/netns/cnirs-gone"),
    ] {
        pod.call("ADD", &conf).ok();
        assert!(pod.has_link(&pod.ifb()));
        // Without its namespace the container's veth is gone in real
        // life, its qdiscs with it; here the test removes them. (A veth
        // still redirecting to the IFB is this attachment's when
        // `prevResult` names it, else another's: kept.)
        pod.clear_veth();
        del.run_in(pod.host.name(), bin()).ok();
        assert!(!pod.has_link(&pod.ifb()));
        // Again: nothing to do is success.
        del.run_in(pod.host.name(), bin()).ok();
    }
    // Limits the reference would refuse: the IFB and the redirect go, the
    // tbf (whose numbers are unknown) stays with the veth.
    pod.call("ADD", &conf).ok();
    pod.call("DEL", &pod.conf("1.0.0", json!({"egressRate": 1})))
        .ok();
    let qdiscs: Vec<_> = pod
        .qdiscs(&pod.veth)
        .iter()
        .map(|q| q["kind"].clone())
        .collect();
    assert_eq!(qdiscs, vec![json!("tbf")]);
    assert!(pod.ifbs().is_empty());
}

/// DEL with an empty `CNI_NETNS` while the container lives (a runtime
/// that lost the namespace path): the host end `prevResult` names still
/// redirects to the IFB, which makes it this attachment's (not another's):
/// its qdiscs and the IFB go. Again: success, nothing left. With the
/// host end already gone (the main plugin's DEL ran first): the IFB goes.
#[test]
fn del_without_netns_finds_the_host_end_in_prev_result() {
    for version in ["1.0.0", "0.4.0"] {
        let pod = Pod::new("bwpr");
        let conf = pod.conf(version, LIMITS());
        let before = pod.state();
        pod.call("ADD", &conf).ok();
        assert_ne!(pod.state(), before);
        let del = pod.request("DEL", &conf).netns("");
        del.run_in(pod.host.name(), bin()).ok();
        assert_eq!(pod.state(), before, "{version}");
        del.run_in(pod.host.name(), bin()).ok();
        assert_eq!(pod.state(), before, "{version}");

        pod.call("ADD", &conf).ok();
        pod.host.exec(&["ip", "link", "del", &pod.veth]);
        del.run_in(pod.host.name(), bin()).ok();
        assert!(pod.ifbs().is_empty(), "{version}: {:?}", pod.ifbs());
        del.run_in(pod.host.name(), bin()).ok();
    }
}

/// DEL leaves the kernel's wait for the IFB's last references to a child
/// process; the device and its name must still be gone when DEL returns,
/// so an ADD right after it (a restarted pod) never meets the old IFB.
#[test]
fn add_right_after_del_finds_the_name_free() {
    let pod = Pod::new("bwr");
    let conf = pod.conf("1.0.0", LIMITS());
    for round in 0..10 {
        pod.call("ADD", &conf).ok();
        pod.call("DEL", &conf).ok();
        assert!(!pod.has_link(&pod.ifb()), "round {round}");
    }
    pod.call("ADD", &conf).ok();
    assert_eq!(pod.ifbs(), vec![pod.ifb()]);
    pod.call("DEL", &conf).ok();
}

#[test]
fn del_leaves_a_device_that_is_not_an_ifb() {
    let pod = Pod::new("bwn");
    let ifb = pod.ifb();
    pod.host
        .exec(&["ip", "link", "add", &ifb, "type", "bridge"]);
    pod.call("DEL", &pod.conf("1.0.0", LIMITS())).ok();
    assert!(pod.has_link(&ifb));
    let e = pod.call("ADD", &pod.conf("1.0.0", LIMITS())).err(999);
    assert_eq!(
        e["msg"],
        format!("adding link: {ifb} already exists and is not an ifb device (kind \"bridge\")")
    );
    assert_eq!(pod.qdiscs(&pod.veth).len(), 1, "the ingress tbf was undone");
}

#[test]
fn status_succeeds() {
    let pod = Pod::new("bws");
    let mut conf = pod.conf("1.1.0", LIMITS());
    conf.as_object_mut().unwrap().remove("prevResult");
    let out = pod.request("STATUS", &conf).run_in(pod.host.name(), bin());
    assert_eq!((out.code, out.stdout.as_str()), (0, ""), "{out:?}");
}

fn gc(pod: &Pod, net: &str, valid: Option<&[&Pod]>) {
    let mut conf = json!({"cniVersion": "1.1.0", "name": net, "type": "bandwidth"});
    if let Some(valid) = valid {
        let list: Vec<Value> = valid
            .iter()
            .map(|p| json!({"containerID": p.cid, "ifname": "eth0"}))
            .collect();
        conf["cni.dev/valid-attachments"] = json!(list);
    }
    Call::new("GC")
        .path("/nonexistent")
        .stdin(conf.to_string())
        .run_in(pod.host.name(), bin())
        .ok();
}

/// Two networks share the host. GC of one removes only its own stale IFBs:
/// never the other network's, never an IFB it cannot prove is its own.
#[test]
fn gc_removes_only_this_networks_stale_devices() {
    let a1 = Pod::new("bwg1");
    let a2 = a1.sibling("bwg2", &a1.net);
    let a3 = a1.sibling("bwg3", &a1.net);
    let b1 = a1.sibling("bwg4", "othernet");
    let egress = json!({"egressRate": 8_000_000, "egressBurst": 80_000});
    for p in [&a1, &a2, &a3, &b1] {
        p.call("ADD", &p.conf("1.1.0", egress.clone())).ok();
    }
    // An IFB of a3's name without our alias (as the Go plugin makes
    // them) cannot be told apart from another network's: kept.
    a3.host
        .exec(&["ip", "link", "set", "dev", &a3.ifb(), "alias", "someone's"]);
    let all = |p: &Pod| p.ifbs().len();
    assert_eq!(all(&a1), 4);

    gc(&a1, &a1.net, None);
    assert_eq!(all(&a1), 4, "no list: nothing removed");
    gc(&a1, &a1.net, Some(&[&a1]));
    assert!(a1.has_link(&a1.ifb()));
    assert!(!a1.has_link(&a2.ifb()), "stale, ours: removed");
    assert!(a1.has_link(&a3.ifb()), "not provably ours: kept");
    assert!(a1.has_link(&b1.ifb()), "another network's: kept");
    gc(&a1, "othernet", Some(&[]));
    assert!(!a1.has_link(&b1.ifb()));
    assert!(a1.has_link(&a1.ifb()));
}
