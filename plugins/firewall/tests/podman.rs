//! podman's default CNI network (`87-podman-bridge.conflist`: bridge,
//! portmap, firewall with the backend unset, tuning; subnet, bridge and
//! state directories adapted) end to end on our binaries alone.

mod common;

#[test]
fn podman_default_network_end_to_end() {
    common::runtime::end_to_end("podman", "87-podman-bridge.conflist");
}
