//! Link specs the root tests create often: bridges, IFB devices and veth
//! pairs, written once on top of `LinkSpec`.
#![allow(dead_code)]

use std::fs::File;

use cni_net::{Kind, LinkSpec, Peer};

pub fn bridge(name: &str, mtu: Option<u32>, vlan_filtering: bool) -> LinkSpec<'_> {
    LinkSpec {
        mtu,
        ..LinkSpec::new(name, Kind::Bridge { vlan_filtering })
    }
}

/// An IFB device as bandwidth makes it: no queue, down.
pub fn ifb(name: &str, mtu: u32) -> LinkSpec<'_> {
    LinkSpec {
        mtu: (mtu > 0).then_some(mtu),
        txqlen: Some(0),
        ..LinkSpec::new(name, Kind::Ifb)
    }
}

/// A veth pair across namespaces: the host end in the connection's
/// namespace, the container end in `container_ns`.
#[derive(Debug, Clone, Copy)]
pub struct VethPair<'a> {
    pub host_name: &'a str,
    pub container_name: &'a str,
    pub container_ns: &'a File,
    pub container_mac: Option<[u8; 6]>,
    pub mtu: Option<u32>,
    pub host_master: Option<u32>,
}

impl<'a> VethPair<'a> {
    pub fn spec(&self) -> LinkSpec<'a> {
        LinkSpec {
            mtu: self.mtu,
            master: self.host_master,
            peer: Some(Peer {
                name: self.container_name,
                netns: Some(self.container_ns),
                mac: self.container_mac,
                mtu: self.mtu,
            }),
            ..LinkSpec::new(self.host_name, Kind::Veth)
        }
    }

    /// The spec with the host end up.
    pub fn spec_up(&self) -> LinkSpec<'a> {
        LinkSpec {
            up: true,
            ..self.spec()
        }
    }
}
