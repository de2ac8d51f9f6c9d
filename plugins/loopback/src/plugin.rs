//! The CNI verbs.

use skel::conf::NetConf;
use skel::types::{Cidr, Interface, IpConfig, Result1};
use skel::{CmdArgs, Netns, Outcome, Reply};

use crate::lo::{self, LoAddrs};

pub struct Loopback;

impl skel::Plugin for Loopback {
    /// skel opens and vets `CNI_NETNS` first, refusing the plugin's own
    /// namespace before anything is touched (plugins #714).
    const USES_NETNS: bool = true;

    fn about(&self) -> String {
        skel::about("loopback")
    }

    fn add(&self, args: &CmdArgs) -> Outcome {
        let conf = NetConf::parse(&args.stdin)?;
        // Parsed before any change so a bad prevResult leaves lo alone.
        let prev = conf.prev_result()?;
        let addrs = lo::up(args.netns.file()?)?;
        let result = match prev {
            // Chained: pass the earlier result through.
            Some(prev) => prev,
            None => own_result(&args.netns_path, &addrs).into(),
        };
        Ok(Reply::Result(result))
    }

    fn del(&self, args: &CmdArgs) -> Outcome {
        match &args.netns {
            // Nothing left to undo: no namespace given, or it is gone.
            Netns::Unset | Netns::Missing(_) => {}
            Netns::Open { file, .. } => lo::down(file)?,
        }
        Ok(Reply::None)
    }

    fn check(&self, args: &CmdArgs) -> Outcome {
        lo::check(args.netns.file()?)?;
        Ok(Reply::None)
    }
}

/// `lo` as interface 0 with its addresses; skel converts it to the
/// config's version.
fn own_result(sandbox: &str, addrs: &LoAddrs) -> Result1 {
    let ips = [addrs.v4, addrs.v6]
        .into_iter()
        .flatten()
        .map(|a| IpConfig {
            address: Cidr(a),
            gateway: None,
            interface: Some(0),
        })
        .collect();
    Result1 {
        cni_version: skel::version::CURRENT.to_string(),
        interfaces: vec![Interface {
            name: "lo".to_string(),
            mac: "00:00:00:00:00:00".to_string(),
            sandbox: sandbox.to_string(),
            ..Default::default()
        }],
        ips,
        ..Default::default()
    }
}
