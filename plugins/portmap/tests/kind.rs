//! kind's default network (`10-kindnet.conflist`, which kindnetd writes on
//! every node: ptp with host-local, dual-stack, then portmap; subnets and
//! state directories adapted) through our `cnitool` on our binaries alone:
//! two containers that reach each other and the host, a host port reached
//! from outside and from the other container, CHECK, DEL, nothing left.

mod common;

use common::*;
use serde_json::json;
use testsupport::traffic::Server;
use testsupport::{ip_of, ping};

#[test]
fn kind_default_network_end_to_end() {
    let kind = Chain::new(
        "pkind",
        "10-kindnet.conflist",
        &["ptp", "host-local", "portmap"],
        |_| {},
    );
    let web = json!({"portMappings": [
        {"hostPort": 8081, "containerPort": 80, "protocol": "tcp"},
        {"hostPort": 8081, "containerPort": 80, "protocol": "udp"}
    ]});
    let none = json!({"portMappings": []});
    let (a, ra) = kind.container(&web);
    let (b, rb) = kind.container(&none);
    // cniVersion 0.3.1 results, one address per family each.
    assert_eq!(ra["cniVersion"], "0.3.1", "{ra}");
    assert_eq!(ra["ips"].as_array().unwrap().len(), 2, "{ra}");
    assert_eq!(kind.links_but(&[]).len(), 2, "{:?}", kind.links_but(&[]));

    // Routed through the host: each container reaches the other, over
    // both families.
    for v6 in [false, true] {
        assert!(ping(&a, &ip_of(&rb, v6)), "a -> b (v6: {v6})");
        assert!(ping(&b, &ip_of(&ra, v6)), "b -> a (v6: {v6})");
    }
    // The host port, from outside through the host's address and from the
    // other container.
    let _s = Server::start(&a, 80, "kind");
    for proto in ["tcp", "udp"] {
        let outside = tag(proto, &kind.lab.outside, sock(HOST4, 8081));
        assert_eq!(outside.as_deref(), Some("kind"), "{proto} from outside");
        let other = tag(proto, &b, sock(HOST4, 8081));
        assert_eq!(other.as_deref(), Some("kind"), "{proto} from b");
    }

    // kind's 0.3.1 network predates CHECK: libcni refuses it, and so do we.
    let (ok, out) = kind.try_cnitool("check", &a, &web);
    assert!(
        !ok && out.contains("does not support the CHECK command"),
        "{out}"
    );
    assert!(!kind.rules().is_empty(), "no portmap rules after ADD");
    kind.cnitool("del", &a, &web);
    kind.cnitool("del", &b, &none);
    assert!(silent("tcp", &kind.lab.outside, sock(HOST4, 8081)));

    // Nothing left: links, host routes, leases, rules, records.
    assert!(kind.links_but(&[]).is_empty(), "{:?}", kind.links_but(&[]));
    let host = &kind.lab.host;
    let routes = host.sh(&["ip", "-4", "route"]) + &host.sh(&["ip", "-6", "route"]);
    assert!(
        !routes.contains("10.240.62.") && !routes.contains("fd40:62:"),
        "{routes}"
    );
    assert!(kind.leases().is_empty(), "{:?}", kind.leases());
    assert!(kind.rules().is_empty(), "{:?}", kind.rules());
    assert_eq!(kind.lab.records(), 0);
    // A second DEL of a gone container succeeds.
    kind.cnitool("del", &a, &web);
}
