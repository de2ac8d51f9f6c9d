//! Go's `%q` of a string (`strconv.Quote`), which the reference's messages
//! embed: `ARGS: invalid pair "a\x01b"`.

use std::fmt::Write as _;

/// `strconv.Quote(s)`.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if is_print(c) => out.push(c),
            c if (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// Go's `strconv.IsPrint`: letters, marks, numbers, punctuation, symbols
/// and the ASCII space. Outside ASCII, Rust has no category tables; we
/// escape what Go escapes among the characters that can be met in
/// practice (controls, spaces other than U+0020, format characters,
/// private use), and print unassigned code points literally.
fn is_print(c: char) -> bool {
    if c.is_ascii() {
        return (' '..='~').contains(&c);
    }
    let n = c as u32;
    let format = matches!(
        n,
        0xad | 0x600..=0x605
            | 0x61c
            | 0x6dd
            | 0x70f
            | 0x180e
            | 0x200b..=0x200f
            | 0x202a..=0x202e
            | 0x2060..=0x206f
            | 0xfeff
            | 0xfff9..=0xfffb
            | 0xe0001
            | 0xe0020..=0xe007f
    );
    let private = matches!(n, 0xe000..=0xf8ff | 0xf0000..=0x10ffff);
    !(c.is_control() || c.is_whitespace() || format || private)
}
