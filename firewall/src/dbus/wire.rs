//! The D-Bus wire format: values by signature, and whole messages (fixed
//! header, header fields, body). We write little-endian; we read either
//! byte order, since the bus passes each sender's messages on unchanged.
//!
//! Decoding never panics and never allocates more than the input holds:
//! every length is checked against what is left before it is used, and
//! nesting is bounded as the specification bounds it (32 arrays, 32
//! structs).

use std::fmt;

/// A D-Bus value. Arrays carry their element signature, so an empty
/// array still has a type.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Byte(u8),
    Bool(bool),
    I16(i16),
    U16(u16),
    I32(i32),
    U32(u32),
    I64(i64),
    U64(u64),
    Double(f64),
    Str(String),
    Path(String),
    Sig(String),
    UnixFd(u32),
    Array(String, Vec<Value>),
    Struct(Vec<Value>),
    DictEntry(Box<Value>, Box<Value>),
    Variant(Box<Value>),
}

impl Value {
    /// The value's signature (one complete type).
    pub fn signature(&self) -> String {
        let mut s = String::new();
        self.push_signature(&mut s);
        s
    }

    fn push_signature(&self, s: &mut String) {
        let c = match self {
            Value::Byte(_) => 'y',
            Value::Bool(_) => 'b',
            Value::I16(_) => 'n',
            Value::U16(_) => 'q',
            Value::I32(_) => 'i',
            Value::U32(_) => 'u',
            Value::I64(_) => 'x',
            Value::U64(_) => 't',
            Value::Double(_) => 'd',
            Value::Str(_) => 's',
            Value::Path(_) => 'o',
            Value::Sig(_) => 'g',
            Value::UnixFd(_) => 'h',
            Value::Variant(_) => 'v',
            Value::Array(elem, _) => {
                s.push('a');
                s.push_str(elem);
                return;
            }
            Value::Struct(fields) => {
                s.push('(');
                fields.iter().for_each(|f| f.push_signature(s));
                s.push(')');
                return;
            }
            Value::DictEntry(k, v) => {
                s.push('{');
                k.push_signature(s);
                v.push_signature(s);
                s.push('}');
                return;
            }
        };
        s.push(c);
    }
}

/// Why bytes are not a valid message or value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError(pub String);

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

type Res<T> = std::result::Result<T, WireError>;

fn bad<T>(what: impl Into<String>) -> Res<T> {
    Err(WireError(what.into()))
}

const MAX_DEPTH: u32 = 32;
/// Arrays may hold at most 64 MiB (the specification's limit).
const MAX_ARRAY: usize = 1 << 26;

/// The alignment of a type by its first signature character.
fn alignment(c: u8) -> usize {
    match c {
        b'n' | b'q' => 2,
        b'b' | b'i' | b'u' | b'h' | b's' | b'o' | b'a' => 4,
        b'x' | b't' | b'd' | b'(' | b'{' => 8,
        _ => 1,
    }
}

/// The length of the single complete type at the start of `sig`, after
/// checking it; `depth` counts the containers around it.
fn complete_type(sig: &[u8], arrays: u32, structs: u32) -> Res<usize> {
    let Some(&c) = sig.first() else {
        return bad("signature ends inside a type");
    };
    match c {
        b'y' | b'b' | b'n' | b'q' | b'i' | b'u' | b'x' | b't' | b'd' | b's' | b'o' | b'g'
        | b'h' | b'v' => Ok(1),
        b'a' if arrays >= MAX_DEPTH => bad("signature nests arrays too deeply"),
        b'a' if sig.get(1) == Some(&b'{') => {
            let (k, v) = dict_entry(&sig[1..], arrays + 1, structs)?;
            Ok(1 + k + v + 2)
        }
        b'a' => Ok(1 + complete_type(&sig[1..], arrays + 1, structs)?),
        b'(' if structs >= MAX_DEPTH => bad("signature nests structs too deeply"),
        b'(' => {
            let mut i = 1;
            while sig.get(i) != Some(&b')') {
                if i >= sig.len() {
                    return bad("signature has an unclosed struct");
                }
                i += complete_type(&sig[i..], arrays, structs + 1)?;
            }
            if i == 1 {
                return bad("signature has an empty struct");
            }
            Ok(i + 1)
        }
        _ => bad(format!(
            "signature has an unexpected character {:?}",
            c as char
        )),
    }
}

/// `{kv}` at the start of `sig` (after an `a`): the lengths of k and v.
fn dict_entry(sig: &[u8], arrays: u32, structs: u32) -> Res<(usize, usize)> {
    if structs >= MAX_DEPTH {
        return bad("signature nests structs too deeply");
    }
    let key = sig.get(1).copied().unwrap_or(0);
    if !b"ybnqiuxtdsogh".contains(&key) {
        return bad("signature has a dict entry without a basic key");
    }
    let v = complete_type(&sig[2..], arrays, structs + 1)?;
    if sig.get(2 + v) != Some(&b'}') {
        return bad("signature has an unclosed dict entry");
    }
    Ok((1, v))
}

/// Split a signature into its complete types.
pub fn split_signature(sig: &str) -> Res<Vec<&str>> {
    if sig.len() > 255 {
        return bad("signature is longer than 255 bytes");
    }
    let mut out = Vec::new();
    let mut rest = sig;
    while !rest.is_empty() {
        let n = complete_type(rest.as_bytes(), 0, 0)?;
        out.push(&rest[..n]);
        rest = &rest[n..];
    }
    Ok(out)
}

/// Appends values to a buffer whose offset 0 is 8-aligned.
pub struct Writer {
    pub buf: Vec<u8>,
}

impl Writer {
    pub fn new() -> Writer {
        Writer { buf: Vec::new() }
    }

    fn pad(&mut self, align: usize) {
        while !self.buf.len().is_multiple_of(align) {
            self.buf.push(0);
        }
    }

    fn u32(&mut self, v: u32) {
        self.pad(4);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    fn string(&mut self, s: &str) -> Res<()> {
        if s.contains('\0') {
            return bad(format!("string {s:?} holds a NUL byte"));
        }
        let len = u32::try_from(s.len()).or_else(|_| bad("string too long"))?;
        self.u32(len);
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.push(0);
        Ok(())
    }

    fn sig(&mut self, s: &str) -> Res<()> {
        let len = u8::try_from(s.len()).or_else(|_| bad("signature too long"))?;
        self.buf.push(len);
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.push(0);
        Ok(())
    }

    pub fn value(&mut self, v: &Value) -> Res<()> {
        self.pad(alignment(v.signature().as_bytes()[0]));
        match v {
            Value::Byte(b) => self.buf.push(*b),
            Value::Bool(b) => self.u32(u32::from(*b)),
            Value::I16(n) => self.buf.extend_from_slice(&n.to_le_bytes()),
            Value::U16(n) => self.buf.extend_from_slice(&n.to_le_bytes()),
            Value::I32(n) => self.buf.extend_from_slice(&n.to_le_bytes()),
            Value::U32(n) | Value::UnixFd(n) => self.u32(*n),
            Value::I64(n) => self.buf.extend_from_slice(&n.to_le_bytes()),
            Value::U64(n) => self.buf.extend_from_slice(&n.to_le_bytes()),
            Value::Double(d) => self.buf.extend_from_slice(&d.to_le_bytes()),
            Value::Str(s) | Value::Path(s) => self.string(s)?,
            Value::Sig(s) => self.sig(s)?,
            Value::Variant(inner) => {
                self.sig(&inner.signature())?;
                self.value(inner)?;
            }
            Value::Array(elem, items) => self.array(elem, items)?,
            Value::Struct(fields) => fields.iter().try_for_each(|f| self.value(f))?,
            Value::DictEntry(k, v) => {
                self.value(k)?;
                self.value(v)?;
            }
        }
        Ok(())
    }

    fn array(&mut self, elem: &str, items: &[Value]) -> Res<()> {
        let at = self.buf.len();
        self.u32(0);
        self.pad(alignment(elem.as_bytes().first().copied().unwrap_or(b'y')));
        let start = self.buf.len();
        for item in items {
            if item.signature() != elem {
                return bad(format!("array of {elem} holds a {}", item.signature()));
            }
            self.value(item)?;
        }
        let len = u32::try_from(self.buf.len() - start).or_else(|_| bad("array too long"))?;
        self.buf[at..at + 4].copy_from_slice(&len.to_le_bytes());
        Ok(())
    }
}

/// Reads values from a buffer whose offset 0 is 8-aligned.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    big_endian: bool,
    arrays: u32,
    structs: u32,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8], big_endian: bool) -> Reader<'a> {
        Reader {
            buf,
            pos: 0,
            big_endian,
            arrays: 0,
            structs: 0,
        }
    }

    /// Move `n` bytes on (at most to the end).
    pub fn skip(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.buf.len());
    }

    pub fn at_end(&self) -> bool {
        self.pos == self.buf.len()
    }

    fn align(&mut self, align: usize) -> Res<()> {
        let to = self.pos.next_multiple_of(align);
        if to > self.buf.len() {
            return bad("value runs past the end");
        }
        self.pos = to;
        Ok(())
    }

    fn take<const N: usize>(&mut self) -> Res<[u8; N]> {
        self.align(N)?;
        let Some(b) = self.buf.get(self.pos..self.pos + N) else {
            return bad("value runs past the end");
        };
        self.pos += N;
        let mut out = [0; N];
        out.copy_from_slice(b);
        if self.big_endian {
            out.reverse();
        }
        Ok(out)
    }

    fn u32(&mut self) -> Res<u32> {
        Ok(u32::from_le_bytes(self.take()?))
    }

    /// `len` bytes, then the NUL that must follow them.
    fn text(&mut self, len: usize) -> Res<String> {
        let end = self.pos.checked_add(len).filter(|&e| e < self.buf.len());
        let Some(end) = end else {
            return bad("string runs past the end");
        };
        let bytes = &self.buf[self.pos..end];
        if self.buf[end] != 0 || bytes.contains(&0) {
            return bad("string is not NUL-terminated or holds a NUL byte");
        }
        self.pos = end + 1;
        String::from_utf8(bytes.to_vec()).or_else(|_| bad("string is not UTF-8"))
    }

    fn sig(&mut self) -> Res<String> {
        let [len] = self.take::<1>()?;
        self.text(usize::from(len))
    }

    /// One value of the complete type `sig`, which has been checked.
    fn value(&mut self, sig: &str) -> Res<Value> {
        let b = sig.as_bytes();
        Ok(match b.first().copied().unwrap_or(0) {
            b'y' => Value::Byte(self.take::<1>()?[0]),
            b'b' => match self.u32()? {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                n => return bad(format!("boolean holds {n}")),
            },
            b'n' => Value::I16(i16::from_le_bytes(self.take()?)),
            b'q' => Value::U16(u16::from_le_bytes(self.take()?)),
            b'i' => Value::I32(i32::from_le_bytes(self.take()?)),
            b'u' => Value::U32(self.u32()?),
            b'h' => Value::UnixFd(self.u32()?),
            b'x' => Value::I64(i64::from_le_bytes(self.take()?)),
            b't' => Value::U64(u64::from_le_bytes(self.take()?)),
            b'd' => Value::Double(f64::from_le_bytes(self.take()?)),
            b's' => {
                let len = self.u32()? as usize;
                Value::Str(self.text(len)?)
            }
            b'o' => {
                let len = self.u32()? as usize;
                Value::Path(self.text(len)?)
            }
            b'g' => Value::Sig(self.sig()?),
            b'v' => self.variant()?,
            b'a' => self.array(&sig[1..])?,
            b'(' => self.container(&sig[1..sig.len() - 1], Value::Struct)?,
            b'{' => self.container(&sig[1..sig.len() - 1], |mut kv| {
                let v = kv.pop().unwrap_or(Value::Byte(0));
                let k = kv.pop().unwrap_or(Value::Byte(0));
                Value::DictEntry(Box::new(k), Box::new(v))
            })?,
            _ => return bad(format!("cannot read a value of type {sig:?}")),
        })
    }

    fn variant(&mut self) -> Res<Value> {
        let sig = self.sig()?;
        match split_signature(&sig)?.as_slice() {
            [one] if self.arrays + self.structs < 2 * MAX_DEPTH => {
                // A variant counts as a struct for the nesting limit.
                self.structs += 1;
                let v = self.value(one);
                self.structs -= 1;
                Ok(Value::Variant(Box::new(v?)))
            }
            [_] => bad("variant nests too deeply"),
            _ => bad(format!("variant signature {sig:?} is not one type")),
        }
    }

    fn array(&mut self, elem: &str) -> Res<Value> {
        let len = self.u32()? as usize;
        if len > MAX_ARRAY {
            return bad(format!("array of {len} bytes is too long"));
        }
        self.align(alignment(elem.as_bytes().first().copied().unwrap_or(b'y')))?;
        let Some(end) = self.pos.checked_add(len).filter(|&e| e <= self.buf.len()) else {
            return bad("array runs past the end");
        };
        self.arrays += 1;
        let mut items = Vec::new();
        while self.pos < end {
            match self.value(elem) {
                Ok(v) => items.push(v),
                Err(e) => {
                    self.arrays -= 1;
                    return Err(e);
                }
            }
        }
        self.arrays -= 1;
        if self.pos != end {
            return bad("array elements overrun its length");
        }
        Ok(Value::Array(elem.to_string(), items))
    }

    fn container(&mut self, inner: &str, make: impl Fn(Vec<Value>) -> Value) -> Res<Value> {
        self.align(8)?;
        self.structs += 1;
        let fields = split_signature(inner)
            .and_then(|types| types.iter().map(|t| self.value(t)).collect::<Res<Vec<_>>>());
        self.structs -= 1;
        Ok(make(fields?))
    }

    /// Every value of the signature `sig`, to the end of the buffer.
    pub fn values(&mut self, sig: &str) -> Res<Vec<Value>> {
        let out = split_signature(sig)?
            .into_iter()
            .map(|t| self.value(t))
            .collect::<Res<Vec<_>>>()?;
        if !self.at_end() {
            return bad("body is longer than its signature");
        }
        Ok(out)
    }
}
