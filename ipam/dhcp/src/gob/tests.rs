use proptest::prelude::*;

use super::*;

fn uint(u: u64) -> Vec<u8> {
    let mut v = Vec::new();
    put_uint(&mut v, u);
    v
}

fn int(i: i64) -> Vec<u8> {
    let mut v = Vec::new();
    put_int(&mut v, i);
    v
}

#[test]
fn integers_are_encoded_as_the_gob_documentation_shows() {
    // encoding/gob's doc.go and §25.6 of the reference notes.
    assert_eq!(uint(0), [0x00]);
    assert_eq!(uint(7), [0x07]);
    assert_eq!(uint(127), [0x7f]);
    assert_eq!(uint(130), [0xff, 0x82]);
    assert_eq!(uint(256), [0xfe, 0x01, 0x00]);
    assert_eq!(uint(300), [0xfe, 0x01, 0x2c]);
    assert_eq!(
        uint(u64::MAX),
        [0xf8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
    );
    assert_eq!(int(-65), [0xff, 0x81]);
    assert_eq!(int(65), [0xff, 0x82]);
    assert_eq!(int(66), [0xff, 0x84]);
    assert_eq!(int(-3), [0x05]);
    assert_eq!(int(-1), [0x01]);
    assert_eq!(
        int(i64::MIN),
        [0xf8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
    );
}

#[test]
fn floats_are_byte_reversed() {
    // doc.go: 17.0 is sent as FE 31 40.
    let mut v = Vec::new();
    put_float(&mut v, 17.0);
    assert_eq!(v, [0xfe, 0x31, 0x40]);
}

/// The first message of every Go rpc client stream, from the Debian
/// v1.1.1 plugin (testdata/gob/allocate.c2s after the HTTP CONNECT).
const GO_REQUEST_TYPEDEF: &[u8] = &[
    0x2f, 0xff, 0x81, 0x03, 0x01, 0x01, 0x07, b'R', b'e', b'q', b'u', b'e', b's', b't', 0x01, 0xff,
    0x82, 0x00, 0x01, 0x02, 0x01, 0x0d, b'S', b'e', b'r', b'v', b'i', b'c', b'e', b'M', b'e', b't',
    b'h', b'o', b'd', 0x01, 0x0c, 0x00, 0x01, 0x03, b'S', b'e', b'q', 0x01, 0x06, 0x00, 0x00, 0x00,
];

#[test]
fn a_go_type_definition_decodes_and_encodes_to_the_same_bytes() {
    let mut dec = Decoder::new();
    let mut r = GO_REQUEST_TYPEDEF;
    let payload = read_message(&mut r).unwrap();
    assert!(dec.message(&payload).unwrap().is_none());
    let want = WireType::strukt("Request", &[("ServiceMethod", STRING), ("Seq", UINT)]);
    assert_eq!(dec.types().get(65), Some(&want));

    let mut types = Types::new();
    types.define(65, want);
    let mut out = Vec::new();
    let v = Value::strukt(vec![("ServiceMethod", Value::str("DHCP.Allocate"))]);
    Encoder::new().encode(&types, 65, &v, &mut out).unwrap();
    assert_eq!(&out[..GO_REQUEST_TYPEDEF.len()], GO_REQUEST_TYPEDEF);
    // The value: field 0 only, Seq = 0 left out.
    assert_eq!(
        &out[GO_REQUEST_TYPEDEF.len()..],
        b"\x12\xff\x82\x01\x0dDHCP.Allocate\x00"
    );
}

#[test]
fn definitions_are_sent_once_per_stream() {
    let mut types = Types::new();
    types.define(65, WireType::strukt("T", &[("A", INT)]));
    let mut enc = Encoder::new();
    let v = Value::strukt(vec![("A", Value::Int(1))]);
    let (mut first, mut second) = (Vec::new(), Vec::new());
    enc.encode(&types, 65, &v, &mut first).unwrap();
    enc.encode(&types, 65, &v, &mut second).unwrap();
    assert_eq!(second, [0x05, 0xff, 0x82, 0x01, 0x02, 0x00]);
    assert!(first.ends_with(&second) && first.len() > second.len());
}

#[test]
fn a_top_level_value_that_is_not_a_struct_has_the_singleton_byte() {
    let mut types = Types::new();
    types.define(65, WireType::slice("[]string", STRING));
    let mut out = Vec::new();
    let v = Value::Slice(vec![Value::str("a")]);
    Encoder::new().encode(&types, 65, &v, &mut out).unwrap();
    let mut dec = Decoder::new();
    let mut r = &out[..];
    assert_eq!(dec.read(&mut r).unwrap(), (65, v));
    // A builtin top-level value needs no definition: id, 00, value.
    let mut out = Vec::new();
    Encoder::new()
        .encode(&types, INT, &Value::Int(-3), &mut out)
        .unwrap();
    assert_eq!(out, [0x03, 0x04, 0x00, 0x05]);
}

#[test]
fn unknown_fields_and_types_of_the_sender_are_kept_by_name() {
    // A sender whose struct has a field the receiver does not expect, in
    // another order: the receiver still finds "B" by name.
    let mut types = Types::new();
    types.define(
        70,
        WireType::strukt("X", &[("Extra", STRING), ("B", INT), ("C", 71)]),
    );
    types.define(71, WireType::strukt("", &[("D", BOOL)]));
    let v = Value::strukt(vec![
        ("Extra", Value::str("x")),
        ("B", Value::Int(9)),
        ("C", Value::strukt(vec![("D", Value::Bool(true))])),
    ]);
    let mut out = Vec::new();
    Encoder::new().encode(&types, 70, &v, &mut out).unwrap();
    let (id, got) = Decoder::new().read(&mut &out[..]).unwrap();
    assert_eq!(id, 70);
    assert_eq!(got.int("B"), Some(9));
    assert_eq!(
        got.field("C").and_then(|c| c.field("D")),
        Some(&Value::Bool(true))
    );
}

#[test]
fn malformed_input_is_an_error_not_a_panic() {
    let mut dec = Decoder::new();
    for bad in [
        &[][..],
        &[0x03],                   // value of type 1 without its singleton byte content
        &[0xff, 0x82, 0x01],       // value of undefined type 65
        &[0x01, 0x05],             // field delta past the end of a wireType
        &[0x7f, 0x01, 0x01, 0x01], // definition of id -64: below the user range
    ] {
        assert!(dec.message(bad).is_err(), "{bad:?}");
    }
    // A message length beyond the limit is refused before reading it.
    let mut huge = vec![0xf8];
    huge.extend_from_slice(&u64::MAX.to_be_bytes());
    assert!(matches!(
        read_message(&mut &huge[..]),
        Err(ReadError::Gob(_))
    ));
    // A count larger than the bytes left is refused (no huge allocation).
    let mut types = Types::new();
    types.define(65, WireType::slice("[]int", INT));
    let mut out = Vec::new();
    Encoder::new()
        .encode(&types, 65, &Value::Slice(vec![]), &mut out)
        .unwrap();
    let mut dec = Decoder::new();
    let mut r = &out[..];
    let payload = read_message(&mut r).unwrap();
    dec.message(&payload).unwrap();
    assert!(
        dec.message(&[0xff, 0x82, 0x00, 0xfc, 0xff, 0xff, 0xff, 0xff])
            .is_err()
    );
}

#[test]
fn nesting_is_bounded() {
    // A type that contains a slice of itself, and a value nested deeper
    // than the limit.
    let mut types = Types::new();
    types.define(65, WireType::slice("[]T", 65));
    let mut payload = vec![0xff, 0x82, 0x00];
    payload.extend(std::iter::repeat_n(0x01, 200));
    payload.push(0x00);
    let mut dec = Decoder::new();
    let mut def = Vec::new();
    Encoder::new()
        .encode(&types, 65, &Value::Slice(vec![]), &mut def)
        .unwrap();
    dec.message(&read_message(&mut &def[..]).unwrap()).unwrap();
    assert!(dec.message(&payload).is_err());
}

// ----------------------------------------------------- property tests

/// A type tree; composite nodes get ids when a schema is built from it.
#[derive(Debug, Clone)]
enum Shape {
    Bool,
    Int,
    Uint,
    Float,
    Bytes,
    Str,
    Struct(Vec<Shape>),
    Slice(Box<Shape>),
    Map(Box<Shape>, Box<Shape>),
}

fn shape() -> impl Strategy<Value = Shape> {
    let leaf = prop_oneof![
        Just(Shape::Bool),
        Just(Shape::Int),
        Just(Shape::Uint),
        Just(Shape::Float),
        Just(Shape::Bytes),
        Just(Shape::Str),
    ];
    leaf.prop_recursive(4, 24, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Shape::Struct),
            inner.clone().prop_map(|s| Shape::Slice(Box::new(s))),
            (inner.clone(), inner).prop_map(|(k, v)| Shape::Map(Box::new(k), Box::new(v))),
        ]
    })
}

/// Define the composite types of `s` in `types` (ids from `next`).
fn schema(s: &Shape, types: &mut Types, next: &mut TypeId) -> TypeId {
    match s {
        Shape::Bool => BOOL,
        Shape::Int => INT,
        Shape::Uint => UINT,
        Shape::Float => FLOAT,
        Shape::Bytes => BYTES,
        Shape::Str => STRING,
        Shape::Struct(fields) => {
            let id = *next;
            *next += 1;
            let ids: Vec<(String, TypeId)> = fields
                .iter()
                .enumerate()
                .map(|(i, f)| (format!("F{i}"), schema(f, types, next)))
                .collect();
            types.define(
                id,
                WireType {
                    name: format!("S{id}"),
                    def: Def::Struct(ids),
                },
            );
            id
        }
        Shape::Slice(e) => {
            let id = *next;
            *next += 1;
            let e = schema(e, types, next);
            types.define(id, WireType::slice("", e));
            id
        }
        Shape::Map(k, v) => {
            let id = *next;
            *next += 1;
            let (k, v) = (schema(k, types, next), schema(v, types, next));
            types.define(
                id,
                WireType {
                    name: String::new(),
                    def: Def::Map(k, v),
                },
            );
            id
        }
    }
}

fn value(s: &Shape) -> BoxedStrategy<Value> {
    match s {
        Shape::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
        Shape::Int => any::<i64>().prop_map(Value::Int).boxed(),
        Shape::Uint => any::<u64>().prop_map(Value::Uint).boxed(),
        // Any bit pattern but NaN, which is not equal to itself.
        Shape::Float => any::<f64>()
            .prop_filter("NaN", |f| !f.is_nan())
            .prop_map(Value::Float)
            .boxed(),
        Shape::Bytes => prop::collection::vec(any::<u8>(), 0..12)
            .prop_map(Value::Bytes)
            .boxed(),
        Shape::Str => prop::collection::vec(any::<u8>(), 0..12)
            .prop_map(Value::Str)
            .boxed(),
        Shape::Struct(fields) => {
            let parts: Vec<BoxedStrategy<Option<Value>>> = fields
                .iter()
                .map(|f| prop::option::of(value(f)).boxed())
                .collect();
            parts
                .prop_map(|vals| {
                    Value::Struct(
                        vals.into_iter()
                            .enumerate()
                            .filter_map(|(i, v)| Some((format!("F{i}"), v?)))
                            .collect(),
                    )
                })
                .boxed()
        }
        Shape::Slice(e) => prop::collection::vec(value(e), 0..4)
            .prop_map(Value::Slice)
            .boxed(),
        Shape::Map(k, v) => prop::collection::vec((value(k), value(v)), 0..3)
            .prop_map(Value::Map)
            .boxed(),
    }
}

/// `v` as a receiver sees it: struct fields holding zero values are not
/// sent, so they are absent.
fn received(v: &Value) -> Value {
    match v {
        Value::Struct(fields) => Value::Struct(
            fields
                .iter()
                .filter(|(_, f)| !f.is_zero())
                .map(|(n, f)| (n.clone(), received(f)))
                .collect(),
        ),
        Value::Slice(items) => Value::Slice(items.iter().map(received).collect()),
        Value::Map(pairs) => Value::Map(
            pairs
                .iter()
                .map(|(k, v)| (received(k), received(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn typed_value() -> impl Strategy<Value = (Shape, Value)> {
    shape().prop_flat_map(|s| {
        let v = value(&s);
        (Just(s), v)
    })
}

proptest! {
    #[test]
    fn unsigned_integers_round_trip(u in any::<u64>()) {
        let b = uint(u);
        prop_assert_eq!(Buf(&b).uint(), Ok(u));
    }

    #[test]
    fn signed_integers_round_trip(i in any::<i64>()) {
        let b = int(i);
        prop_assert_eq!(Buf(&b).int(), Ok(i));
    }

    /// Any value of any type: encoded with its definitions, decoded by a
    /// fresh decoder, it comes back as the receiver should see it; a
    /// second value on the same stream needs no definitions.
    #[test]
    fn values_round_trip_with_their_definitions((s, v) in typed_value()) {
        let mut types = Types::new();
        let mut next = FIRST_USER;
        let id = schema(&s, &mut types, &mut next);
        let mut enc = Encoder::new();
        let mut out = Vec::new();
        enc.encode(&types, id, &v, &mut out).unwrap();
        enc.encode(&types, id, &v, &mut out).unwrap();
        let mut dec = Decoder::new();
        let mut r = &out[..];
        let want = received(&v);
        prop_assert_eq!(dec.read(&mut r).unwrap(), (id, want.clone()));
        prop_assert_eq!(dec.read(&mut r).unwrap(), (id, want));
        prop_assert!(r.is_empty());
    }

    /// Decoding arbitrary bytes fails cleanly or succeeds, never panics,
    /// also after a valid definition.
    #[test]
    fn arbitrary_messages_never_panic(tail in prop::collection::vec(any::<u8>(), 0..64)) {
        let mut dec = Decoder::new();
        let _ = dec.message(&tail);
        let mut r = GO_REQUEST_TYPEDEF;
        let def = read_message(&mut r).unwrap();
        dec.message(&def).unwrap();
        let mut value = vec![0xff, 0x82];
        value.extend_from_slice(&tail);
        let _ = dec.message(&value);
        let _ = read_message(&mut &tail[..]);
    }
}
