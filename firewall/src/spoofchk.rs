//! MAC spoof check (bridge): frames entering the bridge from the
//! container's host veth must carry the container's MAC. nftables only, as
//! in the reference (`pkg/link/spoofcheck.go`), with its objects: table
//! `bridge nat`, base chain `PREROUTING` (filter, prerouting, priority
//! -300, policy accept) with a jump per attachment `iifname "<veth>" jump
//! cni-br-iface-<id>`, chains `cni-br-iface-<id>` (`jump
//! cni-br-iface-<id>-mac`) and `cni-br-iface-<id>-mac` (`ether saddr <mac>
//! return`, `drop`), every rule commented `macspoofchk-<id>`, where `<id>`
//! is `<containerID>-<ifname>`.
//!
//! Setup is one transaction (the reference needs two: one to create the
//! chains, one to flush and fill them); teardown deletes the jump found by
//! its comment, then both chains.

use cni_net::Netlink;
use cni_net::nftables::{
    BaseChain, Chain, ChainInfo, ChainType, Family, Hook, Policy, Rule, RuleInfo, Table,
    Transaction,
};

use crate::error::{Error, Result};

/// `bridge nat`.
pub const TABLE: Table<'static> = Table {
    family: Family::Bridge,
    name: "nat",
};
pub const BASE_CHAIN: &str = "PREROUTING";

/// `<containerID>-<ifname>`.
pub fn id(container_id: &str, ifname: &str) -> String {
    format!("{container_id}-{ifname}")
}

/// `cni-br-iface-<id>`.
pub fn iface_chain(id: &str) -> String {
    format!("cni-br-iface-{id}")
}

/// `cni-br-iface-<id>-mac`.
pub fn mac_chain(id: &str) -> String {
    format!("cni-br-iface-{id}-mac")
}

/// `macspoofchk-<id>`.
pub fn comment(id: &str) -> String {
    format!("macspoofchk-{id}")
}

fn base_chain() -> Chain<'static> {
    Chain::base(
        BASE_CHAIN,
        BaseChain::new(ChainType::Filter, Hook::Prerouting, -300).policy(Policy::Accept),
    )
}

/// Add the attachment's setup to `tx`: table and base chain if missing,
/// its two chains created or flushed and filled, its jump appended.
pub fn plan_setup(tx: &mut Transaction, id: &str, host_veth: &str, mac: [u8; 6]) {
    let (iface, mac_c, c) = (iface_chain(id), mac_chain(id), comment(id));
    tx.add_table(TABLE, None);
    tx.add_chain(TABLE, &base_chain());
    tx.add_chain(TABLE, &Chain::regular(&iface));
    tx.add_chain(TABLE, &Chain::regular(&mac_c));
    tx.flush_chain(TABLE, &iface);
    tx.flush_chain(TABLE, &mac_c);
    let jump = Rule::new().iifname(host_veth).jump(&iface).comment(&c);
    tx.add_rule(TABLE, BASE_CHAIN, &jump);
    tx.add_rule(TABLE, &iface, &Rule::new().jump(&mac_c).comment(&c));
    let own = Rule::new().ether_saddr(mac).ret().comment(&c);
    tx.add_rule(TABLE, &mac_c, &own);
    tx.add_rule(TABLE, &mac_c, &Rule::new().drop().comment(&c));
}

/// Set up the check for the attachment `id` in one transaction.
pub fn setup(nl: &Netlink, id: &str, host_veth: &str, mac: [u8; 6]) -> Result<()> {
    let mut tx = Transaction::new();
    plan_setup(&mut tx, id, host_veth, mac);
    nl.nft_apply(tx)
        .map_err(|e| Error::from(e).context("failed to setup spoof-check"))
}

/// The chains of `bridge nat`.
fn chains(nl: &Netlink) -> Result<Vec<ChainInfo>> {
    Ok(nl.nft_chains(TABLE)?)
}

/// Add the removal of attachment `id` to `tx`: its jumps (of `jumps`,
/// listed from `PREROUTING`) and those of its chains that exist.
fn plan_teardown(tx: &mut Transaction, id: &str, jumps: &[RuleInfo], chains: &[ChainInfo]) {
    crate::nft::delete_into(tx, TABLE, jumps);
    let exists = |name: &str| chains.iter().any(|c| c.name == name);
    // The iface chain jumps to the mac chain: it goes first. Flushed
    // before deletion, for kernels that refuse to delete a chain that
    // still holds rules.
    for c in [iface_chain(id), mac_chain(id)] {
        if exists(&c) {
            tx.flush_chain(TABLE, &c);
            tx.delete_chain(TABLE, &c);
        }
    }
}

/// Remove the attachment's jump and chains; nothing there (or no
/// nf_tables at all) is success.
pub fn teardown(nl: &Netlink, id: &str) -> Result<()> {
    let remove = || -> Result<()> {
        let jumps = crate::nft::find_by_comment(nl, TABLE, Some(BASE_CHAIN), &comment(id))?;
        let mut tx = Transaction::new();
        plan_teardown(&mut tx, id, &jumps, &chains(nl)?);
        Ok(nl.nft_apply(tx)?)
    };
    unless_unavailable(remove()).map_err(|e| e.context("failed to teardown spoof-check"))
}

/// Whether the attachment's jump and chains are in place: `spoof-check
/// rules for <id> not found` otherwise.
pub fn check(nl: &Netlink, id: &str) -> Result<()> {
    let jumps = crate::nft::find_by_comment(nl, TABLE, Some(BASE_CHAIN), &comment(id))?;
    let chains = chains(nl)?;
    let has = |name: String| chains.iter().any(|c| c.name == name);
    if jumps.is_empty() || !has(iface_chain(id)) || !has(mac_chain(id)) {
        return Err(Error::failed(format!(
            "spoof-check rules for {id} not found"
        )));
    }
    Ok(())
}

/// Remove the checks of attachments not in `keep` (ids) whose host veth
/// (the `iifname` their jump matches) no longer exists. The ids carry no
/// network name, so a live veth means the rules may belong to another
/// network's attachment. No nf_tables at all is success.
pub fn gc(nl: &Netlink, keep: &[String], link_exists: &dyn Fn(&str) -> bool) -> Result<()> {
    unless_unavailable(collect_garbage(nl, keep, link_exists))
        .map_err(|e| e.context("garbage-collect spoof-check rules"))
}

fn collect_garbage(
    nl: &Netlink,
    keep: &[String],
    link_exists: &dyn Fn(&str) -> bool,
) -> Result<()> {
    let jumps = crate::nft::find(nl, TABLE, Some(BASE_CHAIN), |r| id_of(r).is_some())?;
    let mut stale: Vec<&str> = Vec::new();
    for r in &jumps {
        let Some(id) = id_of(r) else { continue };
        let live = crate::nft::iifname_of(r).is_some_and(|v| link_exists(&v));
        if !live && !keep.iter().any(|k| k == id) && !stale.contains(&id) {
            stale.push(id);
        }
    }
    if stale.is_empty() {
        return Ok(());
    }
    let chains = chains(nl)?;
    let mut tx = Transaction::new();
    for id in stale {
        let own: Vec<RuleInfo> = jumps
            .iter()
            .filter(|r| id_of(r) == Some(id))
            .cloned()
            .collect();
        plan_teardown(&mut tx, id, &own, &chains);
    }
    Ok(nl.nft_apply(tx)?)
}

/// The attachment id of a rule commented `macspoofchk-<id>`.
fn id_of(r: &RuleInfo) -> Option<&str> {
    r.comment.as_deref()?.strip_prefix("macspoofchk-")
}

/// A kernel without nf_tables holds no spoof-check rules to remove.
fn unless_unavailable(r: Result<()>) -> Result<()> {
    match r {
        Err(e) if e.is_unavailable() => Ok(()),
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_the_reference() {
        let id = id("c1", "eth0");
        assert_eq!(id, "c1-eth0");
        assert_eq!(iface_chain(&id), "cni-br-iface-c1-eth0");
        assert_eq!(mac_chain(&id), "cni-br-iface-c1-eth0-mac");
        assert_eq!(comment(&id), "macspoofchk-c1-eth0");
    }

    #[test]
    fn setup_is_one_valid_transaction() {
        let mut tx = Transaction::new();
        plan_setup(&mut tx, "c1-eth0", "veth12345678", [2, 0, 0, 0, 0, 1]);
        assert!(!tx.is_empty());
        // An impossible interface name is refused before anything is sent.
        let mut tx = Transaction::new();
        plan_setup(&mut tx, "c1-eth0", "", [2, 0, 0, 0, 0, 1]);
        let nl = Netlink::host().unwrap();
        let e = nl.nft_check(tx).unwrap_err();
        assert!(e.to_string().contains("invalid interface name"), "{e}");
    }
}
