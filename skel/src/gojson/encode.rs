//! Encoding as Go's `encoding/json` writes: serde's serialisation with a
//! formatter that escapes and formats numbers as Go does.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter};

/// `json.Marshal`: compact.
pub fn marshal<T: Serialize + ?Sized>(value: &T) -> String {
    write(value, GoFormatter(CompactFormatter))
}

/// `json.MarshalIndent(v, "", "    ")`: what the reference prints results
/// and errors with (four spaces, no trailing newline).
pub fn marshal_indent<T: Serialize + ?Sized>(value: &T) -> String {
    write(value, GoFormatter(PrettyFormatter::with_indent(b"    ")))
}

fn write<T: Serialize + ?Sized, F: Formatter>(value: &T, formatter: GoFormatter<F>) -> String {
    let mut buf = Vec::with_capacity(128);
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, formatter);
    // Only a map with non-string keys or a failing custom `Serialize` can
    // fail; none of our types does, and Go would print nothing either.
    if value.serialize(&mut ser).is_err() {
        return String::new();
    }
    // serde_json writes only what it was given as `str` plus ASCII.
    String::from_utf8(buf).unwrap_or_default()
}

/// Go's encoder differs from serde_json's in three ways: `<`, `>` and `&`
/// become `\u003c`, `\u003e`, `\u0026` (HTML-safe output, on by default in
/// Go), U+2028 and U+2029 become `\u2028` and `\u2029`, and floats use the
/// shortest form with an exponent only outside `[1e-6, 1e21)`. Object keys
/// come out sorted because serde_json's `Map` is a `BTreeMap` (Go sorts map
/// keys); struct fields keep their declaration order, as in Go.
struct GoFormatter<F>(F);

impl<F: Formatter> Formatter for GoFormatter<F> {
    fn write_string_fragment<W: ?Sized + Write>(&mut self, w: &mut W, s: &str) -> io::Result<()> {
        let mut start = 0;
        for (i, c) in s.char_indices() {
            let escaped = match c {
                '<' => "\\u003c",
                '>' => "\\u003e",
                '&' => "\\u0026",
                '\u{2028}' => "\\u2028",
                '\u{2029}' => "\\u2029",
                _ => continue,
            };
            w.write_all(&s.as_bytes()[start..i])?;
            w.write_all(escaped.as_bytes())?;
            start = i + c.len_utf8();
        }
        w.write_all(&s.as_bytes()[start..])
    }

    fn write_f64<W: ?Sized + Write>(&mut self, w: &mut W, value: f64) -> io::Result<()> {
        let plain = value == 0.0 || (1e-6..1e21).contains(&value.abs());
        w.write_all(go_float(plain, format!("{value}"), format!("{value:e}")).as_bytes())
    }

    fn write_f32<W: ?Sized + Write>(&mut self, w: &mut W, value: f32) -> io::Result<()> {
        // Go compares a float32 with the float32 bounds.
        let plain = value == 0.0 || (1e-6f32..1e21f32).contains(&value.abs());
        w.write_all(go_float(plain, format!("{value}"), format!("{value:e}")).as_bytes())
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// Go's `floatEncoder`: `strconv.FormatFloat(f, 'f', -1)` for zero and
/// `1e-6 <= |f| < 1e21` (`plain`), else the `'e'` form with a signed
/// exponent of at least one digit (`1e+21`, `1.5e-7`). Rust's `{}` and
/// `{:e}` print the same shortest round-trip digits.
fn go_float(plain: bool, fixed: String, exp: String) -> String {
    if plain {
        return fixed;
    }
    match exp.split_once('e') {
        Some((mantissa, e)) if !e.starts_with('-') => format!("{mantissa}e+{e}"),
        _ => exp,
    }
}
