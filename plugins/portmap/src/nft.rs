//! The nftables backend, object for object the reference's v1.9.0+ layout
//! (`portmap_nftables.go`), over `cni-firewall`'s netlink transport:
//!
//! - tables `ip cni_hostport` and `ip6 cni_hostport` (comment `CNI
//!   portmap plugin`), regular chains `hostports`, `hostip_hostports`
//!   (kept so rules of v1.6.0–v1.8.x are found) and `hostports_all`
//!   (`jump hostip_hostports`, `jump hostports`), base chains
//!   `prerouting` and `output` (nat, priority -100) holding `<conditions>
//!   fib daddr type local jump hostports_all`, and `masquerading` (nat
//!   postrouting, priority 100) when `snat`;
//! - per mapping in `hostports`: `[ip daddr <hostIP>] <proto> dport <port>
//!   dnat to <ip>:<port>`; in `masquerading`, `ip saddr <ip> ip daddr <ip>
//!   masquerade` (hairpin; `0.0.0.0/0` with `masqAll`) and, IPv4 without
//!   `masqAll`, `ip saddr 127.0.0.1 ip daddr <ip> masquerade`: every rule
//!   commented with the bare container ID, so a Go v1.6+ DEL finds ours
//!   and ours finds the Go plugin's.
//!
//! One transaction per family at ADD, which flushes and rebuilds the base
//! chains as the reference does. Conditions are the reference's free-form
//! nft text; here they become typed matches, so only a subset is taken
//! ([`conditions`]) and anything else is refused before any change.

use std::net::IpAddr;

use cni_firewall::nft as fw;
use cni_net::IpNetwork;
use cni_net::Netlink;
use cni_net::nftables::expr::{self, Expr};
use cni_net::nftables::{
    BaseChain, Chain, ChainType, Cmp, Family, Hook, Match, Rule, RuleInfo, Table, Transaction,
};
use skel::Error;

use crate::config::{Config, Mapping};
use crate::conntrack::Target;

pub const TABLE_NAME: &str = "cni_hostport";
pub const TABLE_COMMENT: &str = "CNI portmap plugin";
pub const HOSTPORTS: &str = "hostports";
pub const HOSTIP_HOSTPORTS: &str = "hostip_hostports";
pub const HOSTPORTS_ALL: &str = "hostports_all";
pub const MASQUERADING: &str = "masquerading";
/// The chains holding per-container rules.
const RULE_CHAINS: [&str; 3] = [HOSTPORTS, HOSTIP_HOSTPORTS, MASQUERADING];

pub fn table(v6: bool) -> Table<'static> {
    Table::new(if v6 { Family::Ip6 } else { Family::Ip }, TABLE_NAME)
}

/// The rules of one container address: DNAT rules for `hostports`, then
/// masquerade rules for `masquerading`.
pub struct Rules {
    pub dnat: Vec<Rule>,
    pub masq: Vec<Rule>,
}

/// A single address as a match.
fn host(ip: IpAddr) -> IpNetwork {
    IpNetwork::from(ip)
}

/// The container's rules for address `addr` (the reference's order).
pub fn rules(conf: &Config, addr: &IpNetwork, cid: &str) -> Rules {
    let v6 = addr.is_ipv6();
    let ip = addr.ip();
    let dnat = conf
        .mappings
        .iter()
        .filter(|m| m.applies(v6))
        .map(|m| dnat_rule(m, ip, cid))
        .collect();
    let mut masq = Vec::new();
    if conf.snat {
        let src = if !conf.masq_all {
            host(ip)
        } else if v6 {
            IpNetwork::new(IpAddr::from([0u16; 8]), 0).unwrap_or(host(ip))
        } else {
            IpNetwork::new(IpAddr::from([0u8; 4]), 0).unwrap_or(host(ip))
        };
        masq.push(
            Rule::new()
                .saddr(src)
                .daddr(host(ip))
                .masquerade()
                .comment(cid),
        );
        if !v6 && !conf.masq_all {
            let lo = host(IpAddr::from([127, 0, 0, 1]));
            masq.push(
                Rule::new()
                    .saddr(lo)
                    .daddr(host(ip))
                    .masquerade()
                    .comment(cid),
            );
        }
    }
    Rules { dnat, masq }
}

fn dnat_rule(m: &Mapping, ip: IpAddr, cid: &str) -> Rule {
    let mut r = Rule::new();
    if let Some(h) = m.host_ip {
        r = r.daddr(host(h));
    }
    r.dport(m.proto, m.host_port)
        .dnat(ip, Some(m.container_port))
        .comment(cid)
}

fn base(name: &str, hook: Hook, priority: i32) -> Chain<'_> {
    Chain::base(name, BaseChain::new(ChainType::Nat, hook, priority))
}

/// The ADD transaction of one family (see the module overview).
pub fn setup_tx(conf: &Config, addr: &IpNetwork, cid: &str) -> Result<Transaction, Error> {
    let v6 = addr.is_ipv6();
    let t = table(v6);
    let conds = conditions(conf.conditions(v6), v6)?;
    let mut tx = Transaction::new();
    tx.add_table(t, Some(TABLE_COMMENT));
    tx.add_chain(t, &Chain::regular(HOSTPORTS));
    tx.add_chain(t, &Chain::regular(HOSTIP_HOSTPORTS));
    tx.add_chain(t, &Chain::regular(HOSTPORTS_ALL));
    tx.flush_chain(t, HOSTPORTS_ALL);
    tx.add_rule(t, HOSTPORTS_ALL, &Rule::new().jump(HOSTIP_HOSTPORTS));
    tx.add_rule(t, HOSTPORTS_ALL, &Rule::new().jump(HOSTPORTS));
    for (name, hook) in [("prerouting", Hook::Prerouting), ("output", Hook::Output)] {
        tx.add_chain(t, &base(name, hook, -100));
        tx.flush_chain(t, name);
        let entry = Rule {
            matches: conds.clone(),
            ..Rule::new()
        };
        tx.add_rule(t, name, &entry.fib_daddr_local().jump(HOSTPORTS_ALL));
    }
    if conf.snat {
        tx.add_chain(t, &base(MASQUERADING, Hook::Postrouting, 100));
    }
    let r = rules(conf, addr, cid);
    for rule in &r.dnat {
        tx.add_rule(t, HOSTPORTS, rule);
    }
    for rule in &r.masq {
        tx.add_rule(t, MASQUERADING, rule);
    }
    Ok(tx)
}

/// Install the rules of `addr`.
pub fn setup(nl: &Netlink, conf: &Config, addr: &IpNetwork, cid: &str) -> Result<(), Error> {
    let tx = setup_tx(conf, addr, cid)?;
    nl.nft_apply(tx).map_err(|e| {
        Error::internal(format!(
            "unable to set up nftables rules for port mappings: {e}"
        ))
    })
}

/// The per-container rules of one family commented `cid`.
pub fn find(nl: &Netlink, v6: bool, cid: &str) -> Result<Vec<RuleInfo>, cni_firewall::Error> {
    fw::find(nl, table(v6), None, |r| {
        RULE_CHAINS.contains(&r.chain.as_str()) && r.comment.as_deref() == Some(cid)
    })
}

/// Delete `rules` of one family (found with [`find`]).
pub fn delete(nl: &Netlink, v6: bool, rules: &[RuleInfo]) -> Result<(), cni_firewall::Error> {
    fw::delete(nl, table(v6), rules)
}

/// Which of `found` is one of `rules` (each listed rule matched once).
pub fn matching(found: &[RuleInfo], rules: &Rules) -> Vec<RuleInfo> {
    let mut want: Vec<&Rule> = rules.dnat.iter().chain(&rules.masq).collect();
    let mut out = Vec::new();
    for f in found {
        if let Some(i) = want.iter().position(|w| f.is(w)) {
            want.remove(i);
            out.push(f.clone());
        }
    }
    out
}

/// CHECK of one address: every rule of the container is there, exactly
/// (the reference only counts rules with the container's comment), in the
/// reference's words when one is missing.
pub fn check(nl: &Netlink, conf: &Config, addr: &IpNetwork, cid: &str) -> Result<(), Error> {
    let found = find(nl, addr.is_ipv6(), cid).map_err(|e| Error::internal(e.to_string()))?;
    let r = rules(conf, addr, cid);
    for (chain, want) in [(HOSTPORTS, &r.dnat), (MASQUERADING, &r.masq)] {
        let missing = want
            .iter()
            .any(|w| !found.iter().any(|f| f.chain == chain && f.is(w)));
        if missing {
            return Err(Error::internal(format!(
                "missing hostport rules in \"{chain}\" chain"
            )));
        }
    }
    Ok(())
}

/// The UDP DNAT targets of listed rules (for the conntrack flush).
pub fn udp_targets(rules: &[RuleInfo]) -> Vec<Target> {
    rules.iter().filter_map(target_of).collect()
}

/// `udp dport <p> dnat to <ip>:<port>` read back from a rule's expressions.
fn target_of(r: &RuleInfo) -> Option<Target> {
    let (mut udp, mut host_port, mut addr, mut port, mut nat) = (false, None, None, None, false);
    for w in r.exprs.windows(2) {
        match w {
            [Expr::Meta { key, .. }, Expr::Cmp { data, .. }] if *key == expr::META_L4PROTO => {
                udp = data.as_slice() == [17];
            }
            [
                Expr::Payload {
                    base,
                    offset: 2,
                    len: 2,
                    ..
                },
                Expr::Cmp { data, .. },
            ] if *base == expr::BASE_TRANSPORT => {
                host_port = Some(u16::from_be_bytes(data.get(..2)?.try_into().ok()?));
            }
            _ => {}
        }
    }
    for e in &r.exprs {
        match e {
            Expr::Immediate { dreg, data } if *dreg == expr::REG_1 => {
                addr = match data.len() {
                    4 => Some(IpAddr::from(<[u8; 4]>::try_from(&data[..]).ok()?)),
                    16 => Some(IpAddr::from(<[u8; 16]>::try_from(&data[..]).ok()?)),
                    _ => None,
                };
            }
            Expr::Immediate { dreg, data } if *dreg == expr::REG_2 => {
                port = Some(u16::from_be_bytes(data.get(..2)?.try_into().ok()?));
            }
            Expr::Nat { kind, .. } if *kind == expr::NAT_DNAT => nat = true,
            _ => {}
        }
    }
    (udp && nat).then_some(())?;
    Some(Target {
        host_port: host_port?,
        addr: addr?,
        port: port?,
    })
}

/// nftables conditions (`conditionsV4`/`conditionsV6`, the tokens joined
/// by spaces) as typed matches. Taken: `ip saddr|daddr [!=] <address or
/// prefix>` (`ip6` for IPv6), `iifname|oifname [!=] <name>` (quoted or
/// not), in any number and order. Anything else is refused with the word
/// that was not understood.
pub fn conditions(conds: &[String], v6: bool) -> Result<Vec<Match>, Error> {
    let text = conds.join(" ");
    let words: Vec<&str> = text.split_whitespace().collect();
    let bad = |why: String| {
        Error::internal(format!(
            "unsupported nftables condition in conditionsV{} {}: {why} (supported: {} saddr|daddr [!=] <prefix>, iifname|oifname [!=] <name>)",
            if v6 { 6 } else { 4 },
            skel::gojson::quote(&text),
            if v6 { "ip6" } else { "ip" },
        ))
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let field = words[i];
        let (is_addr, key) = match field {
            "ip" | "ip6" => {
                if (field == "ip6") != v6 {
                    return Err(bad(format!(
                        "{field} in an IPv{} table",
                        if v6 { 6 } else { 4 }
                    )));
                }
                i += 1;
                (
                    true,
                    *words
                        .get(i)
                        .ok_or_else(|| bad(format!("{field} without a field")))?,
                )
            }
            "iifname" | "oifname" => (false, field),
            other => return Err(bad(format!("{other:?} not understood"))),
        };
        i += 1;
        let mut op = Cmp::Eq;
        if words.get(i) == Some(&"!=") {
            op = Cmp::Ne;
            i += 1;
        } else if words.get(i) == Some(&"==") {
            i += 1;
        }
        let value = *words
            .get(i)
            .ok_or_else(|| bad(format!("{key} without a value")))?;
        i += 1;
        out.push(if is_addr {
            let net: IpNetwork = value
                .parse()
                .map_err(|_| bad(format!("{value:?} is not an address or prefix")))?;
            if net.is_ipv6() != v6 {
                return Err(bad(format!("{value} is of the other family")));
            }
            let net = IpNetwork::new(net.network(), net.prefix()).unwrap_or(net);
            match key {
                "saddr" => Match::Saddr(op, net),
                "daddr" => Match::Daddr(op, net),
                other => return Err(bad(format!("{other:?} not understood"))),
            }
        } else {
            let name = value.trim_matches('"').to_string();
            let probe = Rule {
                matches: vec![Match::Iifname(op, name.clone())],
                ..Rule::new()
            };
            probe.compile(Family::Ip).map_err(bad)?;
            if key == "iifname" {
                Match::Iifname(op, name)
            } else {
                Match::Oifname(op, name)
            }
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cni_net::nftables::L4Proto;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn conditions_subset() {
        let c = conditions(&words("ip saddr != 192.0.2.0/24 iifname \"eth0\""), false).unwrap();
        assert_eq!(
            c,
            vec![
                Match::Saddr(Cmp::Ne, "192.0.2.0/24".parse().unwrap()),
                Match::Iifname(Cmp::Eq, "eth0".into())
            ]
        );
        let c = conditions(&["ip6 daddr fd40::1".to_string()], true).unwrap();
        assert_eq!(
            c,
            vec![Match::Daddr(Cmp::Eq, "fd40::1/128".parse().unwrap())]
        );
        // Host bits of a prefix are dropped, as nft does.
        let c = conditions(&words("ip daddr 10.0.0.7/8"), false).unwrap();
        assert_eq!(
            c,
            vec![Match::Daddr(Cmp::Eq, "10.0.0.0/8".parse().unwrap())]
        );
        assert!(conditions(&[], false).unwrap().is_empty());
        for (bad, v6) in [
            ("ip saddr { 10.0.0.1, 10.0.0.2 }", false),
            ("ip6 saddr fd40::1", false),
            ("ip saddr fd40::1", false),
            ("ip saddr", false),
            ("tcp dport 80", false),
            ("meta mark 0x1", false),
            ("iifname 0123456789abcdefg", false),
            ("ip protocol tcp", false),
        ] {
            let e = conditions(&words(bad), v6).unwrap_err();
            assert!(
                e.msg
                    .starts_with("unsupported nftables condition in conditionsV4"),
                "{bad}: {}",
                e.msg
            );
        }
    }

    #[test]
    fn dnat_targets_read_back() {
        let ip: IpAddr = "10.240.0.3".parse().unwrap();
        let m = Mapping {
            host_port: 5353,
            container_port: 53,
            protocol: "udp".into(),
            proto: L4Proto::Udp,
            host_ip: Some("10.240.0.1".parse().unwrap()),
            family: Some(false),
        };
        let r = dnat_rule(&m, ip, "c1");
        let info = RuleInfo {
            family: Family::Ip,
            table: TABLE_NAME.into(),
            chain: HOSTPORTS.into(),
            handle: 1,
            comment: Some("c1".into()),
            exprs: r.compile(Family::Ip).unwrap(),
        };
        assert!(info.is(&r));
        assert_eq!(
            target_of(&info),
            Some(Target {
                host_port: 5353,
                addr: ip,
                port: 53
            })
        );
        let tcp = Mapping {
            proto: L4Proto::Tcp,
            ..m
        };
        let info = RuleInfo {
            exprs: dnat_rule(&tcp, ip, "c1").compile(Family::Ip).unwrap(),
            ..info
        };
        assert_eq!(target_of(&info), None);
    }
}
