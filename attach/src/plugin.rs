//! A main plugin as skel sees it: its commands as plain functions of
//! [`Error`], the about text from its name, `CNI_NETNS` opened and vetted
//! by skel for ADD, DEL and CHECK.

use skel::types::Result1;
use skel::{CmdArgs, Outcome, Reply};

use crate::error::Error;

/// A command without a result (DEL, CHECK, STATUS, GC).
pub type Command = fn(&CmdArgs) -> Result<(), Error>;

/// A main plugin: `skel::main(&PLUGIN)` with a `const PLUGIN: Main`.
pub struct Main {
    /// `bridge`, `ptp`: in the about text ([`skel::about`]).
    pub name: &'static str,
    pub add: fn(&CmdArgs) -> Result<Result1, Error>,
    pub del: Command,
    pub check: Command,
    pub status: Command,
    pub gc: Command,
}

fn done(outcome: Result<(), Error>) -> Outcome {
    outcome?;
    Ok(Reply::None)
}

impl skel::Plugin for Main {
    const USES_NETNS: bool = true;
    /// The container's links went with its namespace; DEL still releases
    /// the addresses and removes the firewall rules, which need none (the
    /// reference fails forever with `unknown FS magic`).
    const DEL_TAKES_NON_NAMESPACE_AS_GONE: bool = true;

    fn about(&self) -> String {
        skel::about(self.name)
    }

    fn add(&self, args: &CmdArgs) -> Outcome {
        let result = (self.add)(args)?;
        Ok(Reply::Result(result.into()))
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
