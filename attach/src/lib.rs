//! `cni-attach`: what the main (interface-creating) plugins share, so each
//! mechanism exists once. bridge and ptp build on it; it builds on `skel`
//! (the protocol) and `cni-net` (namespaces and netlink).
//!
//! - [`add`]: the frame of ADD: IPAM started early, the veth pair, and a
//!   failed ADD undoing everything it did;
//! - [`veth`]: the veth pair (the reference's `ip.SetupVeth`): container
//!   end in the container's namespace, `veth` + 8 hex host end, up;
//! - [`iface`]: the container interface's addresses, link state and routes
//!   (the reference's `ipam.ConfigureIface`), pipelined in one round trip;
//! - [`host_sysctl`]: forwarding, router advertisements off on host links;
//! - [`teardown`]: DEL's removal of the container interface, and the
//!   addresses cleanup needs when the interface is already gone;
//! - [`check`]: CHECK of addresses and routes against `prevResult`;
//! - [`plugin`]: a main plugin's commands as a skel plugin;
//! - [`error`]: the plugins' CNI error, into which `cni-net` errors convert
//!   as code 999.

pub mod add;
pub mod check;
pub mod error;
pub mod host_sysctl;
pub mod iface;
pub mod plugin;
pub mod teardown;
pub mod veth;

pub use error::Error;
pub use plugin::Main;
