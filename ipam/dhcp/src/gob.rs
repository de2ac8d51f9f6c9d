//! The part of Go's `encoding/gob` that `net/rpc` between the dhcp plugin
//! and its daemon needs, both ways: type definitions sent on the wire and
//! values described by them.
//!
//! A stream is a sequence of messages, each `uint(length)` + `int(type
//! id)` + content. A negative id defines type `-id` (the content is a
//! `wireType` value); a positive id is a value of that type. Values are
//! decoded into a generic [`Value`] tree whose struct fields carry the
//! *sender's* field names, because gob matches fields by name: the
//! receiver picks the fields it knows ([`Value::field`]) and ignores the
//! rest, whatever ids and field order the sender chose. The encoder sends
//! each type's definition once per stream, before the first value that
//! needs it, and leaves out fields holding zero values, as Go does.
//!
//! The wire type `wireType` is itself a gob struct; its definition (and
//! those of `structType`, `sliceType`, ...) is built in ([`Types::new`]),
//! so type definitions go through the same generic codec as values.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::Read;

/// A gob type id (Go's `typeId`, an `int32`).
pub type TypeId = i64;

pub const BOOL: TypeId = 1;
pub const INT: TypeId = 2;
pub const UINT: TypeId = 3;
pub const FLOAT: TypeId = 4;
pub const BYTES: TypeId = 5;
pub const STRING: TypeId = 6;
pub const COMPLEX: TypeId = 7;
pub const INTERFACE: TypeId = 8;
/// `wireType`, the content of a type definition.
pub const WIRE_TYPE: TypeId = 16;
const ARRAY_TYPE: TypeId = 17;
const COMMON_TYPE: TypeId = 18;
const SLICE_TYPE: TypeId = 19;
const STRUCT_TYPE: TypeId = 20;
const FIELD_TYPE: TypeId = 21;
const FIELD_SLICE: TypeId = 22;
const MAP_TYPE: TypeId = 23;
/// `gobEncoderType`; its id is never on the wire, any free one will do.
const GOB_ENCODER_TYPE: TypeId = 24;
/// The first id Go hands out to user types.
pub const FIRST_USER: TypeId = 65;

/// The largest message read: a config on stdin may be 64 MiB (skel's
/// limit), plus room for the rest of the arguments.
pub const MAX_MESSAGE: u64 = 65 << 20;
/// Nesting deeper than this is refused, so a hostile type cannot exhaust
/// the stack.
const MAX_DEPTH: usize = 64;

/// A decoding or encoding failure, worded like Go's (`gob: ...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

fn err<T>(msg: impl Into<String>) -> Result<T, Error> {
    Err(Error(format!("gob: {}", msg.into())))
}

/// A type as a definition describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Def {
    /// Fields in the sender's declaration order: `(name, type)`.
    Struct(Vec<(String, TypeId)>),
    Slice(TypeId),
    Array(TypeId, u64),
    Map(TypeId, TypeId),
    /// A `GobEncoder`, `BinaryMarshaler` or `TextMarshaler`: its own bytes.
    Opaque,
}

/// A named type definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireType {
    /// Informational only (Go sends `""` for types reached through a
    /// pointer in a slice).
    pub name: String,
    pub def: Def,
}

impl WireType {
    pub fn strukt(name: &str, fields: &[(&str, TypeId)]) -> WireType {
        WireType {
            name: name.to_string(),
            def: Def::Struct(fields.iter().map(|(n, t)| (n.to_string(), *t)).collect()),
        }
    }

    pub fn slice(name: &str, elem: TypeId) -> WireType {
        WireType {
            name: name.to_string(),
            def: Def::Slice(elem),
        }
    }
}

/// A decoded (or to be encoded) value. Arrays decode as slices; strings
/// are bytes, since a Go string may hold any.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Complex(f64, f64),
    Bytes(Vec<u8>),
    Str(Vec<u8>),
    /// The fields present on the wire, by the sender's names.
    Struct(Vec<(String, Value)>),
    Slice(Vec<Value>),
    Map(Vec<(Value, Value)>),
    /// An interface value: `None` for nil, else the concrete type's name
    /// and its encoded value, kept undecoded (nothing here uses one).
    Interface(Option<(String, Vec<u8>)>),
}

impl Value {
    pub fn str(s: &str) -> Value {
        Value::Str(s.as_bytes().to_vec())
    }

    /// A struct of the given fields.
    pub fn strukt(fields: Vec<(&str, Value)>) -> Value {
        Value::Struct(
            fields
                .into_iter()
                .map(|(n, v)| (n.to_string(), v))
                .collect(),
        )
    }

    /// The field `name` of a struct, if the sender sent it (gob leaves zero
    /// values out, so absent means zero).
    pub fn field(&self, name: &str) -> Option<&Value> {
        match self {
            Value::Struct(fields) => fields.iter().find(|(n, _)| n == name).map(|(_, v)| v),
            _ => None,
        }
    }

    /// A string field as text (lossy for bytes that are not UTF-8); `""`
    /// when absent.
    pub fn text(&self, name: &str) -> String {
        match self.field(name) {
            Some(Value::Str(b) | Value::Bytes(b)) => String::from_utf8_lossy(b).into_owned(),
            _ => String::new(),
        }
    }

    /// A byte-slice field; empty when absent.
    pub fn bytes(&self, name: &str) -> Vec<u8> {
        match self.field(name) {
            Some(Value::Str(b) | Value::Bytes(b)) => b.clone(),
            _ => Vec::new(),
        }
    }

    /// An integer field (either signedness); `None` when absent.
    pub fn int(&self, name: &str) -> Option<i64> {
        match self.field(name) {
            Some(Value::Int(i)) => Some(*i),
            Some(Value::Uint(u)) => i64::try_from(*u).ok(),
            _ => None,
        }
    }

    /// The elements of a slice field; none when absent.
    pub fn items(&self, name: &str) -> &[Value] {
        match self.field(name) {
            Some(Value::Slice(v)) => v,
            _ => &[],
        }
    }

    /// Whether gob leaves this value out as a struct field.
    fn is_zero(&self) -> bool {
        match self {
            Value::Bool(b) => !b,
            Value::Int(i) => *i == 0,
            Value::Uint(u) => *u == 0,
            Value::Float(f) => *f == 0.0,
            Value::Complex(r, i) => *r == 0.0 && *i == 0.0,
            Value::Bytes(b) | Value::Str(b) => b.is_empty(),
            Value::Slice(v) => v.is_empty(),
            Value::Map(m) => m.is_empty(),
            Value::Interface(i) => i.is_none(),
            Value::Struct(_) => false,
        }
    }
}

/// The types known on one side of a stream: the built-in ones plus those
/// defined (by the peer when decoding, by us when encoding).
#[derive(Debug, Clone)]
pub struct Types {
    defs: HashMap<TypeId, WireType>,
}

impl Default for Types {
    fn default() -> Types {
        Types::new()
    }
}

impl Types {
    /// The built-in definitions of the types that describe types.
    pub fn new() -> Types {
        let mut t = Types {
            defs: HashMap::new(),
        };
        let common = ("CommonType", COMMON_TYPE);
        t.define(
            WIRE_TYPE,
            WireType::strukt(
                "wireType",
                &[
                    ("ArrayT", ARRAY_TYPE),
                    ("SliceT", SLICE_TYPE),
                    ("StructT", STRUCT_TYPE),
                    ("MapT", MAP_TYPE),
                    ("GobEncoderT", GOB_ENCODER_TYPE),
                    ("BinaryMarshalerT", GOB_ENCODER_TYPE),
                    ("TextMarshalerT", GOB_ENCODER_TYPE),
                ],
            ),
        );
        t.define(
            ARRAY_TYPE,
            WireType::strukt("arrayType", &[common, ("Elem", INT), ("Len", INT)]),
        );
        t.define(
            COMMON_TYPE,
            WireType::strukt("CommonType", &[("Name", STRING), ("Id", INT)]),
        );
        t.define(
            SLICE_TYPE,
            WireType::strukt("sliceType", &[common, ("Elem", INT)]),
        );
        t.define(
            STRUCT_TYPE,
            WireType::strukt("structType", &[common, ("Field", FIELD_SLICE)]),
        );
        t.define(
            FIELD_TYPE,
            WireType::strukt("fieldType", &[("Name", STRING), ("Id", INT)]),
        );
        t.define(FIELD_SLICE, WireType::slice("[]*gob.fieldType", FIELD_TYPE));
        t.define(
            MAP_TYPE,
            WireType::strukt("mapType", &[common, ("Key", INT), ("Elem", INT)]),
        );
        t.define(
            GOB_ENCODER_TYPE,
            WireType::strukt("gobEncoderType", &[common]),
        );
        t
    }

    pub fn define(&mut self, id: TypeId, t: WireType) {
        self.defs.insert(id, t);
    }

    pub fn get(&self, id: TypeId) -> Option<&WireType> {
        self.defs.get(&id)
    }

    fn lookup(&self, id: TypeId) -> Result<&WireType, Error> {
        match self.defs.get(&id) {
            Some(t) => Ok(t),
            None => err(format!("unknown type id {id}")),
        }
    }

    /// Whether values of `id` are structs (sent without the singleton byte
    /// at the top level).
    fn is_struct(&self, id: TypeId) -> bool {
        matches!(
            self.get(id),
            Some(WireType {
                def: Def::Struct(_),
                ..
            })
        )
    }
}

// ------------------------------------------------------------ primitives

/// Append `u` as a gob unsigned integer.
pub fn put_uint(out: &mut Vec<u8>, u: u64) {
    if u < 128 {
        out.push(u as u8);
        return;
    }
    let bytes = u.to_be_bytes();
    let skip = bytes.iter().take_while(|&&b| b == 0).count();
    out.push((skip as u8).wrapping_sub(8));
    out.extend_from_slice(&bytes[skip..]);
}

/// Append `i` as a gob signed integer (zig-zag, sign in the low bit).
pub fn put_int(out: &mut Vec<u8>, i: i64) {
    let u = if i < 0 {
        ((!i as u64) << 1) | 1
    } else {
        (i as u64) << 1
    };
    put_uint(out, u);
}

fn put_float(out: &mut Vec<u8>, f: f64) {
    put_uint(out, f.to_bits().swap_bytes());
}

fn zigzag(u: u64) -> i64 {
    if u & 1 == 1 {
        !((u >> 1) as i64)
    } else {
        (u >> 1) as i64
    }
}

/// A cursor over one message.
struct Buf<'a>(&'a [u8]);

impl<'a> Buf<'a> {
    fn byte(&mut self) -> Result<u8, Error> {
        let (&b, rest) = match self.0.split_first() {
            Some(x) => x,
            None => return err("decoding past end of message"),
        };
        self.0 = rest;
        Ok(b)
    }

    fn uint(&mut self) -> Result<u64, Error> {
        let b = self.byte()?;
        if b < 128 {
            return Ok(u64::from(b));
        }
        let n = usize::from(b.wrapping_neg());
        if n > 8 {
            return err(format!("encoded unsigned integer out of range: {n} bytes"));
        }
        let bytes = self.take(n)?;
        Ok(bytes.iter().fold(0, |acc, &b| (acc << 8) | u64::from(b)))
    }

    fn int(&mut self) -> Result<i64, Error> {
        self.uint().map(zigzag)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        if n > self.0.len() {
            return err(format!("{n} bytes announced, {} left", self.0.len()));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn len_bytes(&mut self) -> Result<&'a [u8], Error> {
        let n = self.uint()?;
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        self.take(n)
    }

    /// An element count, which cannot exceed the bytes left (every
    /// element takes at least one).
    fn count(&mut self) -> Result<usize, Error> {
        let n = self.uint()?;
        if n > self.0.len() as u64 {
            return err(format!(
                "{n} elements announced, {} bytes left",
                self.0.len()
            ));
        }
        Ok(n as usize)
    }
}

// ------------------------------------------------------------ decoding

/// The receiving end of one stream: the types its peer defined so far.
#[derive(Debug, Default)]
pub struct Decoder {
    types: Types,
}

impl Decoder {
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// The types defined so far (with the built-in ones).
    pub fn types(&self) -> &Types {
        &self.types
    }

    /// Read messages until a value arrives, recording the type
    /// definitions before it; the value and its type id.
    pub fn read(&mut self, r: &mut impl Read) -> Result<(TypeId, Value), ReadError> {
        loop {
            let payload = read_message(r)?;
            if let Some(v) = self.message(&payload)? {
                return Ok(v);
            }
        }
    }

    /// One message's payload: `None` for a type definition (recorded).
    pub fn message(&mut self, payload: &[u8]) -> Result<Option<(TypeId, Value)>, Error> {
        let mut b = Buf(payload);
        let id = b.int()?;
        if id < 0 {
            let def = wire_type(&self.decode(&mut b, WIRE_TYPE, 0)?)?;
            let id = -id;
            if id < FIRST_USER {
                return err(format!("type id {id} redefined"));
            }
            self.types.define(id, def);
            return Ok(None);
        }
        if id == 0 {
            return err("type id 0 in a value");
        }
        let value = if self.types.is_struct(id) {
            self.decode(&mut b, id, 0)?
        } else {
            if b.uint()? != 0 {
                return err("bad singleton field delta");
            }
            self.decode(&mut b, id, 0)?
        };
        if !b.0.is_empty() {
            return err(format!("{} bytes left over after a value", b.0.len()));
        }
        Ok(Some((id, value)))
    }

    fn decode(&self, b: &mut Buf<'_>, id: TypeId, depth: usize) -> Result<Value, Error> {
        if depth > MAX_DEPTH {
            return err("value nested too deeply");
        }
        Ok(match id {
            BOOL => Value::Bool(b.uint()? != 0),
            INT => Value::Int(b.int()?),
            UINT => Value::Uint(b.uint()?),
            FLOAT => Value::Float(f64::from_bits(b.uint()?.swap_bytes())),
            COMPLEX => {
                let re = f64::from_bits(b.uint()?.swap_bytes());
                Value::Complex(re, f64::from_bits(b.uint()?.swap_bytes()))
            }
            BYTES => Value::Bytes(b.len_bytes()?.to_vec()),
            STRING => Value::Str(b.len_bytes()?.to_vec()),
            INTERFACE => {
                let name = String::from_utf8_lossy(b.len_bytes()?).into_owned();
                if name.is_empty() {
                    Value::Interface(None)
                } else {
                    let _concrete = b.int()?;
                    Value::Interface(Some((name, b.len_bytes()?.to_vec())))
                }
            }
            _ => match &self.types.lookup(id)?.def {
                Def::Struct(fields) => self.decode_struct(b, fields, depth)?,
                Def::Slice(elem) | Def::Array(elem, _) => {
                    let n = b.count()?;
                    let mut items = Vec::with_capacity(n);
                    for _ in 0..n {
                        items.push(self.decode(b, *elem, depth + 1)?);
                    }
                    Value::Slice(items)
                }
                Def::Map(k, v) => {
                    let n = b.count()?;
                    let mut pairs = Vec::with_capacity(n);
                    for _ in 0..n {
                        let key = self.decode(b, *k, depth + 1)?;
                        pairs.push((key, self.decode(b, *v, depth + 1)?));
                    }
                    Value::Map(pairs)
                }
                Def::Opaque => Value::Bytes(b.len_bytes()?.to_vec()),
            },
        })
    }

    fn decode_struct(
        &self,
        b: &mut Buf<'_>,
        fields: &[(String, TypeId)],
        depth: usize,
    ) -> Result<Value, Error> {
        let mut out = Vec::new();
        let mut field: i64 = -1;
        loop {
            let delta = b.uint()?;
            if delta == 0 {
                return Ok(Value::Struct(out));
            }
            field = match i64::try_from(delta).ok().and_then(|d| field.checked_add(d)) {
                Some(f) if (f as u64) < fields.len() as u64 => f,
                _ => return err("field number out of range"),
            };
            let (name, id) = &fields[field as usize];
            out.push((name.clone(), self.decode(b, *id, depth + 1)?));
        }
    }
}

/// A `wireType` value as a definition.
fn wire_type(v: &Value) -> Result<WireType, Error> {
    let common = |t: &Value| {
        let c = t.field("CommonType");
        c.map(|c| c.text("Name")).unwrap_or_default()
    };
    let id = |t: &Value, f: &str| t.int(f).unwrap_or(0);
    if let Some(t) = v.field("StructT") {
        let fields = t
            .items("Field")
            .iter()
            .map(|f| (f.text("Name"), id(f, "Id")))
            .collect();
        return Ok(WireType {
            name: common(t),
            def: Def::Struct(fields),
        });
    }
    if let Some(t) = v.field("SliceT") {
        return Ok(WireType {
            name: common(t),
            def: Def::Slice(id(t, "Elem")),
        });
    }
    if let Some(t) = v.field("ArrayT") {
        let len = u64::try_from(id(t, "Len")).unwrap_or(0);
        return Ok(WireType {
            name: common(t),
            def: Def::Array(id(t, "Elem"), len),
        });
    }
    if let Some(t) = v.field("MapT") {
        return Ok(WireType {
            name: common(t),
            def: Def::Map(id(t, "Key"), id(t, "Elem")),
        });
    }
    for kind in ["GobEncoderT", "BinaryMarshalerT", "TextMarshalerT"] {
        if let Some(t) = v.field(kind) {
            return Ok(WireType {
                name: common(t),
                def: Def::Opaque,
            });
        }
    }
    err("type definition of no known kind")
}

/// Why a message could not be read: the stream ended or failed, or the
/// bytes were no gob.
#[derive(Debug)]
pub enum ReadError {
    Io(std::io::Error),
    Gob(Error),
}

impl From<Error> for ReadError {
    fn from(e: Error) -> ReadError {
        ReadError::Gob(e)
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                f.write_str("unexpected EOF")
            }
            ReadError::Io(e) => write!(f, "{}", skel::io_text(e)),
            ReadError::Gob(e) => write!(f, "{e}"),
        }
    }
}

/// One length-prefixed message's payload.
fn read_message(r: &mut impl Read) -> Result<Vec<u8>, ReadError> {
    let mut first = [0u8; 1];
    r.read_exact(&mut first).map_err(ReadError::Io)?;
    let len = if first[0] < 128 {
        u64::from(first[0])
    } else {
        let n = usize::from(first[0].wrapping_neg());
        if n > 8 {
            return Err(Error("gob: bad message length prefix".into()).into());
        }
        let mut bytes = [0u8; 8];
        r.read_exact(&mut bytes[8 - n..]).map_err(ReadError::Io)?;
        u64::from_be_bytes(bytes)
    };
    if len == 0 || len > MAX_MESSAGE {
        return Err(Error(format!("gob: message of {len} bytes")).into());
    }
    let mut payload = Vec::new();
    r.take(len)
        .read_to_end(&mut payload)
        .map_err(ReadError::Io)?;
    if payload.len() as u64 != len {
        return Err(ReadError::Io(std::io::ErrorKind::UnexpectedEof.into()));
    }
    Ok(payload)
}

// ------------------------------------------------------------ encoding

/// The sending end of one stream: which of our types it has defined.
#[derive(Debug, Default)]
pub struct Encoder {
    sent: HashSet<TypeId>,
}

impl Encoder {
    pub fn new() -> Encoder {
        Encoder::default()
    }

    /// Append to `out` the definitions of `id` and the types it reaches
    /// not sent yet on this stream (parent first, as Go sends them), then
    /// the value `v` of type `id`.
    pub fn encode(
        &mut self,
        types: &Types,
        id: TypeId,
        v: &Value,
        out: &mut Vec<u8>,
    ) -> Result<(), Error> {
        self.define(types, id, out)?;
        let mut body = Vec::new();
        put_int(&mut body, id);
        if !types.is_struct(id) {
            put_uint(&mut body, 0);
        }
        encode_value(types, id, v, &mut body, 0)?;
        put_uint(out, body.len() as u64);
        out.extend_from_slice(&body);
        Ok(())
    }

    fn define(&mut self, types: &Types, id: TypeId, out: &mut Vec<u8>) -> Result<(), Error> {
        if id < FIRST_USER || !self.sent.insert(id) {
            return Ok(());
        }
        let t = types.lookup(id)?;
        let mut body = Vec::new();
        put_int(&mut body, -id);
        encode_value(types, WIRE_TYPE, &wire_value(id, t), &mut body, 0)?;
        put_uint(out, body.len() as u64);
        out.extend_from_slice(&body);
        match &t.def {
            Def::Struct(fields) => {
                for (_, f) in fields {
                    self.define(types, *f, out)?;
                }
            }
            Def::Slice(e) | Def::Array(e, _) => self.define(types, *e, out)?,
            Def::Map(k, e) => {
                self.define(types, *k, out)?;
                self.define(types, *e, out)?;
            }
            Def::Opaque => {}
        }
        Ok(())
    }
}

/// The `wireType` value defining `t` as type `id`.
fn wire_value(id: TypeId, t: &WireType) -> Value {
    let common = Value::strukt(vec![("Name", Value::str(&t.name)), ("Id", Value::Int(id))]);
    let (kind, body) = match &t.def {
        Def::Struct(fields) => (
            "StructT",
            vec![
                ("CommonType", common),
                (
                    "Field",
                    Value::Slice(
                        fields
                            .iter()
                            .map(|(n, f)| {
                                Value::strukt(vec![("Name", Value::str(n)), ("Id", Value::Int(*f))])
                            })
                            .collect(),
                    ),
                ),
            ],
        ),
        Def::Slice(e) => (
            "SliceT",
            vec![("CommonType", common), ("Elem", Value::Int(*e))],
        ),
        Def::Array(e, n) => (
            "ArrayT",
            vec![
                ("CommonType", common),
                ("Elem", Value::Int(*e)),
                ("Len", Value::Int(i64::try_from(*n).unwrap_or(i64::MAX))),
            ],
        ),
        Def::Map(k, e) => (
            "MapT",
            vec![
                ("CommonType", common),
                ("Key", Value::Int(*k)),
                ("Elem", Value::Int(*e)),
            ],
        ),
        Def::Opaque => ("GobEncoderT", vec![("CommonType", common)]),
    };
    Value::strukt(vec![(kind, Value::strukt(body))])
}

fn mismatch<T>(id: TypeId, v: &Value) -> Result<T, Error> {
    err(format!("value {v:?} does not fit type id {id}"))
}

fn encode_value(
    types: &Types,
    id: TypeId,
    v: &Value,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), Error> {
    if depth > MAX_DEPTH {
        return err("value nested too deeply");
    }
    match (id, v) {
        (BOOL, Value::Bool(b)) => put_uint(out, u64::from(*b)),
        (INT, Value::Int(i)) => put_int(out, *i),
        (UINT, Value::Uint(u)) => put_uint(out, *u),
        (FLOAT, Value::Float(f)) => put_float(out, *f),
        (COMPLEX, Value::Complex(re, im)) => {
            put_float(out, *re);
            put_float(out, *im);
        }
        (BYTES, Value::Bytes(b)) | (STRING, Value::Str(b)) => {
            put_uint(out, b.len() as u64);
            out.extend_from_slice(b);
        }
        (INTERFACE, _) => return err("encoding interface values is not supported"),
        (id, v) => match (&types.lookup(id)?.def, v) {
            (Def::Struct(fields), Value::Struct(values)) => {
                let mut last: i64 = -1;
                for (i, (name, fid)) in fields.iter().enumerate() {
                    let Some((_, fv)) = values.iter().find(|(n, _)| n == name) else {
                        continue;
                    };
                    if fv.is_zero() {
                        continue;
                    }
                    put_uint(out, (i as i64 - last) as u64);
                    last = i as i64;
                    encode_value(types, *fid, fv, out, depth + 1)?;
                }
                if let Some((n, _)) = values
                    .iter()
                    .find(|(n, _)| !fields.iter().any(|f| &f.0 == n))
                {
                    return err(format!("field {n:?} is not in type id {id}"));
                }
                out.push(0);
            }
            (Def::Slice(elem) | Def::Array(elem, _), Value::Slice(items)) => {
                put_uint(out, items.len() as u64);
                for item in items {
                    encode_value(types, *elem, item, out, depth + 1)?;
                }
            }
            (Def::Map(k, e), Value::Map(pairs)) => {
                put_uint(out, pairs.len() as u64);
                for (key, val) in pairs {
                    encode_value(types, *k, key, out, depth + 1)?;
                    encode_value(types, *e, val, out, depth + 1)?;
                }
            }
            (Def::Opaque, Value::Bytes(b)) => {
                put_uint(out, b.len() as u64);
                out.extend_from_slice(b);
            }
            _ => return mismatch(id, v),
        },
    }
    Ok(())
}

#[cfg(test)]
mod tests;
