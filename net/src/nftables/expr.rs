//! nf_tables expressions as the kernel sees them (`payload`, `cmp`,
//! `immediate`, ...): the low-level form [`crate::nftables::Rule`] compiles
//! to and rule listings decode into, so a rule read back from the kernel
//! can be compared with the one we would write.
//!
//! Registers and integers follow the kernel's netlink ABI: register 0 is
//! the verdict, 1 and 2 the first 128-bit data registers; attribute
//! integers are big-endian, register contents are raw bytes.

use crate::netlink::{Msg, NLA_F_NESTED, attrs, be32_of, str_of};

const NFTA_LIST_ELEM: u16 = 1;
const NFTA_EXPR_NAME: u16 = 1;
const NFTA_EXPR_DATA: u16 = 2;
const NFTA_DATA_VALUE: u16 = 1;
const NFTA_DATA_VERDICT: u16 = 2;
const NFTA_VERDICT_CODE: u16 = 1;
const NFTA_VERDICT_CHAIN: u16 = 2;

/// The verdict register.
pub const REG_VERDICT: u32 = 0;
/// The first data register (128 bits).
pub const REG_1: u32 = 1;
/// The second data register.
pub const REG_2: u32 = 2;

/// `NFT_PAYLOAD_*_HEADER`.
pub const BASE_LL: u32 = 0;
pub const BASE_NETWORK: u32 = 1;
pub const BASE_TRANSPORT: u32 = 2;

/// `NFT_META_*` keys.
pub const META_PROTOCOL: u32 = 1;
pub const META_IIFNAME: u32 = 6;
pub const META_OIFNAME: u32 = 7;
pub const META_IIFTYPE: u32 = 8;
pub const META_NFPROTO: u32 = 15;
pub const META_L4PROTO: u32 = 16;

/// `NFT_CT_STATE`.
pub const CT_STATE: u32 = 0;

/// `NFT_FIB_RESULT_ADDRTYPE` and `NFTA_FIB_F_DADDR`.
pub const FIB_RESULT_ADDRTYPE: u32 = 3;
pub const FIB_F_DADDR: u32 = 2;

/// `NFT_CMP_*`.
pub const CMP_EQ: u32 = 0;
pub const CMP_NEQ: u32 = 1;

/// `NFT_NAT_SNAT`, `NFT_NAT_DNAT`.
pub const NAT_SNAT: u32 = 0;
pub const NAT_DNAT: u32 = 1;
/// `NF_NAT_RANGE_MAP_IPS`, `NF_NAT_RANGE_PROTO_SPECIFIED`: implied by the
/// address and port registers, so not kept in [`Expr::Nat::flags`].
const NAT_MAP_IPS: u32 = 1;
const NAT_PROTO_SPECIFIED: u32 = 2;

/// A verdict, the value of the verdict register.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Accept,
    Drop,
    Continue,
    Return,
    Jump(String),
    Goto(String),
}

impl Verdict {
    fn code(&self) -> i32 {
        match self {
            Verdict::Drop => 0,
            Verdict::Accept => 1,
            Verdict::Continue => -1,
            Verdict::Jump(_) => -3,
            Verdict::Goto(_) => -4,
            Verdict::Return => -5,
        }
    }

    fn decode(d: &[u8]) -> Option<Verdict> {
        let mut code = None;
        let mut chain = None;
        for (k, v) in attrs(d) {
            match k {
                NFTA_VERDICT_CODE => code = be32_of(v).map(|c| c as i32),
                NFTA_VERDICT_CHAIN => chain = Some(str_of(v)),
                _ => {}
            }
        }
        Some(match code? {
            0 => Verdict::Drop,
            1 => Verdict::Accept,
            -1 => Verdict::Continue,
            -3 => Verdict::Jump(chain?),
            -4 => Verdict::Goto(chain?),
            -5 => Verdict::Return,
            _ => return None,
        })
    }
}

/// One expression of a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    /// `meta load <key> => reg <dreg>`.
    Meta { key: u32, dreg: u32 },
    /// `payload load <len>b @ <base> header + <offset> => reg <dreg>`.
    Payload {
        base: u32,
        offset: u32,
        len: u32,
        dreg: u32,
    },
    /// `cmp <op> reg <sreg> <data>`.
    Cmp { sreg: u32, op: u32, data: Vec<u8> },
    /// `bitwise reg <dreg> = (reg <sreg> & <mask>) ^ <xor>`.
    Bitwise {
        sreg: u32,
        dreg: u32,
        len: u32,
        mask: Vec<u8>,
        xor: Vec<u8>,
    },
    /// `ct load <key> => reg <dreg>`.
    Ct { key: u32, dreg: u32 },
    /// `fib <flags> <result> => reg <dreg>`.
    Fib { flags: u32, result: u32, dreg: u32 },
    /// `immediate reg <dreg> <data>`.
    Immediate { dreg: u32, data: Vec<u8> },
    /// `immediate reg 0 <verdict>`.
    Verdict(Verdict),
    /// `nat <kind> <family> addr_min reg <addr> proto_min reg <proto>`;
    /// `flags` beyond those the registers imply.
    Nat {
        kind: u32,
        family: u32,
        addr: Option<u32>,
        proto: Option<u32>,
        flags: u32,
    },
    /// `masq`.
    Masq { flags: u32 },
    /// An expression this crate does not model: its name and attributes.
    Other { name: String, data: Vec<u8> },
}

impl Expr {
    /// The kernel's name of the expression type.
    pub fn name(&self) -> &str {
        match self {
            Expr::Meta { .. } => "meta",
            Expr::Payload { .. } => "payload",
            Expr::Cmp { .. } => "cmp",
            Expr::Bitwise { .. } => "bitwise",
            Expr::Ct { .. } => "ct",
            Expr::Fib { .. } => "fib",
            Expr::Immediate { .. } | Expr::Verdict(_) => "immediate",
            Expr::Nat { .. } => "nat",
            Expr::Masq { .. } => "masq",
            Expr::Other { name, .. } => name,
        }
    }

    /// Append this expression as one `NFTA_LIST_ELEM` to `m`.
    pub(crate) fn encode(&self, m: &mut Msg) {
        m.nest(NFTA_LIST_ELEM | NLA_F_NESTED, |m| {
            m.str(NFTA_EXPR_NAME, self.name());
            m.nest(NFTA_EXPR_DATA | NLA_F_NESTED, |m| self.encode_data(m));
        });
    }

    fn encode_data(&self, m: &mut Msg) {
        match self {
            Expr::Meta { key, dreg } => {
                m.be32(2, *key).be32(1, *dreg);
            }
            Expr::Payload {
                base,
                offset,
                len,
                dreg,
            } => {
                m.be32(1, *dreg)
                    .be32(2, *base)
                    .be32(3, *offset)
                    .be32(4, *len);
            }
            Expr::Cmp { sreg, op, data } => {
                m.be32(1, *sreg).be32(2, *op);
                value(m, 3, data);
            }
            Expr::Bitwise {
                sreg,
                dreg,
                len,
                mask,
                xor,
            } => {
                m.be32(1, *sreg).be32(2, *dreg).be32(3, *len);
                value(m, 4, mask);
                value(m, 5, xor);
            }
            Expr::Ct { key, dreg } => {
                m.be32(2, *key).be32(1, *dreg);
            }
            Expr::Fib {
                flags,
                result,
                dreg,
            } => {
                m.be32(1, *dreg).be32(2, *result).be32(3, *flags);
            }
            Expr::Immediate { dreg, data } => {
                m.be32(1, *dreg);
                value(m, 2, data);
            }
            Expr::Verdict(v) => {
                m.be32(1, REG_VERDICT);
                m.nest(2 | NLA_F_NESTED, |m| {
                    m.nest(NFTA_DATA_VERDICT | NLA_F_NESTED, |m| {
                        m.be32(NFTA_VERDICT_CODE, v.code() as u32);
                        if let Verdict::Jump(c) | Verdict::Goto(c) = v {
                            m.str(NFTA_VERDICT_CHAIN, c);
                        }
                    });
                });
            }
            Expr::Nat {
                kind,
                family,
                addr,
                proto,
                flags,
            } => {
                m.be32(1, *kind).be32(2, *family);
                if let Some(r) = addr {
                    m.be32(3, *r);
                }
                if let Some(r) = proto {
                    m.be32(5, *r);
                }
                // nft states PROTO_SPECIFIED itself; MAP_IPS the kernel adds.
                let flags = flags
                    | if proto.is_some() {
                        NAT_PROTO_SPECIFIED
                    } else {
                        0
                    };
                if flags != 0 {
                    m.be32(7, flags);
                }
            }
            Expr::Masq { flags } => {
                if *flags != 0 {
                    m.be32(1, *flags);
                }
            }
            Expr::Other { data, .. } => {
                m.raw(data);
            }
        }
    }

    /// The expressions of an `NFTA_RULE_EXPRESSIONS` attribute. An element
    /// that cannot be read becomes [`Expr::Other`], so a listing never
    /// fails on an expression it does not know.
    pub(crate) fn decode_list(d: &[u8]) -> Vec<Expr> {
        attrs(d)
            .filter(|(k, _)| *k == NFTA_LIST_ELEM)
            .map(|(_, elem)| Expr::decode(elem))
            .collect()
    }

    fn decode(elem: &[u8]) -> Expr {
        let mut name = String::new();
        let mut data: &[u8] = &[];
        for (k, v) in attrs(elem) {
            match k {
                NFTA_EXPR_NAME => name = str_of(v),
                NFTA_EXPR_DATA => data = v,
                _ => {}
            }
        }
        Expr::decode_data(&name, data).unwrap_or_else(|| Expr::Other {
            name,
            data: data.to_vec(),
        })
    }

    fn decode_data(name: &str, d: &[u8]) -> Option<Expr> {
        let a = Attrs::new(d);
        Some(match name {
            "meta" if a.has(3) => return None,
            "meta" => Expr::Meta {
                key: a.be32(2)?,
                dreg: a.be32(1)?,
            },
            "payload" if a.has(5) => return None,
            "payload" => Expr::Payload {
                dreg: a.be32(1)?,
                base: a.be32(2)?,
                offset: a.be32(3)?,
                len: a.be32(4)?,
            },
            "cmp" => Expr::Cmp {
                sreg: a.be32(1)?,
                op: a.be32(2)?,
                data: a.value(3)?,
            },
            // Only the boolean form (`& mask ^ xor`, op 0 or absent).
            "bitwise" if a.be32(6).unwrap_or(0) != 0 => return None,
            "bitwise" => Expr::Bitwise {
                sreg: a.be32(1)?,
                dreg: a.be32(2)?,
                len: a.be32(3)?,
                mask: a.value(4)?,
                xor: a.value(5)?,
            },
            "ct" if a.has(3) || a.has(4) => return None,
            "ct" => Expr::Ct {
                key: a.be32(2)?,
                dreg: a.be32(1)?,
            },
            "fib" => Expr::Fib {
                dreg: a.be32(1)?,
                result: a.be32(2)?,
                flags: a.be32(3)?,
            },
            "immediate" => {
                let dreg = a.be32(1)?;
                let data = a.get(2)?;
                match attrs(data).next()? {
                    (NFTA_DATA_VERDICT, v) if dreg == REG_VERDICT => {
                        Expr::Verdict(Verdict::decode(v)?)
                    }
                    (NFTA_DATA_VALUE, v) if dreg != REG_VERDICT => Expr::Immediate {
                        dreg,
                        data: v.to_vec(),
                    },
                    _ => return None,
                }
            }
            "nat" => {
                let addr = a.be32(3);
                let proto = a.be32(5);
                // The kernel lists a range's maximum even when it equals
                // the minimum; anything else is a range we do not model.
                if a.be32(4).is_some_and(|r| Some(r) != addr)
                    || a.be32(6).is_some_and(|r| Some(r) != proto)
                {
                    return None;
                }
                let mut flags = a.be32(7).unwrap_or(0);
                if addr.is_some() {
                    flags &= !NAT_MAP_IPS;
                }
                if proto.is_some() {
                    flags &= !NAT_PROTO_SPECIFIED;
                }
                Expr::Nat {
                    kind: a.be32(1)?,
                    family: a.be32(2)?,
                    addr,
                    proto,
                    flags,
                }
            }
            "masq" if a.has(2) => return None,
            "masq" => Expr::Masq {
                flags: a.be32(1).unwrap_or(0),
            },
            _ => return None,
        })
    }
}

/// `attr { NFTA_DATA_VALUE <bytes> }`.
fn value(m: &mut Msg, attr: u16, data: &[u8]) {
    m.nest(attr | NLA_F_NESTED, |m| {
        m.attr(NFTA_DATA_VALUE, data);
    });
}

/// The attributes of one expression, looked up by type.
struct Attrs<'a>(Vec<(u16, &'a [u8])>);

impl<'a> Attrs<'a> {
    fn new(d: &'a [u8]) -> Attrs<'a> {
        Attrs(attrs(d).collect())
    }

    fn get(&self, k: u16) -> Option<&'a [u8]> {
        self.0.iter().find(|(t, _)| *t == k).map(|(_, v)| *v)
    }

    fn has(&self, k: u16) -> bool {
        self.get(k).is_some()
    }

    fn be32(&self, k: u16) -> Option<u32> {
        be32_of(self.get(k)?)
    }

    /// The bytes of a `{ NFTA_DATA_VALUE }` nest.
    fn value(&self, k: u16) -> Option<Vec<u8>> {
        attrs(self.get(k)?)
            .find(|(t, _)| *t == NFTA_DATA_VALUE)
            .map(|(_, v)| v.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(e: &Expr) -> Vec<Expr> {
        let mut m = Msg::new(0, 0, &[]);
        e.encode(&mut m);
        Expr::decode_list(m.body())
    }

    #[test]
    fn every_kind_round_trips() {
        let all = [
            Expr::Meta {
                key: META_NFPROTO,
                dreg: REG_1,
            },
            Expr::Payload {
                base: BASE_NETWORK,
                offset: 16,
                len: 4,
                dreg: REG_1,
            },
            Expr::Cmp {
                sreg: REG_1,
                op: CMP_NEQ,
                data: vec![10, 240, 0],
            },
            Expr::Bitwise {
                sreg: REG_1,
                dreg: REG_1,
                len: 4,
                mask: vec![0xf0, 0, 0, 0],
                xor: vec![0; 4],
            },
            Expr::Ct {
                key: CT_STATE,
                dreg: REG_1,
            },
            Expr::Fib {
                flags: FIB_F_DADDR,
                result: FIB_RESULT_ADDRTYPE,
                dreg: REG_1,
            },
            Expr::Immediate {
                dreg: REG_2,
                data: vec![0, 80],
            },
            Expr::Verdict(Verdict::Goto("masq_checks".into())),
            Expr::Verdict(Verdict::Return),
            Expr::Nat {
                kind: NAT_DNAT,
                family: 2,
                addr: Some(REG_1),
                proto: Some(REG_2),
                flags: 0,
            },
            Expr::Masq { flags: 0 },
            Expr::Other {
                name: "counter".into(),
                data: vec![12, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            },
        ];
        for e in &all {
            assert_eq!(round_trip(e), vec![e.clone()], "{e:?}");
        }
    }

    #[test]
    fn nat_flags_implied_by_registers_are_sent_not_kept() {
        let e = Expr::Nat {
            kind: NAT_DNAT,
            family: 2,
            addr: Some(REG_1),
            proto: Some(REG_2),
            flags: 0,
        };
        let mut m = Msg::new(0, 0, &[]);
        e.encode(&mut m);
        let (_, elem) = attrs(m.body()).next().unwrap();
        let (_, data) = attrs(elem).nth(1).unwrap();
        let flags = attrs(data).find(|(k, _)| *k == 7).unwrap().1;
        assert_eq!(be32_of(flags), Some(NAT_PROTO_SPECIFIED));
    }
}
