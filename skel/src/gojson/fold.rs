//! Go's case rules where they decide compatibility: how `encoding/json`
//! matches an object key to a struct field, and `strings.ToLower`.
//!
//! Go maps a rune with its *simple* case mapping (one rune to one rune);
//! Rust's `to_lowercase`/`to_uppercase` are the full mappings, which can
//! give several characters. Where they do, the simple mapping is the rune
//! itself, except for U+0130 (capital I with dot), whose simple lowercase
//! is `i`. Greek letters with a combined iota (U+1F80–U+1FFC) are the only
//! other runes that fold differently here; no Go field name contains them.

use serde_json::{Map, Value};

/// Go's `unicode.ToLower` of one rune.
pub fn lower(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_lowercase();
    }
    let mut m = c.to_lowercase();
    match (m.next(), m.next()) {
        (Some(l), None) => l,
        _ if c == '\u{130}' => 'i',
        _ => c,
    }
}

/// Go's `unicode.ToUpper` of one rune.
fn upper(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_uppercase();
    }
    let mut m = c.to_uppercase();
    match (m.next(), m.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

/// The key `encoding/json` compares field names by (its `foldName`): every
/// rune upper-cased after lower-casing, so `K` (Kelvin sign) matches `k`
/// and `ſ` (long s) matches `s`.
fn fold(c: char) -> char {
    if c.is_ascii() {
        c.to_ascii_uppercase()
    } else {
        upper(lower(c))
    }
}

/// Whether `key` names the field `name` when matched case-insensitively.
pub fn fold_eq(key: &str, name: &str) -> bool {
    key.chars().map(fold).eq(name.chars().map(fold))
}

/// Go's `strings.ToLower`.
pub fn to_lower(s: &str) -> String {
    s.chars().map(lower).collect()
}

/// The value `encoding/json` decodes into the struct field whose JSON name
/// is `name`: the key spelled exactly so, else a key equal to it under Go's
/// case folding.
///
/// Go visits keys in document order and the last matching key wins; a
/// parsed [`Map`] no longer knows that order, so when several keys differ
/// only in case (`{"mtu":1,"MTU":2}`) and none is exact, the first in
/// sorted order is taken.
pub fn lookup<'a>(obj: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    obj.get(name)
        .or_else(|| obj.iter().find(|(k, _)| fold_eq(k, name)).map(|(_, v)| v))
}
