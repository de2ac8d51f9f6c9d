//! The `host-device` CNI plugin: a device of the host (a NIC, an SR-IOV
//! VF, a device an SR-IOV device plugin chose) moved into the container
//! under `CNI_IFNAME`, and back to the host on DEL.
//!
//! Behaviour and keys follow the reference Go plugin v1.9.1
//! (`plugins/main/host-device`): the device is chosen by `device`,
//! `hwaddr`, `kernelpath`, `pciBusID` or runtimeConfig `deviceID`
//! ([`config`]); its host name is kept in its alias while it is in the
//! container. A device bound to a userspace driver (vfio-pci, DPDK) has no
//! netdev: ADD only reports it. Unlike the reference, the move into the
//! container (renamed, alias set) is one netlink request, so a kill leaves
//! the device either in the host untouched or in the container where DEL
//! finds it; a failed ADD puts it back; DEL releases IPAM also without a
//! namespace (#1196), finds the device when the container renamed it
//! (#773), gets a device back that the kernel returned from a deleted
//! namespace, and succeeds when repeated.
//!
//! Modules: [`config`] (keys and the device's selection), [`add`],
//! [`verbs`] (DEL, CHECK, STATUS). The move, the undo and DEL's skeleton
//! are `cni-attach`'s.

pub mod add;
pub mod config;
pub mod verbs;

pub use cni_attach::error;

/// The plugin, for `skel::plugin_main!`.
pub const PLUGIN: cni_attach::Main = cni_attach::Main {
    name: "host-device",
    since: "",
    add: add::add,
    del: verbs::del,
    check: verbs::check,
    status: verbs::status,
    gc: verbs::gc,
};
