//! Whole D-Bus messages: the 16-byte fixed header, the header fields
//! (`a(yv)`) padded to 8 bytes, and the body, whose signature is a header
//! field.

use super::wire::{Reader, Value, WireError, Writer};

pub const METHOD_CALL: u8 = 1;
pub const METHOD_RETURN: u8 = 2;
pub const ERROR: u8 = 3;
pub const SIGNAL: u8 = 4;

/// The largest message we read; ours are a few hundred bytes. The
/// specification allows 128 MiB, which we refuse to buffer (decoded, a
/// message takes tens of times its size): a connection skips larger ones
/// (a peer on the bus may send us any signal it likes).
pub const MAX_MESSAGE: usize = 256 << 10;

const FIELD_PATH: u8 = 1;
const FIELD_INTERFACE: u8 = 2;
const FIELD_MEMBER: u8 = 3;
const FIELD_ERROR_NAME: u8 = 4;
const FIELD_REPLY_SERIAL: u8 = 5;
const FIELD_DESTINATION: u8 = 6;
const FIELD_SENDER: u8 = 7;
const FIELD_SIGNATURE: u8 = 8;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Message {
    pub kind: u8,
    pub flags: u8,
    pub serial: u32,
    pub path: Option<String>,
    pub interface: Option<String>,
    pub member: Option<String>,
    pub error_name: Option<String>,
    pub reply_serial: Option<u32>,
    pub destination: Option<String>,
    pub sender: Option<String>,
    pub body: Vec<Value>,
}

type Res<T> = std::result::Result<T, WireError>;

fn bad<T>(what: impl Into<String>) -> Res<T> {
    Err(WireError(what.into()))
}

impl Message {
    /// A method call; the serial is set when it is sent.
    pub fn call(dest: &str, path: &str, iface: &str, member: &str, args: Vec<Value>) -> Message {
        Message {
            kind: METHOD_CALL,
            path: Some(path.to_string()),
            interface: Some(iface.to_string()),
            member: Some(member.to_string()),
            destination: Some(dest.to_string()),
            body: args,
            ..Message::default()
        }
    }

    /// The signature of the body.
    pub fn signature(&self) -> String {
        self.body.iter().map(Value::signature).collect()
    }

    /// The little-endian bytes of the message.
    pub fn encode(&self) -> Res<Vec<u8>> {
        let mut body = Writer::new();
        self.body.iter().try_for_each(|v| body.value(v))?;
        let body_len = u32::try_from(body.buf.len()).or_else(|_| bad("body too long"))?;
        let mut fields = Vec::new();
        let mut field = |code: u8, v: Option<Value>| {
            if let Some(v) = v {
                fields.push(Value::Struct(vec![
                    Value::Byte(code),
                    Value::Variant(Box::new(v)),
                ]));
            }
        };
        field(FIELD_PATH, self.path.clone().map(Value::Path));
        field(FIELD_INTERFACE, self.interface.clone().map(Value::Str));
        field(FIELD_MEMBER, self.member.clone().map(Value::Str));
        field(FIELD_ERROR_NAME, self.error_name.clone().map(Value::Str));
        field(FIELD_REPLY_SERIAL, self.reply_serial.map(Value::U32));
        field(FIELD_DESTINATION, self.destination.clone().map(Value::Str));
        field(FIELD_SENDER, self.sender.clone().map(Value::Str));
        let sig = self.signature();
        field(
            FIELD_SIGNATURE,
            (!sig.is_empty()).then_some(Value::Sig(sig)),
        );

        let mut w = Writer::new();
        w.buf.extend_from_slice(&[b'l', self.kind, self.flags, 1]);
        w.buf.extend_from_slice(&body_len.to_le_bytes());
        w.buf.extend_from_slice(&self.serial.to_le_bytes());
        w.value(&Value::Array("(yv)".into(), fields))?;
        while !w.buf.len().is_multiple_of(8) {
            w.buf.push(0);
        }
        w.buf.extend_from_slice(&body.buf);
        Ok(w.buf)
    }

    /// A message from exactly the bytes of one (see [`frame_len`]).
    pub fn decode(buf: &[u8]) -> Res<Message> {
        let (big_endian, fields_len, body_len) = fixed_header(buf)?;
        let header_end = (16 + fields_len).next_multiple_of(8);
        if buf.len() != header_end + body_len {
            return bad("message length does not match its header");
        }
        let mut m = Message {
            kind: buf[1],
            flags: buf[2],
            serial: read_u32(&buf[8..12], big_endian),
            ..Message::default()
        };
        if m.serial == 0 {
            return bad("message has serial 0");
        }
        let mut r = Reader::new(&buf[..16 + fields_len], big_endian);
        r.skip(12);
        let mut sig = String::new();
        if let [Value::Array(_, fields)] = r.values("a(yv)")?.as_slice() {
            for f in fields {
                m.field(f, &mut sig)?;
            }
        }
        m.body = Reader::new(&buf[header_end..], big_endian).values(&sig)?;
        m.check_required()?;
        Ok(m)
    }

    fn field(&mut self, f: &Value, sig: &mut String) -> Res<()> {
        let Value::Struct(kv) = f else {
            return Ok(());
        };
        let [Value::Byte(code), Value::Variant(v)] = kv.as_slice() else {
            return Ok(());
        };
        let s = |v: &Value| match v {
            Value::Str(s) => Ok(Some(s.clone())),
            _ => bad(format!("header field {code} has the wrong type")),
        };
        match (*code, &**v) {
            (FIELD_PATH, Value::Path(p)) => self.path = Some(p.clone()),
            (FIELD_INTERFACE, v) => self.interface = s(v)?,
            (FIELD_MEMBER, v) => self.member = s(v)?,
            (FIELD_ERROR_NAME, v) => self.error_name = s(v)?,
            (FIELD_REPLY_SERIAL, Value::U32(n)) => self.reply_serial = Some(*n),
            (FIELD_DESTINATION, v) => self.destination = s(v)?,
            (FIELD_SENDER, v) => self.sender = s(v)?,
            (FIELD_SIGNATURE, Value::Sig(g)) => sig.clone_from(g),
            (FIELD_PATH | FIELD_REPLY_SERIAL | FIELD_SIGNATURE, _) => {
                return bad(format!("header field {code} has the wrong type"));
            }
            // Unknown fields are ignored, as the specification asks.
            _ => {}
        }
        Ok(())
    }

    fn check_required(&self) -> Res<()> {
        let ok = match self.kind {
            METHOD_CALL => self.path.is_some() && self.member.is_some(),
            METHOD_RETURN => self.reply_serial.is_some(),
            ERROR => self.reply_serial.is_some() && self.error_name.is_some(),
            SIGNAL => self.path.is_some() && self.interface.is_some() && self.member.is_some(),
            _ => true,
        };
        match ok {
            true => Ok(()),
            false => bad(format!(
                "message of type {} lacks a required field",
                self.kind
            )),
        }
    }
}

fn read_u32(b: &[u8], big_endian: bool) -> u32 {
    let mut a = [0; 4];
    a.copy_from_slice(&b[..4]);
    match big_endian {
        true => u32::from_be_bytes(a),
        false => u32::from_le_bytes(a),
    }
}

/// Byte order, header fields length and body length from the first 16
/// bytes of `buf`, checked.
fn fixed_header(buf: &[u8]) -> Res<(bool, usize, usize)> {
    if buf.len() < 16 {
        return bad("message shorter than its fixed header");
    }
    let big_endian = match buf[0] {
        b'l' => false,
        b'B' => true,
        b => return bad(format!("unknown byte order {b:#04x}")),
    };
    if buf[3] != 1 {
        return bad(format!("unknown protocol version {}", buf[3]));
    }
    let body = read_u32(&buf[4..8], big_endian) as usize;
    let fields = read_u32(&buf[12..16], big_endian) as usize;
    if fields > MAX_MESSAGE || body > MAX_MESSAGE {
        return bad(TOO_LARGE);
    }
    Ok((big_endian, fields, body))
}

const TOO_LARGE: &str = "message larger than 256 KiB";

/// The length of the whole message that starts with these 16 bytes, when
/// it is not too large to read (a test's framing; a connection skips
/// larger ones, see [`declared_len`]).
#[cfg(test)]
pub fn frame_len(head: &[u8]) -> Res<usize> {
    match declared_len(head)? {
        len if len > MAX_MESSAGE => bad(TOO_LARGE),
        len => Ok(len),
    }
}

/// The length the 16 bytes of a fixed header give their message, however
/// large (to skip a message too large to read).
pub fn declared_len(head: &[u8]) -> Res<usize> {
    if head.len() < 16 {
        return bad("message shorter than its fixed header");
    }
    let mut fixed = [0u8; 16];
    fixed.copy_from_slice(&head[..16]);
    // Checked with empty lengths: only byte order and version matter.
    fixed[4..8].fill(0);
    fixed[12..16].fill(0);
    let (big_endian, _, _) = fixed_header(&fixed)?;
    let body = read_u32(&head[4..8], big_endian) as usize;
    let fields = read_u32(&head[12..16], big_endian) as usize;
    // Saturating: on a 32-bit target two u32 lengths overflow a usize.
    let header = 16usize
        .saturating_add(fields)
        .checked_next_multiple_of(8)
        .unwrap_or(usize::MAX);
    Ok(header.saturating_add(body))
}
