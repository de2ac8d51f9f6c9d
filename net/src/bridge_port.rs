//! Bridge VLAN membership of a port (`bridge vlan add/del/show`), through
//! `AF_BRIDGE` link messages carrying `IFLA_AF_SPEC`.

use rtnetlink::packet_core::NLM_F_DUMP;
use rtnetlink::packet_route::link::{
    AfSpecBridge, BridgeFlag, BridgeVlanInfo, BridgeVlanInfoFlags, LinkAttribute, LinkExtentMask,
    LinkMessage,
};
use rtnetlink::packet_route::{AddressFamily, RouteNetlinkMessage};

use crate::error::Result;
use crate::link::Link;
use crate::netlink::Netlink;

/// One VLAN of a bridge port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortVlan {
    pub vid: u16,
    /// Untagged ingress frames get this VLAN.
    pub pvid: bool,
    /// Frames leave the port without a tag.
    pub untagged: bool,
}

fn vlan_message(port: &Link, vlan: &PortVlan) -> LinkMessage {
    let mut flags = BridgeVlanInfoFlags::empty();
    if vlan.pvid {
        flags |= BridgeVlanInfoFlags::Pvid;
    }
    if vlan.untagged {
        flags |= BridgeVlanInfoFlags::Untagged;
    }
    let mut m = LinkMessage::default();
    m.header.interface_family = AddressFamily::Bridge;
    m.header.index = port.index;
    m.attributes.push(LinkAttribute::AfSpecBridge(vec![
        // Applied by the bridge the port belongs to (`bridge vlan ... master`).
        AfSpecBridge::Flags(BridgeFlag::Controller),
        AfSpecBridge::VlanInfo(BridgeVlanInfo {
            flags,
            vid: vlan.vid,
        }),
    ]));
    m
}

impl Netlink {
    /// Add `vlan` to the bridge port `port`.
    pub fn bridge_vlan_add(&self, port: &Link, vlan: &PortVlan) -> Result<()> {
        self.request(
            &format!("add vlan {} to bridge port {}", vlan.vid, port.name),
            RouteNetlinkMessage::SetLink(vlan_message(port, vlan)),
            0,
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
            RouteNetlinkMessage::DelLink(vlan_message(port, &vlan)),
            0,
        )
        .map(drop)
    }

    /// The VLANs of the bridge port `port`.
    pub fn bridge_vlans(&self, port: &Link) -> Result<Vec<PortVlan>> {
        let mut m = LinkMessage::default();
        m.header.interface_family = AddressFamily::Bridge;
        m.attributes
            .push(LinkAttribute::ExtMask(vec![LinkExtentMask::Brvlan]));
        let replies = self.request(
            &format!("list vlans of bridge port {}", port.name),
            RouteNetlinkMessage::GetLink(m),
            NLM_F_DUMP,
        )?;
        let mut out = Vec::new();
        for reply in replies {
            let RouteNetlinkMessage::NewLink(l) = reply else {
                continue;
            };
            if l.header.index != port.index {
                continue;
            }
            for attr in l.attributes {
                let LinkAttribute::AfSpecBridge(specs) = attr else {
                    continue;
                };
                for spec in specs {
                    if let AfSpecBridge::VlanInfo(info) = spec {
                        out.push(PortVlan {
                            vid: info.vid,
                            pvid: info.flags.contains(BridgeVlanInfoFlags::Pvid),
                            untagged: info.flags.contains(BridgeVlanInfoFlags::Untagged),
                        });
                    }
                }
            }
        }
        Ok(out)
    }
}
