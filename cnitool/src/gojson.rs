//! JSON and base64 encoded byte for byte as Go's `encoding/json` writes
//! them, so that cache files and plugin stdin match what libcni produces:
//! compact, object keys sorted (Go marshals maps in key order), `<`, `>`,
//! `&`, U+2028 and U+2029 escaped, floats in Go's format, `[]byte` as
//! padded standard base64.

use std::fmt::Write as _;

use serde_json::Value;

/// `json.Marshal` of a value decoded into `interface{}`.
pub fn to_string(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v);
    out
}

fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // Sorted explicitly: serde_json's map keeps insertion order when
            // some crate enables its `preserve_order` feature.
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(out, k);
                out.push(':');
                write_value(out, &map[k]);
            }
            out.push('}');
        }
    }
}

fn write_number(out: &mut String, n: &serde_json::Number) {
    if n.is_u64() || n.is_i64() {
        let _ = write!(out, "{n}");
        return;
    }
    let f = n.as_f64().unwrap_or(0.0);
    out.push_str(&go_float(f));
}

/// Go's float64 encoding: shortest round-trip digits, plain notation for
/// 1e-6 <= |f| < 1e21, otherwise `1e+21` / `1e-7` style exponents.
fn go_float(f: f64) -> String {
    let abs = f.abs();
    if abs == 0.0 || (1e-6..1e21).contains(&abs) {
        // Rust's Display never uses an exponent and prints 3.0 as "3".
        return format!("{f}");
    }
    let s = format!("{f:e}");
    match s.split_once('e') {
        Some((mant, exp)) if !exp.starts_with('-') => format!("{mant}e+{exp}"),
        _ => s,
    }
}

fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

pub use skel::base64::{decode as base64_decode, encode as base64_encode};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_are_sorted_and_compact() {
        let v = json!({"b": 1, "a": [true, null, {"z": "x", "y": 2.5}]});
        assert_eq!(
            to_string(&v),
            r#"{"a":[true,null,{"y":2.5,"z":"x"}],"b":1}"#
        );
    }

    #[test]
    fn strings_escape_like_go() {
        let v = json!("a<b>&c\"\\\n\t\u{1}\u{8}\u{2028}é");
        assert_eq!(
            to_string(&v),
            r#""a\u003cb\u003e\u0026c\"\\\n\t\u0001\b\u2028é""#
        );
    }

    #[test]
    fn floats_like_go() {
        assert_eq!(go_float(3.0), "3");
        assert_eq!(go_float(1.5), "1.5");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(1.5e-7), "1.5e-7");
        assert_eq!(go_float(-0.000001), "-0.000001");
        let v: Value = serde_json::from_str("[1.0, 100, -7, 18446744073709551615]").unwrap();
        assert_eq!(to_string(&v), "[1,100,-7,18446744073709551615]");
    }
}
