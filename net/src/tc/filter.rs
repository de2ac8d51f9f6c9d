//! tc filters: a `u32` filter that matches every packet and redirects it
//! with a `mirred` action (what `tc filter add ... u32 match u32 0 0
//! classid 1:1 action mirred egress redirect dev X` makes), and the
//! listing that reads any filter's kind, selector and mirred actions back.

use crate::error::Result;
use crate::link::Link;
use crate::netlink::{
    Msg, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL, Netlink, attrs, be32_of, str_of, u32_of,
};
use crate::tc::{TCA_KIND, TCA_OPTIONS, TcBody, format_handle, tcmsg};

const RTM_NEWTFILTER: u16 = 44;
const RTM_DELTFILTER: u16 = 45;
const RTM_GETTFILTER: u16 = 46;

const TCA_U32_CLASSID: u16 = 1;
const TCA_U32_SEL: u16 = 5;
const TCA_U32_ACT: u16 = 7;
const TC_U32_TERMINAL: u8 = 1;
/// `struct tc_u32_sel` without its keys, and one `struct tc_u32_key`.
const SEL_LEN: usize = 16;
const KEY_LEN: usize = 16;

const TCA_ACT_KIND: u16 = 1;
const TCA_ACT_OPTIONS: u16 = 2;
const TCA_MIRRED_PARMS: u16 = 2;
/// `struct tc_mirred`: the generic action header, then direction and device.
const MIRRED_LEN: usize = 28;

/// `TCA_EGRESS_REDIR`: send the packet out of the target device.
pub const EGRESS_REDIRECT: i32 = 1;
/// `TC_ACT_STOLEN`: the packet is consumed (tc's default for redirect).
pub const ACT_STOLEN: i32 = 4;
/// `ETH_P_ALL`: every protocol.
pub const ETH_P_ALL: u16 = 0x0003;

/// A `u32` filter matching every packet (`match u32 0 0 at 0`), with a
/// flow id, whose one action redirects to the device `to`, as `mirred
/// egress redirect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct U32Redirect {
    /// The qdisc (`ffff:` for ingress).
    pub parent: u32,
    pub prio: u16,
    /// Ethernet protocol, host order ([`ETH_P_ALL`]).
    pub protocol: u16,
    /// `classid` / `flowid`.
    pub classid: u32,
    /// Index of the device packets are redirected to.
    pub to: u32,
}

/// A `mirred` action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mirred {
    /// Direction and mode ([`EGRESS_REDIRECT`], ...).
    pub eaction: i32,
    pub ifindex: u32,
    /// What happens to the packet afterwards ([`ACT_STOLEN`], ...).
    pub verdict: i32,
}

/// One action of a filter: its kind, and its parameters if it is mirred.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    pub kind: String,
    pub mirred: Option<Mirred>,
}

/// What the kernel reports about a filter. A `u32` filter is listed as
/// several entries: the filter itself and its hash table (no selector,
/// no action), then one entry per key node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    pub ifindex: u32,
    pub parent: u32,
    pub prio: u16,
    /// Ethernet protocol, host order.
    pub protocol: u16,
    pub kind: String,
    pub handle: u32,
    pub classid: Option<u32>,
    /// A `u32` key node's keys, as (mask, value, offset); `None` for
    /// entries without a selector.
    pub keys: Option<Vec<(u32, u32, i32)>>,
    pub actions: Vec<Action>,
}

/// `tcm_info` of a filter: priority above, protocol (network order) below.
fn info(prio: u16, protocol: u16) -> u32 {
    u32::from(prio) << 16 | u32::from(u16::from_ne_bytes(protocol.to_be_bytes()))
}

pub(crate) fn u32_redirect_message(dev: &Link, f: &U32Redirect) -> Msg {
    let mut m = Msg::new(
        RTM_NEWTFILTER,
        NLM_F_CREATE | NLM_F_EXCL,
        &tcmsg(dev.index, 0, f.parent, info(f.prio, f.protocol)),
    );
    m.str(TCA_KIND, "u32");
    m.nest(TCA_OPTIONS, |m| {
        m.u32(TCA_U32_CLASSID, f.classid);
        // One key, mask 0 value 0 at offset 0: everything matches.
        let mut sel = [0u8; SEL_LEN + KEY_LEN];
        sel[0] = TC_U32_TERMINAL;
        sel[2] = 1;
        m.attr(TCA_U32_SEL, &sel);
        m.nest(TCA_U32_ACT, |m| {
            m.nest(1, |m| {
                m.str(TCA_ACT_KIND, "mirred");
                m.nest(TCA_ACT_OPTIONS, |m| {
                    let mut p = [0u8; MIRRED_LEN];
                    p[8..12].copy_from_slice(&ACT_STOLEN.to_ne_bytes());
                    p[20..24].copy_from_slice(&EGRESS_REDIRECT.to_ne_bytes());
                    p[24..28].copy_from_slice(&f.to.to_ne_bytes());
                    m.attr(TCA_MIRRED_PARMS, &p);
                });
            });
        });
    });
    m
}

impl Filter {
    pub(crate) fn from_body(b: &[u8]) -> Option<Filter> {
        let t = TcBody::parse(b)?;
        let proto = (t.info & 0xffff) as u16;
        let mut f = Filter {
            ifindex: t.ifindex,
            parent: t.parent,
            prio: (t.info >> 16) as u16,
            protocol: u16::from_be_bytes(proto.to_ne_bytes()),
            kind: t.kind,
            handle: t.handle,
            classid: None,
            keys: None,
            actions: Vec::new(),
        };
        if f.kind == "u32" {
            f.read_u32(t.options);
        }
        Some(f)
    }

    fn read_u32(&mut self, options: &[u8]) {
        for (kind, d) in attrs(options) {
            match kind {
                TCA_U32_CLASSID => self.classid = u32_of(d),
                TCA_U32_SEL => self.keys = keys_of(d),
                TCA_U32_ACT => self.actions = attrs(d).map(|(_, a)| action_of(a)).collect(),
                _ => {}
            }
        }
    }

    /// An entry with neither selector nor action: a `u32` filter's own
    /// entry or its hash table, listed beside its key nodes.
    pub fn is_bare(&self) -> bool {
        self.keys.is_none() && self.actions.is_empty()
    }

    /// A `u32` key node matching every packet whose every action (at least
    /// one) is a mirred egress redirect to device `to`: what
    /// [`U32Redirect`] makes, or the reference plugin's two-action variant.
    pub fn redirects_all_to(&self, to: u32) -> bool {
        self.kind == "u32"
            && self.keys.as_deref() == Some(&[(0, 0, 0)])
            && !self.actions.is_empty()
            && self.actions.iter().all(|a| {
                a.mirred
                    .is_some_and(|m| m.eaction == EGRESS_REDIRECT && m.ifindex == to)
            })
    }

    /// `u32 pref 1 handle 800::800`, as `tc` words it.
    pub fn describe(&self) -> String {
        format!(
            "{} pref {} handle {}",
            self.kind,
            self.prio,
            format_handle(self.handle)
        )
    }
}

fn keys_of(sel: &[u8]) -> Option<Vec<(u32, u32, i32)>> {
    let nkeys = usize::from(*sel.get(2)?);
    let keys = sel.get(SEL_LEN..)?;
    let mut out = Vec::with_capacity(nkeys);
    for k in keys.chunks_exact(KEY_LEN).take(nkeys) {
        let off = i32::from_ne_bytes(k[8..12].try_into().ok()?);
        out.push((be32_of(k)?, be32_of(&k[4..])?, off));
    }
    (out.len() == nkeys).then_some(out)
}

fn action_of(a: &[u8]) -> Action {
    let mut action = Action {
        kind: String::new(),
        mirred: None,
    };
    let mut options: &[u8] = &[];
    for (kind, d) in attrs(a) {
        match kind {
            TCA_ACT_KIND => action.kind = str_of(d),
            TCA_ACT_OPTIONS => options = d,
            _ => {}
        }
    }
    if action.kind == "mirred" {
        action.mirred = attrs(options)
            .find(|(k, d)| *k == TCA_MIRRED_PARMS && d.len() >= MIRRED_LEN)
            .and_then(|(_, p)| {
                Some(Mirred {
                    verdict: i32::from_ne_bytes(p[8..12].try_into().ok()?),
                    eaction: i32::from_ne_bytes(p[20..24].try_into().ok()?),
                    ifindex: u32_of(&p[24..])?,
                })
            });
    }
    action
}

impl Netlink {
    /// Add `f` on `dev`. The kernel adds a second key node if one is
    /// already there (filters have no natural identity): list first
    /// ([`Netlink::filters`]) when that matters.
    pub fn add_u32_redirect(&self, dev: &Link, f: &U32Redirect) -> Result<()> {
        let op = format!(
            "add u32 filter parent {} pref {} on {}",
            format_handle(f.parent),
            f.prio,
            dev.name
        );
        self.request(&op, u32_redirect_message(dev, f)).map(drop)
    }

    /// Delete every filter of priority `prio` and `protocol` under
    /// `parent` on `dev` (`tc filter del dev D parent P pref N protocol X`).
    pub fn delete_filters(&self, dev: &Link, parent: u32, prio: u16, protocol: u16) -> Result<()> {
        let op = format!(
            "delete filters parent {} pref {prio} on {}",
            format_handle(parent),
            dev.name
        );
        let m = Msg::new(
            RTM_DELTFILTER,
            0,
            &tcmsg(dev.index, 0, parent, info(prio, protocol)),
        );
        self.request(&op, m).map(drop)
    }

    /// The filters of `dev` under the qdisc `parent` (none when there is no
    /// such qdisc).
    pub fn filters(&self, dev: &Link, parent: u32) -> Result<Vec<Filter>> {
        let op = format!(
            "list filters parent {} of {}",
            format_handle(parent),
            dev.name
        );
        let m = Msg::new(RTM_GETTFILTER, NLM_F_DUMP, &tcmsg(dev.index, 0, parent, 0));
        let replies = self.request(&op, m)?;
        Ok(replies
            .iter()
            .filter_map(|b| Filter::from_body(b))
            .filter(|f| f.ifindex == dev.index)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tc::INGRESS_HANDLE;

    #[test]
    fn reads_back_what_it_writes() {
        let dev = Link::named(5, "veth0");
        let spec = U32Redirect {
            parent: INGRESS_HANDLE,
            prio: 1,
            protocol: ETH_P_ALL,
            classid: 0x1_0001,
            to: 9,
        };
        let m = u32_redirect_message(&dev, &spec);
        let f = Filter::from_body(m.body()).unwrap();
        assert_eq!(
            (f.ifindex, f.parent, f.prio, f.protocol),
            (5, INGRESS_HANDLE, 1, ETH_P_ALL)
        );
        assert_eq!((f.kind.as_str(), f.classid), ("u32", Some(0x1_0001)));
        assert_eq!(f.keys, Some(vec![(0, 0, 0)]));
        let mirred = Mirred {
            eaction: EGRESS_REDIRECT,
            ifindex: 9,
            verdict: ACT_STOLEN,
        };
        assert_eq!(
            f.actions,
            vec![Action {
                kind: "mirred".into(),
                mirred: Some(mirred)
            }]
        );
        assert!(f.redirects_all_to(9));
        assert!(!f.redirects_all_to(8));
        assert!(!f.is_bare());
        assert_eq!(f.describe(), "u32 pref 1 handle none");
        // Protocol travels in network order: ETH_P_ALL is 00 03.
        assert_eq!(&m.body()[16..20], &[0x00, 0x03, 0x01, 0x00]);
    }

    #[test]
    fn a_filter_matching_something_is_not_a_catch_all() {
        let mut f = Filter::from_body(
            u32_redirect_message(
                &Link::named(5, "v"),
                &U32Redirect {
                    parent: INGRESS_HANDLE,
                    prio: 1,
                    protocol: ETH_P_ALL,
                    classid: 1,
                    to: 9,
                },
            )
            .body(),
        )
        .unwrap();
        f.keys = Some(vec![(0xffff_ffff, 0x0a00_0001, 16)]);
        assert!(!f.redirects_all_to(9));
        f.keys = Some(vec![(0, 0, 0)]);
        f.actions.push(Action {
            kind: "gact".into(),
            mirred: None,
        });
        assert!(!f.redirects_all_to(9));
        f.actions.clear();
        assert!(!f.redirects_all_to(9));
        f.keys = None;
        assert!(f.is_bare());
        assert_eq!(keys_of(&[0, 0, 2, 0]), None);
    }
}
