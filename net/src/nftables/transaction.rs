//! Writing: a [`Transaction`] of nf_tables changes sent as one nfnetlink
//! batch, which the kernel applies all or nothing.

use crate::error::{Errno, Error, Result};
use crate::netlink::{Msg, NLA_F_NESTED, NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, Netlink};

use super::attr::*;
use super::{
    Chain, DELCHAIN, DELRULE, DELTABLE, Family, NEWCHAIN, NEWRULE, NEWTABLE, Policy, Rule, SUBSYS,
    Table, check_name, msg_type, nfgen, udata,
};

const NFNL_MSG_BATCH_BEGIN: u16 = 16;
const NFNL_MSG_BATCH_END: u16 = 17;
const NLM_F_APPEND: u16 = 0x800;

/// One change of a transaction.
#[derive(Debug, Clone)]
struct Change {
    /// For errors: `add rule inet t c`.
    op: String,
    msg: Msg,
    /// `ENOENT` for this change can only mean missing kernel support (a
    /// chain type or expression module): every object it refers to is
    /// added earlier in the same transaction.
    enoent_is_unsupported: bool,
    /// Which refusals mean nf_tables is unusable here (see
    /// [`crate::ErrorKind::NftUnavailable`]).
    creates: Creates,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Creates {
    Table,
    BaseChain,
    Other,
}

/// nf_tables changes applied together by [`Netlink::nft_apply`]: all of
/// them or, when the kernel refuses one, none. Building never fails; the
/// first invalid input (a bad name, a rule that cannot be expressed) is
/// reported by `nft_apply` before anything is sent.
#[derive(Debug, Default)]
pub struct Transaction {
    changes: Vec<Change>,
    /// Tables (family, name) and chains (family, table, name) added so far.
    added: Vec<(Family, String, Option<String>)>,
    pub(super) invalid: Option<Error>,
}

impl Transaction {
    pub fn new() -> Transaction {
        Transaction::default()
    }

    pub fn is_empty(&self) -> bool {
        self.changes.is_empty() && self.invalid.is_none()
    }

    /// Keep the first input error; nothing is sent then.
    fn refuse(&mut self, op: String, why: String) {
        if self.invalid.is_none() {
            self.invalid = Some(Error::other(op, why));
        }
    }

    fn push(&mut self, op: String, msg: Msg, enoent_is_unsupported: bool, creates: Creates) {
        self.changes.push(Change {
            op,
            msg,
            enoent_is_unsupported,
            creates,
        });
    }

    fn has(&self, t: Table<'_>, chain: Option<&str>) -> bool {
        self.added
            .iter()
            .any(|(f, n, c)| *f == t.family && n == t.name && c.as_deref() == chain)
    }

    /// `nft add table`: create `t` unless it exists; `comment` is set only
    /// when the table is created.
    pub fn add_table(&mut self, t: Table<'_>, comment: Option<&str>) -> &mut Transaction {
        self.table(t, comment, NLM_F_CREATE, "add")
    }

    /// `nft create table`: create `t`; `EEXIST` when it exists.
    pub fn create_table(&mut self, t: Table<'_>, comment: Option<&str>) -> &mut Transaction {
        self.table(t, comment, NLM_F_CREATE | NLM_F_EXCL, "create")
    }

    fn table(&mut self, t: Table<'_>, comment: Option<&str>, flags: u16, verb: &str) -> &mut Self {
        let op = format!("{verb} table {t}");
        let data = comment.map(udata::comment).transpose();
        let data = match check_name("table", t.name).and(data) {
            Ok(d) => d,
            Err(why) => {
                self.refuse(op, why);
                return self;
            }
        };
        let mut m = Msg::with_flags(msg_type(NEWTABLE), flags, &nfgen(t.family.number()));
        m.str(NFTA_TABLE_NAME, t.name);
        if let Some(d) = data {
            m.attr(NFTA_TABLE_USERDATA, &d);
        }
        self.push(op, m, true, Creates::Table);
        self.added.push((t.family, t.name.to_string(), None));
        self
    }

    /// `nft delete table`: remove `t` with everything in it; `ENOENT`
    /// when it does not exist.
    pub fn delete_table(&mut self, t: Table<'_>) -> &mut Transaction {
        let op = format!("delete table {t}");
        if let Err(why) = check_name("table", t.name) {
            self.refuse(op, why);
            return self;
        }
        let mut m = Msg::with_flags(msg_type(DELTABLE), 0, &nfgen(t.family.number()));
        m.str(NFTA_TABLE_NAME, t.name);
        self.push(op, m, false, Creates::Other);
        self
    }

    /// `nft add chain`: create the chain unless it exists.
    pub fn add_chain(&mut self, t: Table<'_>, c: &Chain<'_>) -> &mut Transaction {
        self.chain(t, c, NLM_F_CREATE, "add")
    }

    /// `nft create chain`: create the chain; `EEXIST` when it exists.
    pub fn create_chain(&mut self, t: Table<'_>, c: &Chain<'_>) -> &mut Transaction {
        self.chain(t, c, NLM_F_CREATE | NLM_F_EXCL, "create")
    }

    fn chain(&mut self, t: Table<'_>, c: &Chain<'_>, flags: u16, verb: &str) -> &mut Self {
        let op = format!("{verb} chain {t} {}", c.name);
        let data = c.comment.map(udata::comment).transpose();
        let data = match check_name("table", t.name)
            .and(check_name("chain", c.name))
            .and(data)
        {
            Ok(d) => d,
            Err(why) => {
                self.refuse(op, why);
                return self;
            }
        };
        let mut m = Msg::with_flags(msg_type(NEWCHAIN), flags, &nfgen(t.family.number()));
        m.str(NFTA_CHAIN_TABLE, t.name).str(NFTA_CHAIN_NAME, c.name);
        if let Some(b) = &c.base {
            m.nest(NFTA_CHAIN_HOOK | NLA_F_NESTED, |m| {
                m.be32(NFTA_HOOK_HOOKNUM, b.hook.number())
                    .be32(NFTA_HOOK_PRIORITY, b.priority as u32);
            });
            m.str(NFTA_CHAIN_TYPE, b.kind.name());
            if let Some(p) = b.policy {
                m.be32(NFTA_CHAIN_POLICY, u32::from(p == Policy::Accept));
            }
        }
        if let Some(d) = data {
            m.attr(NFTA_CHAIN_USERDATA, &d);
        }
        let creates = if c.base.is_some() {
            Creates::BaseChain
        } else {
            Creates::Other
        };
        let own_table = self.has(t, None);
        self.push(op, m, own_table && c.base.is_some(), creates);
        self.added
            .push((t.family, t.name.to_string(), Some(c.name.to_string())));
        self
    }

    /// `nft flush chain`: remove every rule of the chain.
    pub fn flush_chain(&mut self, t: Table<'_>, chain: &str) -> &mut Transaction {
        let op = format!("flush chain {t} {chain}");
        self.chain_op(op, DELRULE, NFTA_RULE_TABLE, NFTA_RULE_CHAIN, t, chain)
    }

    /// `nft delete chain`: remove an empty, unreferenced chain.
    pub fn delete_chain(&mut self, t: Table<'_>, chain: &str) -> &mut Transaction {
        let op = format!("delete chain {t} {chain}");
        self.chain_op(op, DELCHAIN, NFTA_CHAIN_TABLE, NFTA_CHAIN_NAME, t, chain)
    }

    fn chain_op(
        &mut self,
        op: String,
        kind: u16,
        table_attr: u16,
        chain_attr: u16,
        t: Table<'_>,
        chain: &str,
    ) -> &mut Self {
        if let Err(why) = check_name("table", t.name).and(check_name("chain", chain)) {
            self.refuse(op, why);
            return self;
        }
        let mut m = Msg::with_flags(msg_type(kind), 0, &nfgen(t.family.number()));
        m.str(table_attr, t.name).str(chain_attr, chain);
        self.push(op, m, false, Creates::Other);
        self
    }

    /// `nft add rule`: append `rule` to the chain.
    pub fn add_rule(&mut self, t: Table<'_>, chain: &str, rule: &Rule) -> &mut Transaction {
        self.rule(t, chain, rule, NLM_F_CREATE | NLM_F_APPEND, "add")
    }

    /// `nft insert rule`: put `rule` first in the chain.
    pub fn insert_rule(&mut self, t: Table<'_>, chain: &str, rule: &Rule) -> &mut Transaction {
        self.rule(t, chain, rule, NLM_F_CREATE, "insert")
    }

    fn rule(&mut self, t: Table<'_>, chain: &str, r: &Rule, flags: u16, verb: &str) -> &mut Self {
        let op = format!("{verb} rule {t} {chain}");
        let built = check_name("table", t.name)
            .and(check_name("chain", chain))
            .and(r.compile(t.family))
            .and_then(|e| Ok((e, r.comment.as_deref().map(udata::comment).transpose()?)));
        let (exprs, data) = match built {
            Ok(b) => b,
            Err(why) => {
                self.refuse(op, why);
                return self;
            }
        };
        let mut m = Msg::with_flags(msg_type(NEWRULE), flags, &nfgen(t.family.number()));
        m.str(NFTA_RULE_TABLE, t.name).str(NFTA_RULE_CHAIN, chain);
        m.nest(NFTA_RULE_EXPRESSIONS | NLA_F_NESTED, |m| {
            for e in &exprs {
                e.encode(m);
            }
        });
        if let Some(d) = data {
            m.attr(NFTA_RULE_USERDATA, &d);
        }
        let target_added = match &r.action {
            Some(super::Action::Jump(c) | super::Action::Goto(c)) => self.has(t, Some(c)),
            _ => true,
        };
        let own = self.has(t, Some(chain)) && target_added;
        self.push(op, m, own, Creates::Other);
        self
    }

    /// `nft delete rule ... handle <handle>`; `ENOENT` when it is gone.
    pub fn delete_rule(&mut self, t: Table<'_>, chain: &str, handle: u64) -> &mut Transaction {
        let op = format!("delete rule {t} {chain} handle {handle}");
        if let Err(why) = check_name("table", t.name).and(check_name("chain", chain)) {
            self.refuse(op, why);
            return self;
        }
        let mut m = Msg::with_flags(msg_type(DELRULE), 0, &nfgen(t.family.number()));
        m.str(NFTA_RULE_TABLE, t.name)
            .str(NFTA_RULE_CHAIN, chain)
            .be64(NFTA_RULE_HANDLE, handle);
        self.push(op, m, false, Creates::Other);
        self
    }

    /// The whole batch: begin, the changes (the last one acked, which ends
    /// the kernel's answer), and end unless `commit` is off.
    pub(super) fn batch(&self, commit: bool) -> Vec<Msg> {
        let hdr = [0, 0, (SUBSYS >> 8) as u8, SUBSYS as u8];
        let mut msgs = Vec::with_capacity(self.changes.len() + 2);
        msgs.push(Msg::with_flags(NFNL_MSG_BATCH_BEGIN, 0, &hdr));
        msgs.extend(self.changes.iter().map(|c| c.msg.clone()));
        if let Some(last) = msgs.last_mut() {
            last.add_flags(NLM_F_ACK);
        }
        if commit {
            msgs.push(Msg::with_flags(NFNL_MSG_BATCH_END, 0, &hdr));
        }
        msgs
    }

    /// The error for the kernel's refusal of change `i` (`None`: of the
    /// batch as a whole).
    fn refusal(&self, i: Option<usize>, errno: Errno) -> Error {
        let Some(c) = i.and_then(|i| self.changes.get(i)) else {
            return match errno {
                Errno::EOPNOTSUPP | Errno::EPROTONOSUPPORT | Errno::EAFNOSUPPORT => {
                    Error::nft_unavailable("nftables transaction", errno)
                }
                _ => Error::errno("commit nftables transaction", errno),
            };
        };
        let unsupported_family = matches!(
            errno,
            Errno::EOPNOTSUPP | Errno::EAFNOSUPPORT | Errno::EPROTONOSUPPORT
        ) && c.creates != Creates::Other;
        let missing_module = errno == Errno::ENOENT && c.enoent_is_unsupported;
        if unsupported_family || missing_module {
            Error::nft_unavailable(c.op.clone(), errno)
        } else {
            Error::errno(c.op.clone(), errno)
        }
    }
}

impl Netlink {
    /// Apply `tx` as one kernel transaction. The error names the first
    /// change the kernel refused (`add rule inet t c: no such file or
    /// directory`); a kernel without the needed nf_tables support gives
    /// [`crate::ErrorKind::NftUnavailable`]. An empty transaction sends
    /// nothing.
    pub fn nft_apply(&self, tx: Transaction) -> Result<()> {
        self.nft_send(tx, true)
    }

    /// Build a transaction with `f` and apply it.
    pub fn nft_transaction(&self, f: impl FnOnce(&mut Transaction)) -> Result<()> {
        let mut tx = Transaction::new();
        f(&mut tx);
        self.nft_apply(tx)
    }

    /// Let the kernel check `tx` without applying it (a batch without its
    /// end, which the kernel validates and then aborts, as `nft --check`).
    pub fn nft_check(&self, tx: Transaction) -> Result<()> {
        self.nft_send(tx, false)
    }

    fn nft_send(&self, mut tx: Transaction, commit: bool) -> Result<()> {
        if let Some(e) = tx.invalid.take() {
            return Err(e);
        }
        if tx.changes.is_empty() {
            return Ok(());
        }
        let conn = self.netfilter()?;
        let mut msgs = tx.batch(commit);
        let (seqs, refused) = conn.send_batch("nftables transaction", &mut msgs)?;
        // Changes sit between the begin message and the end message.
        let index = |seq: u32| seqs.iter().position(|s| *s == seq);
        let first = refused
            .iter()
            .filter_map(|r| Some((index(r.seq)?, r.errno)))
            .filter(|(i, _)| *i > 0)
            .min_by_key(|(i, _)| *i);
        if let Some((i, errno)) = first {
            return Err(tx.refusal(Some(i - 1), errno));
        }
        if let Some(r) = refused.first() {
            return Err(tx.refusal(None, r.errno));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nftables::{BaseChain, ChainType, Hook};

    fn t() -> Table<'static> {
        Table::new(Family::Inet, "t")
    }

    #[test]
    fn invalid_input_is_kept_until_apply() {
        let mut tx = Transaction::new();
        tx.add_table(t(), None)
            .add_chain(t(), &Chain::regular(""))
            .add_rule(t(), "c", &Rule::new().iifname("x".repeat(20).as_str()));
        let e = tx.invalid.clone().unwrap();
        assert_eq!(e.to_string(), "add chain inet t : invalid chain name \"\"");
        assert!(!tx.is_empty());
    }

    #[test]
    fn batch_acks_only_the_last_change() {
        let mut tx = Transaction::new();
        tx.add_table(t(), Some("c"))
            .add_rule(t(), "c", &Rule::new().accept());
        let b = tx.batch(true);
        assert_eq!(b.len(), 4);
        assert_eq!(b[0].kind(), NFNL_MSG_BATCH_BEGIN);
        assert_eq!(b[3].kind(), NFNL_MSG_BATCH_END);
        assert_eq!(b[1].flags() & NLM_F_ACK, 0);
        assert_ne!(b[2].flags() & NLM_F_ACK, 0);
        assert_eq!(b[2].flags() & NLM_F_APPEND, NLM_F_APPEND);
        assert_eq!(tx.batch(false).len(), 3);
    }

    #[test]
    fn refusals_that_mean_no_nftables() {
        let mut tx = Transaction::new();
        let base = Chain::base("p", BaseChain::new(ChainType::Nat, Hook::Postrouting, 100));
        tx.add_table(t(), None)
            .add_chain(t(), &base)
            .add_chain(t(), &Chain::regular("c"))
            .add_rule(t(), "c", &Rule::new().jump("elsewhere"))
            .add_rule(t(), "c", &Rule::new().jump("p"))
            .delete_rule(t(), "c", 3);
        let un = |i, e| tx.refusal(Some(i), e).is_nft_unavailable();
        assert!(un(0, Errno::EAFNOSUPPORT));
        assert!(un(0, Errno::ENOENT));
        assert!(un(1, Errno::ENOENT), "nat chain type missing");
        assert!(un(1, Errno::EOPNOTSUPP));
        assert!(!un(2, Errno::EOPNOTSUPP));
        assert!(!un(3, Errno::ENOENT), "jump target may simply be missing");
        assert!(un(4, Errno::ENOENT), "an expression module is missing");
        assert!(!un(4, Errno::EOPNOTSUPP));
        assert!(!un(5, Errno::ENOENT));
        assert!(tx.refusal(None, Errno::EOPNOTSUPP).is_nft_unavailable());
        assert!(!tx.refusal(None, Errno::ENOMEM).is_nft_unavailable());
        assert_eq!(
            tx.refusal(Some(5), Errno::ENOENT).to_string(),
            "delete rule inet t c handle 3: no such file or directory"
        );
    }
}
