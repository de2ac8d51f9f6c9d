//! The `ptp` CNI plugin: a veth pair per container, routed through the
//! host instead of bridged. The container's addresses come from IPAM; the
//! gateway address sits on the host end, and the container reaches
//! everything, even its own subnet, via that gateway ([`p2p`]).
//!
//! Behaviour follows the reference Go plugin (`plugins/main/ptp`), with
//! its leaks and crash fixed: a failed ADD undoes what it did, DEL removes
//! masquerade rules even without the netns, an address without a gateway
//! is refused, GC exists.
//!
//! Modules: [`config`], [`add`], [`p2p`] (the point-to-point addressing
//! of both ends), [`del`], [`check`], [`gc`] (GC and STATUS), [`masq`]
//! (masquerade through `cni-firewall`). The veth pair, the container
//! interface's configuration and the error type are `cni-attach`'s, shared
//! with bridge; all namespace and netlink work goes through `cni-net`.

pub mod add;
pub mod check;
pub mod config;
pub mod del;
pub mod gc;
pub mod masq;
pub mod p2p;

pub use cni_attach::error;

use skel::{CmdArgs, Outcome, Reply};

/// The plugin as skel sees it.
pub struct Ptp;

impl skel::Plugin for Ptp {
    const USES_NETNS: bool = true;

    fn about(&self) -> String {
        format!("CNI ptp plugin v{}", env!("CARGO_PKG_VERSION"))
    }

    fn add(&self, args: &CmdArgs) -> Outcome {
        let result = add::add(args)?;
        Ok(Reply::Result(result.into()))
    }

    fn del(&self, args: &CmdArgs) -> Outcome {
        del::del(args)?;
        Ok(Reply::None)
    }

    fn check(&self, args: &CmdArgs) -> Outcome {
        check::check(args)?;
        Ok(Reply::None)
    }

    fn status(&self, args: &CmdArgs) -> Outcome {
        gc::status(args)?;
        Ok(Reply::None)
    }

    fn gc(&self, args: &CmdArgs) -> Outcome {
        gc::gc(args)?;
        Ok(Reply::None)
    }
}
