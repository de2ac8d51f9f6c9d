//! Root test: our `bridge` with `static` IPAM (found on `CNI_PATH`, both
//! built from this workspace) gives a container its fixed addresses, and
//! it reaches the gateway over IPv4 and IPv6. The bridge and its gateway
//! live in a throwaway "host" namespace.

use serde_json::json;
use testsupport::{Call, TestNetns, cni_path_with, ping, plugin_bin, unique_name};

#[test]
fn bridge_with_static_ipam_gets_its_fixed_address_and_reaches_the_gateway() {
    let host = TestNetns::new("sth");
    let container = TestNetns::new("stc");
    let path = cni_path_with(&["static"]);
    let bridge = unique_name("cnirsbr");
    let conf = json!({
        "cniVersion": "1.0.0", "name": "staticnet", "type": "bridge",
        "bridge": bridge, "isGateway": true,
        "ipam": {"type": "static",
            "addresses": [
                {"address": "10.240.77.5/24", "gateway": "10.240.77.1"},
                {"address": "fd40:77::5/64", "gateway": "fd40:77::1"}],
            "routes": [{"dst": "10.240.78.0/24", "gw": "10.240.77.1"}],
            "dns": {"nameservers": ["10.240.77.53"]}}
    });
    let call = |cmd: &str, conf: &serde_json::Value| {
        Call::new(cmd)
            .container_id("static1")
            .netns(container.path())
            .ifname("eth0")
            .path(path.to_str())
            .stdin(conf.to_string())
            .run_in(host.name(), &plugin_bin("bridge"))
    };

    let result = call("ADD", &conf).ok();
    let ips: Vec<_> = result["ips"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["address"].as_str().unwrap(),
                i["gateway"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        ips,
        [
            ("10.240.77.5/24", "10.240.77.1"),
            ("fd40:77::5/64", "fd40:77::1")
        ]
    );
    assert_eq!(result["dns"]["nameservers"][0], "10.240.77.53");

    let addrs = container.stdout(&["ip", "-o", "addr", "show", "dev", "eth0"]);
    assert!(addrs.contains("inet 10.240.77.5/24"), "{addrs}");
    assert!(addrs.contains("inet6 fd40:77::5/64"), "{addrs}");
    let routes = container.stdout(&["ip", "route", "show"]);
    assert!(
        routes.contains("10.240.78.0/24 via 10.240.77.1"),
        "{routes}"
    );
    let gw = host.stdout(&["ip", "-o", "addr", "show", "dev", &bridge]);
    assert!(
        gw.contains("10.240.77.1/24") && gw.contains("fd40:77::1/64"),
        "{gw}"
    );
    assert!(
        ping(&container, "10.240.77.1"),
        "no IPv4 answer from the gateway"
    );
    assert!(
        ping(&container, "fd40:77::1"),
        "no IPv6 answer from the gateway"
    );

    // CHECK, as runtimes call it: with the ADD result as prevResult;
    // static (called by bridge) then finds its addresses there.
    let mut checked = conf.clone();
    checked["prevResult"] = result.clone();
    call("CHECK", &checked).ok();
    checked["ipam"]["addresses"][0]["address"] = json!("10.240.77.6/24");
    let e = call("CHECK", &checked).err(999);
    assert!(e["msg"].as_str().unwrap().contains("10.240.77.6"), "{e}");
    call("DEL", &conf).ok();
    let links = container.stdout(&["ip", "-o", "link", "show"]);
    assert!(!links.contains("eth0"), "{links}");
    call("DEL", &conf).ok();
}

/// A route without `dst` never reaches a kernel: the reference's bridge
/// fails on its own static's result (`invalid CIDR address: <nil>`, after
/// creating the bridge); ours fails with static's code 7 and the
/// container is left as it was.
#[test]
fn a_route_without_dst_fails_the_attachment_as_with_the_reference() {
    let host = TestNetns::new("sdh");
    let container = TestNetns::new("sdc");
    let path = cni_path_with(&["static"]);
    let conf = json!({
        "cniVersion": "1.0.0", "name": "staticnet", "type": "bridge",
        "bridge": unique_name("cnirsbr"), "isGateway": true,
        "ipam": {"type": "static",
            "addresses": [{"address": "10.240.79.5/24", "gateway": "10.240.79.1"}],
            "routes": [{"gw": "10.240.79.1"}]}
    });
    let call = |bin: &std::path::Path, cni_path: &str| {
        Call::new("ADD")
            .container_id("static2")
            .netns(container.path())
            .ifname("eth0")
            .path(cni_path)
            .stdin(conf.to_string())
            .run_in(host.name(), bin)
    };
    let theirs = call(std::path::Path::new("/usr/lib/cni/bridge"), "/usr/lib/cni").err(999);
    assert_eq!(theirs["msg"], "invalid CIDR address: <nil>");
    container.exec_output(&["ip", "link", "del", "eth0"]);
    let ours = call(&plugin_bin("bridge"), path.to_str()).err(7);
    assert!(
        ours["msg"].as_str().unwrap().contains("has no \"dst\""),
        "{ours}"
    );
    let links = container.stdout(&["ip", "-o", "link", "show"]);
    assert!(!links.contains("eth0"), "{links}");
}
