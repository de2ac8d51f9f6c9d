use std::collections::BTreeMap;

use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::*;

// ------------------------------------------------------------ key matching

#[test]
fn keys_fold_as_go_folds_them() {
    for (key, name) in [
        ("HOSTPORT", "hostPort"),
        ("hostport", "hostPort"),
        ("\u{212a}ey", "key"),  // Kelvin sign
        ("\u{17f}nat", "snat"), // long s
        ("\u{130}P", "ip"),     // capital I with dot
        ("\u{131}p", "IP"),     // dotless i
        ("\u{3c3}", "\u{3a3}"),
        ("\u{3c2}", "\u{3a3}"), // final sigma
    ] {
        assert!(fold::fold_eq(key, name), "{key:?} ~ {name:?}");
    }
    for (key, name) in [("mtu ", "mtu"), ("stra\u{df}e", "STRASSE"), ("ip", "ipx")] {
        assert!(!fold::fold_eq(key, name), "{key:?} !~ {name:?}");
    }
}

#[test]
fn lookup_prefers_the_exact_key() {
    let obj = json!({"MTU": 1, "mtu": 2, "Bridge": "b"});
    let m = obj.as_object().unwrap();
    assert_eq!(lookup(m, "mtu"), Some(&json!(2)));
    assert_eq!(lookup(m, "MTU"), Some(&json!(1)));
    assert_eq!(lookup(m, "bridge"), Some(&json!("b")));
    assert_eq!(lookup(m, "vlan"), None);
}

#[test]
fn to_lower_uses_go_simple_mapping() {
    assert_eq!(to_lower("TRUE"), "true");
    assert_eq!(to_lower("\u{130}X\u{c4}"), "ix\u{e4}");
}

// ---------------------------------------------------------------- decoding

#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(rename = "main.NetConf")]
struct Conf {
    name: String,
    mtu: i64,
    #[serde(rename = "isGateway")]
    is_gateway: bool,
    #[serde(rename = "vlanTrunk")]
    vlan_trunk: Option<Vec<Trunk>>,
    #[serde(rename = "ipam")]
    ipam: Ipam,
    port: u16,
    code: u64,
    dns: Option<Vec<String>>,
    labels: BTreeMap<String, String>,
    pair: (String, String),
    raw: Value,
    proto: Option<Proto>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(rename = "types.IPAM")]
struct Ipam {
    #[serde(rename = "type")]
    plugin: String,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(rename = "main.VlanTrunk")]
struct Trunk {
    #[serde(rename = "minID")]
    min_id: Option<i64>,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename = "main.Proto")]
enum Proto {
    #[serde(rename = "tcp")]
    Tcp,
}

fn decode(json: &str) -> Result<Conf, String> {
    unmarshal(json.as_bytes()).map_err(|e| e.to_string())
}

#[test]
fn absent_and_null_fields_are_zero_values() {
    assert_eq!(decode("{}").unwrap(), Conf::default());
    assert_eq!(decode("null").unwrap(), Conf::default());
    let all_null = r#"{"name":null,"mtu":null,"isGateway":null,"vlanTrunk":null,"ipam":null,
        "port":null,"code":null,"dns":null,"labels":null,"pair":null,"raw":null,"proto":null}"#;
    assert_eq!(decode(all_null).unwrap(), Conf::default());
}

#[test]
fn every_kind_of_field_decodes_with_go_key_matching() {
    let c = decode(
        r#"{"NAME":"n","Mtu":1400,"ISGATEWAY":true,"vlantrunk":[{"MINID":5},null],
            "Ipam":{"TYPE":"host-local","x":1},"port":65535,"code":7,"dns":[],"unknown":[1],
            "labels":{"A":"b"},"pair":["x"],"raw":{"K":[1.5]},"proto":"tcp"}"#,
    )
    .unwrap();
    assert_eq!(c.name, "n");
    assert_eq!(
        (c.mtu, c.is_gateway, c.port, c.code),
        (1400, true, 65535, 7)
    );
    assert_eq!(
        c.vlan_trunk,
        Some(vec![Trunk { min_id: Some(5) }, Trunk { min_id: None }])
    );
    assert_eq!(c.ipam.plugin, "host-local");
    assert_eq!(c.dns, Some(vec![]));
    assert_eq!(c.labels.get("A").map(String::as_str), Some("b"));
    // A Go array takes its length: missing elements are zero.
    assert_eq!(c.pair, ("x".to_string(), String::new()));
    assert_eq!(c.raw, json!({"K":[1.5]}));
    assert_eq!(c.proto, Some(Proto::Tcp));
}

#[test]
fn type_errors_are_worded_as_go_words_them() {
    for (json, want) in [
        (
            r#"{"mtu":"1"}"#,
            "json: cannot unmarshal string into Go struct field NetConf.mtu of type int",
        ),
        (
            r#"{"mtu":1.5}"#,
            "json: cannot unmarshal number 1.5 into Go struct field NetConf.mtu of type int",
        ),
        (
            r#"{"port":70000}"#,
            "json: cannot unmarshal number 70000 into Go struct field NetConf.port of type uint16",
        ),
        (
            r#"{"code":-1}"#,
            "json: cannot unmarshal number -1 into Go struct field NetConf.code of type uint",
        ),
        (
            r#"{"name":5}"#,
            "json: cannot unmarshal number into Go struct field NetConf.name of type string",
        ),
        (
            r#"{"isGateway":"true"}"#,
            "json: cannot unmarshal string into Go struct field NetConf.isGateway of type bool",
        ),
        (
            r#"{"ipam":{"type":5}}"#,
            "json: cannot unmarshal number into Go struct field IPAM.ipam.type of type string",
        ),
        (
            r#"{"ipam":[]}"#,
            "json: cannot unmarshal array into Go struct field NetConf.ipam of type types.IPAM",
        ),
        (
            r#"{"vlanTrunk":[5]}"#,
            "json: cannot unmarshal number into Go struct field NetConf.vlanTrunk of type main.VlanTrunk",
        ),
        (
            r#"{"vlanTrunk":[{"minID":"x"}]}"#,
            "json: cannot unmarshal string into Go struct field VlanTrunk.vlanTrunk.minID of type int",
        ),
        (
            r#"{"dns":"a"}"#,
            "json: cannot unmarshal string into Go struct field NetConf.dns of type []string",
        ),
        (
            r#"{"labels":[]}"#,
            "json: cannot unmarshal array into Go struct field NetConf.labels of type map[string]string",
        ),
        (
            "[1]",
            "json: cannot unmarshal array into Go value of type main.NetConf",
        ),
        ("", "unexpected end of JSON input"),
        ("  {\"name\":", "unexpected end of JSON input"),
    ] {
        assert_eq!(decode(json).unwrap_err(), want, "{json}");
    }
}

#[test]
fn object_walks_fields_with_the_same_rules_and_places() {
    let doc = json!({"Ipam": {"Ranges": [[{"subnet": 5}]]}, "mtu": null});
    let net = Object::new(&doc, "allocator.Net").unwrap();
    assert!(net.get("mtu").is_null() && net.get("absent").is_null());
    assert_eq!(net.field::<i64>("mtu").unwrap(), 0);
    let ipam = net
        .object("ipam", "*allocator.IPAMConfig")
        .unwrap()
        .unwrap();
    let sets = ipam.get("ranges").items("[]allocator.RangeSet").unwrap();
    let ranges = sets[0].items("allocator.RangeSet").unwrap();
    let range = ranges[0].object("allocator.Range").unwrap().unwrap();
    assert_eq!(
        range.field::<String>("subnet").unwrap_err().to_string(),
        "json: cannot unmarshal number into Go struct field Range.ipam.ranges.subnet of type string"
    );
    assert_eq!(
        ranges[0]
            .items("[]allocator.Range")
            .unwrap_err()
            .to_string(),
        "json: cannot unmarshal object into Go struct field IPAMConfig.ipam.ranges of type []allocator.Range"
    );
    assert!(net.object("nothing", "x.Y").unwrap().is_none());
    assert!(Object::new(&Value::Null, "x.Y").unwrap().get("a").is_null());
    assert_eq!(
        Object::new(&json!("s"), r#"struct { Name string "json:\"name\"" }"#)
            .unwrap_err()
            .to_string(),
        r#"json: cannot unmarshal string into Go value of type struct { Name string "json:\"name\"" }"#
    );
    let anon = json!({"name": 5});
    let anon = Object::new(&anon, r#"struct { Name string "json:\"name\"" }"#).unwrap();
    assert_eq!(
        anon.field::<String>("name").unwrap_err().to_string(),
        "json: cannot unmarshal number into Go struct field .name of type string"
    );
}

#[test]
fn rust_type_names_become_go_type_names() {
    use decode_names::go;
    assert_eq!(go::<Vec<String>>(), "[]string");
    assert_eq!(go::<Option<Vec<u16>>>(), "[]uint16");
    assert_eq!(go::<BTreeMap<String, Vec<i64>>>(), "map[string][]int");
    assert_eq!(
        go::<serde_json::Map<String, Value>>(),
        "map[string]interface {}"
    );
    assert_eq!(go::<Vec<Trunk>>(), "[]Trunk");
}

/// The name a mismatched sequence of `T` gets in an error.
mod decode_names {
    pub fn go<T: for<'de> serde::Deserialize<'de>>() -> String {
        let Err(e) = super::from_value::<T>(&serde_json::json!(true)) else {
            panic!("true decoded")
        };
        e.to_string().rsplit("of type ").next().unwrap().to_string()
    }
}

proptest! {
    /// Whatever the document, decoding answers (a value or an error)
    /// without panicking.
    #[test]
    fn decoding_any_document_never_panics(doc in any_json()) {
        let _ = from_value::<Conf>(&doc);
        let _ = Object::new(&doc, "main.NetConf").map(|o| o.field::<Vec<Trunk>>("vlanTrunk"));
    }

    /// ASCII keys match exactly when they are equal ignoring ASCII case.
    #[test]
    fn ascii_folding_is_ascii_case_insensitivity(a in "[a-zA-Z0-9_]{0,6}", b in "[a-zA-Z0-9_]{0,6}") {
        prop_assert_eq!(fold::fold_eq(&a, &b), a.eq_ignore_ascii_case(&b));
        prop_assert_eq!(fold::fold_eq(&a, &b), fold::fold_eq(&b, &a));
    }
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        "[a-zA-Z<&\u{2028}]{0,4}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "name",
                    "NAME",
                    "mtu",
                    "vlanTrunk",
                    "minID",
                    "ipam",
                    "type",
                    "pair",
                    "labels",
                    "port",
                    "code",
                    "dns",
                    "raw",
                    "proto",
                    "x",
                ])
                .prop_map(str::to_string),
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

// ---------------------------------------------------------------- encoding

#[test]
fn strings_are_escaped_as_go_escapes_them() {
    assert_eq!(
        marshal("a<b>&c\"\\\n\r\t\u{1}\u{8}\u{c}\u{7f}\u{2028}\u{2029}é"),
        concat!(
            r#""a\u003cb\u003e\u0026c\"\\\n\r\t\u0001\b\f"#,
            "\u{7f}",
            r#"\u2028\u2029é""#
        )
    );
    // Keys too.
    assert_eq!(marshal(&json!({"<": 1})), r#"{"\u003c":1}"#);
}

#[test]
fn floats_are_formatted_as_go_formats_them() {
    for (f, want) in [
        (3.0, "3"),
        (1.5, "1.5"),
        (-0.0, "-0"),
        (0.000001, "0.000001"),
        (-0.000001, "-0.000001"),
        (1.5e-7, "1.5e-7"),
        (1e-10, "1e-10"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (1.2345e300, "1.2345e+300"),
        (f64::MAX, "1.7976931348623157e+308"),
    ] {
        assert_eq!(marshal(&f), want, "{f:e}");
    }
    assert_eq!(marshal(&1e21f32), "1e+21");
    assert_eq!(marshal(&0.1f32), "0.1");
    let v: Value = serde_json::from_str("[1.0, 100, -7, 18446744073709551615]").unwrap();
    assert_eq!(marshal(&v), "[1,100,-7,18446744073709551615]");
}

#[test]
fn maps_are_sorted_and_structs_keep_their_order() {
    #[derive(Serialize)]
    struct S {
        z: u8,
        a: BTreeMap<&'static str, u8>,
    }
    let s = S {
        z: 1,
        a: [("b", 2), ("a", 1)].into_iter().collect(),
    };
    assert_eq!(marshal(&s), r#"{"z":1,"a":{"a":1,"b":2}}"#);
    // serde_json's Map must stay sorted: a dependency enabling its
    // `preserve_order` feature would break Go's map order everywhere.
    let m: Value = serde_json::from_str(r#"{"b":1,"a":{"d":1,"c":2}}"#).unwrap();
    assert_eq!(marshal(&m), r#"{"a":{"c":2,"d":1},"b":1}"#);
}

#[test]
fn indented_output_is_go_marshal_indent() {
    let v = json!({"code": 7, "list": [1, {"k": "<"}], "empty": [], "obj": {}});
    assert_eq!(
        marshal_indent(&v),
        "{\n    \"code\": 7,\n    \"empty\": [],\n    \"list\": [\n        1,\n        {\n            \"k\": \"\\u003c\"\n        }\n    ],\n    \"obj\": {}\n}"
    );
}

proptest! {
    /// Go's escaping changes the text, never the value, and leaves none of
    /// the escaped characters raw.
    #[test]
    fn marshalled_text_parses_back_to_the_same_value(doc in any_json()) {
        let text = marshal(&doc);
        prop_assert!(!text.contains(['<', '>', '&', '\u{2028}', '\u{2029}']), "{}", text);
        let back: Value = serde_json::from_str(&text).unwrap();
        prop_assert!(same(&back, &doc), "{} vs {}", back, doc);
        let back: Value = serde_json::from_str(&marshal_indent(&doc)).unwrap();
        prop_assert!(same(&back, &doc), "{} vs {}", back, doc);
    }
}

/// Equal as JSON values, numbers by their value (Go prints 2.0 as `2`,
/// and serde_json's default float parser may miss the last bit).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y || (x - y).abs() <= x.abs() * 1e-15,
            _ => false,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((k, x), (l, y))| k == l && same(x, y))
        }
        _ => a == b,
    }
}

proptest! {
    /// Go's float text is exact: it reads back (with an exact parser) as
    /// the same float.
    #[test]
    fn floats_read_back_exactly(f in any::<f64>().prop_filter("finite", |f| f.is_finite())) {
        let text = marshal(&f);
        prop_assert_eq!(text.parse::<f64>().unwrap(), f, "{}", text);
        prop_assert!(!text.contains("e0") && !text.contains("e-0") && !text.ends_with(".0"), "{}", text);
    }
}

// ---------------------------------------------------------------- quoting

#[test]
fn quote_is_go_strconv_quote() {
    for (s, want) in [
        ("IP=10.0.0.1", r#""IP=10.0.0.1""#),
        ("a\"b\\c", r#""a\"b\\c""#),
        ("\u{7}\u{8}\u{c}\n\r\t\u{b}", r#""\a\b\f\n\r\t\v""#),
        ("\u{0}\u{1}\u{1b}\u{7f}", r#""\x00\x01\x1b\x7f""#),
        ("é<>&", "\"é<>&\""),
        (
            "\u{a0}\u{ad}\u{2028}\u{feff}",
            r#""\u00a0\u00ad\u2028\ufeff""#,
        ),
        ("\u{85}", r#""\u0085""#),
        ("\u{f0000}😀", r#""\U000f0000😀""#),
    ] {
        assert_eq!(quote(s), want, "{s:?}");
    }
}
