//! `cnitool`: the runtime side of CNI, as a library and a command-line tool.
//!
//! Operators use the binary to run a network configuration by hand
//! (`cnitool add mynet /run/netns/x`); the library does what libcni does
//! for containerd and CRI-O, and writes the same result cache, so either
//! side can delete what the other created.
//!
//! Modules, from the bottom up:
//! - [`config`]: finding and parsing network configuration lists.
//! - [`exec`]: running one plugin process (environment, stdin, output
//!   capture, "text file busy" retry, timeout, error decoding).
//! - [`cache`]: the libcni result cache.
//! - [`chain`]: ADD/DEL/CHECK/GC/STATUS over a list, and the VERSION probe.
//! - [`cli`]: the command line; `main.rs` only calls [`cli::main`].
//! - [`error`]: the crate's error type and the exit statuses.

pub mod cache;
pub mod chain;
pub mod cli;
pub mod config;
pub mod error;
pub mod exec;

pub use chain::{Attachment, Cni, GcReport, Ran, RuntimeConf, VersionInfo};
pub use config::{NetworkList, PluginConf};
pub use error::{Error, Kind};
