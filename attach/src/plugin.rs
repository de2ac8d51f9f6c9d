//! Plugins as skel sees them, described by one table of plain functions of
//! [`Error`] (into which `cni-net` and `cni-firewall` errors convert):
//! [`Main`] for the plugins that make the container's interface, and
//! [`Chained`] for those chained after one (portmap, firewall, tuning,
//! bandwidth; later sbr, vrf). The about text comes from the name;
//! `CNI_NETNS` is opened and vetted by skel for ADD, DEL and CHECK where
//! the plugin works in it.

use skel::types::{CniResult, Result1};
use skel::{CmdArgs, Outcome, Reply};

use crate::error::Error;

/// A command without a result (DEL, CHECK, STATUS, GC).
pub type Command = fn(&CmdArgs) -> Result<(), Error>;

/// A command that does nothing and succeeds (a chained plugin without
/// STATUS or GC, as a missing function in the reference skel).
pub fn nothing(_: &CmdArgs) -> Result<(), Error> {
    Ok(())
}

/// A plugin's commands: `skel::plugin_main!(PLUGIN)` with a
/// `const PLUGIN` of [`Main`] or [`Chained`]. `R` is ADD's result; `NETNS`
/// whether the plugin works in the container's namespace: skel then opens
/// and vets `CNI_NETNS` for it, and DEL takes a path that is no namespace
/// (any more) for one that is gone (a main plugin's links went with it,
/// and DEL still releases the addresses and removes the firewall rules,
/// where the reference fails forever with `unknown FS magic`; tuning's and
/// bandwidth's reference DEL succeeds there).
pub struct Table<R, const NETNS: bool> {
    /// `bridge`, `portmap`: in the about text ([`skel::about`]).
    pub name: &'static str,
    /// The oldest spec version it takes (`0.4.0` for firewall, as the
    /// reference's `VersionsStartingFrom`); every version when empty.
    pub since: &'static str,
    pub add: fn(&CmdArgs) -> Result<R, Error>,
    pub del: Command,
    pub check: Command,
    pub status: Command,
    pub gc: Command,
}

/// A main plugin: its ADD makes the container's interface and a result.
pub type Main = Table<Result1, true>;

/// A chained plugin: its ADD passes `prevResult` through, or changes it.
pub type Chained<const NETNS: bool> = Table<CniResult, NETNS>;

fn done(outcome: Result<(), Error>) -> Outcome {
    outcome?;
    Ok(Reply::None)
}

impl<R: Into<CniResult>, const NETNS: bool> skel::Plugin for Table<R, NETNS> {
    const USES_NETNS: bool = NETNS;
    const DEL_TAKES_NON_NAMESPACE_AS_GONE: bool = NETNS;

    fn about(&self) -> String {
        skel::about(self.name)
    }

    fn versions(&self) -> Vec<String> {
        match self.since {
            "" => skel::version::ALL.iter().map(|s| s.to_string()).collect(),
            since => skel::version::starting_from(since),
        }
    }

    fn add(&self, args: &CmdArgs) -> Outcome {
        Ok(Reply::Result((self.add)(args)?.into()))
    }

    fn del(&self, args: &CmdArgs) -> Outcome {
        done((self.del)(args))
    }

    fn check(&self, args: &CmdArgs) -> Outcome {
        done((self.check)(args))
    }

    fn status(&self, args: &CmdArgs) -> Outcome {
        done((self.status)(args))
    }

    fn gc(&self, args: &CmdArgs) -> Outcome {
        done((self.gc)(args))
    }
}
