//! Reading: tables, chains and rules as the kernel lists them, with the
//! handles and comments callers need to find their own rules again (also
//! those written by `nft` or by the reference plugins) and delete them.

use crate::error::{Errno, Result};
use crate::netlink::{Msg, NLM_F_DUMP, Netlink, attrs, be32_of, be64_of, str_of};

use super::attr::*;
use super::expr::Expr;
use super::{
    BaseChain, ChainType, Family, GETCHAIN, GETRULE, GETTABLE, Hook, Policy, Rule, Table, msg_type,
    nfgen, udata,
};

/// A table as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableInfo {
    pub family: Family,
    pub name: String,
    pub handle: u64,
    pub comment: Option<String>,
}

/// A chain as listed; `base` is set for base chains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainInfo {
    pub family: Family,
    pub table: String,
    pub name: String,
    pub handle: u64,
    pub base: Option<BaseChain>,
    pub comment: Option<String>,
}

/// A rule as listed: where it is, its handle (for deletion), its comment
/// and its expressions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleInfo {
    pub family: Family,
    pub table: String,
    pub chain: String,
    pub handle: u64,
    pub comment: Option<String>,
    pub exprs: Vec<Expr>,
}

impl RuleInfo {
    /// Whether this is `rule` (same expressions and comment), as it is
    /// written in a table of this family.
    pub fn is(&self, rule: &Rule) -> bool {
        self.comment == rule.comment
            && rule
                .compile(self.family)
                .is_ok_and(|exprs| exprs == self.exprs)
    }
}

/// The family and attributes of an nf_tables message body.
fn split(body: &[u8]) -> Option<(Family, impl Iterator<Item = (u16, &[u8])>)> {
    let family = Family::from_number(*body.first()?)?;
    Some((family, attrs(body.get(4..)?)))
}

impl TableInfo {
    pub(crate) fn from_body(body: &[u8]) -> Option<TableInfo> {
        let (family, attrs) = split(body)?;
        let mut t = TableInfo {
            family,
            name: String::new(),
            handle: 0,
            comment: None,
        };
        for (k, d) in attrs {
            match k {
                NFTA_TABLE_NAME => t.name = str_of(d),
                NFTA_TABLE_HANDLE => t.handle = be64_of(d)?,
                NFTA_TABLE_USERDATA => t.comment = udata::comment_of(d),
                _ => {}
            }
        }
        Some(t)
    }
}

impl ChainInfo {
    pub(crate) fn from_body(body: &[u8]) -> Option<ChainInfo> {
        let (family, attrs) = split(body)?;
        let mut c = ChainInfo {
            family,
            table: String::new(),
            name: String::new(),
            handle: 0,
            base: None,
            comment: None,
        };
        let (mut hook, mut kind, mut policy) = (None, None, None);
        for (k, d) in attrs {
            match k {
                NFTA_CHAIN_TABLE => c.table = str_of(d),
                NFTA_CHAIN_NAME => c.name = str_of(d),
                NFTA_CHAIN_HANDLE => c.handle = be64_of(d)?,
                NFTA_CHAIN_HOOK => hook = Some(hook_of(d)?),
                NFTA_CHAIN_TYPE => kind = ChainType::from_name(&str_of(d)),
                NFTA_CHAIN_POLICY => {
                    policy = Some(match be32_of(d)? {
                        0 => Policy::Drop,
                        _ => Policy::Accept,
                    })
                }
                NFTA_CHAIN_USERDATA => c.comment = udata::comment_of(d),
                _ => {}
            }
        }
        if let (Some((hook, priority)), Some(kind)) = (hook, kind) {
            c.base = Some(BaseChain {
                kind,
                hook,
                priority,
                policy: Some(policy.unwrap_or(Policy::Accept)),
            });
        }
        Some(c)
    }
}

/// The hook number and priority of `NFTA_CHAIN_HOOK`.
fn hook_of(d: &[u8]) -> Option<(Hook, i32)> {
    let mut num = None;
    let mut prio = None;
    for (k, v) in attrs(d) {
        match k {
            NFTA_HOOK_HOOKNUM => num = be32_of(v).and_then(Hook::from_number),
            NFTA_HOOK_PRIORITY => prio = be32_of(v).map(|p| p as i32),
            _ => {}
        }
    }
    Some((num?, prio?))
}

impl RuleInfo {
    pub(crate) fn from_body(body: &[u8]) -> Option<RuleInfo> {
        let (family, attrs) = split(body)?;
        let mut r = RuleInfo {
            family,
            table: String::new(),
            chain: String::new(),
            handle: 0,
            comment: None,
            exprs: Vec::new(),
        };
        for (k, d) in attrs {
            match k {
                NFTA_RULE_TABLE => r.table = str_of(d),
                NFTA_RULE_CHAIN => r.chain = str_of(d),
                NFTA_RULE_HANDLE => r.handle = be64_of(d)?,
                NFTA_RULE_EXPRESSIONS => r.exprs = Expr::decode_list(d),
                NFTA_RULE_USERDATA => r.comment = udata::comment_of(d),
                _ => {}
            }
        }
        Some(r)
    }
}

/// A missing table or chain as `None`.
fn optional<T>(r: Result<T>) -> Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is(Errno::ENOENT) => Ok(None),
        Err(e) => Err(e),
    }
}

impl Netlink {
    /// The table `t`, or `None` when it does not exist.
    pub fn nft_table(&self, t: Table<'_>) -> Result<Option<TableInfo>> {
        let op = format!("list table {t}");
        let mut m = Msg::new(msg_type(GETTABLE), 0, &nfgen(t.family.number()));
        m.str(NFTA_TABLE_NAME, t.name);
        let replies = optional(self.netfilter()?.request(&op, m))?;
        Ok(replies.and_then(|r| r.iter().find_map(|b| TableInfo::from_body(b))))
    }

    /// The chain `name` of `t`, or `None` when it (or the table) does not
    /// exist.
    pub fn nft_chain(&self, t: Table<'_>, name: &str) -> Result<Option<ChainInfo>> {
        let op = format!("list chain {t} {name}");
        let mut m = Msg::new(msg_type(GETCHAIN), 0, &nfgen(t.family.number()));
        m.str(NFTA_CHAIN_TABLE, t.name).str(NFTA_CHAIN_NAME, name);
        let replies = optional(self.netfilter()?.request(&op, m))?;
        Ok(replies.and_then(|r| r.iter().find_map(|b| ChainInfo::from_body(b))))
    }

    /// Every chain of `t` (none when the table does not exist).
    pub fn nft_chains(&self, t: Table<'_>) -> Result<Vec<ChainInfo>> {
        let op = format!("list chains of {t}");
        // The kernel dumps the chains of every table of the family.
        let m = Msg::new(msg_type(GETCHAIN), NLM_F_DUMP, &nfgen(t.family.number()));
        let replies = self.netfilter()?.request(&op, m)?;
        Ok(replies
            .iter()
            .filter_map(|b| ChainInfo::from_body(b))
            .filter(|c| c.family == t.family && c.table == t.name)
            .collect())
    }

    /// The rules of `t`, of one chain when `chain` is given, in chain
    /// order; none when the table or chain does not exist.
    pub fn nft_list_rules(&self, t: Table<'_>, chain: Option<&str>) -> Result<Vec<RuleInfo>> {
        let op = match chain {
            Some(c) => format!("list rules of chain {t} {c}"),
            None => format!("list rules of table {t}"),
        };
        let mut m = Msg::new(msg_type(GETRULE), NLM_F_DUMP, &nfgen(t.family.number()));
        // The kernel filters a rule dump by table and chain.
        m.str(NFTA_RULE_TABLE, t.name);
        if let Some(c) = chain {
            m.str(NFTA_RULE_CHAIN, c);
        }
        let replies = self.netfilter()?.request(&op, m)?;
        Ok(replies
            .iter()
            .filter_map(|b| RuleInfo::from_body(b))
            .filter(|r| r.family == t.family && r.table == t.name)
            .filter(|r| chain.is_none_or(|c| r.chain == c))
            .collect())
    }

    /// Whether the chain holds exactly `rules`, in order (false when it
    /// does not exist): callers rebuild a shared chain only when it is
    /// missing or was altered.
    pub fn nft_chain_is(&self, t: Table<'_>, chain: &str, rules: &[Rule]) -> Result<bool> {
        if self.nft_chain(t, chain)?.is_none() {
            return Ok(false);
        }
        let listed = self.nft_list_rules(t, Some(chain))?;
        Ok(listed.len() == rules.len() && listed.iter().zip(rules).all(|(l, r)| l.is(r)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_bodies_do_not_panic() {
        for body in [
            &b""[..],
            b"\x01",
            b"\x63\0\0\0",
            b"\x01\0\0\0\x08\0\x03\0\x01",
        ] {
            let _ = TableInfo::from_body(body);
            let _ = ChainInfo::from_body(body);
            let _ = RuleInfo::from_body(body);
        }
        assert!(
            RuleInfo::from_body(b"\x63\0\0\0").is_none(),
            "unknown family"
        );
    }
}
