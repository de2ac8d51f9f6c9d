//! The `bandwidth` CNI plugin: limits a container's traffic with token
//! bucket filters, chained after a plugin that made a veth pair (bridge,
//! ptp). Traffic into the container is shaped by a `tbf` on the host end
//! of the veth; traffic out of it is redirected from the host end's
//! ingress to an IFB device (`bwp` + 12 hex digits, the reference's name)
//! and shaped there.
//!
//! Behaviour follows the reference Go plugin (`plugins/meta/bandwidth`):
//! the same keys, precedence, validation messages, tc objects and numbers,
//! so either suite's CHECK and DEL work on the other's objects. Fixed: a
//! qdisc of another tool in the way is named instead of "file exists", a
//! retried ADD succeeds, a failed ADD removes what it made, no panic
//! without `prevResult`, CHECK verifies what it claims to, GC exists.
//!
//! Modules: [`config`] (stdin), [`add`], [`shape`] (each tc object,
//! ownership and undo), [`veth`] (the host end), [`check`], [`del`] (DEL
//! and GC), [`ifb`] (the IFB device's name and ownership alias). All tc
//! and netlink work goes through `cni-net`.

pub mod add;
pub mod check;
pub mod config;
pub mod del;
pub mod ifb;
pub mod shape;
pub mod veth;

use skel::{CmdArgs, Outcome, Reply};

pub use skel::Error;

/// The plugin as skel sees it.
pub struct Bandwidth;

impl skel::Plugin for Bandwidth {
    const USES_NETNS: bool = true;
    /// The Go plugin's DEL succeeds on a path that is no namespace.
    const DEL_TAKES_NON_NAMESPACE_AS_GONE: bool = true;

    fn about(&self) -> String {
        skel::about("bandwidth")
    }

    /// 0.3.0 and later, as the reference (`VersionsStartingFrom("0.3.0")`).
    fn versions(&self) -> Vec<String> {
        skel::version::starting_from("0.3.0")
    }

    fn add(&self, args: &CmdArgs) -> Outcome {
        Ok(Reply::Result(add::add(args)?))
    }

    fn del(&self, args: &CmdArgs) -> Outcome {
        del::del(args)?;
        Ok(Reply::None)
    }

    fn check(&self, args: &CmdArgs) -> Outcome {
        check::check(args)?;
        Ok(Reply::None)
    }

    fn gc(&self, args: &CmdArgs) -> Outcome {
        del::gc(args)?;
        Ok(Reply::None)
    }
}
