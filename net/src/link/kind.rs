//! Link kinds: `IFLA_INFO_KIND` and the kind's own settings
//! (`IFLA_INFO_DATA`), one enum ([`Kind`]) both for creating a link
//! ([`crate::LinkSpec`]) and for reading one back ([`crate::Link::kind`]),
//! so that CHECK compares what it would create with what the kernel has.
//!
//! Only the settings the plugins set or check are encoded and parsed; the
//! kernel reports many more (a bridge's timers, a macvlan's source list),
//! which are left out of the read-back.

use crate::netlink::{Msg, attrs, str_of, u32_of};

pub(crate) const IFLA_INFO_KIND: u16 = 1;
pub(crate) const IFLA_INFO_DATA: u16 = 2;

pub(crate) const IFLA_BR_VLAN_FILTERING: u16 = 7;
const IFLA_MACVLAN_MODE: u16 = 1;
const IFLA_MACVLAN_BC_QUEUE_LEN: u16 = 7;
const IFLA_IPVLAN_MODE: u16 = 1;
const IFLA_VLAN_ID: u16 = 1;
const IFLA_VLAN_PROTOCOL: u16 = 5;
const IFLA_VRF_TABLE: u16 = 1;
const IFLA_TUN_OWNER: u16 = 1;
const IFLA_TUN_GROUP: u16 = 2;
const IFLA_TUN_TYPE: u16 = 3;
const IFLA_TUN_PI: u16 = 4;
const IFLA_TUN_VNET_HDR: u16 = 5;
const IFLA_TUN_MULTI_QUEUE: u16 = 7;
/// `IFF_TAP` in `IFLA_TUN_TYPE` (`IFF_TUN` is 1).
pub(crate) const IFF_TAP: u16 = 0x2;

/// The 802.1Q VLAN protocol (`ETH_P_8021Q`), the kernel's default.
pub const ETH_P_8021Q: u16 = 0x8100;
/// 802.1ad (QinQ, `ETH_P_8021AD`).
pub const ETH_P_8021AD: u16 = 0x88a8;

/// A kind of link with the settings of its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// No `IFLA_LINKINFO`: a physical device, `lo`. Cannot be created.
    Device,
    /// A veth pair (its other end is [`crate::LinkSpec::peer`]; read back,
    /// the peer's index is [`crate::Link::link`]).
    Veth,
    Bridge {
        /// `vlan_filtering`; a kernel without
        /// `CONFIG_BRIDGE_VLAN_FILTERING` reports none (`false`).
        vlan_filtering: bool,
    },
    Ifb,
    Macvlan {
        mode: MacvlanMode,
        /// `bcqueuelen` (kernel ≥ 5.11); the kernel's default (1000) when
        /// `None` on creation.
        bcqueuelen: Option<u32>,
    },
    Ipvlan {
        mode: IpvlanMode,
    },
    Vlan {
        id: u16,
        /// The tag's EtherType: [`ETH_P_8021Q`] (the default, not sent) or
        /// [`ETH_P_8021AD`].
        protocol: u16,
    },
    Dummy,
    Vrf {
        table: u32,
    },
    /// A tun or tap device: made through `/dev/net/tun`, not rtnetlink
    /// (see [`crate::link::tap`]).
    Tun(Tun),
    /// Any other kind, by its name; created without kind settings.
    Other(String),
}

/// The settings of a tun/tap device (`ip tuntap`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tun {
    /// A tap (Ethernet frames) rather than a tun (IP packets).
    pub tap: bool,
    /// Packet information header (`IFF_NO_PI` when off).
    pub pi: bool,
    /// `IFF_VNET_HDR`.
    pub vnet_hdr: bool,
    /// `IFF_MULTI_QUEUE`.
    pub multi_queue: bool,
    /// The user and group allowed to attach (`TUNSETOWNER`,
    /// `TUNSETGROUP`); anyone with `CAP_NET_ADMIN` when `None`.
    pub owner: Option<u32>,
    pub group: Option<u32>,
}

/// A macvlan's mode (`IFLA_MACVLAN_MODE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MacvlanMode {
    Private,
    Vepa,
    Bridge,
    Passthru,
    Source,
}

/// An ipvlan's mode (`IFLA_IPVLAN_MODE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpvlanMode {
    L2,
    L3,
    L3s,
}

impl MacvlanMode {
    const ALL: [(MacvlanMode, u32, &'static str); 5] = [
        (MacvlanMode::Private, 1, "private"),
        (MacvlanMode::Vepa, 2, "vepa"),
        (MacvlanMode::Bridge, 4, "bridge"),
        (MacvlanMode::Passthru, 8, "passthru"),
        (MacvlanMode::Source, 16, "source"),
    ];

    /// The mode named as `ip link` names it (`bridge`, `private`, `vepa`,
    /// `passthru`, `source`).
    pub fn from_name(name: &str) -> Option<MacvlanMode> {
        Self::ALL.iter().find(|m| m.2 == name).map(|m| m.0)
    }

    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|m| m.0 == self).map_or("", |m| m.2)
    }

    fn value(self) -> u32 {
        Self::ALL.iter().find(|m| m.0 == self).map_or(0, |m| m.1)
    }

    fn from_value(v: u32) -> Option<MacvlanMode> {
        Self::ALL.iter().find(|m| m.1 == v).map(|m| m.0)
    }
}

impl IpvlanMode {
    const ALL: [(IpvlanMode, u16, &'static str); 3] = [
        (IpvlanMode::L2, 0, "l2"),
        (IpvlanMode::L3, 1, "l3"),
        (IpvlanMode::L3s, 2, "l3s"),
    ];

    /// `l2`, `l3`, `l3s`.
    pub fn from_name(name: &str) -> Option<IpvlanMode> {
        Self::ALL.iter().find(|m| m.2 == name).map(|m| m.0)
    }

    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|m| m.0 == self).map_or("", |m| m.2)
    }

    fn value(self) -> u16 {
        Self::ALL.iter().find(|m| m.0 == self).map_or(0, |m| m.1)
    }

    fn from_value(v: u16) -> Option<IpvlanMode> {
        Self::ALL.iter().find(|m| m.1 == v).map(|m| m.0)
    }
}

impl Kind {
    /// `IFLA_INFO_KIND`: `veth`, `bridge`, `macvlan`, `tun`...; empty for
    /// [`Kind::Device`].
    pub fn name(&self) -> &str {
        match self {
            Kind::Device => "",
            Kind::Veth => "veth",
            Kind::Bridge { .. } => "bridge",
            Kind::Ifb => "ifb",
            Kind::Macvlan { .. } => "macvlan",
            Kind::Ipvlan { .. } => "ipvlan",
            Kind::Vlan { .. } => "vlan",
            Kind::Dummy => "dummy",
            Kind::Vrf { .. } => "vrf",
            Kind::Tun(_) => "tun",
            Kind::Other(name) => name,
        }
    }

    /// The kind's settings inside `IFLA_INFO_DATA`, when it has any to
    /// send (a veth's peer is written by the creation itself).
    pub(crate) fn encode_data(&self, m: &mut Msg) {
        match self {
            Kind::Bridge {
                vlan_filtering: true,
            } => {
                m.nest(IFLA_INFO_DATA, |m| {
                    m.u8(IFLA_BR_VLAN_FILTERING, 1);
                });
            }
            Kind::Macvlan { mode, bcqueuelen } => {
                m.nest(IFLA_INFO_DATA, |m| {
                    m.u32(IFLA_MACVLAN_MODE, mode.value());
                    if let Some(q) = bcqueuelen {
                        m.u32(IFLA_MACVLAN_BC_QUEUE_LEN, *q);
                    }
                });
            }
            Kind::Ipvlan { mode } => {
                m.nest(IFLA_INFO_DATA, |m| {
                    m.attr(IFLA_IPVLAN_MODE, &mode.value().to_ne_bytes());
                });
            }
            Kind::Vlan { id, protocol } => {
                m.nest(IFLA_INFO_DATA, |m| {
                    m.attr(IFLA_VLAN_ID, &id.to_ne_bytes());
                    if *protocol != ETH_P_8021Q {
                        m.attr(IFLA_VLAN_PROTOCOL, &protocol.to_be_bytes());
                    }
                });
            }
            Kind::Vrf { table } => {
                m.nest(IFLA_INFO_DATA, |m| {
                    m.u32(IFLA_VRF_TABLE, *table);
                });
            }
            _ => {}
        }
    }

    /// The kind of an `IFLA_LINKINFO` payload.
    pub(crate) fn parse(linkinfo: &[u8]) -> Kind {
        let mut name = String::new();
        let mut data: &[u8] = &[];
        for (k, d) in attrs(linkinfo) {
            match k {
                IFLA_INFO_KIND => name = str_of(d),
                IFLA_INFO_DATA => data = d,
                _ => {}
            }
        }
        let find = |key: u16| attrs(data).find(|(k, _)| *k == key).map(|(_, d)| d);
        let u16_at = |key: u16| {
            find(key).and_then(|d| Some(u16::from_ne_bytes(d.get(..2)?.try_into().ok()?)))
        };
        let flag = |key: u16| {
            find(key)
                .and_then(|d| d.first().copied())
                .is_some_and(|b| b != 0)
        };
        match name.as_str() {
            "" => Kind::Device,
            "veth" => Kind::Veth,
            "bridge" => Kind::Bridge {
                vlan_filtering: flag(IFLA_BR_VLAN_FILTERING),
            },
            "ifb" => Kind::Ifb,
            "dummy" => Kind::Dummy,
            "macvlan" => match find(IFLA_MACVLAN_MODE)
                .and_then(u32_of)
                .and_then(MacvlanMode::from_value)
            {
                Some(mode) => Kind::Macvlan {
                    mode,
                    bcqueuelen: find(IFLA_MACVLAN_BC_QUEUE_LEN).and_then(u32_of),
                },
                None => Kind::Other(name),
            },
            "ipvlan" => match u16_at(IFLA_IPVLAN_MODE).and_then(IpvlanMode::from_value) {
                Some(mode) => Kind::Ipvlan { mode },
                None => Kind::Other(name),
            },
            "vlan" => match u16_at(IFLA_VLAN_ID) {
                Some(id) => Kind::Vlan {
                    id,
                    protocol: find(IFLA_VLAN_PROTOCOL)
                        .and_then(|d| Some(u16::from_be_bytes(d.get(..2)?.try_into().ok()?)))
                        .unwrap_or(ETH_P_8021Q),
                },
                None => Kind::Other(name),
            },
            "vrf" => match find(IFLA_VRF_TABLE).and_then(u32_of) {
                Some(table) => Kind::Vrf { table },
                None => Kind::Other(name),
            },
            "tun" => {
                // An unset owner or group reads as -1.
                let id = |key| find(key).and_then(u32_of).filter(|v| *v != u32::MAX);
                Kind::Tun(Tun {
                    tap: find(IFLA_TUN_TYPE).and_then(|d| d.first().copied())
                        == Some(IFF_TAP as u8),
                    pi: flag(IFLA_TUN_PI),
                    vnet_hdr: flag(IFLA_TUN_VNET_HDR),
                    multi_queue: flag(IFLA_TUN_MULTI_QUEUE),
                    owner: id(IFLA_TUN_OWNER),
                    group: id(IFLA_TUN_GROUP),
                })
            }
            _ => Kind::Other(name),
        }
    }
}

/// `link.kind == "veth"`: compares the kind's name.
impl PartialEq<str> for Kind {
    fn eq(&self, other: &str) -> bool {
        self.name() == other
    }
}

impl PartialEq<&str> for Kind {
    fn eq(&self, other: &&str) -> bool {
        self.name() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::IFLA_LINKINFO;

    fn round_trip(kind: &Kind) -> Kind {
        let mut m = Msg::new(0, 0, &[]);
        m.nest(IFLA_LINKINFO, |m| {
            m.str(IFLA_INFO_KIND, kind.name());
            kind.encode_data(m);
        });
        let (_, info) = attrs(m.body()).next().unwrap();
        Kind::parse(info)
    }

    #[test]
    fn every_kind_reads_back_as_created() {
        let kinds = [
            Kind::Veth,
            Kind::Bridge {
                vlan_filtering: true,
            },
            Kind::Bridge {
                vlan_filtering: false,
            },
            Kind::Ifb,
            Kind::Macvlan {
                mode: MacvlanMode::Passthru,
                bcqueuelen: Some(7),
            },
            Kind::Ipvlan {
                mode: IpvlanMode::L3s,
            },
            Kind::Vlan {
                id: 4094,
                protocol: ETH_P_8021Q,
            },
            Kind::Vlan {
                id: 7,
                protocol: ETH_P_8021AD,
            },
            Kind::Dummy,
            Kind::Vrf { table: 1001 },
            Kind::Other("nlmon".into()),
        ];
        for k in kinds {
            assert_eq!(round_trip(&k), k);
        }
        assert_eq!(Kind::parse(&[]), Kind::Device);
        assert!(Kind::Veth == "veth" && Kind::Device == "");
    }

    #[test]
    fn modes_by_name() {
        for m in ["bridge", "private", "vepa", "passthru", "source"] {
            assert_eq!(MacvlanMode::from_name(m).unwrap().name(), m);
        }
        for m in ["l2", "l3", "l3s"] {
            assert_eq!(IpvlanMode::from_name(m).unwrap().name(), m);
        }
        assert_eq!(MacvlanMode::from_name(""), None);
        assert_eq!(IpvlanMode::from_name("L2"), None);
    }

    #[test]
    fn a_kind_without_its_settings_is_other() {
        let mut m = Msg::new(0, 0, &[]);
        m.nest(IFLA_LINKINFO, |m| {
            m.str(IFLA_INFO_KIND, "macvlan");
        });
        let (_, info) = attrs(m.body()).next().unwrap();
        assert_eq!(Kind::parse(info), Kind::Other("macvlan".into()));
    }
}
