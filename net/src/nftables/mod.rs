//! nf_tables over netlink: tables, chains and rules written in one kernel
//! transaction per call, and read back with their handles and comments,
//! in the namespace of a [`Netlink`] handle. No `nft` binary is involved;
//! the tests use it as an oracle, comparing `nft -j list` of what we create
//! with what `nft -f` creates from the same rule text.
//!
//! - [`Transaction`]: `add` (create if missing, like `nft add`) and
//!   `create` (must not exist) of tables and chains, flush and delete,
//!   append/insert of [`Rule`]s, delete of rules by handle; sent as one
//!   nfnetlink batch by [`Netlink::nft_apply`] / [`Netlink::nft_transaction`].
//! - [`Rule`]: a typed vocabulary of matches and actions ([`rule`]),
//!   compiled to kernel expressions ([`expr`]) exactly as `nft` compiles the
//!   equivalent text.
//! - Listing ([`list`]): a table, its chains (with hook, priority and
//!   policy), and its rules with handle, comment and expressions.
//! - [`commits`]: another process's commits, as the kernel announces
//!   them (to stop waiting for a tool once its work is committed).
//!
//! ```no_run
//! use cni_net::nftables::{BaseChain, Chain, ChainType, Family, Hook, Rule, Table};
//! # fn demo(nl: &cni_net::Netlink) -> cni_net::Result<()> {
//! let t = Table::new(Family::Inet, "cni_plugins_masquerade");
//! nl.nft_transaction(|tx| {
//!     tx.add_table(t, Some("Masquerading for plugins from github.com/containernetworking/plugins"));
//!     tx.add_chain(t, &Chain::regular("masq_checks"));
//!     tx.add_chain(t, &Chain::base("postrouting", BaseChain::new(ChainType::Nat, Hook::Postrouting, 100)));
//!     tx.add_rule(t, "postrouting", &Rule::new().goto("masq_checks"));
//! })?;
//! for r in nl.nft_list_rules(t, Some("masq_checks"))? {
//!     if r.comment.as_deref() == Some("stale") {
//!         nl.nft_transaction(|tx| { tx.delete_rule(t, &r.chain, r.handle); })?;
//!     }
//! }
//! # Ok(()) }
//! ```

pub mod commits;
pub mod expr;
pub mod list;
#[cfg(test)]
mod proptests;
pub mod rule;
pub mod transaction;

use std::fmt;

pub use list::{ChainInfo, RuleInfo, TableInfo};
pub use rule::{Action, Cmp, CtState, L4Proto, Match, Rule};
pub use transaction::Transaction;

#[cfg(doc)]
use crate::Netlink;

/// `NFNL_SUBSYS_NFTABLES`.
const SUBSYS: u16 = 10;

/// `NFT_MSG_*`.
const NEWTABLE: u16 = 0;
const GETTABLE: u16 = 1;
const DELTABLE: u16 = 2;
const NEWCHAIN: u16 = 3;
const GETCHAIN: u16 = 4;
const DELCHAIN: u16 = 5;
const NEWRULE: u16 = 6;
const GETRULE: u16 = 7;
const DELRULE: u16 = 8;

/// Attributes of tables (`NFTA_TABLE_*`), chains, hooks and rules.
mod attr {
    pub(super) const NFTA_TABLE_NAME: u16 = 1;
    pub(super) const NFTA_TABLE_HANDLE: u16 = 4;
    pub(super) const NFTA_TABLE_USERDATA: u16 = 6;
    pub(super) const NFTA_CHAIN_TABLE: u16 = 1;
    pub(super) const NFTA_CHAIN_HANDLE: u16 = 2;
    pub(super) const NFTA_CHAIN_NAME: u16 = 3;
    pub(super) const NFTA_CHAIN_HOOK: u16 = 4;
    pub(super) const NFTA_CHAIN_POLICY: u16 = 5;
    pub(super) const NFTA_CHAIN_TYPE: u16 = 7;
    pub(super) const NFTA_CHAIN_USERDATA: u16 = 12;
    pub(super) const NFTA_HOOK_HOOKNUM: u16 = 1;
    pub(super) const NFTA_HOOK_PRIORITY: u16 = 2;
    pub(super) const NFTA_RULE_TABLE: u16 = 1;
    pub(super) const NFTA_RULE_CHAIN: u16 = 2;
    pub(super) const NFTA_RULE_HANDLE: u16 = 3;
    pub(super) const NFTA_RULE_EXPRESSIONS: u16 = 4;
    pub(super) const NFTA_RULE_USERDATA: u16 = 7;
}

/// The netlink message type of nf_tables message `msg`.
fn msg_type(msg: u16) -> u16 {
    (SUBSYS << 8) | msg
}

/// `struct nfgenmsg` for `family` (version 0, resource id 0).
fn nfgen(family: u8) -> [u8; 4] {
    [family, 0, 0, 0]
}

/// The longest name the kernel takes (`NFT_NAME_MAXLEN` with its NUL).
const NAME_MAX: usize = 255;
/// The longest comment `nft` accepts.
pub const COMMENT_MAX: usize = 128;

/// An nf_tables family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    Ip,
    Ip6,
    Inet,
    Bridge,
}

impl Family {
    /// `NFPROTO_*`.
    pub fn number(self) -> u8 {
        match self {
            Family::Inet => 1,
            Family::Ip => 2,
            Family::Bridge => 7,
            Family::Ip6 => 10,
        }
    }

    fn from_number(n: u8) -> Option<Family> {
        Some(match n {
            1 => Family::Inet,
            2 => Family::Ip,
            7 => Family::Bridge,
            10 => Family::Ip6,
            _ => return None,
        })
    }
}

/// As `nft` writes it (`inet`).
impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Family::Ip => "ip",
            Family::Ip6 => "ip6",
            Family::Inet => "inet",
            Family::Bridge => "bridge",
        })
    }
}

/// A table: its family and name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Table<'a> {
    pub family: Family,
    pub name: &'a str,
}

impl<'a> Table<'a> {
    pub fn new(family: Family, name: &'a str) -> Table<'a> {
        Table { family, name }
    }
}

/// `inet cni_plugins_masquerade`.
impl fmt::Display for Table<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.family, self.name)
    }
}

/// A netfilter hook of the ip, ip6, inet and bridge families.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    Prerouting,
    Input,
    Forward,
    Output,
    Postrouting,
}

impl Hook {
    fn number(self) -> u32 {
        match self {
            Hook::Prerouting => 0,
            Hook::Input => 1,
            Hook::Forward => 2,
            Hook::Output => 3,
            Hook::Postrouting => 4,
        }
    }

    fn from_number(n: u32) -> Option<Hook> {
        Some(match n {
            0 => Hook::Prerouting,
            1 => Hook::Input,
            2 => Hook::Forward,
            3 => Hook::Output,
            4 => Hook::Postrouting,
            _ => return None,
        })
    }
}

/// The type of a base chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainType {
    Filter,
    Nat,
    Route,
}

impl ChainType {
    fn name(self) -> &'static str {
        match self {
            ChainType::Filter => "filter",
            ChainType::Nat => "nat",
            ChainType::Route => "route",
        }
    }

    fn from_name(s: &str) -> Option<ChainType> {
        Some(match s {
            "filter" => ChainType::Filter,
            "nat" => ChainType::Nat,
            "route" => ChainType::Route,
            _ => return None,
        })
    }
}

/// A base chain's policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Accept,
    Drop,
}

/// What makes a chain a base chain: `{ type <t> hook <h> priority <p> ;
/// policy <p> ; }`. Symbolic priorities are numbers here, as knftables
/// writes them: `dstnat` -100, `filter` 0, `srcnat` 100.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BaseChain {
    pub kind: ChainType,
    pub hook: Hook,
    pub priority: i32,
    /// `None` leaves the kernel's default (accept) unstated, as `nft` does
    /// when the text has no `policy`.
    pub policy: Option<Policy>,
}

impl BaseChain {
    pub fn new(kind: ChainType, hook: Hook, priority: i32) -> BaseChain {
        BaseChain {
            kind,
            hook,
            priority,
            policy: None,
        }
    }

    pub fn policy(mut self, p: Policy) -> BaseChain {
        self.policy = Some(p);
        self
    }
}

/// A chain to add: regular or base, with an optional comment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chain<'a> {
    pub name: &'a str,
    pub base: Option<BaseChain>,
    pub comment: Option<&'a str>,
}

impl<'a> Chain<'a> {
    pub fn regular(name: &'a str) -> Chain<'a> {
        Chain {
            name,
            base: None,
            comment: None,
        }
    }

    pub fn base(name: &'a str, base: BaseChain) -> Chain<'a> {
        Chain {
            name,
            base: Some(base),
            comment: None,
        }
    }

    pub fn comment(mut self, text: &'a str) -> Chain<'a> {
        self.comment = Some(text);
        self
    }
}

/// A table or chain name the kernel takes.
fn check_name(what: &str, name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > NAME_MAX || name.contains('\0') {
        return Err(format!("invalid {what} name {name:?}"));
    }
    Ok(())
}

/// libnftnl's user data: type-length-value entries, the comment being
/// type 0 holding a NUL-terminated string. `nft` shows it as `comment`.
mod udata {
    const COMMENT: u8 = 0;

    pub(super) fn comment(text: &str) -> Result<Vec<u8>, String> {
        if text.len() > super::COMMENT_MAX || text.contains('\0') {
            return Err(format!(
                "invalid comment {text:?}: longer than {} bytes or holds NUL",
                super::COMMENT_MAX
            ));
        }
        let mut out = vec![COMMENT, (text.len() + 1) as u8];
        out.extend_from_slice(text.as_bytes());
        out.push(0);
        Ok(out)
    }

    /// The comment entry of user data, if any.
    pub(super) fn comment_of(mut d: &[u8]) -> Option<String> {
        while d.len() >= 2 {
            let (kind, len) = (d[0], usize::from(d[1]));
            let value = d.get(2..2 + len)?;
            if kind == COMMENT {
                return Some(crate::netlink::str_of(value));
            }
            d = &d[2 + len..];
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_are_tlv_strings() {
        let d = udata::comment("c1").unwrap();
        assert_eq!(d, b"\x00\x03c1\x00");
        assert_eq!(udata::comment_of(&d).as_deref(), Some("c1"));
        // Another entry first, then the comment.
        assert_eq!(
            udata::comment_of(b"\x01\x02ab\x00\x02x\x00").as_deref(),
            Some("x")
        );
        assert_eq!(udata::comment_of(b"\x00\x09short"), None);
        assert!(udata::comment(&"x".repeat(129)).is_err());
        assert!(udata::comment(&"x".repeat(128)).is_ok());
    }

    #[test]
    fn names() {
        assert_eq!(Table::new(Family::Inet, "t").to_string(), "inet t");
        assert!(check_name("chain", "").is_err());
        assert!(check_name("chain", "a\0b").is_err());
        assert!(check_name("chain", &"c".repeat(255)).is_ok());
        assert!(check_name("chain", &"c".repeat(256)).is_err());
        for f in [Family::Ip, Family::Ip6, Family::Inet, Family::Bridge] {
            assert_eq!(Family::from_number(f.number()), Some(f));
        }
        for h in 0..5 {
            assert_eq!(Hook::from_number(h).map(Hook::number), Some(h));
        }
    }
}
