//! Bridge VLANs: membership of a port (`bridge vlan add/del/show`), through
//! `AF_BRIDGE` link messages carrying `IFLA_AF_SPEC`, and the bridge's own
//! `vlan_filtering` switch.

use crate::error::Result;
use crate::link::{
    AF_BRIDGE, IFLA_AF_SPEC, IFLA_BR_VLAN_FILTERING, IFLA_EXT_MASK, IFLA_INFO_DATA, IFLA_INFO_KIND,
    IFLA_LINKINFO, Kind, Link, RTM_DELLINK, RTM_GETLINK, RTM_NEWLINK, RTM_SETLINK, get_link,
    ifinfo, links_of,
};
use crate::netlink::{Msg, NLM_F_DUMP, Netlink, attrs, u16_of, u32_of};

const IFLA_BRIDGE_FLAGS: u16 = 0;
const IFLA_BRIDGE_VLAN_INFO: u16 = 2;
const BRIDGE_FLAGS_MASTER: u16 = 1;
const BRIDGE_VLAN_INFO_PVID: u16 = 2;
const BRIDGE_VLAN_INFO_UNTAGGED: u16 = 4;
const RTEXT_FILTER_BRVLAN: u32 = 2;

/// One VLAN of a bridge port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortVlan {
    pub vid: u16,
    /// Untagged ingress frames get this VLAN.
    pub pvid: bool,
    /// Frames leave the port without a tag.
    pub untagged: bool,
}

/// `RTM_SETLINK`/`RTM_DELLINK` for `AF_BRIDGE` carrying one VLAN entry.
fn vlan_message(kind: u16, port: &Link, vlan: &PortVlan) -> Msg {
    let mut flags = 0u16;
    if vlan.pvid {
        flags |= BRIDGE_VLAN_INFO_PVID;
    }
    if vlan.untagged {
        flags |= BRIDGE_VLAN_INFO_UNTAGGED;
    }
    let mut info = [0u8; 4];
    info[..2].copy_from_slice(&flags.to_ne_bytes());
    info[2..].copy_from_slice(&vlan.vid.to_ne_bytes());
    let mut m = Msg::new(kind, 0, &ifinfo(AF_BRIDGE, port.index, 0, 0));
    m.nest(IFLA_AF_SPEC, |m| {
        // Applied by the bridge the port belongs to (`bridge vlan ... master`).
        m.attr(IFLA_BRIDGE_FLAGS, &BRIDGE_FLAGS_MASTER.to_ne_bytes());
        m.attr(IFLA_BRIDGE_VLAN_INFO, &info);
    });
    m
}

impl Netlink {
    /// Add `vlan` to the bridge port `port`.
    pub fn bridge_vlan_add(&self, port: &Link, vlan: &PortVlan) -> Result<()> {
        self.request(
            &format!("add vlan {} to bridge port {}", vlan.vid, port.name),
            vlan_message(RTM_SETLINK, port, vlan),
        )
        .map(drop)
    }

    /// Remove VLAN `vid` from the bridge port `port`.
    pub fn bridge_vlan_del(&self, port: &Link, vid: u16) -> Result<()> {
        let vlan = PortVlan {
            vid,
            pvid: false,
            untagged: false,
        };
        // RTM_DELLINK with AF_BRIDGE reaches the bridge's VLAN handler; it
        // never deletes the link itself.
        self.request(
            &format!("delete vlan {vid} from bridge port {}", port.name),
            vlan_message(RTM_DELLINK, port, &vlan),
        )
        .map(drop)
    }

    /// The VLANs of the bridge port `port`.
    pub fn bridge_vlans(&self, port: &Link) -> Result<Vec<PortVlan>> {
        let mut m = Msg::new(RTM_GETLINK, NLM_F_DUMP, &ifinfo(AF_BRIDGE, 0, 0, 0));
        m.u32(IFLA_EXT_MASK, RTEXT_FILTER_BRVLAN);
        let replies = self.request(&format!("list vlans of bridge port {}", port.name), m)?;
        let mut out = Vec::new();
        for body in &replies {
            if body.get(4..8).and_then(u32_of) != Some(port.index) {
                continue;
            }
            let Some(rest) = body.get(16..) else {
                continue;
            };
            for (_, spec) in attrs(rest).filter(|(k, _)| *k == IFLA_AF_SPEC) {
                for (_, d) in attrs(spec).filter(|(k, _)| *k == IFLA_BRIDGE_VLAN_INFO) {
                    let (Some(flags), Some(vid)) = (u16_of(d), d.get(2..).and_then(u16_of)) else {
                        continue;
                    };
                    out.push(PortVlan {
                        vid,
                        pvid: flags & BRIDGE_VLAN_INFO_PVID != 0,
                        untagged: flags & BRIDGE_VLAN_INFO_UNTAGGED != 0,
                    });
                }
            }
        }
        Ok(out)
    }

    /// Whether the bridge `br` filters frames by VLAN (`vlan_filtering`).
    /// A kernel without `CONFIG_BRIDGE_VLAN_FILTERING` reports no such
    /// attribute: `false`.
    pub fn bridge_vlan_filtering(&self, br: &Link) -> Result<bool> {
        let replies = self.request(
            &format!("read vlan_filtering of {}", br.name),
            get_link(0, br.index),
        )?;
        Ok(links_of(replies).iter().any(|l| {
            matches!(
                l.kind,
                Kind::Bridge {
                    vlan_filtering: true
                }
            )
        }))
    }

    /// Turn VLAN filtering of the existing bridge `br` on or off
    /// (`ip link set BR type bridge vlan_filtering 0|1`).
    pub fn set_bridge_vlan_filtering(&self, br: &Link, on: bool) -> Result<()> {
        let mut m = Msg::new(RTM_NEWLINK, 0, &ifinfo(0, br.index, 0, 0));
        m.nest(IFLA_LINKINFO, |m| {
            m.str(IFLA_INFO_KIND, "bridge");
            m.nest(IFLA_INFO_DATA, |m| {
                m.u8(IFLA_BR_VLAN_FILTERING, on.into());
            });
        });
        self.request(
            &format!("set vlan_filtering of {} to {}", br.name, u8::from(on)),
            m,
        )
        .map(drop)
    }
}
