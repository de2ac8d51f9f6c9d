//! `tuning`: the chained CNI plugin that changes a container interface's
//! link attributes (MAC, MTU, promiscuous and all-multicast mode, queue
//! length) and network sysctls inside the container's namespace, saving
//! the original link attributes so that DEL restores them. Compatible with
//! the reference Go plugin: same keys, same messages, and the same backup
//! files, so either plugin restores what the other changed.
//!
//! Data path: skel → [`add`], [`del`], [`check`], [`gc`] → [`config`]
//! (Go-rules decoding, precedence, validation into a [`config::Plan`]),
//! [`allowlist`] (with [`regexp`], a small RE2 subset), [`sysctl`]
//! (key-to-file rule, writes inside the namespace), [`link`] (attributes
//! through `cni-net`), [`backup`] (the saved-state file), [`mac`] (Go's
//! MAC syntax); [`error`] maps our errors to CNI codes.

pub mod add;
pub mod allowlist;
pub mod backup;
pub mod check;
pub mod config;
pub mod del;
pub mod error;
pub mod gc;
pub mod link;
pub mod mac;
#[cfg(test)]
mod proptests;
pub mod regexp;
pub mod sysctl;

use skel::{CmdArgs, Outcome, Plugin};

/// The plugin: skel calls one method per CNI command.
pub struct Tuning;

impl Plugin for Tuning {
    const USES_NETNS: bool = true;
    /// The Go plugin's DEL succeeds on a path that is no namespace.
    const DEL_TAKES_NON_NAMESPACE_AS_GONE: bool = true;

    fn about(&self) -> String {
        skel::about("tuning")
    }

    fn add(&self, args: &CmdArgs) -> Outcome {
        Ok(add::add(args)?)
    }

    fn del(&self, args: &CmdArgs) -> Outcome {
        Ok(del::del(args)?)
    }

    fn check(&self, args: &CmdArgs) -> Outcome {
        Ok(check::check(args)?)
    }

    fn gc(&self, args: &CmdArgs) -> Outcome {
        Ok(gc::gc(args)?)
    }
}
