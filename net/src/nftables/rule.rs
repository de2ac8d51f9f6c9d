//! Rules in a small typed vocabulary: the matches and statements the
//! suite's firewall rules use (ipmasq, MAC spoof check, portmap, firewall),
//! compiled to the expressions `nft` itself generates for the same text,
//! implicit protocol checks included. So what we create lists exactly as
//! what `nft -f` creates, and the reference's plugins find it.

use std::net::IpAddr;

use ipnetwork::IpNetwork;

use super::Family;
use super::expr::{self, Expr, Verdict};

/// Equal or not equal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
}

impl Cmp {
    fn op(self) -> u32 {
        match self {
            Cmp::Eq => expr::CMP_EQ,
            Cmp::Ne => expr::CMP_NEQ,
        }
    }
}

/// A transport protocol with ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L4Proto {
    Tcp,
    Udp,
    Sctp,
}

impl L4Proto {
    fn number(self) -> u8 {
        match self {
            L4Proto::Tcp => 6,
            L4Proto::Udp => 17,
            L4Proto::Sctp => 132,
        }
    }
}

/// Connection tracking states (`ct state a,b`), combined with `|`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CtState(pub u32);

impl CtState {
    pub const INVALID: CtState = CtState(1);
    pub const ESTABLISHED: CtState = CtState(2);
    pub const RELATED: CtState = CtState(4);
    pub const NEW: CtState = CtState(8);
    pub const UNTRACKED: CtState = CtState(64);
}

impl std::ops::BitOr for CtState {
    type Output = CtState;
    fn bitor(self, o: CtState) -> CtState {
        CtState(self.0 | o.0)
    }
}

/// One condition of a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Match {
    /// `ip saddr` / `ip6 saddr` (the family of the address): the address,
    /// or a prefix when shorter than the address.
    Saddr(Cmp, IpNetwork),
    /// `ip daddr` / `ip6 daddr`.
    Daddr(Cmp, IpNetwork),
    /// `iifname "<name>"`.
    Iifname(Cmp, String),
    /// `oifname "<name>"`.
    Oifname(Cmp, String),
    /// `ether saddr <mac>`.
    EtherSaddr(Cmp, [u8; 6]),
    /// `tcp|udp|sctp dport <port>`.
    Dport(L4Proto, u16),
    /// `fib daddr type local`.
    FibDaddrLocal,
    /// `ct state <states>`: any of them.
    CtState(CtState),
}

/// What a rule does when it matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Accept,
    Drop,
    Return,
    Jump(String),
    Goto(String),
    /// `masquerade`.
    Masquerade,
    /// `dnat to <addr>[:<port>]` (`[<addr>]:<port>` for IPv6).
    Dnat {
        addr: IpAddr,
        port: Option<u16>,
    },
}

/// A rule: conditions in order, an optional action, an optional comment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rule {
    pub matches: Vec<Match>,
    pub action: Option<Action>,
    pub comment: Option<String>,
}

impl Rule {
    pub fn new() -> Rule {
        Rule::default()
    }

    fn with(mut self, m: Match) -> Rule {
        self.matches.push(m);
        self
    }

    fn then(mut self, a: Action) -> Rule {
        self.action = Some(a);
        self
    }

    pub fn saddr(self, net: impl Into<IpNetwork>) -> Rule {
        self.with(Match::Saddr(Cmp::Eq, net.into()))
    }

    pub fn saddr_not(self, net: impl Into<IpNetwork>) -> Rule {
        self.with(Match::Saddr(Cmp::Ne, net.into()))
    }

    pub fn daddr(self, net: impl Into<IpNetwork>) -> Rule {
        self.with(Match::Daddr(Cmp::Eq, net.into()))
    }

    pub fn daddr_not(self, net: impl Into<IpNetwork>) -> Rule {
        self.with(Match::Daddr(Cmp::Ne, net.into()))
    }

    pub fn iifname(self, name: &str) -> Rule {
        self.with(Match::Iifname(Cmp::Eq, name.into()))
    }

    pub fn iifname_not(self, name: &str) -> Rule {
        self.with(Match::Iifname(Cmp::Ne, name.into()))
    }

    pub fn oifname(self, name: &str) -> Rule {
        self.with(Match::Oifname(Cmp::Eq, name.into()))
    }

    pub fn oifname_not(self, name: &str) -> Rule {
        self.with(Match::Oifname(Cmp::Ne, name.into()))
    }

    pub fn ether_saddr(self, mac: [u8; 6]) -> Rule {
        self.with(Match::EtherSaddr(Cmp::Eq, mac))
    }

    pub fn ether_saddr_not(self, mac: [u8; 6]) -> Rule {
        self.with(Match::EtherSaddr(Cmp::Ne, mac))
    }

    pub fn dport(self, proto: L4Proto, port: u16) -> Rule {
        self.with(Match::Dport(proto, port))
    }

    pub fn fib_daddr_local(self) -> Rule {
        self.with(Match::FibDaddrLocal)
    }

    pub fn ct_state(self, states: CtState) -> Rule {
        self.with(Match::CtState(states))
    }

    pub fn accept(self) -> Rule {
        self.then(Action::Accept)
    }

    pub fn drop(self) -> Rule {
        self.then(Action::Drop)
    }

    /// `return`.
    pub fn ret(self) -> Rule {
        self.then(Action::Return)
    }

    pub fn jump(self, chain: &str) -> Rule {
        self.then(Action::Jump(chain.into()))
    }

    pub fn goto(self, chain: &str) -> Rule {
        self.then(Action::Goto(chain.into()))
    }

    pub fn masquerade(self) -> Rule {
        self.then(Action::Masquerade)
    }

    pub fn dnat(self, addr: IpAddr, port: Option<u16>) -> Rule {
        self.then(Action::Dnat { addr, port })
    }

    pub fn comment(mut self, text: &str) -> Rule {
        self.comment = Some(text.into());
        self
    }

    /// The expressions `nft` generates for this rule in a table of
    /// `family`, or why the rule cannot be expressed there.
    pub fn compile(&self, family: Family) -> Result<Vec<Expr>, String> {
        let mut c = Compiler {
            family,
            out: Vec::new(),
            l3: None,
            l4: None,
        };
        for m in &self.matches {
            c.condition(m)?;
        }
        if let Some(a) = &self.action {
            c.action(a)?;
        }
        Ok(c.out)
    }
}

struct Compiler {
    family: Family,
    out: Vec<Expr>,
    /// The network protocol a dependency was emitted for (IPv6 when true).
    l3: Option<bool>,
    l4: Option<L4Proto>,
}

const IFNAMSIZ: usize = 16;

impl Compiler {
    fn condition(&mut self, m: &Match) -> Result<(), String> {
        match m {
            Match::Saddr(op, net) => self.address(*op, net, 12, 8),
            Match::Daddr(op, net) => self.address(*op, net, 16, 24),
            Match::Iifname(op, name) => self.ifname(expr::META_IIFNAME, *op, name),
            Match::Oifname(op, name) => self.ifname(expr::META_OIFNAME, *op, name),
            Match::EtherSaddr(op, mac) => {
                if !matches!(self.family, Family::Bridge) {
                    // nft checks the link type before reading a MAC.
                    self.meta_is(expr::META_IIFTYPE, &1u16.to_ne_bytes());
                }
                self.load(expr::BASE_LL, 6, 6);
                self.cmp(*op, mac.to_vec());
                Ok(())
            }
            Match::Dport(proto, port) => {
                match self.l4 {
                    Some(p) if p == *proto => {}
                    Some(_) => return Err("conflicting transport protocols".into()),
                    None => {
                        self.meta_is(expr::META_L4PROTO, &[proto.number()]);
                        self.l4 = Some(*proto);
                    }
                }
                self.load(expr::BASE_TRANSPORT, 2, 2);
                self.cmp(Cmp::Eq, port.to_be_bytes().to_vec());
                Ok(())
            }
            Match::FibDaddrLocal => {
                if self.family == Family::Bridge {
                    return Err("fib in a bridge table".into());
                }
                self.out.push(Expr::Fib {
                    flags: expr::FIB_F_DADDR,
                    result: expr::FIB_RESULT_ADDRTYPE,
                    dreg: expr::REG_1,
                });
                // RTN_LOCAL, in host order like every fib result.
                self.cmp(Cmp::Eq, 2u32.to_ne_bytes().to_vec());
                Ok(())
            }
            Match::CtState(s) => {
                self.out.push(Expr::Ct {
                    key: expr::CT_STATE,
                    dreg: expr::REG_1,
                });
                self.out.push(Expr::Bitwise {
                    sreg: expr::REG_1,
                    dreg: expr::REG_1,
                    len: 4,
                    mask: s.0.to_ne_bytes().to_vec(),
                    xor: vec![0; 4],
                });
                self.cmp(Cmp::Ne, vec![0; 4]);
                Ok(())
            }
        }
    }

    /// `ip|ip6 saddr|daddr <net>` with the header offsets for each family.
    fn address(&mut self, op: Cmp, net: &IpNetwork, off4: u32, off6: u32) -> Result<(), String> {
        let v6 = net.is_ipv6();
        self.network_dependency(v6)?;
        let offset = if v6 { off6 } else { off4 };
        let bytes = crate::addr::ip_bytes(&net.network());
        let full = bytes.len();
        let plen = usize::from(net.prefix());
        if plen == full * 8 {
            self.load(expr::BASE_NETWORK, offset, full as u32);
            self.cmp(op, bytes);
        } else if plen % 8 == 0 && plen > 0 {
            // A byte-aligned prefix: compare only its bytes.
            self.load(expr::BASE_NETWORK, offset, (plen / 8) as u32);
            self.cmp(op, bytes[..plen / 8].to_vec());
        } else {
            self.load(expr::BASE_NETWORK, offset, full as u32);
            let mask = crate::addr::ip_bytes(&net.mask());
            self.out.push(Expr::Bitwise {
                sreg: expr::REG_1,
                dreg: expr::REG_1,
                len: full as u32,
                mask,
                xor: vec![0; full],
            });
            self.cmp(op, bytes);
        }
        Ok(())
    }

    /// The check nft puts before the first IPv4/IPv6 header match, so the
    /// header is only read from packets that have it.
    fn network_dependency(&mut self, v6: bool) -> Result<(), String> {
        let conflict = || "conflicting network protocols in one rule".to_string();
        match (self.l3, self.family) {
            (Some(seen), _) if seen == v6 => Ok(()),
            (Some(_), _) => Err(conflict()),
            (None, Family::Ip) | (None, Family::Ip6) => {
                if v6 != matches!(self.family, Family::Ip6) {
                    return Err(format!(
                        "an {} address in a table of family {}",
                        if v6 { "IPv6" } else { "IPv4" },
                        self.family
                    ));
                }
                self.l3 = Some(v6);
                Ok(())
            }
            (None, Family::Inet) => {
                self.meta_is(expr::META_NFPROTO, &[if v6 { 10 } else { 2 }]);
                self.l3 = Some(v6);
                Ok(())
            }
            (None, Family::Bridge) => {
                let ethertype: u16 = if v6 { 0x86dd } else { 0x0800 };
                self.meta_is(expr::META_PROTOCOL, &ethertype.to_be_bytes());
                self.l3 = Some(v6);
                Ok(())
            }
        }
    }

    fn ifname(&mut self, key: u32, op: Cmp, name: &str) -> Result<(), String> {
        if name.is_empty() || name.len() >= IFNAMSIZ || name.contains('\0') {
            return Err(format!("invalid interface name {name:?}"));
        }
        self.out.push(Expr::Meta {
            key,
            dreg: expr::REG_1,
        });
        let mut data = name.as_bytes().to_vec();
        data.resize(IFNAMSIZ, 0);
        self.cmp(op, data);
        Ok(())
    }

    fn action(&mut self, a: &Action) -> Result<(), String> {
        let v = match a {
            Action::Accept => Verdict::Accept,
            Action::Drop => Verdict::Drop,
            Action::Return => Verdict::Return,
            Action::Jump(c) => Verdict::Jump(chain_name(c)?),
            Action::Goto(c) => Verdict::Goto(chain_name(c)?),
            Action::Masquerade => {
                if self.family == Family::Bridge {
                    return Err("masquerade in a bridge table".into());
                }
                self.out.push(Expr::Masq { flags: 0 });
                return Ok(());
            }
            Action::Dnat { addr, port } => {
                self.dnat(*addr, *port)?;
                return Ok(());
            }
        };
        self.out.push(Expr::Verdict(v));
        Ok(())
    }

    fn dnat(&mut self, addr: IpAddr, port: Option<u16>) -> Result<(), String> {
        let v6 = addr.is_ipv6();
        let wrong = match self.family {
            Family::Ip => v6,
            Family::Ip6 => !v6,
            Family::Inet => false,
            Family::Bridge => return Err("dnat in a bridge table".into()),
        };
        if wrong {
            return Err(format!(
                "dnat to {addr} in a table of family {}",
                self.family
            ));
        }
        self.out.push(Expr::Immediate {
            dreg: expr::REG_1,
            data: crate::addr::ip_bytes(&addr),
        });
        if let Some(p) = port {
            self.out.push(Expr::Immediate {
                dreg: expr::REG_2,
                data: p.to_be_bytes().to_vec(),
            });
        }
        self.out.push(Expr::Nat {
            kind: expr::NAT_DNAT,
            family: if v6 { 10 } else { 2 },
            addr: Some(expr::REG_1),
            proto: port.map(|_| expr::REG_2),
            flags: 0,
        });
        Ok(())
    }

    /// `meta <key> == <value>`.
    fn meta_is(&mut self, key: u32, value: &[u8]) {
        self.out.push(Expr::Meta {
            key,
            dreg: expr::REG_1,
        });
        self.cmp(Cmp::Eq, value.to_vec());
    }

    fn load(&mut self, base: u32, offset: u32, len: u32) {
        self.out.push(Expr::Payload {
            base,
            offset,
            len,
            dreg: expr::REG_1,
        });
    }

    fn cmp(&mut self, op: Cmp, data: Vec<u8>) {
        self.out.push(Expr::Cmp {
            sreg: expr::REG_1,
            op: op.op(),
            data,
        });
    }
}

/// A jump or goto target: a valid chain name.
fn chain_name(c: &str) -> Result<String, String> {
    super::check_name("chain", c)?;
    Ok(c.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> IpNetwork {
        s.parse().unwrap()
    }

    #[test]
    fn inet_address_matches_carry_one_nfproto_check() {
        let r = Rule::new()
            .saddr(net("10.240.0.2/32"))
            .daddr_not(net("10.240.0.0/24"))
            .masquerade();
        let e = r.compile(Family::Inet).unwrap();
        assert_eq!(
            e[0],
            Expr::Meta {
                key: expr::META_NFPROTO,
                dreg: 1
            }
        );
        assert_eq!(
            e.iter().filter(|x| matches!(x, Expr::Meta { .. })).count(),
            1
        );
        // /24 is byte aligned: three bytes compared, no mask.
        assert_eq!(
            e[4],
            Expr::Payload {
                base: expr::BASE_NETWORK,
                offset: 16,
                len: 3,
                dreg: 1
            }
        );
        assert_eq!(e.last(), Some(&Expr::Masq { flags: 0 }));
        assert_eq!(r.compile(Family::Ip).unwrap().len(), 5);
    }

    #[test]
    fn unaligned_and_empty_prefixes_are_masked() {
        let e = Rule::new()
            .daddr(net("224.0.0.0/4"))
            .compile(Family::Ip)
            .unwrap();
        assert!(matches!(&e[1], Expr::Bitwise { mask, .. } if mask == &[0xf0, 0, 0, 0]));
        let e = Rule::new().saddr(net("::/0")).compile(Family::Ip6).unwrap();
        assert!(matches!(&e[1], Expr::Bitwise { mask, .. } if mask == &[0; 16]));
    }

    #[test]
    fn impossible_rules_are_refused() {
        let v6 = net("fd40::1/128");
        assert!(Rule::new().saddr(v6).compile(Family::Ip).is_err());
        assert!(
            Rule::new()
                .saddr(net("10.0.0.1/32"))
                .daddr(v6)
                .compile(Family::Inet)
                .is_err()
        );
        assert!(
            Rule::new()
                .dport(L4Proto::Tcp, 1)
                .dport(L4Proto::Udp, 1)
                .compile(Family::Ip)
                .is_err()
        );
        assert!(
            Rule::new()
                .iifname("0123456789abcdef")
                .compile(Family::Ip)
                .is_err()
        );
        assert!(Rule::new().iifname("").compile(Family::Ip).is_err());
        assert!(Rule::new().jump("").compile(Family::Ip).is_err());
        let to = "10.240.0.3".parse().unwrap();
        assert!(Rule::new().dnat(to, None).compile(Family::Ip6).is_err());
        assert!(Rule::new().masquerade().compile(Family::Bridge).is_err());
        assert!(
            Rule::new()
                .fib_daddr_local()
                .compile(Family::Bridge)
                .is_err()
        );
        assert!(
            Rule::new()
                .dnat(to, Some(80))
                .compile(Family::Bridge)
                .is_err()
        );
    }
}
