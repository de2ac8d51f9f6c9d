//! `cni-attach`: what the main (interface-creating) plugins share, so each
//! mechanism exists once. bridge and ptp build on it, and every plugin
//! that makes a link of another kind (macvlan, ipvlan, vlan, dummy, tap,
//! host-device); it builds on `skel` (the protocol) and `cni-net`
//! (namespaces and netlink: links of every kind are `cni_net::LinkSpec`).
//!
//! - [`plugin`]: a plugin's commands as a skel plugin: [`Main`] for the
//!   main plugins, [`Chained`] for the chained ones;
//! - [`chained`]: the steps chained plugins share around `prevResult`
//!   (read in the config's version, required, converted to 1.x);
//! - [`add`]: the frame of ADD: IPAM started early, and a failed ADD
//!   undoing everything it did, in reverse: the links it made or moved
//!   ([`add::Undo`], in whichever namespace they are by then), IPAM, the
//!   plugin's own work ([`add::Extra`]);
//! - [`teardown`]: the common part of DEL ([`teardown::del`]): IPAM DEL
//!   alongside the removal of the container interface (deleted, or moved
//!   back for a host device), every error collected;
//! - [`veth`]: the veth pair (the reference's `ip.SetupVeth`): container
//!   end in the container's namespace, `veth` + 8 hex host end, up;
//! - [`ifname`]: interface names: `CNI_IFNAME` checked, random names, the
//!   "already exists" errors;
//! - [`iface`]: the container interface's addresses, link state and routes
//!   (the reference's `ipam.ConfigureIface`) for a link of any kind,
//!   pipelined in one round trip, and its sysctls (IPv6,
//!   `arp_notify`/`ndisc_notify`);
//! - [`onelink`]: the whole of the plugins that make one link of a kind
//!   in the container (macvlan, ipvlan, vlan, dummy): ADD, DEL, CHECK;
//! - [`mac`]: MAC addresses as Go's `net.ParseMAC` reads them;
//! - [`master`]: the default parent of macvlan and ipvlan links (the
//!   default route's interface);
//! - [`host_sysctl`]: forwarding, router advertisements off on host links;
//! - [`check`]: CHECK of addresses and routes against `prevResult`, for
//!   an interface of any kind;
//! - [`error`]: the plugins' CNI error, into which `cni-net` errors convert
//!   as code 999.

pub mod add;
pub mod chained;
pub mod check;
pub mod error;
pub mod host_sysctl;
pub mod iface;
pub mod ifname;
pub mod mac;
pub mod master;
pub mod onelink;
pub mod plugin;
pub mod teardown;
pub mod veth;

pub use error::Error;
pub use plugin::{Chained, Main};
