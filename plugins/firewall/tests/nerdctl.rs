//! nerdctl's default network (`nerdctl network inspect bridge`: bridge,
//! portmap, firewall with `ingressPolicy` `same-bridge`, tuning; subnet,
//! bridge and state directories adapted) end to end on our binaries
//! alone.

mod common;

#[test]
fn nerdctl_default_network_end_to_end() {
    common::runtime::end_to_end("nerdctl", "nerdctl-bridge.conflist");
}
