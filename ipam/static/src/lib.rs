//! `static`: the CNI IPAM plugin that returns the addresses, routes and
//! DNS settings of its configuration, as the reference Go plugin does.
//! It allocates and stores nothing: DEL, GC and STATUS succeed at once.
//!
//! Data path: skel → [`plugin`] (ADD builds the result, CHECK compares
//! `prevResult`) → [`config`] (Go-rules decoding through
//! [`skel::gojson`], CNI_ARGS, `args.cni.ips`, `runtimeConfig.ips`,
//! in the reference's precedence and with its messages).

pub mod config;
pub mod plugin;

pub use plugin::Static;
