//! The IPv4 and UDP headers around a DHCP message, which a client
//! without an address writes and reads itself on a packet socket, and
//! the kernel filter that lets only DHCP replies reach that socket.

use std::net::Ipv4Addr;

use cni_net::packet::BpfInsn;

pub const CLIENT_PORT: u16 = 68;
pub const SERVER_PORT: u16 = 67;
const UDP: u8 = 17;

/// The one's complement sum of 16-bit words, folded.
fn checksum(parts: &[&[u8]]) -> u16 {
    let mut sum: u32 = 0;
    for part in parts {
        let mut chunks = part.chunks_exact(2);
        for c in &mut chunks {
            sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
        }
        if let [last] = chunks.remainder() {
            sum += u32::from(*last) << 8;
        }
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An IPv4 packet carrying `payload` in UDP from `src`:`sport` to
/// `dst`:`dport`, both checksums filled in.
pub fn udp_packet(src: Ipv4Addr, dst: Ipv4Addr, sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let udp_len = 8 + payload.len();
    let total = 20 + udp_len;
    let mut p = Vec::with_capacity(total);
    p.extend_from_slice(&[0x45, 0]);
    p.extend_from_slice(&(total as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0, 0, 0, 64, UDP, 0, 0]);
    p.extend_from_slice(&src.octets());
    p.extend_from_slice(&dst.octets());
    let ip_sum = checksum(&[&p[..20]]);
    p[10..12].copy_from_slice(&ip_sum.to_be_bytes());
    let mut udp = Vec::with_capacity(udp_len);
    udp.extend_from_slice(&sport.to_be_bytes());
    udp.extend_from_slice(&dport.to_be_bytes());
    udp.extend_from_slice(&(udp_len as u16).to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(payload);
    let pseudo = [
        &src.octets()[..],
        &dst.octets()[..],
        &[0, UDP],
        &(udp_len as u16).to_be_bytes()[..],
    ]
    .concat();
    let sum = match checksum(&[&pseudo, &udp]) {
        0 => 0xffff,
        s => s,
    };
    udp[6..8].copy_from_slice(&sum.to_be_bytes());
    p.extend_from_slice(&udp);
    p
}

/// A UDP datagram in an IPv4 packet.
#[derive(Debug, PartialEq, Eq)]
pub struct Udp<'a> {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub sport: u16,
    pub dport: u16,
    pub payload: &'a [u8],
}

/// The UDP datagram of an IPv4 packet, if it is one (unfragmented, with
/// a sound IP header). The UDP checksum is not checked: on veth and other
/// virtual links the kernel hands packet sockets frames whose checksum
/// was left for hardware that does not exist.
pub fn parse_udp(p: &[u8]) -> Option<Udp<'_>> {
    if p.len() < 20 || p[0] >> 4 != 4 {
        return None;
    }
    let ihl = usize::from(p[0] & 0xf) * 4;
    let total = usize::from(u16::from_be_bytes([p[2], p[3]]));
    if ihl < 20 || total < ihl + 8 || total > p.len() || p[9] != UDP {
        return None;
    }
    if u16::from_be_bytes([p[6], p[7]]) & 0x3fff != 0 || checksum(&[&p[..ihl]]) != 0 {
        return None;
    }
    let u = &p[ihl..total];
    let len = usize::from(u16::from_be_bytes([u[4], u[5]]));
    if len < 8 || len > u.len() {
        return None;
    }
    Some(Udp {
        src: Ipv4Addr::new(p[12], p[13], p[14], p[15]),
        dst: Ipv4Addr::new(p[16], p[17], p[18], p[19]),
        sport: u16::from_be_bytes([u[0], u[1]]),
        dport: u16::from_be_bytes([u[2], u[3]]),
        payload: &u[8..len],
    })
}

/// A classic BPF program for a `SOCK_DGRAM` packet socket (offsets from
/// the IP header) passing only unfragmented UDP to `port`.
pub fn udp_port_filter(port: u16) -> [BpfInsn; 9] {
    let i = |code, jt, jf, k| BpfInsn { code, jt, jf, k };
    [
        i(0x30, 0, 0, 9),               // ldb [9]: protocol
        i(0x15, 0, 6, u32::from(UDP)),  // jeq #17, else drop
        i(0x28, 0, 0, 6),               // ldh [6]: flags, fragment offset
        i(0x45, 4, 0, 0x1fff),          // jset #0x1fff: a fragment, drop
        i(0xb1, 0, 0, 0),               // ldxb 4*([0]&0xf): header length
        i(0x48, 0, 0, 2),               // ldh [x+2]: destination port
        i(0x15, 0, 1, u32::from(port)), // jeq #port, else drop
        i(0x06, 0, 0, 0x0004_0000),     // ret: the whole packet
        i(0x06, 0, 0, 0),               // ret: drop
    ]
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn checksums_verify() {
        let p = udp_packet(
            Ipv4Addr::UNSPECIFIED,
            Ipv4Addr::BROADCAST,
            CLIENT_PORT,
            SERVER_PORT,
            b"hello",
        );
        assert_eq!(checksum(&[&p[..20]]), 0);
        let pseudo = [&p[12..20], &[0, UDP][..], &p[24..26]].concat();
        assert_eq!(checksum(&[&pseudo, &p[20..]]), 0);
    }

    proptest! {
        #[test]
        fn packets_parse_back(src in any::<[u8; 4]>(), dst in any::<[u8; 4]>(), sp in any::<u16>(), dp in any::<u16>(),
                              payload in prop::collection::vec(any::<u8>(), 0..600)) {
            let (src, dst) = (Ipv4Addr::from(src), Ipv4Addr::from(dst));
            let p = udp_packet(src, dst, sp, dp, &payload);
            prop_assert_eq!(parse_udp(&p), Some(Udp { src, dst, sport: sp, dport: dp, payload: &payload }));
        }

        #[test]
        fn garbage_never_panics(b in prop::collection::vec(any::<u8>(), 0..80)) {
            let _ = parse_udp(&b);
        }
    }
}
