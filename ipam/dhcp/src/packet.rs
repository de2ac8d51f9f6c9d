//! DHCP messages (RFC 2131, 2132): the fixed BOOTP header and the
//! options, encoded and parsed, and the options a lease is made of
//! (address, mask, routers, times, routes of RFC 3442 and option 33).

use std::net::Ipv4Addr;

/// Option codes used here.
pub mod opt {
    pub const PAD: u8 = 0;
    pub const SUBNET_MASK: u8 = 1;
    pub const ROUTER: u8 = 3;
    pub const DNS: u8 = 6;
    pub const HOST_NAME: u8 = 12;
    pub const DOMAIN_NAME: u8 = 15;
    pub const STATIC_ROUTE: u8 = 33;
    pub const REQUESTED_IP: u8 = 50;
    pub const LEASE_TIME: u8 = 51;
    pub const OVERLOAD: u8 = 52;
    pub const MESSAGE_TYPE: u8 = 53;
    pub const SERVER_ID: u8 = 54;
    pub const PARAMETER_LIST: u8 = 55;
    pub const MESSAGE: u8 = 56;
    pub const MAX_SIZE: u8 = 57;
    pub const RENEWAL_TIME: u8 = 58;
    pub const REBINDING_TIME: u8 = 59;
    pub const CLASS_ID: u8 = 60;
    pub const CLIENT_ID: u8 = 61;
    pub const USER_CLASS: u8 = 77;
    pub const CLASSLESS_ROUTE: u8 = 121;
    pub const END: u8 = 255;
}

/// Message types (option 53).
pub mod kind {
    pub const DISCOVER: u8 = 1;
    pub const OFFER: u8 = 2;
    pub const REQUEST: u8 = 3;
    pub const ACK: u8 = 5;
    pub const NAK: u8 = 6;
    pub const RELEASE: u8 = 7;
}

pub const BOOTREQUEST: u8 = 1;
pub const BOOTREPLY: u8 = 2;
const MAGIC: [u8; 4] = [99, 130, 83, 99];
/// The fixed header up to and including the magic cookie.
const HEADER: usize = 240;
/// BOOTP's minimum message size; some relays drop shorter ones.
const MIN_SIZE: usize = 300;
const FLAG_BROADCAST: u16 = 0x8000;

/// A DHCP message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub op: u8,
    pub xid: u32,
    pub secs: u16,
    /// The BROADCAST flag: the client asks for broadcast replies.
    pub broadcast: bool,
    pub ciaddr: Ipv4Addr,
    pub yiaddr: Ipv4Addr,
    pub siaddr: Ipv4Addr,
    pub giaddr: Ipv4Addr,
    pub chaddr: [u8; 6],
    /// Options in order, each code once (repeated instances are joined,
    /// RFC 3396).
    pub options: Vec<(u8, Vec<u8>)>,
}

impl Message {
    /// A client message of `kind`.
    pub fn request(kind: u8, xid: u32, chaddr: [u8; 6]) -> Message {
        Message {
            op: BOOTREQUEST,
            xid,
            secs: 0,
            broadcast: false,
            ciaddr: Ipv4Addr::UNSPECIFIED,
            yiaddr: Ipv4Addr::UNSPECIFIED,
            siaddr: Ipv4Addr::UNSPECIFIED,
            giaddr: Ipv4Addr::UNSPECIFIED,
            chaddr,
            options: vec![(opt::MESSAGE_TYPE, vec![kind])],
        }
    }

    pub fn get(&self, code: u8) -> Option<&[u8]> {
        self.options
            .iter()
            .find(|(c, _)| *c == code)
            .map(|(_, v)| v.as_slice())
    }

    /// Set option `code`, replacing an earlier value.
    pub fn set(&mut self, code: u8, value: &[u8]) {
        match self.options.iter_mut().find(|(c, _)| *c == code) {
            Some(slot) => slot.1 = value.to_vec(),
            None => self.options.push((code, value.to_vec())),
        }
    }

    pub fn kind(&self) -> Option<u8> {
        self.get(opt::MESSAGE_TYPE)
            .filter(|v| v.len() == 1)
            .map(|v| v[0])
    }

    pub fn ip_opt(&self, code: u8) -> Option<Ipv4Addr> {
        let v = self.get(code)?;
        (v.len() == 4).then(|| Ipv4Addr::new(v[0], v[1], v[2], v[3]))
    }

    pub fn u32_opt(&self, code: u8) -> Option<u32> {
        let v = self.get(code)?;
        (v.len() == 4).then(|| u32::from_be_bytes([v[0], v[1], v[2], v[3]]))
    }

    /// Option 3, in the server's order of preference.
    pub fn routers(&self) -> Vec<Ipv4Addr> {
        self.get(opt::ROUTER)
            .map(|v| {
                v.chunks_exact(4)
                    .map(|c| Ipv4Addr::new(c[0], c[1], c[2], c[3]))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The prefix length of option 1; `None` when absent or not a
    /// contiguous mask.
    pub fn prefix(&self) -> Option<u8> {
        let m = u32::from(self.ip_opt(opt::SUBNET_MASK)?);
        let ones = m.leading_ones();
        (m.checked_shl(ones).unwrap_or(0) == 0).then_some(ones as u8)
    }

    /// The wire form: header, magic cookie, options, END, padded to 300
    /// bytes. Values longer than 255 bytes are split into consecutive
    /// instances of the option (RFC 3396).
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; HEADER];
        b[0] = self.op;
        b[1] = 1; // Ethernet
        b[2] = 6;
        b[4..8].copy_from_slice(&self.xid.to_be_bytes());
        b[8..10].copy_from_slice(&self.secs.to_be_bytes());
        let flags = if self.broadcast { FLAG_BROADCAST } else { 0 };
        b[10..12].copy_from_slice(&flags.to_be_bytes());
        b[12..16].copy_from_slice(&self.ciaddr.octets());
        b[16..20].copy_from_slice(&self.yiaddr.octets());
        b[20..24].copy_from_slice(&self.siaddr.octets());
        b[24..28].copy_from_slice(&self.giaddr.octets());
        b[28..34].copy_from_slice(&self.chaddr);
        b[236..240].copy_from_slice(&MAGIC);
        for (code, value) in &self.options {
            if value.is_empty() {
                b.extend_from_slice(&[*code, 0]);
            }
            for chunk in value.chunks(255) {
                b.push(*code);
                b.push(chunk.len() as u8);
                b.extend_from_slice(chunk);
            }
        }
        b.push(opt::END);
        if b.len() < MIN_SIZE {
            b.resize(MIN_SIZE, opt::PAD);
        }
        b
    }

    /// Parse a message. Options in `file` and `sname` are read when
    /// option 52 says they hold some.
    pub fn parse(b: &[u8]) -> Result<Message, String> {
        if b.len() < HEADER {
            return Err(format!("a DHCP message of {} bytes", b.len()));
        }
        if b[236..240] != MAGIC {
            return Err("no DHCP magic cookie".into());
        }
        if b[1] != 1 || b[2] != 6 {
            return Err(format!("hardware type {} length {}", b[1], b[2]));
        }
        let ip = |o: usize| Ipv4Addr::new(b[o], b[o + 1], b[o + 2], b[o + 3]);
        let mut chaddr = [0u8; 6];
        chaddr.copy_from_slice(&b[28..34]);
        let mut options = Vec::new();
        parse_options(&b[HEADER..], &mut options)?;
        let overload = options
            .iter()
            .find(|(c, _)| *c == opt::OVERLOAD)
            .and_then(|(_, v)| v.first().copied())
            .unwrap_or(0);
        if overload & 1 != 0 {
            parse_options(&b[108..236], &mut options)?;
        }
        if overload & 2 != 0 {
            parse_options(&b[44..108], &mut options)?;
        }
        Ok(Message {
            op: b[0],
            xid: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
            secs: u16::from_be_bytes([b[8], b[9]]),
            broadcast: u16::from_be_bytes([b[10], b[11]]) & FLAG_BROADCAST != 0,
            ciaddr: ip(12),
            yiaddr: ip(16),
            siaddr: ip(20),
            giaddr: ip(24),
            chaddr,
            options,
        })
    }
}

/// Options up to END (or the end of the area), repeated codes joined.
fn parse_options(mut b: &[u8], out: &mut Vec<(u8, Vec<u8>)>) -> Result<(), String> {
    while let Some((&code, rest)) = b.split_first() {
        match code {
            opt::PAD => b = rest,
            opt::END => return Ok(()),
            _ => {
                let (&len, rest) = rest
                    .split_first()
                    .ok_or_else(|| format!("option {code} without length"))?;
                let len = usize::from(len);
                if rest.len() < len {
                    return Err(format!(
                        "option {code} of {len} bytes runs past the message"
                    ));
                }
                let (value, rest) = rest.split_at(len);
                match out.iter_mut().find(|(c, _)| *c == code) {
                    Some(slot) => slot.1.extend_from_slice(value),
                    None => out.push((code, value.to_vec())),
                }
                b = rest;
            }
        }
    }
    Ok(())
}

/// A route a server gave: destination and router (0.0.0.0 for a
/// destination on the link).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    pub dst: Ipv4Addr,
    pub prefix: u8,
    pub router: Ipv4Addr,
}

/// Option 121 (RFC 3442): width, the significant bytes of the
/// destination, router; `None` when malformed (then the option is
/// ignored, as the reference's DHCP library does).
pub fn classless_routes(v: &[u8]) -> Option<Vec<Route>> {
    let mut out = Vec::new();
    let mut b = v;
    while let Some((&width, rest)) = b.split_first() {
        if width > 32 {
            return None;
        }
        let n = usize::from(width).div_ceil(8);
        if rest.len() < n + 4 {
            return None;
        }
        let mut dst = [0u8; 4];
        dst[..n].copy_from_slice(&rest[..n]);
        let mask = u32::MAX.checked_shl(32 - u32::from(width)).unwrap_or(0);
        let dst = Ipv4Addr::from(u32::from_be_bytes(dst) & mask);
        let r = &rest[n..n + 4];
        out.push(Route {
            dst,
            prefix: width,
            router: Ipv4Addr::new(r[0], r[1], r[2], r[3]),
        });
        b = &rest[n + 4..];
    }
    Some(out)
}

/// Option 33: (destination, router) pairs, each destination with its
/// classful mask; class D and E destinations have none and are skipped.
pub fn static_routes(v: &[u8]) -> Vec<Route> {
    v.chunks_exact(8)
        .filter_map(|c| {
            let dst = Ipv4Addr::new(c[0], c[1], c[2], c[3]);
            let prefix = match c[0] {
                0..=0x7f => 8,
                0x80..=0xbf => 16,
                0xc0..=0xdf => 24,
                _ => return None,
            };
            Some(Route {
                dst,
                prefix,
                router: Ipv4Addr::new(c[4], c[5], c[6], c[7]),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn ip(s: &str) -> Ipv4Addr {
        s.parse().unwrap()
    }

    #[test]
    fn a_message_round_trips_and_is_padded() {
        let mut m = Message::request(kind::DISCOVER, 0xdead_beef, [2, 0, 0, 0, 0, 1]);
        m.broadcast = true;
        m.set(opt::CLIENT_ID, b"\0ctrA/dnet/eth0");
        m.set(opt::PARAMETER_LIST, &[3, 1]);
        let b = m.encode();
        assert_eq!(b.len(), 300);
        assert_eq!(&b[4..8], &[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(&b[10..12], &[0x80, 0]);
        assert_eq!(&b[240..243], &[53, 1, 1]);
        assert_eq!(Message::parse(&b).unwrap(), m);
    }

    #[test]
    fn long_and_repeated_options_are_split_and_joined() {
        let mut m = Message::request(kind::REQUEST, 1, [0; 6]);
        let long: Vec<u8> = (0..600u32).map(|i| i as u8).collect();
        m.set(opt::CLASSLESS_ROUTE, &long);
        let b = m.encode();
        assert_eq!(
            Message::parse(&b).unwrap().get(opt::CLASSLESS_ROUTE),
            Some(&long[..])
        );
    }

    #[test]
    fn overloaded_file_and_sname_hold_options() {
        let mut m = Message::request(kind::ACK, 7, [0; 6]);
        m.op = BOOTREPLY;
        m.set(opt::OVERLOAD, &[3]);
        let mut b = m.encode();
        // file: the router; sname: the lease time.
        b[108..114].copy_from_slice(&[opt::ROUTER, 4, 10, 240, 0, 1]);
        b[114] = opt::END;
        b[44..50].copy_from_slice(&[opt::LEASE_TIME, 4, 0, 0, 0, 120]);
        b[50] = opt::END;
        let p = Message::parse(&b).unwrap();
        assert_eq!(p.routers(), vec![ip("10.240.0.1")]);
        assert_eq!(p.u32_opt(opt::LEASE_TIME), Some(120));
    }

    #[test]
    fn malformed_messages_are_refused() {
        assert!(Message::parse(&[0u8; 100]).is_err());
        let mut b = Message::request(kind::ACK, 1, [0; 6]).encode();
        b[236] = 0;
        assert!(Message::parse(&b).is_err());
        let mut b = Message::request(kind::ACK, 1, [0; 6]).encode();
        b.truncate(243);
        b.extend_from_slice(&[opt::ROUTER, 8, 1, 2]);
        assert!(Message::parse(&b).is_err());
    }

    #[test]
    fn masks_must_be_contiguous() {
        let mut m = Message::request(kind::ACK, 1, [0; 6]);
        m.set(opt::SUBNET_MASK, &[255, 255, 240, 0]);
        assert_eq!(m.prefix(), Some(20));
        m.set(opt::SUBNET_MASK, &[255, 0, 255, 0]);
        assert_eq!(m.prefix(), None);
        m.set(opt::SUBNET_MASK, &[0, 0, 0, 0]);
        assert_eq!(m.prefix(), Some(0));
    }

    #[test]
    fn classless_routes_of_rfc_3442() {
        // RFC 3442's examples: 0/0 via 10.0.0.1, 10.17.0.0/16 via
        // 10.0.0.1, 10.27.129.0/24 on the link.
        let v = [
            0, 10, 0, 0, 1, //
            16, 10, 17, 10, 0, 0, 1, //
            24, 10, 27, 129, 0, 0, 0, 0,
        ];
        let r = classless_routes(&v).unwrap();
        assert_eq!(
            r,
            vec![
                Route {
                    dst: ip("0.0.0.0"),
                    prefix: 0,
                    router: ip("10.0.0.1")
                },
                Route {
                    dst: ip("10.17.0.0"),
                    prefix: 16,
                    router: ip("10.0.0.1")
                },
                Route {
                    dst: ip("10.27.129.0"),
                    prefix: 24,
                    router: ip("0.0.0.0")
                },
            ]
        );
        assert_eq!(classless_routes(&[33, 1, 2, 3, 4, 5, 6, 7, 8]), None);
        assert_eq!(classless_routes(&[24, 10, 27]), None);
    }

    #[test]
    fn static_routes_are_classful() {
        let v = [
            10, 1, 2, 3, 10, 0, 0, 1, 172, 16, 0, 0, 10, 0, 0, 1, 224, 0, 0, 0, 1, 1, 1, 1,
        ];
        let r = static_routes(&v);
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].dst, r[0].prefix), (ip("10.1.2.3"), 8));
        assert_eq!((r[1].dst, r[1].prefix), (ip("172.16.0.0"), 16));
    }

    fn encode_121(routes: &[Route]) -> Vec<u8> {
        let mut v = Vec::new();
        for r in routes {
            v.push(r.prefix);
            let n = usize::from(r.prefix).div_ceil(8);
            v.extend_from_slice(&r.dst.octets()[..n]);
            v.extend_from_slice(&r.router.octets());
        }
        v
    }

    proptest! {
        /// Any list of routes in RFC 3442 form parses back (destinations
        /// reduced to their prefix).
        #[test]
        fn classless_routes_round_trip(
            routes in prop::collection::vec((any::<[u8; 4]>(), 0u8..=32, any::<[u8; 4]>()), 0..8)
        ) {
            let routes: Vec<Route> = routes.into_iter().map(|(d, p, r)| {
                let mask = u32::MAX.checked_shl(32 - u32::from(p)).unwrap_or(0);
                Route { dst: Ipv4Addr::from(u32::from_be_bytes(d) & mask), prefix: p, router: Ipv4Addr::from(r) }
            }).collect();
            prop_assert_eq!(classless_routes(&encode_121(&routes)), Some(routes));
        }

        /// Parsing arbitrary bytes never panics; what parses re-encodes to
        /// something that parses to the same message.
        #[test]
        fn parse_is_total_and_stable(tail in prop::collection::vec(any::<u8>(), 0..120)) {
            let mut b = Message::request(kind::OFFER, 9, [1; 6]).encode();
            b.truncate(240);
            b.extend_from_slice(&tail);
            if let Ok(m) = Message::parse(&b) {
                let again = Message::parse(&m.encode()).unwrap();
                prop_assert_eq!(again.options.iter().filter(|(c, _)| *c != opt::OVERLOAD).count(),
                    m.options.iter().filter(|(c, _)| *c != opt::OVERLOAD).count());
            }
            let _ = classless_routes(&tail);
            let _ = static_routes(&tail);
        }
    }
}
