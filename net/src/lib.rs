//! `cni-net`: the one crate that switches network namespaces and talks
//! netlink (rtnetlink, and nf_tables over nfnetlink), for every plugin of
//! the suite. It knows nothing of CNI: plugins map its [`Error`] to their
//! CNI errors.
//!
//! Everything is synchronous for callers. [`netns`] is the only module that
//! calls `setns`: it runs a short closure inside a namespace and always
//! switches back. A [`Netlink`] connection is opened either in the
//! caller's namespace ([`Netlink::host`]) or inside a container's
//! ([`Netlink::in_netns`], socket created while switched) and stays bound
//! there; requests are plain blocking sends and receives on it.
//!
//! Modules: [`netns`], [`netlink`] (connections, message encoding, request
//! loop, pipelining and nfnetlink batches), [`batch`] (several changes in
//! one round trip), [`link`] (the link layer: one [`LinkSpec`] and one
//! [`Netlink::create_link`] for every [`Kind`], in this namespace or
//! another; rename, move, alias; each kind's settings read back),
//! [`bridge_port`] (port VLANs), [`addr`],
//! [`route`], [`rule`] (policy routing rules), [`sysctl`], [`nftables`] (tables, chains and rules over
//! netlink, in transactions), [`conntrack`] (connection tracking entries:
//! list, delete), [`tc`] (qdiscs and filters), [`packet`] (link-layer
//! sockets on one interface of a namespace), [`error`].
//!
//! ```no_run
//! # fn demo(ns: &std::fs::File) -> cni_net::Result<()> {
//! let nl = cni_net::Netlink::in_netns(ns)?;
//! let lo = nl.link_by_name("lo")?;
//! nl.set_up(&lo)?;
//! # Ok(()) }
//! ```

pub mod addr;
pub mod batch;
pub mod bridge_port;
mod child_fds;
pub mod conntrack;
#[cfg(test)]
mod crosscheck;
pub mod error;
pub mod link;
pub mod netlink;
pub mod netns;
pub mod nftables;
pub mod packet;
pub mod route;
pub mod rule;
pub mod sysctl;
pub mod tc;

pub use addr::{Addr, AddrFlags, Settled};
pub use batch::Batch;
pub use bridge_port::PortVlan;
pub use error::{Errno, Error, ErrorKind, Result};
pub use ipnetwork::IpNetwork;
pub use link::{
    BridgePortOptions, IpvlanMode, Kind, Link, LinkChanges, LinkSpec, MacvlanMode, OperState, Peer,
    Tun, VethPeer, format_mac,
};
pub use netlink::Netlink;
pub use route::{RouteInfo, RouteSpec};
pub use rule::Rule;
