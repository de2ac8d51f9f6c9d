//! `loopback`: brings `lo` up in the container's network namespace and
//! reports `127.0.0.1/8` (and `::1/128` when IPv6 is on) in the shape of
//! the config's `cniVersion`. DEL takes `lo` down; CHECK verifies it is up.
//!
//! Unlike the reference, which labels a 1.0-shaped body with whatever
//! version was asked for, results here have the requested version's shape.

mod error;
mod lo;
mod plugin;

pub use plugin::Loopback;
