//! The nftables side of ipmasq, over `cni-net`'s netlink transport.
//!
//! ADD lists the table once and sends one transaction: table and chains
//! added if missing, `postrouting` flushed and rebuilt only when it is not
//! exactly the three rules it must hold (the reference rebuilds it on
//! every ADD), stale rules of the same attachment deleted (as the
//! reference does), one rule per address appended.

use cni_net::nftables::{
    BaseChain, Chain, ChainType, Family, Hook, Rule, RuleInfo, Table, Transaction,
};
use std::net::{Ipv4Addr, Ipv6Addr};

use cni_net::{IpNetwork, Netlink};
use ipnetwork::{Ipv4Network, Ipv6Network};

use super::{Owner, comment, instance_hash, network_hash, subnet};
use crate::error::Result;

/// `inet cni_plugins_masquerade`.
pub const TABLE: Table<'static> = Table {
    family: Family::Inet,
    name: "cni_plugins_masquerade",
};
pub const TABLE_COMMENT: &str =
    "Masquerading for plugins from github.com/containernetworking/plugins";
/// The chain of the per-address rules.
pub const CHAIN: &str = "masq_checks";
pub const CHAIN_COMMENT: &str =
    "Masquerade traffic from certain IPs to any (non-multicast) IP outside their subnet";
/// The base chain.
pub const BASE_CHAIN: &str = "postrouting";

/// `postrouting`: nat, hook postrouting, priority 100 (srcnat), no stated
/// policy, as knftables writes it.
pub fn base_chain() -> Chain<'static> {
    Chain::base(
        BASE_CHAIN,
        BaseChain::new(ChainType::Nat, Hook::Postrouting, 100),
    )
}

/// Multicast, which is never masqueraded.
const MULTICAST_V4: Ipv4Network = match Ipv4Network::new_checked(Ipv4Addr::new(224, 0, 0, 0), 4) {
    Some(n) => n,
    None => panic!("224.0.0.0/4"),
};
const MULTICAST_V6: Ipv6Network =
    match Ipv6Network::new_checked(Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8) {
        Some(n) => n,
        None => panic!("ff00::/8"),
    };

/// The rules of `postrouting`: multicast returns, then `goto masq_checks`.
pub fn base_rules() -> [Rule; 3] {
    [
        Rule::new().daddr(MULTICAST_V4).ret(),
        Rule::new().daddr(MULTICAST_V6).ret(),
        Rule::new().goto(CHAIN),
    ]
}

/// `ip saddr == <ip> ip daddr != <subnet> masquerade comment "<c>"` for
/// the address `a` (with its prefix).
pub fn rule(a: &IpNetwork, comment: &str) -> Rule {
    Rule::new()
        .saddr(a.ip())
        .daddr_not(subnet(a))
        .masquerade()
        .comment(comment)
}

/// Add the attachment's ADD changes to `tx` (see the module overview),
/// after one listing of the table.
pub fn plan_setup(
    nl: &Netlink,
    tx: &mut Transaction,
    addrs: &[IpNetwork],
    o: &Owner<'_>,
) -> Result<()> {
    let listed = crate::nft::find(nl, TABLE, None, |_| true)?;
    let base: Vec<&RuleInfo> = listed.iter().filter(|r| r.chain == BASE_CHAIN).collect();
    let want = base_rules();
    let base_ok = base.len() == want.len() && base.iter().zip(&want).all(|(l, r)| l.is(r));
    let prefix = instance_hash(o);
    let stale: Vec<RuleInfo> = listed
        .iter()
        .filter(|r| r.chain == CHAIN && has_prefix(r, &prefix))
        .cloned()
        .collect();
    tx.add_table(TABLE, Some(TABLE_COMMENT));
    tx.add_chain(TABLE, &Chain::regular(CHAIN).comment(CHAIN_COMMENT));
    tx.add_chain(TABLE, &base_chain());
    if !base_ok {
        tx.flush_chain(TABLE, BASE_CHAIN);
        for r in &want {
            tx.add_rule(TABLE, BASE_CHAIN, r);
        }
    }
    crate::nft::delete_into(tx, TABLE, &stale);
    let c = comment(o);
    for a in addrs {
        tx.add_rule(TABLE, CHAIN, &rule(a, &c));
    }
    Ok(())
}

fn has_prefix(r: &RuleInfo, prefix: &str) -> bool {
    r.comment.as_deref().is_some_and(|c| c.starts_with(prefix))
}

/// Delete the attachment's rules (found by comment prefix).
pub fn teardown(nl: &Netlink, o: &Owner<'_>) -> Result<()> {
    let rules = crate::nft::find_by_comment_prefix(nl, TABLE, Some(CHAIN), &instance_hash(o))?;
    crate::nft::delete(nl, TABLE, &rules)
}

/// Delete the rules of `network` whose comment is not that of an
/// attachment in `valid` (container ID, ifname).
pub fn gc(nl: &Netlink, network: &str, valid: &[(String, String)]) -> Result<()> {
    let keep: Vec<String> = valid
        .iter()
        .map(|(cid, ifname)| {
            comment(&Owner {
                network,
                ifname,
                container_id: cid,
            })
        })
        .collect();
    let prefix = format!("{}-", network_hash(network));
    let stale = crate::nft::find(nl, TABLE, Some(CHAIN), |r| {
        has_prefix(r, &prefix) && !r.comment.as_ref().is_some_and(|c| keep.contains(c))
    })?;
    crate::nft::delete(nl, TABLE, &stale)
}

/// The addresses of `addrs` without their exact rule.
pub fn missing(nl: &Netlink, addrs: &[IpNetwork], o: &Owner<'_>) -> Result<Vec<IpNetwork>> {
    let rules = crate::nft::find_by_comment_prefix(nl, TABLE, Some(CHAIN), &instance_hash(o))?;
    let c = comment(o);
    Ok(addrs
        .iter()
        .filter(|a| !rules.iter().any(|r| r.is(&rule(a, &c))))
        .copied()
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cni_net::nftables::Action;

    #[test]
    fn rules_have_the_reference_shape() {
        let a: IpNetwork = "10.240.0.2/24".parse().unwrap();
        let r = rule(&a, "c");
        assert_eq!(r.action, Some(Action::Masquerade));
        assert_eq!(r.comment.as_deref(), Some("c"));
        assert_eq!(r.matches.len(), 2);
        let [v4, v6, goto] = base_rules();
        assert_eq!(v4.action, Some(Action::Return));
        assert_eq!(v6.matches.len(), 1);
        assert_eq!(goto.action, Some(Action::Goto(CHAIN.into())));
        for r in [v4, v6, goto] {
            assert!(r.compile(Family::Inet).is_ok());
        }
    }
}
