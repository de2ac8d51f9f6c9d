//! `host-local`: the CNI IPAM plugin that leases addresses from ranges in
//! the config and records each lease as a file on the host, compatible
//! byte for byte with the reference Go plugin so that both can share one
//! `dataDir` on a live node.
//!
//! Data path: skel → [`plugin`] (ADD/DEL/CHECK/GC/STATUS) → [`config`]
//! (decoding and validation, with [`range`] for canonicalisation) →
//! [`alloc`] (one range set) → [`store`] (the only module touching lease
//! files, read through [`gotext`] exactly as the Go plugin reads them) and
//! [`index`] (who holds what, so lookups stay O(1) as the network fills).
//! [`dns`] reads `resolvConf`; [`error`] maps our errors to CNI codes.

pub mod alloc;
pub mod config;
pub mod dns;
pub mod error;
pub mod gotext;
pub mod index;
pub mod plugin;
pub mod range;
pub mod store;

pub use plugin::HostLocal;
