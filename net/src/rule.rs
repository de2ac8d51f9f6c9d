//! Policy routing rules (`ip rule`): add, list, delete. A rule sends the
//! packets it matches (here: by source address) to a routing table; `sbr`
//! uses one per container address.

use std::net::IpAddr;

use ipnetwork::IpNetwork;

use crate::addr::{AF_INET, AF_INET6, ip_bytes, ip_of};
use crate::error::Result;
use crate::netlink::{Msg, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL, Netlink, attrs, u32_of};

const RTM_NEWRULE: u16 = 32;
const RTM_DELRULE: u16 = 33;
const RTM_GETRULE: u16 = 34;
const FRA_DST: u16 = 1;
const FRA_SRC: u16 = 2;
const FRA_PRIORITY: u16 = 6;
const FRA_TABLE: u16 = 15;
/// `FR_ACT_TO_TBL`: look the packet up in the rule's table.
pub const ACTION_TO_TABLE: u8 = 1;

/// A rule to add or delete, or one the kernel listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// IPv6 rather than IPv4 (a rule without addresses still has one).
    pub ipv6: bool,
    /// `from <src>`; every source when `None`.
    pub src: Option<IpNetwork>,
    /// `to <dst>` (listed only: sbr never matches on it).
    pub dst: Option<IpNetwork>,
    /// `lookup <table>`.
    pub table: u32,
    /// The preference; on add, `None` lets the kernel pick the one below
    /// the first non-zero rule (what the reference's rules get).
    pub priority: Option<u32>,
    /// `FR_ACT_*`; [`ACTION_TO_TABLE`] for the rules made here.
    pub action: u8,
}

impl Rule {
    /// `from <src> lookup <table>`.
    pub fn from_source(src: IpNetwork, table: u32) -> Rule {
        Rule {
            ipv6: src.is_ipv6(),
            src: Some(src),
            dst: None,
            table,
            priority: None,
            action: ACTION_TO_TABLE,
        }
    }

    /// `from 10.1.2.3/32 lookup 100 pref 32765`, for messages.
    pub fn describe(&self) -> String {
        let mut s = match self.src {
            Some(src) => format!("from {src}"),
            None => "from all".to_string(),
        };
        if let Some(dst) = self.dst {
            s.push_str(&format!(" to {dst}"));
        }
        s.push_str(&format!(" lookup {}", self.table));
        if let Some(p) = self.priority {
            s.push_str(&format!(" pref {p}"));
        }
        s
    }

    /// `struct fib_rule_hdr` and attributes.
    pub(crate) fn message(&self, kind: u16, flags: u16) -> Msg {
        let mut h = [0u8; 12];
        h[0] = if self.ipv6 { AF_INET6 } else { AF_INET };
        h[1] = self.dst.map_or(0, |d| d.prefix());
        h[2] = self.src.map_or(0, |s| s.prefix());
        // The header holds 8 bits; larger ids travel only in FRA_TABLE.
        h[4] = u8::try_from(self.table).unwrap_or(0);
        h[7] = self.action;
        let mut m = Msg::new(kind, flags, &h);
        if let Some(dst) = self.dst {
            m.attr(FRA_DST, &ip_bytes(&dst.ip()));
        }
        if let Some(src) = self.src {
            m.attr(FRA_SRC, &ip_bytes(&src.ip()));
        }
        if let Some(p) = self.priority {
            m.u32(FRA_PRIORITY, p);
        }
        m.u32(FRA_TABLE, self.table);
        m
    }

    /// A rule from the body of an `RTM_NEWRULE` message.
    pub(crate) fn from_body(b: &[u8]) -> Option<Rule> {
        let family = *b.first()?;
        let (dst_len, src_len) = (*b.get(1)?, *b.get(2)?);
        let mut r = Rule {
            ipv6: family == AF_INET6,
            src: None,
            dst: None,
            table: u32::from(*b.get(4)?),
            priority: None,
            action: *b.get(7)?,
        };
        let net = |d: &[u8], len: u8| -> Option<IpNetwork> {
            IpNetwork::new(ip_of(family, d)?, len).ok()
        };
        for (kind, d) in attrs(b.get(12..)?) {
            match kind {
                FRA_SRC => r.src = net(d, src_len),
                FRA_DST => r.dst = net(d, dst_len),
                FRA_PRIORITY => r.priority = u32_of(d),
                FRA_TABLE => r.table = u32_of(d)?,
                _ => {}
            }
        }
        Some(r)
    }

    /// Whether the rule matches exactly the one address `ip` as source.
    pub fn is_from(&self, ip: IpAddr) -> bool {
        self.src
            .is_some_and(|s| s.ip() == ip && s.prefix() == if ip.is_ipv4() { 32 } else { 128 })
    }
}

impl Netlink {
    /// Add a rule; `EEXIST` when an identical one exists.
    pub fn add_rule(&self, r: &Rule) -> Result<()> {
        self.request(
            &format!("add rule {}", r.describe()),
            r.message(RTM_NEWRULE, NLM_F_CREATE | NLM_F_EXCL),
        )
        .map(drop)
    }

    /// Delete the first rule matching `r`'s family, source, table,
    /// action and (when given) preference; `ENOENT` when none does.
    pub fn delete_rule(&self, r: &Rule) -> Result<()> {
        self.request(
            &format!("delete rule {}", r.describe()),
            r.message(RTM_DELRULE, 0),
        )
        .map(drop)
    }

    /// Every rule of both families (IPv4 first, as the kernel dumps them).
    pub fn rules(&self) -> Result<Vec<Rule>> {
        let h = [0u8; 12];
        let replies = self.request("list rules", Msg::new(RTM_GETRULE, NLM_F_DUMP, &h))?;
        Ok(replies.iter().filter_map(|b| Rule::from_body(b)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_reads_back_as_built() {
        let mut r = Rule::from_source("10.240.1.2/32".parse().unwrap(), 1000);
        r.priority = Some(32000);
        let m = r.message(RTM_NEWRULE, NLM_F_CREATE);
        assert_eq!(Rule::from_body(m.body()), Some(r.clone()));
        assert_eq!(r.describe(), "from 10.240.1.2/32 lookup 1000 pref 32000");
        assert!(r.is_from("10.240.1.2".parse().unwrap()));
        assert!(!r.is_from("10.240.1.3".parse().unwrap()));
        let v6 = Rule::from_source("fd40::2/128".parse().unwrap(), 100);
        assert_eq!(Rule::from_body(v6.message(RTM_DELRULE, 0).body()), Some(v6));
    }

    #[test]
    fn rules_are_added_listed_and_deleted() {
        let ns = testsupport::TestNetns::new("rul");
        let nl = Netlink::in_netns(&std::fs::File::open(ns.path()).unwrap()).unwrap();
        let r4 = Rule::from_source("10.240.1.2/32".parse().unwrap(), 1000);
        let r6 = Rule::from_source("fd40::2/128".parse().unwrap(), 101);
        nl.add_rule(&r4).unwrap();
        nl.add_rule(&r6).unwrap();
        let listed = nl.rules().unwrap();
        let ours: Vec<_> = listed.iter().filter(|r| r.src.is_some()).collect();
        assert_eq!(ours.len(), 2, "{listed:?}");
        assert_eq!((ours[0].table, ours[0].priority), (1000, Some(32765)));
        assert_eq!((ours[1].table, ours[1].ipv6), (101, true));
        // Without a preference the kernel picks a new one each time; with
        // one, the same rule is refused.
        assert!(nl.add_rule(ours[0]).unwrap_err().is_exists());
        nl.delete_rule(&r4).unwrap();
        nl.delete_rule(ours[1]).unwrap();
        assert!(nl.delete_rule(&r4).is_err());
        assert!(nl.rules().unwrap().iter().all(|r| r.src.is_none()));
    }
}
