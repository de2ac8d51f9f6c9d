//! Connection tracking over netlink (ctnetlink, `NETLINK_NETFILTER`
//! subsystem 1): list the entries of one address family and delete chosen
//! ones, in the namespace of a [`Netlink`] handle. No `conntrack` binary is
//! involved; the tests compare with its view.
//!
//! Deletion works as the reference's (`vishvananda/netlink`'s
//! `ConntrackDeleteFilters`): one dump of the family's table, the filter
//! applied here, then one delete per chosen entry, by its original tuple,
//! zone and id (so an entry that was replaced meanwhile is left alone).
//! The deletes are pipelined: one round trip per 64 of them. An entry
//! that is gone by the time its delete arrives counts as deleted.
//!
//! ```no_run
//! # fn demo(nl: &cni_net::Netlink) -> cni_net::Result<()> {
//! use cni_net::conntrack::UDP;
//! // UDP entries whose original destination port is 5353.
//! let n = nl.conntrack_delete_where(false, |e| e.orig.proto == UDP && e.orig.dport == 5353)?;
//! # Ok(()) }
//! ```

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::addr::{AF_INET, AF_INET6};
use crate::error::{Errno, Error, Result};
use crate::netlink::{Msg, NLA_F_NESTED, NLM_F_DUMP, Netlink, attrs};

/// `NFNL_SUBSYS_CTNETLINK`.
const SUBSYS: u16 = 1;
/// `IPCTNL_MSG_CT_GET`, `IPCTNL_MSG_CT_DELETE`.
const MSG_GET: u16 = 1;
const MSG_DELETE: u16 = 2;

const CTA_TUPLE_ORIG: u16 = 1;
const CTA_TUPLE_REPLY: u16 = 2;
const CTA_STATUS: u16 = 3;
const CTA_MARK: u16 = 8;
const CTA_ID: u16 = 12;
const CTA_ZONE: u16 = 18;
const CTA_TUPLE_IP: u16 = 1;
const CTA_TUPLE_PROTO: u16 = 2;
const CTA_IP_V4_SRC: u16 = 1;
const CTA_IP_V4_DST: u16 = 2;
const CTA_IP_V6_SRC: u16 = 3;
const CTA_IP_V6_DST: u16 = 4;
const CTA_PROTO_NUM: u16 = 1;
const CTA_PROTO_SRC_PORT: u16 = 2;
const CTA_PROTO_DST_PORT: u16 = 3;

/// IP protocol numbers.
pub const TCP: u8 = 6;
pub const UDP: u8 = 17;
pub const SCTP: u8 = 132;

/// `IPS_SRC_NAT`, `IPS_DST_NAT` of an entry's status.
pub const STATUS_SRC_NAT: u32 = 1 << 4;
pub const STATUS_DST_NAT: u32 = 1 << 5;

/// One direction of a connection. Ports are 0 for protocols without them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuple {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub proto: u8,
    pub sport: u16,
    pub dport: u16,
}

/// A conntrack entry as listed: the original direction, the reply
/// direction (whose source is the DNAT target of a DNAT'ed connection),
/// and what identifies it for deletion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub orig: Tuple,
    pub reply: Tuple,
    pub status: u32,
    pub mark: u32,
    pub zone: Option<u16>,
    pub id: Option<u32>,
}

fn msg_type(msg: u16) -> u16 {
    (SUBSYS << 8) | msg
}

fn family_of(ipv6: bool) -> u8 {
    if ipv6 { AF_INET6 } else { AF_INET }
}

fn be16_of(d: &[u8]) -> Option<u16> {
    Some(u16::from_be_bytes(d.get(..2)?.try_into().ok()?))
}

fn be32_of(d: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(d.get(..4)?.try_into().ok()?))
}

fn ip_of(d: &[u8]) -> Option<IpAddr> {
    match d.len() {
        4 => Some(IpAddr::V4(Ipv4Addr::from(<[u8; 4]>::try_from(d).ok()?))),
        16 => Some(IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(d).ok()?))),
        _ => None,
    }
}

/// A tuple from its nested attributes (`CTA_TUPLE_IP`, `CTA_TUPLE_PROTO`).
fn parse_tuple(d: &[u8]) -> Option<Tuple> {
    let (mut src, mut dst, mut proto, mut sport, mut dport) = (None, None, None, 0, 0);
    for (kind, data) in attrs(d) {
        match kind {
            CTA_TUPLE_IP => {
                for (k, v) in attrs(data) {
                    match k {
                        CTA_IP_V4_SRC | CTA_IP_V6_SRC => src = ip_of(v),
                        CTA_IP_V4_DST | CTA_IP_V6_DST => dst = ip_of(v),
                        _ => {}
                    }
                }
            }
            CTA_TUPLE_PROTO => {
                for (k, v) in attrs(data) {
                    match k {
                        CTA_PROTO_NUM => proto = v.first().copied(),
                        CTA_PROTO_SRC_PORT => sport = be16_of(v)?,
                        CTA_PROTO_DST_PORT => dport = be16_of(v)?,
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    Some(Tuple {
        src: src?,
        dst: dst?,
        proto: proto?,
        sport,
        dport,
    })
}

impl Entry {
    /// An entry from the body (`nfgenmsg` and attributes) of a
    /// `IPCTNL_MSG_CT_NEW` message; `None` when it lacks a tuple.
    pub(crate) fn from_body(b: &[u8]) -> Option<Entry> {
        let (mut orig, mut reply) = (None, None);
        let (mut status, mut mark, mut zone, mut id) = (0, 0, None, None);
        for (kind, d) in attrs(b.get(4..)?) {
            match kind {
                CTA_TUPLE_ORIG => orig = parse_tuple(d),
                CTA_TUPLE_REPLY => reply = parse_tuple(d),
                CTA_STATUS => status = be32_of(d)?,
                CTA_MARK => mark = be32_of(d)?,
                CTA_ZONE => zone = be16_of(d),
                CTA_ID => id = be32_of(d),
                _ => {}
            }
        }
        Some(Entry {
            orig: orig?,
            reply: reply?,
            status,
            mark,
            zone,
            id,
        })
    }

    /// Whether the connection's destination was rewritten (DNAT).
    pub fn is_dnat(&self) -> bool {
        self.status & STATUS_DST_NAT != 0
    }

    /// The delete request for this entry: its original tuple, zone and id.
    fn delete_message(&self) -> Msg {
        let ipv6 = self.orig.src.is_ipv6();
        let mut m = Msg::new(msg_type(MSG_DELETE), 0, &[family_of(ipv6), 0, 0, 0]);
        let t = self.orig;
        m.nest(CTA_TUPLE_ORIG | NLA_F_NESTED, |m| {
            m.nest(CTA_TUPLE_IP | NLA_F_NESTED, |m| {
                let (s, d) = if ipv6 {
                    (CTA_IP_V6_SRC, CTA_IP_V6_DST)
                } else {
                    (CTA_IP_V4_SRC, CTA_IP_V4_DST)
                };
                m.attr(s, &crate::addr::ip_bytes(&t.src));
                m.attr(d, &crate::addr::ip_bytes(&t.dst));
            });
            m.nest(CTA_TUPLE_PROTO | NLA_F_NESTED, |m| {
                m.u8(CTA_PROTO_NUM, t.proto);
                if has_ports(t.proto) {
                    m.attr(CTA_PROTO_SRC_PORT, &t.sport.to_be_bytes());
                    m.attr(CTA_PROTO_DST_PORT, &t.dport.to_be_bytes());
                }
            });
        });
        if let Some(z) = self.zone {
            m.attr(CTA_ZONE, &z.to_be_bytes());
        }
        if let Some(id) = self.id {
            m.be32(CTA_ID, id);
        }
        m
    }
}

/// Protocols whose tuples carry ports.
fn has_ports(proto: u8) -> bool {
    matches!(proto, TCP | UDP | SCTP | 33 | 136)
}

impl Netlink {
    /// Every conntrack entry of one address family.
    pub fn conntrack_list(&self, ipv6: bool) -> Result<Vec<Entry>> {
        let op = "list conntrack entries";
        let m = Msg::new(msg_type(MSG_GET), NLM_F_DUMP, &[family_of(ipv6), 0, 0, 0]);
        let replies = self.netfilter()?.request(op, m)?;
        Ok(replies.iter().filter_map(|b| Entry::from_body(b)).collect())
    }

    /// Delete `entries` (as listed), pipelined; entries already gone count
    /// as deleted. The first failure is returned after every delete was
    /// answered.
    pub fn conntrack_delete(&self, entries: &[Entry]) -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let conn = self.netfilter()?;
        let ops: Vec<String> = entries
            .iter()
            .map(|e| {
                format!(
                    "delete conntrack entry {} {}:{} -> {}:{}",
                    e.orig.proto, e.orig.src, e.orig.sport, e.orig.dst, e.orig.dport
                )
            })
            .collect();
        let reqs = entries
            .iter()
            .zip(&ops)
            .map(|(e, op)| (op.as_str(), e.delete_message()))
            .collect();
        for r in conn.pipeline(reqs) {
            match r {
                Ok(_) => {}
                Err(e) if e.is(Errno::ENOENT) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Delete the entries of one family for which `pick` holds; returns
    /// how many were chosen.
    pub fn conntrack_delete_where(
        &self,
        ipv6: bool,
        pick: impl Fn(&Entry) -> bool,
    ) -> Result<usize> {
        let chosen: Vec<Entry> = self
            .conntrack_list(ipv6)?
            .into_iter()
            .filter(|e| pick(e))
            .collect();
        self.conntrack_delete(&chosen)?;
        Ok(chosen.len())
    }
}

/// An address family with no conntrack support answers the dump with
/// `EOPNOTSUPP` (or the subsystem is missing: `EINVAL`); callers may skip
/// the family then.
pub fn is_unsupported(e: &Error) -> bool {
    e.is(Errno::EOPNOTSUPP) || e.is(Errno::EPROTONOSUPPORT) || e.is_nft_unavailable()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(ipv6: bool) -> Entry {
        let (a, b): (IpAddr, IpAddr) = if ipv6 {
            ("fd40::2".parse().unwrap(), "fd40::1".parse().unwrap())
        } else {
            ("10.240.0.2".parse().unwrap(), "10.240.0.1".parse().unwrap())
        };
        Entry {
            orig: Tuple {
                src: a,
                dst: b,
                proto: UDP,
                sport: 4000,
                dport: 53,
            },
            reply: Tuple {
                src: b,
                dst: a,
                proto: UDP,
                sport: 53,
                dport: 4000,
            },
            status: STATUS_DST_NAT,
            mark: 0,
            zone: Some(3),
            id: Some(0xdead_beef),
        }
    }

    /// A listed entry as the kernel writes it: the delete message's
    /// attributes plus the reply tuple and status.
    fn listed(e: &Entry) -> Vec<u8> {
        let mut m = e.delete_message();
        let r = e.reply;
        m.nest(CTA_TUPLE_REPLY | NLA_F_NESTED, |m| {
            m.nest(CTA_TUPLE_IP | NLA_F_NESTED, |m| {
                let (s, d) = match r.src {
                    IpAddr::V6(_) => (CTA_IP_V6_SRC, CTA_IP_V6_DST),
                    IpAddr::V4(_) => (CTA_IP_V4_SRC, CTA_IP_V4_DST),
                };
                m.attr(s, &crate::addr::ip_bytes(&r.src));
                m.attr(d, &crate::addr::ip_bytes(&r.dst));
            });
            m.nest(CTA_TUPLE_PROTO | NLA_F_NESTED, |m| {
                m.u8(CTA_PROTO_NUM, r.proto);
                m.attr(CTA_PROTO_SRC_PORT, &r.sport.to_be_bytes());
                m.attr(CTA_PROTO_DST_PORT, &r.dport.to_be_bytes());
            });
        });
        m.be32(CTA_STATUS, e.status);
        m.body().to_vec()
    }

    #[test]
    fn entries_round_trip_through_their_messages() {
        for v6 in [false, true] {
            let e = entry(v6);
            assert_eq!(Entry::from_body(&listed(&e)), Some(e));
            assert!(e.is_dnat());
        }
        let m = entry(false).delete_message();
        assert_eq!(m.kind(), 0x0102);
        assert_eq!(m.body()[0], AF_INET);
    }

    fn addr(v6: bool) -> impl proptest::strategy::Strategy<Value = IpAddr> {
        use proptest::prelude::*;
        if v6 {
            any::<[u8; 16]>().prop_map(IpAddr::from).boxed()
        } else {
            any::<[u8; 4]>().prop_map(IpAddr::from).boxed()
        }
    }

    proptest::proptest! {
        /// Generated entries survive the delete encoder plus a reply
        /// tuple, and the parser; no byte string makes it panic.
        #[test]
        fn generated_entries_round_trip(
            v6 in proptest::bool::ANY,
            ports in proptest::array::uniform4(proptest::num::u16::ANY),
            status in proptest::num::u32::ANY,
            zone in proptest::option::of(proptest::num::u16::ANY),
            id in proptest::option::of(proptest::num::u32::ANY),
            (a, b) in (addr(false), addr(false)),
            (c, d) in (addr(true), addr(true)),
        ) {
            let (src, dst) = if v6 { (c, d) } else { (a, b) };
            let e = Entry {
                orig: Tuple { src, dst, proto: UDP, sport: ports[0], dport: ports[1] },
                reply: Tuple { src: dst, dst: src, proto: UDP, sport: ports[2], dport: ports[3] },
                status, mark: 0, zone, id,
            };
            proptest::prop_assert_eq!(Entry::from_body(&listed(&e)), Some(e));
        }

        #[test]
        fn any_bytes_parse_without_panic(b in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let _ = Entry::from_body(&b);
        }
    }

    #[test]
    fn entries_without_tuples_are_skipped() {
        assert_eq!(Entry::from_body(&[2, 0, 0, 0]), None);
        assert_eq!(Entry::from_body(&[]), None);
        let mut body = listed(&entry(false));
        body.truncate(30);
        assert_eq!(Entry::from_body(&body), None);
    }
}
