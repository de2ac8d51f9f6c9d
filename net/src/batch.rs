//! Several changes sent in one round trip ([`Netlink::run_batch`]).

use ipnetwork::IpNetwork;

use crate::addr::AddrFlags;
use crate::error::Error;
use crate::link::{Link, RTM_SETLINK, ifinfo};
use crate::netlink::{Msg, Netlink};
use crate::route::RouteSpec;

/// Changes applied in order by the kernel. Unlike one request at a time,
/// the requests after a failing one are still applied; callers that undo a
/// failure by deleting the link the batch worked on lose nothing by that.
#[derive(Debug, Default)]
pub struct Batch {
    reqs: Vec<(String, Msg)>,
}

impl Batch {
    pub fn new() -> Batch {
        Batch::default()
    }

    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    /// Add `addr` to `link` (see [`Netlink::add_addr`]).
    pub fn add_addr(&mut self, link: &Link, addr: IpNetwork, nodad: bool) -> &mut Batch {
        self.add_addr_with(link, addr, crate::addr::nodad_flags(nodad))
    }

    /// Add `addr` to `link` with `flags` (see [`Netlink::add_addr_with`]).
    pub fn add_addr_with(&mut self, link: &Link, addr: IpNetwork, flags: AddrFlags) -> &mut Batch {
        self.reqs.push((
            format!("add address {addr} to {}", link.name),
            crate::addr::add_message(link, addr, flags),
        ));
        self
    }

    /// Set `link` administratively up.
    pub fn set_up(&mut self, link: &Link) -> &mut Batch {
        self.reqs.push((
            format!("set up {}", link.name),
            Msg::new(RTM_SETLINK, 0, &ifinfo(0, link.index, 1, 1)),
        ));
        self
    }

    /// Add a route (see [`Netlink::add_route`]).
    pub fn add_route(&mut self, r: &RouteSpec) -> &mut Batch {
        self.reqs
            .push((format!("add route {}", r.describe()), r.add_message()));
        self
    }
}

impl Netlink {
    /// Send every request of `batch` before reading any answer. On failure,
    /// returns the position of the first failed request and its error.
    pub fn run_batch(&self, batch: Batch) -> std::result::Result<(), (usize, Error)> {
        let reqs = batch
            .reqs
            .iter()
            .map(|(op, m)| (op.as_str(), m.clone()))
            .collect();
        match self
            .pipeline(reqs)
            .into_iter()
            .enumerate()
            .find_map(|(i, r)| r.err().map(|e| (i, e)))
        {
            Some(failed) => Err(failed),
            None => Ok(()),
        }
    }
}
