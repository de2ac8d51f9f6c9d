//! The netlink message codec: requests built attribute by attribute
//! ([`Msg`]), and the parsers of what the kernel answers (the messages of a
//! datagram, the attributes of a body, integers and strings). Written byte
//! by byte instead of through `netlink-packet-route` (see [`crate::netlink`]);
//! the tests decode what we build with that crate.

pub const NLM_F_REQUEST: u16 = 0x01;
pub const NLM_F_ACK: u16 = 0x04;
pub(super) const NLM_F_DUMP_INTR: u16 = 0x10;
pub const NLM_F_DUMP: u16 = 0x300;
pub const NLM_F_EXCL: u16 = 0x200;
pub const NLM_F_CREATE: u16 = 0x400;

pub(super) const NLMSG_NOOP: u16 = 1;
pub(super) const NLMSG_ERROR: u16 = 2;
pub(super) const NLMSG_DONE: u16 = 3;
pub(super) const NLMSG_OVERRUN: u16 = 4;
pub(super) const HEADER_LEN: usize = 16;

pub const NLA_F_NESTED: u16 = 0x8000;
const NLA_TYPE_MASK: u16 = 0x3fff;

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

fn pad(buf: &mut Vec<u8>) {
    buf.resize(align4(buf.len()), 0);
}

/// A request being built: netlink header, family header, attributes.
/// Public for netlink families the plugins speak themselves (nftables).
#[derive(Debug, Clone)]
pub struct Msg {
    pub(super) buf: Vec<u8>,
}

impl Msg {
    /// A message of type `kind` with `flags` (added to `NLM_F_REQUEST`, and
    /// `NLM_F_ACK` unless it is a dump) and the family header `header`.
    pub fn new(kind: u16, flags: u16, header: &[u8]) -> Msg {
        let flags = if flags & NLM_F_DUMP == NLM_F_DUMP {
            flags
        } else {
            NLM_F_ACK | flags
        };
        Msg::with_flags(kind, flags, header)
    }

    /// A message with exactly `flags` besides `NLM_F_REQUEST` (no implied
    /// `NLM_F_ACK`): the parts of a batch that need no answer of their own.
    pub fn with_flags(kind: u16, flags: u16, header: &[u8]) -> Msg {
        let flags = NLM_F_REQUEST | flags;
        let mut buf = Vec::with_capacity(128);
        buf.extend_from_slice(&[0; 4]);
        buf.extend_from_slice(&kind.to_ne_bytes());
        buf.extend_from_slice(&flags.to_ne_bytes());
        buf.extend_from_slice(&[0; 8]);
        buf.extend_from_slice(header);
        pad(&mut buf);
        Msg { buf }
    }

    /// The message after its netlink header: family header and attributes.
    pub fn body(&self) -> &[u8] {
        &self.buf[HEADER_LEN..]
    }

    /// The whole message as sent (length and sequence number are filled in
    /// when it is sent).
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    pub fn kind(&self) -> u16 {
        u16::from_ne_bytes([self.buf[4], self.buf[5]])
    }

    pub fn flags(&self) -> u16 {
        u16::from_ne_bytes([self.buf[6], self.buf[7]])
    }

    /// Add `flags` to the message's flags.
    pub fn add_flags(&mut self, flags: u16) {
        let f = self.flags() | flags;
        self.buf[6..8].copy_from_slice(&f.to_ne_bytes());
    }

    /// Fill in the length and sequence number.
    pub(super) fn seal(&mut self, seq: u32) {
        let len = u32::try_from(self.buf.len()).unwrap_or(u32::MAX);
        self.buf[0..4].copy_from_slice(&len.to_ne_bytes());
        self.buf[8..12].copy_from_slice(&seq.to_ne_bytes());
    }

    pub fn attr(&mut self, kind: u16, data: &[u8]) -> &mut Msg {
        // Attribute payloads here are a few bytes; never near u16::MAX.
        let len = u16::try_from(4 + data.len()).unwrap_or(u16::MAX);
        self.buf.extend_from_slice(&len.to_ne_bytes());
        self.buf.extend_from_slice(&kind.to_ne_bytes());
        self.buf.extend_from_slice(data);
        pad(&mut self.buf);
        self
    }

    pub fn u32(&mut self, kind: u16, v: u32) -> &mut Msg {
        self.attr(kind, &v.to_ne_bytes())
    }

    pub fn u8(&mut self, kind: u16, v: u8) -> &mut Msg {
        self.attr(kind, &[v])
    }

    /// A big-endian 32-bit attribute (nf_tables' integers).
    pub fn be32(&mut self, kind: u16, v: u32) -> &mut Msg {
        self.attr(kind, &v.to_be_bytes())
    }

    /// A big-endian 64-bit attribute (nf_tables' handles).
    pub fn be64(&mut self, kind: u16, v: u64) -> &mut Msg {
        self.attr(kind, &v.to_be_bytes())
    }

    /// A NUL-terminated string attribute.
    pub fn str(&mut self, kind: u16, s: &str) -> &mut Msg {
        let mut data = Vec::with_capacity(s.len() + 1);
        data.extend_from_slice(s.as_bytes());
        data.push(0);
        self.attr(kind, &data)
    }

    /// A nested attribute whose content `f` writes.
    pub fn nest(&mut self, kind: u16, f: impl FnOnce(&mut Msg)) -> &mut Msg {
        let start = self.buf.len();
        self.buf.extend_from_slice(&[0, 0]);
        self.buf.extend_from_slice(&kind.to_ne_bytes());
        f(self);
        let len = u16::try_from(self.buf.len() - start).unwrap_or(u16::MAX);
        self.buf[start..start + 2].copy_from_slice(&len.to_ne_bytes());
        self
    }

    /// Raw bytes inside a nest (the veth peer's `ifinfomsg`).
    pub fn raw(&mut self, data: &[u8]) -> &mut Msg {
        self.buf.extend_from_slice(data);
        pad(&mut self.buf);
        self
    }
}

/// The attributes of a message body, as (type, payload) pairs.
pub fn attrs(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        if b.len() < 4 {
            return None;
        }
        let len = usize::from(u16::from_ne_bytes([b[0], b[1]]));
        if len < 4 || len > b.len() {
            return None;
        }
        let kind = u16::from_ne_bytes([b[2], b[3]]) & NLA_TYPE_MASK;
        let data = &b[4..len];
        b = &b[align4(len).min(b.len())..];
        Some((kind, data))
    })
}

pub fn u32_of(d: &[u8]) -> Option<u32> {
    Some(u32::from_ne_bytes(d.get(..4)?.try_into().ok()?))
}

pub(crate) fn u16_of(d: &[u8]) -> Option<u16> {
    Some(u16::from_ne_bytes(d.get(..2)?.try_into().ok()?))
}

pub fn be32_of(d: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(d.get(..4)?.try_into().ok()?))
}

pub fn be64_of(d: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(d.get(..8)?.try_into().ok()?))
}

/// A string attribute without its terminating NUL.
pub fn str_of(d: &[u8]) -> String {
    let end = d.iter().position(|b| *b == 0).unwrap_or(d.len());
    String::from_utf8_lossy(&d[..end]).into_owned()
}

/// One message of a datagram, as [`messages`] splits it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Message<'a> {
    pub kind: u16,
    pub flags: u16,
    pub seq: u32,
    /// The sender's port id: 0 for the kernel's answers, the committing
    /// socket's for nf_tables' notifications.
    pub port: u32,
    pub body: &'a [u8],
}

/// The messages of one datagram.
pub(crate) fn messages(mut data: &[u8]) -> impl Iterator<Item = Message<'_>> {
    std::iter::from_fn(move || {
        if data.len() < HEADER_LEN {
            return None;
        }
        let len = u32_of(data)? as usize;
        if len < HEADER_LEN || len > data.len() {
            return None;
        }
        let kind = u16::from_ne_bytes([data[4], data[5]]);
        let flags = u16::from_ne_bytes([data[6], data[7]]);
        let seq = u32_of(&data[8..])?;
        let port = u32_of(&data[12..])?;
        let body = &data[HEADER_LEN..len];
        data = &data[align4(len).min(data.len())..];
        Some(Message {
            kind,
            flags,
            seq,
            port,
            body,
        })
    })
}

/// The error code leading an `NLMSG_ERROR` or `NLMSG_DONE` body.
pub(super) fn i32_of(body: &[u8]) -> i32 {
    body.get(..4)
        .map_or(0, |b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_padded_nested_attributes() {
        let mut m = Msg::new(16, NLM_F_CREATE, &[0; 16]);
        m.str(3, "eth0").nest(18, |m| {
            m.str(1, "veth");
        });
        let body = &m.buf[HEADER_LEN + 16..];
        let got: Vec<(u16, Vec<u8>)> = attrs(body).map(|(k, d)| (k, d.to_vec())).collect();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0], (3, b"eth0\0".to_vec()));
        assert_eq!(got[1].0, 18);
        let inner: Vec<(u16, &[u8])> = attrs(&got[1].1).collect();
        assert_eq!(inner, vec![(1, &b"veth\0"[..])]);
        assert_eq!(m.buf.len() % 4, 0);
        assert_eq!(m.flags(), NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE);
        let d = Msg::new(18, NLM_F_DUMP, &[0; 16]);
        assert_eq!(d.flags(), NLM_F_REQUEST | NLM_F_DUMP);
        let b = Msg::with_flags(0x10, 0, &[0; 4]);
        assert_eq!(b.flags(), NLM_F_REQUEST);
        let mut n = Msg::new(1, 0, &[]);
        n.be32(1, 0x0102_0304).be64(2, 7);
        let got: Vec<_> = attrs(n.body()).collect();
        assert_eq!(be32_of(got[0].1), Some(0x0102_0304));
        assert_eq!(got[0].1, &[1, 2, 3, 4]);
        assert_eq!(be64_of(got[1].1), Some(7));
    }

    #[test]
    fn attribute_parser_stops_at_garbage() {
        // Second attribute claims more bytes than there are.
        let b = [8, 0, 1, 0, 1, 2, 3, 4, 200, 0, 2, 0];
        let got: Vec<_> = attrs(&b).collect();
        assert_eq!(got, vec![(1, &[1u8, 2, 3, 4][..])]);
        assert_eq!(str_of(b"lo\0\0"), "lo");
        assert_eq!(u32_of(&[1, 0]), None);
    }
}
