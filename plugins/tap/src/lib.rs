//! The `tap` CNI plugin: a persistent tap device in the container, for a
//! VM (KubeVirt, Kata) to open and pass its frames through; optionally a
//! port of a bridge inside the container (`bridge`), optionally with IPAM
//! addresses.
//!
//! Keys and behaviour follow the reference Go plugin v1.9.1
//! (`plugins/main/tap`; not in Debian's v1.1.1): `mac` (also
//! runtimeConfig `mac` and CNI_ARGS `MAC`), `mtu`, `multiQueue`, `owner`,
//! `group`, `selinuxContext`, `bridge`. The device is made through
//! `/dev/net/tun` inside the container (`cni_net::link::tap`), directly
//! under `CNI_IFNAME`, never by running `ip`; `mtu` and `mac` apply also
//! when both `owner` and `group` are set (the reference silently ignores
//! them there). `selinuxContext` labels the device where SELinux is on
//! ([`selinux`]) and is ignored where it is off (the reference fails).
//! A failed ADD deletes the tap and releases IPAM.
//!
//! Modules: [`config`], [`add`], [`verbs`] (DEL, CHECK, STATUS, GC),
//! [`selinux`].

pub mod add;
pub mod config;
pub mod selinux;
pub mod verbs;

pub use cni_attach::error;

/// The plugin, for `skel::plugin_main!`.
pub const PLUGIN: cni_attach::Main = cni_attach::Main {
    name: "tap",
    since: "",
    add: add::add,
    del: verbs::del,
    check: verbs::check,
    status: verbs::status,
    gc: verbs::gc,
};
