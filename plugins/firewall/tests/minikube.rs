//! minikube's default network for containerd and CRI-O (`1-k8s.conflist`:
//! bridge with masquerade and the old single-`subnet` host-local form,
//! portmap, firewall with everything unset; cniVersion 0.4.0; subnet, bridge
//! and state directories adapted) end to end on our binaries alone.

mod common;

#[test]
fn minikube_default_network_end_to_end() {
    common::runtime::end_to_end("minikube", "1-k8s.conflist");
}
