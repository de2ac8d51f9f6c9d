//! The nftables backend (ours: the reference has none, plugins #461),
//! over `cni-firewall`'s netlink transport. One table mirrors the
//! iptables objects:
//!
//! ```text
//! table inet cni_plugins_firewall {            # comment "CNI firewall plugin"
//!   chain forward {                            # type filter hook forward priority 0; policy accept
//!     jump isolation_stage_1                   # comment "CNI firewall plugin rules (ingressPolicy: same-bridge|isolated)"
//!     jump admin                               # comment "CNI firewall plugin admin overrides"
//!     ip daddr <ip> ct state established,related accept   # comment "name: <net> if: <ifname> id: <cid>"
//!     ip saddr <ip> accept                                 # comment "name: <net> if: <ifname> id: <cid>"
//!   }
//!   chain admin { }                            # the admin's own rules
//!   chain isolation_stage_1 {
//!     iifname <br> oifname <br> drop           # isolated only
//!     iifname <br> oifname != <br> jump isolation_stage_2
//!   }
//!   chain isolation_stage_2 {
//!     oifname <br> drop
//!   }
//! }
//! ```
//!
//! The per-container rules carry the network, interface and container
//! ID in their comment, so DEL finds them without `prevResult`, a record
//! or the netns, and GC finds those of attachments no longer valid. The bridge
//! rules (shared by every container of the bridge) stay, as in the
//! reference. ADD reads the table once over netlink and adds what is
//! missing in one transaction; DEL deletes by handle in one.
//!
//! As with iptables, `accept` only ends this table's chain: another
//! table's `drop` still drops (nftables evaluates every base chain of a
//! hook). The accept rules matter to rules an admin puts after them (the
//! `admin` chain, or a `policy drop` on `forward`); the isolation drops
//! hold whatever other tables do. Like the reference's, the same-bridge
//! drop of `isolated` sees bridged traffic only with
//! `net.bridge.bridge-nf-call-iptables` on.

use std::net::IpAddr;

use cni_firewall::nft as fw;
use cni_net::IpNetwork;
use cni_net::Netlink;
use cni_net::nftables::{
    BaseChain, Chain, ChainType, CtState, Family, Hook, Policy as ChainPolicy, Rule, RuleInfo,
    Table, Transaction,
};
use skel::Error;

use crate::config::{Isolation, Policy};

pub const TABLE_NAME: &str = "cni_plugins_firewall";
pub const TABLE_COMMENT: &str = "CNI firewall plugin";
pub const FORWARD: &str = "forward";
pub const ADMIN: &str = "admin";
pub const STAGE_1: &str = "isolation_stage_1";
pub const STAGE_2: &str = "isolation_stage_2";
const ADMIN_COMMENT: &str = "CNI firewall plugin admin overrides";
const DEFAULT_POLICY_COMMENT: &str =
    "CNI firewall plugin rules (ingressPolicy: same-bridge|isolated)";

pub fn table() -> Table<'static> {
    Table::new(Family::Inet, TABLE_NAME)
}

/// A rule, its chain and how it reads in `nft` (for CHECK's messages).
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    pub chain: &'static str,
    pub rule: Rule,
    pub text: String,
}

fn spec(chain: &'static str, rule: Rule, text: String) -> Spec {
    Spec { chain, rule, text }
}

/// The longest tail [`owner`] writes in plain text: `if: <15 bytes> id:
/// <64 bytes>` (container IDs are 64 hex digits in practice).
const PLAIN_TAIL: usize = "if: ".len() + 15 + " id: ".len() + 64;

/// The first part of the comments of a network's rules: `name: <net> `,
/// or, when that leaves no room for a plain tail within the 128 bytes
/// `nft` takes, `name-sha512: <16 hex> ` (network names hold no blank,
/// so no network's prefix starts another's). No quotes: `nft list`
/// prints comments between quotes without escaping, and its output must
/// stay valid `nft -f` input.
pub fn network_prefix(net: &str) -> String {
    let plain = format!("name: {net} ");
    if plain.len() + PLAIN_TAIL <= cni_net::nftables::COMMENT_MAX && !net.contains('"') {
        plain
    } else {
        format!("name-sha512: {} ", skel::sha512::hex_prefix(net, 16))
    }
}

/// The comment of an attachment's rules: `<prefix>if: <ifname> id:
/// <cid>`, or `<prefix>sha512: <16 hex>` of both when that does not fit.
/// The interface is part of it: a container may be attached to one
/// network twice (multus), and DEL of one attachment must not take the
/// other's rules.
pub fn owner(net: &str, cid: &str, ifname: &str) -> String {
    let prefix = network_prefix(net);
    let tail = format!("if: {ifname} id: {cid}");
    if prefix.len() + tail.len() <= cni_net::nftables::COMMENT_MAX && !tail.contains('"') {
        prefix + &tail
    } else {
        let hash = skel::sha512::hex_prefix(&format!("{ifname}\n{cid}"), 16);
        format!("{prefix}sha512: {hash}")
    }
}

/// The two rules of one container address.
pub fn addr_rules(ip: IpAddr, owner: &str) -> [Spec; 2] {
    let host = IpNetwork::from(ip);
    let v = if ip.is_ipv6() { "ip6" } else { "ip" };
    let est = CtState::ESTABLISHED | CtState::RELATED;
    [
        spec(
            FORWARD,
            Rule::new()
                .daddr(host)
                .ct_state(est)
                .accept()
                .comment(owner),
            format!("{v} daddr {ip} ct state established,related accept comment \"{owner}\""),
        ),
        spec(
            FORWARD,
            Rule::new().saddr(host).accept().comment(owner),
            format!("{v} saddr {ip} accept comment \"{owner}\""),
        ),
    ]
}

pub fn admin_jump() -> Spec {
    spec(
        FORWARD,
        Rule::new().jump(ADMIN).comment(ADMIN_COMMENT),
        format!("jump {ADMIN}"),
    )
}

/// The isolation rules of a bridge, the first to go in front of the
/// per-container rules.
pub fn isolation_rules(iso: &Isolation) -> Vec<Spec> {
    let br = iso.bridge.as_str();
    let named = format!(
        "CNI firewall plugin rules (ingressPolicy: {})",
        iso.policy.name()
    );
    let mut out = vec![
        spec(
            FORWARD,
            Rule::new().jump(STAGE_1).comment(DEFAULT_POLICY_COMMENT),
            format!("jump {STAGE_1}"),
        ),
        spec(
            STAGE_1,
            Rule::new()
                .iifname(br)
                .oifname_not(br)
                .jump(STAGE_2)
                .comment(&named),
            format!("iifname {br:?} oifname != {br:?} jump {STAGE_2}"),
        ),
    ];
    if iso.policy == Policy::Isolated {
        out.push(spec(
            STAGE_1,
            Rule::new().iifname(br).oifname(br).drop().comment(&named),
            format!("iifname {br:?} oifname {br:?} drop"),
        ));
    }
    out.push(spec(
        STAGE_2,
        Rule::new()
            .oifname(br)
            .drop()
            .comment(DEFAULT_POLICY_COMMENT),
        format!("oifname {br:?} drop"),
    ));
    out
}

fn fw_error(e: cni_firewall::Error) -> Error {
    Error::internal(e.to_string())
}

fn net_error(e: cni_net::Error) -> Error {
    Error::internal(e.to_string())
}

/// Whether `rules` (as listed) hold `s`.
fn has(rules: &[RuleInfo], s: &Spec) -> bool {
    rules.iter().any(|r| r.chain == s.chain && r.is(&s.rule))
}

/// What an ADD created, to remove it again when a later step fails.
#[derive(Debug, Default)]
pub struct Undo {
    table_new: bool,
    chains_new: Vec<&'static str>,
    rules: Vec<Spec>,
}

/// ADD: what is missing, in one transaction; returns what it created.
pub fn add(
    nl: &Netlink,
    ips: &[IpAddr],
    owner: &str,
    iso: Option<&Isolation>,
) -> Result<Undo, Error> {
    let t = table();
    let table_new = nl.nft_table(t).map_err(net_error)?.is_none();
    let chains: Vec<String> = match table_new {
        true => Vec::new(),
        false => nl
            .nft_chains(t)
            .map_err(net_error)?
            .into_iter()
            .map(|c| c.name)
            .collect(),
    };
    let listed = fw::find(nl, t, None, |_| true).map_err(fw_error)?;
    let mut undo = Undo {
        table_new,
        ..Undo::default()
    };
    let mut tx = Transaction::new();
    tx.add_table(t, Some(TABLE_COMMENT));
    let forward = BaseChain::new(ChainType::Filter, Hook::Forward, 0).policy(ChainPolicy::Accept);
    let mut wanted = vec![Chain::base(FORWARD, forward), Chain::regular(ADMIN)];
    if iso.is_some() {
        wanted.extend([Chain::regular(STAGE_1), Chain::regular(STAGE_2)]);
    }
    for c in wanted {
        if !chains.iter().any(|n| n == c.name) {
            tx.add_chain(t, &c);
            undo.chains_new.push(c.name);
        }
    }
    let mut missing = |tx: &mut Transaction, s: Spec, first: bool| {
        if !has(&listed, &s) {
            match first {
                true => tx.insert_rule(t, s.chain, &s.rule),
                false => tx.add_rule(t, s.chain, &s.rule),
            };
            undo.rules.push(s);
        }
    };
    missing(&mut tx, admin_jump(), true);
    for ip in ips {
        for s in addr_rules(*ip, owner) {
            missing(&mut tx, s, false);
        }
    }
    for s in iso.map(isolation_rules).unwrap_or_default() {
        missing(&mut tx, s, true);
    }
    nl.nft_apply(tx).map_err(net_error)?;
    Ok(undo)
}

/// Remove what an ADD created.
pub fn undo(nl: &Netlink, u: &Undo) -> Result<(), Error> {
    let t = table();
    let mut tx = Transaction::new();
    if u.table_new {
        tx.delete_table(t);
        return nl.nft_apply(tx).map_err(net_error);
    }
    let listed = fw::find(nl, t, None, |_| true).map_err(fw_error)?;
    let mut gone: Vec<u64> = Vec::new();
    for s in &u.rules {
        if let Some(r) = listed
            .iter()
            .find(|r| r.chain == s.chain && r.is(&s.rule) && !gone.contains(&r.handle))
        {
            gone.push(r.handle);
            tx.delete_rule(t, &r.chain, r.handle);
        }
    }
    for c in &u.chains_new {
        tx.delete_chain(t, c);
    }
    nl.nft_apply(tx).map_err(net_error)
}

/// DEL: every rule commented `owner`.
pub fn del(nl: &Netlink, owner: &str) -> Result<(), cni_firewall::Error> {
    let t = table();
    let found = fw::find_by_comment(nl, t, Some(FORWARD), owner)?;
    fw::delete(nl, t, &found)
}

/// GC: the rules of network `net` whose comment is none of `keep`.
pub fn gc(nl: &Netlink, net: &str, keep: &[String]) -> Result<(), cni_firewall::Error> {
    let t = table();
    let prefix = network_prefix(net);
    let stale = fw::find(nl, t, Some(FORWARD), |r| {
        r.comment
            .as_deref()
            .is_some_and(|c| c.starts_with(&prefix) && !keep.iter().any(|k| k == c))
    })?;
    fw::delete(nl, t, &stale)
}

/// CHECK: every rule ADD makes.
pub fn check(
    nl: &Netlink,
    ips: &[IpAddr],
    owner: &str,
    iso: Option<&Isolation>,
) -> Result<(), Error> {
    let t = table();
    let listed = fw::find(nl, t, None, |_| true).map_err(fw_error)?;
    let mut all = vec![admin_jump()];
    for ip in ips {
        all.extend(addr_rules(*ip, owner));
    }
    all.extend(iso.map(isolation_rules).unwrap_or_default());
    match all.iter().find(|s| !has(&listed, s)) {
        Some(s) => Err(Error::internal(format!(
            "expected rule [{}] in chain {t} {} not found",
            s.text, s.chain
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_comments_fit() {
        assert_eq!(owner("n", "c1", "eth0"), "name: n if: eth0 id: c1");
        assert!(owner("n", "c1", "eth0").starts_with(&network_prefix("n")));
        assert_ne!(owner("n", "c1", "net1"), owner("n", "c1", "net2"));
        let long = "x".repeat(100);
        let o = owner(&long, &"a".repeat(64), "eth0");
        assert!(o.len() <= 128 && o.starts_with("name-sha512: "), "{o}");
        assert!(o.starts_with(&network_prefix(&long)));
        let o = owner("n", &"a".repeat(200), "eth0");
        assert!(o.len() <= 128 && o.starts_with("name: n sha512: "), "{o}");
    }

    #[test]
    fn rules_compile_in_inet() {
        let iso = Isolation {
            bridge: "cni0".into(),
            policy: Policy::Isolated,
        };
        let mut all = vec![admin_jump()];
        all.extend(addr_rules("10.240.0.2".parse().unwrap(), "o"));
        all.extend(addr_rules("fd40::2".parse().unwrap(), "o"));
        all.extend(isolation_rules(&iso));
        assert_eq!(all.len(), 9);
        for s in all {
            s.rule.compile(Family::Inet).unwrap();
        }
    }
}
