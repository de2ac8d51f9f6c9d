//! The veth pair of an attachment (the reference's `ip.SetupVeth`): the
//! container end, named `CNI_IFNAME`, created directly in the container's
//! namespace; the host end, `veth` + 8 random hex digits, up.

use std::fs::File;

use cni_net::{Kind, Link, LinkSpec, Netlink, Peer};

use crate::error::Error;
use crate::ifname;

/// What [`create`] makes.
#[derive(Debug, Clone, Copy)]
pub struct Spec<'a> {
    /// The container's namespace and the container end's name there.
    pub ns: &'a File,
    pub ifname: &'a str,
    /// MAC of the container end; the kernel picks one when `None`.
    pub mac: Option<[u8; 6]>,
    /// MTU of both ends; 0 is the kernel default.
    pub mtu: u32,
    /// The bridge to enslave the host end to.
    pub master: Option<&'a Link>,
}

/// Create the veth pair in one message: the container end inside its
/// namespace, a random `veth…` host end (`first_name` on the first try)
/// already up (and enslaved). Returns the host end as the kernel reports
/// it after creation (its index and MAC).
pub fn create(host: &Netlink, spec: &Spec, first_name: String) -> Result<Link, Error> {
    let mut name = first_name;
    for _ in 0..10 {
        let mtu = (spec.mtu > 0).then_some(spec.mtu);
        let pair = LinkSpec {
            mtu,
            master: spec.master.map(|m| m.index),
            up: true,
            peer: Some(Peer {
                name: spec.ifname,
                netns: Some(spec.ns),
                mac: spec.mac,
                mtu,
            }),
            ..LinkSpec::new(&name, Kind::Veth)
        };
        match host.create_link_get(&pair) {
            Ok(port) => return Ok(port),
            Err(e) if e.is_exists() => {
                // Either our random name collided (retry) or the container
                // already has `ifname`.
                if host.find_link(&name)?.is_some() {
                    name = ifname::random()?;
                    continue;
                }
                return Err(ifname::taken_by_veth(spec.ifname, &name));
            }
            Err(e) => {
                // The pair exists if only the lookup sent with the create
                // failed; the random host name is ours, so remove it (the
                // kernel takes the container end with it).
                if let Ok(Some(l)) = host.find_link(&name) {
                    let _ = host.delete_link(&l);
                }
                return Err(e.into());
            }
        }
    }
    Err(Error::internal(
        "failed to find a free name for the host veth after 10 tries",
    ))
}
