//! The nftables transport: `cni-net`'s nf_tables over netlink, in the
//! namespace of the [`Netlink`] handle; no `nft` binary. This module adds
//! what every rule set needs on top: finding rules by comment (exact or
//! prefix, as knftables users do), deleting found rules by handle in one
//! transaction, and reading the interface name a rule matches.
//!
//! A kernel without nf_tables gives [`crate::ErrorKind::Unavailable`]
//! `(Nftables)`; a missing table or chain lists as no rules.

use cni_net::Netlink;
use cni_net::nftables::expr::{self, Expr};
use cni_net::nftables::{Family, RuleInfo, Table, Transaction};

use crate::backend::Backend;
use crate::error::{Error, Result};

/// The rules of `t` (of `chain` only, when given) for which `keep` holds,
/// in chain order.
pub fn find(
    nl: &Netlink,
    t: Table<'_>,
    chain: Option<&str>,
    keep: impl Fn(&RuleInfo) -> bool,
) -> Result<Vec<RuleInfo>> {
    let rules = nl
        .nft_list_rules(t, chain)
        .map_err(|e| listing_error(nl, e))?;
    Ok(rules.into_iter().filter(|r| keep(r)).collect())
}

/// The rules whose comment is `comment`.
pub fn find_by_comment(
    nl: &Netlink,
    t: Table<'_>,
    chain: Option<&str>,
    comment: &str,
) -> Result<Vec<RuleInfo>> {
    find(nl, t, chain, |r| r.comment.as_deref() == Some(comment))
}

/// The rules whose comment starts with `prefix`.
pub fn find_by_comment_prefix(
    nl: &Netlink,
    t: Table<'_>,
    chain: Option<&str>,
    prefix: &str,
) -> Result<Vec<RuleInfo>> {
    find(nl, t, chain, |r| {
        r.comment.as_deref().is_some_and(|c| c.starts_with(prefix))
    })
}

/// Add the deletion of each of `rules` (listed from `t`) to `tx`.
pub fn delete_into(tx: &mut Transaction, t: Table<'_>, rules: &[RuleInfo]) {
    for r in rules {
        tx.delete_rule(t, &r.chain, r.handle);
    }
}

/// Delete `rules` (listed from `t`) in one transaction; none: nothing is
/// sent. A rule gone since it was listed (another DEL of the attachment,
/// ours with another dataDir or the Go plugin's, got there first) fails
/// the whole transaction with ENOENT: the table is listed again and the
/// rules still there are deleted, for as long as that list shrinks.
pub fn delete(nl: &Netlink, t: Table<'_>, rules: &[RuleInfo]) -> Result<()> {
    let mut left = rules.to_vec();
    loop {
        let mut tx = Transaction::new();
        delete_into(&mut tx, t, &left);
        let e = match nl.nft_apply(tx) {
            Ok(()) => return Ok(()),
            Err(e) if e.is(cni_net::Errno::ENOENT) => e,
            Err(e) => return Err(e.into()),
        };
        let now = nl
            .nft_list_rules(t, None)
            .map_err(|e| listing_error(nl, e))?;
        let before = left.len();
        left.retain(|r| {
            now.iter()
                .any(|n| n.chain == r.chain && n.handle == r.handle)
        });
        if left.len() == before {
            return Err(e.into());
        }
    }
}

/// The interface name a rule matches with `iifname "<name>"`, if any.
pub fn iifname_of(r: &RuleInfo) -> Option<String> {
    r.exprs.windows(2).find_map(|w| match w {
        [
            Expr::Meta {
                key: expr::META_IIFNAME,
                dreg,
            },
            Expr::Cmp {
                sreg,
                op: expr::CMP_EQ,
                data,
            },
        ] if dreg == sreg => {
            let end = data.iter().position(|b| *b == 0).unwrap_or(data.len());
            String::from_utf8(data[..end].to_vec()).ok()
        }
        _ => None,
    })
}

/// The reference's probe, `add table ip supports_nftables_test { comment
/// "test" ; }`, checked by the kernel without being applied.
pub fn usable(nl: &Netlink) -> Result<()> {
    let mut tx = Transaction::new();
    tx.add_table(
        Table::new(Family::Ip, "supports_nftables_test"),
        Some("test"),
    );
    nl.nft_check(tx).map_err(|e| {
        let e = Error::from(e);
        match e.kind() {
            crate::ErrorKind::Unavailable(_) => e,
            // Refused for another reason: unusable all the same.
            _ => Error::unavailable(Backend::Nftables, e.to_string()),
        }
    })
}

/// A failed listing. The kernel answers a dump request without nf_tables
/// with an errno that can also mean other things, so a failed listing is
/// checked against the probe before it counts as a failure of a usable
/// backend.
fn listing_error(nl: &Netlink, e: cni_net::Error) -> Error {
    let e = Error::from(e);
    if e.is_unavailable() {
        return e;
    }
    match usable(nl) {
        Err(why) => Error::unavailable(Backend::Nftables, why.to_string()),
        Ok(()) => e,
    }
}
