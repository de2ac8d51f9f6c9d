//! `dhcp`: the CNI IPAM plugin that takes addresses from a DHCP server,
//! and its daemon, wire-compatible with the reference's.
//!
//! One binary, two roles. `dhcp daemon [flags]` is a long-running DHCP
//! client that holds one lease per attachment and renews it from inside
//! the container's namespace ([`daemon`]); run by a runtime, `dhcp` is an
//! IPAM plugin whose commands are calls to that daemon ([`plugin`]).
//!
//! Between them: Go's `net/rpc` over HTTP on a unix socket ([`rpc`]),
//! gob-encoded ([`gob`]) arguments and replies of the reference's shapes
//! ([`wire`]), so the Go plugin works against our daemon and ours against
//! the Go daemon.
//!
//! Both read the same [`config`]. The daemon side: [`options`] (what to
//! send and ask for), [`packet`] (DHCP messages), [`frame`] (their IPv4 and
//! UDP headers), [`client`] (one exchange on one interface), [`lease`]
//! (the lease's timers and the thread that keeps it), [`store`] (leases
//! persisted across restarts), [`service`] (the RPC methods over the
//! table of leases), [`listener`] (the socket, systemd's or ours),
//! [`flags`] (Go's flag syntax), [`duration`] and [`log`].

pub mod client;
pub mod config;
pub mod daemon;
pub mod duration;
pub mod error;
pub mod flags;
pub mod frame;
pub mod gob;
pub mod lease;
pub mod listener;
pub mod log;
pub mod options;
pub mod packet;
pub mod plugin;
pub mod rpc;
pub mod service;
pub mod store;
pub mod wire;

pub use error::Error;
pub use plugin::Dhcp;
