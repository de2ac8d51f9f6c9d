//! Decoding as `json.Unmarshal` does into Go structs: keys matched to
//! fields by Go's rules, `null` and absent keys leaving the zero value,
//! unknown keys ignored, and Go's wording for values of the wrong type.

use std::fmt;

use serde::Deserialize;
use serde::de::value::BorrowedStrDeserializer;
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor,
};
use serde_json::{Map, Value};

use super::fold::lookup;
use super::kind;

/// Why a document could not be decoded, worded as Go's `encoding/json`
/// words it (`json: cannot unmarshal string into Go struct field
/// NetConf.mtu of type int`), or as the failing type's own parser did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(String);

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DecodeError {}

impl From<DecodeError> for String {
    fn from(e: DecodeError) -> String {
        e.0
    }
}

impl de::Error for DecodeError {
    /// What a type's own `Deserialize` reports (Go's `UnmarshalText` and
    /// `UnmarshalJSON` errors are passed on unchanged as well).
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DecodeError(msg.to_string())
    }
}

/// The syntax check of `json.Unmarshal`: the document as a tree. Empty or
/// truncated input is Go's `unexpected end of JSON input`; other syntax
/// errors keep serde_json's wording.
pub fn parse(bytes: &[u8]) -> Result<Value, DecodeError> {
    const EOF: &str = "unexpected end of JSON input";
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(DecodeError(EOF.into()));
    }
    serde_json::from_slice(bytes).map_err(|e| {
        DecodeError(if e.is_eof() {
            EOF.into()
        } else {
            e.to_string()
        })
    })
}

/// `json.Unmarshal(bytes, &t)` for a `T` that derives `Deserialize`.
pub fn unmarshal<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, DecodeError> {
    from_value(&parse(bytes)?)
}

/// [`unmarshal`] of a document already parsed.
pub fn from_value<'de, T: Deserialize<'de>>(value: &'de Value) -> Result<T, DecodeError> {
    Field::root(value).decode()
}

/// Where a value sits in the Go value being decoded: what Go's type errors
/// name (`Go struct field <innermost struct>.<json names from the top>`).
#[derive(Debug, Clone, Default)]
struct Place {
    /// The innermost struct entered (its Go name without package; empty for
    /// an anonymous struct); `None` at the top, outside any struct.
    strukt: Option<String>,
    /// The JSON names of the fields from the top, dotted (`ipam.type`).
    path: String,
}

impl Place {
    fn field(&self, name: &str) -> Place {
        let path = if self.path.is_empty() {
            name.to_string()
        } else {
            format!("{}.{name}", self.path)
        };
        Place {
            strukt: self.strukt.clone(),
            path,
        }
    }

    /// Entering a struct of Go type `go_type` (`main.NetConf`, `*types.IPAM`).
    fn inside(&self, go_type: &str) -> Place {
        let bare = go_type.trim_start_matches(['*', '[', ']']);
        let name = if bare.starts_with("struct") {
            ""
        } else {
            bare.rsplit('.').next().unwrap_or(bare)
        };
        Place {
            strukt: Some(name.to_string()),
            path: self.path.clone(),
        }
    }

    fn mismatch(&self, value: impl fmt::Display, go_type: &str) -> DecodeError {
        DecodeError(match &self.strukt {
            Some(s) => format!(
                "json: cannot unmarshal {value} into Go struct field {s}.{} of type {go_type}",
                self.path
            ),
            None => format!("json: cannot unmarshal {value} into Go value of type {go_type}"),
        })
    }
}

/// A value and its place in the Go value being decoded, so that every
/// error names the field as Go would.
#[derive(Debug, Clone)]
pub struct Field<'de> {
    value: &'de Value,
    place: Place,
}

static NULL: Value = Value::Null;

impl<'de> Field<'de> {
    /// The whole document, as handed to `json.Unmarshal`.
    pub fn root(value: &'de Value) -> Field<'de> {
        Field {
            value,
            place: Place::default(),
        }
    }

    /// The raw value (`null` when the key was absent).
    pub fn value(&self) -> &'de Value {
        self.value
    }

    /// Absent or `null`: Go leaves the field's zero value.
    pub fn is_null(&self) -> bool {
        self.value.is_null()
    }

    /// The value decoded into `T` by Go's rules (see the module overview).
    pub fn decode<T: Deserialize<'de>>(&self) -> Result<T, DecodeError> {
        T::deserialize(De {
            value: self.value,
            place: self.place.clone(),
        })
    }

    /// The value as a struct of Go type `go_type` (`types.IPAM`); `None`
    /// when absent or `null`.
    pub fn object(&self, go_type: &str) -> Result<Option<Object<'de>>, DecodeError> {
        match self.value {
            Value::Null => Ok(None),
            Value::Object(map) => Ok(Some(Object {
                map: Some(map),
                place: self.place.inside(go_type),
            })),
            other => Err(self.place.mismatch(kind(other), go_type)),
        }
    }

    /// The value as a struct *value* of Go type `go_type`: like
    /// [`Field::object`], but `null` and absent are an empty struct, as Go
    /// decodes `null` into a non-pointer struct field.
    pub fn as_struct(&self, go_type: &str) -> Result<Object<'de>, DecodeError> {
        Ok(self.object(go_type)?.unwrap_or(Object {
            map: None,
            place: self.place.inside(go_type),
        }))
    }

    /// The elements of a slice of Go type `go_type` (`[]allocator.RangeSet`);
    /// empty when absent or `null`.
    pub fn items(&self, go_type: &str) -> Result<Vec<Field<'de>>, DecodeError> {
        match self.value {
            Value::Null => Ok(Vec::new()),
            Value::Array(items) => Ok(items
                .iter()
                .map(|value| Field {
                    value,
                    place: self.place.clone(),
                })
                .collect()),
            other => Err(self.place.mismatch(kind(other), go_type)),
        }
    }
}

/// A JSON object being decoded into a Go struct, field by field.
#[derive(Debug, Clone)]
pub struct Object<'de> {
    /// `None` for `null`, which Go decodes into a struct as a no-op.
    map: Option<&'de Map<String, Value>>,
    place: Place,
}

impl<'de> Object<'de> {
    /// The document `value` as the Go struct `go_type` (`main.NetConf`):
    /// `null` is an empty object, anything else but an object is Go's
    /// `json: cannot unmarshal array into Go value of type main.NetConf`.
    pub fn new(value: &'de Value, go_type: &str) -> Result<Object<'de>, DecodeError> {
        Field::root(value).as_struct(go_type)
    }

    /// The field whose JSON name is `name`, matched as Go matches keys
    /// ([`super::lookup`]); a `null` field when absent.
    pub fn get(&self, name: &str) -> Field<'de> {
        Field {
            value: self.map.and_then(|m| lookup(m, name)).unwrap_or(&NULL),
            place: self.place.field(name),
        }
    }

    /// `get(name).decode()`.
    pub fn field<T: Deserialize<'de>>(&self, name: &str) -> Result<T, DecodeError> {
        self.get(name).decode()
    }

    /// `get(name).object(go_type)`.
    pub fn object(&self, name: &str, go_type: &str) -> Result<Option<Object<'de>>, DecodeError> {
        self.get(name).object(go_type)
    }
}

/// serde's view of a value at a place, with Go's decoding rules.
struct De<'de> {
    value: &'de Value,
    place: Place,
}

impl<'de> De<'de> {
    fn wrong_kind(&self, go_type: &str) -> DecodeError {
        self.place.mismatch(kind(self.value), go_type)
    }

    /// An integer of Go type `go_type` in `min..=max`. Go reports a number
    /// that does not fit (or is not an integer) with its digits.
    fn integer(&self, min: i128, max: i128, go_type: &str) -> Result<i128, DecodeError> {
        match self.value {
            Value::Null => Ok(0),
            Value::Number(n) => n
                .as_i64()
                .map(i128::from)
                .or_else(|| n.as_u64().map(i128::from))
                .filter(|i| (min..=max).contains(i))
                .ok_or_else(|| self.place.mismatch(format_args!("number {n}"), go_type)),
            _ => Err(self.wrong_kind(go_type)),
        }
    }

    fn float(&self, max: f64, go_type: &str) -> Result<f64, DecodeError> {
        match self.value {
            Value::Null => Ok(0.0),
            Value::Number(n) => n
                .as_f64()
                .filter(|f| f.abs() <= max)
                .ok_or_else(|| self.place.mismatch(format_args!("number {n}"), go_type)),
            _ => Err(self.wrong_kind(go_type)),
        }
    }

    fn string(&self, go_type: &str) -> Result<&'de str, DecodeError> {
        match self.value {
            Value::Null => Ok(""),
            Value::String(s) => Ok(s),
            _ => Err(self.wrong_kind(go_type)),
        }
    }

    fn seq(&self, items: &'de [Value], len: Option<usize>) -> Seq<'de> {
        // A Go array takes exactly its length: extra elements are dropped,
        // missing ones stay zero.
        let (items, pad) = match len {
            Some(n) => (&items[..n.min(items.len())], n.saturating_sub(items.len())),
            None => (items, 0),
        };
        Seq {
            items: items.iter(),
            pad,
            place: self.place.clone(),
        }
    }
}

macro_rules! integer {
    ($method:ident, $visit:ident, $t:ty, $go:literal) => {
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
            let n = self.integer(<$t>::MIN.into(), <$t>::MAX.into(), $go)?;
            visitor.$visit(<$t>::try_from(n).unwrap_or_default())
        }
    };
}

impl<'de> Deserializer<'de> for De<'de> {
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match self.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => visitor.visit_u64(u),
                (None, Some(i)) => visitor.visit_i64(i),
                _ => visitor.visit_f64(n.as_f64().unwrap_or_default()),
            },
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(items) => visitor.visit_seq(self.seq(items, None)),
            Value::Object(map) => visitor.visit_map(Entries::map(map, &self.place)),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match self.value {
            Value::Null => visitor.visit_bool(false),
            Value::Bool(b) => visitor.visit_bool(*b),
            _ => Err(self.wrong_kind("bool")),
        }
    }

    integer!(deserialize_i8, visit_i8, i8, "int8");
    integer!(deserialize_i16, visit_i16, i16, "int16");
    integer!(deserialize_i32, visit_i32, i32, "int32");
    integer!(deserialize_i64, visit_i64, i64, "int");
    integer!(deserialize_u8, visit_u8, u8, "uint8");
    integer!(deserialize_u16, visit_u16, u16, "uint16");
    integer!(deserialize_u32, visit_u32, u32, "uint32");
    integer!(deserialize_u64, visit_u64, u64, "uint");

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        let f = self.float(f64::from(f32::MAX), "float32")?;
        visitor.visit_f32(f as f32)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_f64(self.float(f64::MAX, "float64")?)
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_borrowed_str(self.string("string")?)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        self.deserialize_str(visitor)
    }

    /// A Go pointer: `null` is nil.
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match self.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match self.value {
            Value::Null => visitor.visit_seq(self.seq(&[], None)),
            Value::Array(items) => visitor.visit_seq(self.seq(items, None)),
            _ => Err(self.wrong_kind(&go_name(std::any::type_name::<V::Value>()))),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        match self.value {
            Value::Null => visitor.visit_seq(self.seq(&[], Some(len))),
            Value::Array(items) => visitor.visit_seq(self.seq(items, Some(len))),
            _ => Err(self.wrong_kind(&go_name(std::any::type_name::<V::Value>()))),
        }
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        self.deserialize_tuple(len, visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match self.value {
            Value::Null => visitor.visit_map(Entries::fields(None, &[], &self.place)),
            Value::Object(map) => visitor.visit_map(Entries::map(map, &self.place)),
            _ => Err(self.wrong_kind(&go_name(std::any::type_name::<V::Value>()))),
        }
    }

    /// Every field of the struct is handed to its `Deserialize`, `null` for
    /// those the object lacks, so absent fields get Go's zero value without
    /// `#[serde(default)]`.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        let place = self.place.inside(name);
        match self.value {
            Value::Null => visitor.visit_map(Entries::fields(None, fields, &place)),
            Value::Object(map) => visitor.visit_map(Entries::fields(Some(map), fields, &place)),
            _ => Err(self.wrong_kind(name)),
        }
    }

    /// String-valued enums only (`"tcp"`); the variant names are matched
    /// exactly.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        match self.value {
            Value::String(s) => visitor.visit_enum(BorrowedStrDeserializer::new(s)),
            _ => Err(self.wrong_kind(name)),
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_unit()
    }
}

/// The elements of an array (or a Go array's fixed length of them).
struct Seq<'de> {
    items: std::slice::Iter<'de, Value>,
    /// `null`s still owed to fill a fixed length.
    pad: usize,
    place: Place,
}

impl<'de> SeqAccess<'de> for Seq<'de> {
    type Error = DecodeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DecodeError> {
        let value = match self.items.next() {
            Some(v) => v,
            None if self.pad > 0 => {
                self.pad -= 1;
                &NULL
            }
            None => return Ok(None),
        };
        seed.deserialize(De {
            value,
            place: self.place.clone(),
        })
        .map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len() + self.pad)
    }
}

/// The entries of a Go map (keys as written) or of a struct (its fields,
/// each found by Go's key matching).
struct Entries<'de> {
    entries: std::vec::IntoIter<(&'de str, &'de Value)>,
    next: Option<(&'de Value, Place)>,
    place: Place,
    is_struct: bool,
}

impl<'de> Entries<'de> {
    fn map(map: &'de Map<String, Value>, place: &Place) -> Entries<'de> {
        Entries {
            entries: map
                .iter()
                .map(|(k, v)| (k.as_str(), v))
                .collect::<Vec<_>>()
                .into_iter(),
            next: None,
            place: place.clone(),
            is_struct: false,
        }
    }

    fn fields(
        map: Option<&'de Map<String, Value>>,
        fields: &'static [&'static str],
        place: &Place,
    ) -> Entries<'de> {
        let found = |f: &str| map.and_then(|m| lookup(m, f)).unwrap_or(&NULL);
        Entries {
            entries: fields
                .iter()
                .map(|f| (*f, found(f)))
                .collect::<Vec<_>>()
                .into_iter(),
            next: None,
            place: place.clone(),
            is_struct: true,
        }
    }
}

impl<'de> MapAccess<'de> for Entries<'de> {
    type Error = DecodeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DecodeError> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        // Go names struct fields in errors; map values keep the map's place.
        let place = if self.is_struct {
            self.place.field(key)
        } else {
            self.place.clone()
        };
        self.next = Some((value, place));
        seed.deserialize(BorrowedStrDeserializer::new(key))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, DecodeError> {
        let (value, place) = self.next.take().unwrap_or((&NULL, self.place.clone()));
        seed.deserialize(De { value, place })
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// Go's name for the Rust type a mismatched slice or map was decoded into
/// (`alloc::vec::Vec<alloc::string::String>` is `[]string`). Rust's 64-bit
/// integers are named as Go's `int` and `uint`.
fn go_name(rust: &str) -> String {
    let rust = rust.trim().trim_start_matches('&');
    let (path, args) = match rust.find('<') {
        Some(i) if rust.ends_with('>') => (&rust[..i], split_args(&rust[i + 1..rust.len() - 1])),
        _ => (rust, Vec::new()),
    };
    let name = path.rsplit("::").next().unwrap_or(path);
    match (name, args.as_slice()) {
        ("Vec" | "VecDeque" | "BTreeSet" | "HashSet", [t, ..]) => format!("[]{}", go_name(t)),
        ("Option" | "Box", [t]) => go_name(t),
        ("HashMap" | "BTreeMap" | "Map", [k, v, ..]) => {
            format!("map[{}]{}", go_name(k), go_name(v))
        }
        ("String" | "str", _) => "string".into(),
        ("Value", _) => "interface {}".into(),
        ("i64" | "isize", _) => "int".into(),
        ("u64" | "usize", _) => "uint".into(),
        ("i8" | "i16" | "i32", _) => format!("int{}", &name[1..]),
        ("u8" | "u16" | "u32", _) => format!("uint{}", &name[1..]),
        ("f32" | "f64", _) => format!("float{}", &name[1..]),
        (other, _) => other.to_string(),
    }
}

/// `A, B<C, D>` split at the top-level commas.
fn split_args(s: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0usize, 0);
    for (i, c) in s.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(s[start..].trim());
    out
}
