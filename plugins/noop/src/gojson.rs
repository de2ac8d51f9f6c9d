//! The few `encoding/json` behaviours of Go that files shared with Go test
//! suites depend on: field names matched case-insensitively, `null` as the
//! zero value, Go's type-error wording, and HTML-safe escaping on output so
//! that files we write are byte-identical to what Go would write.

use serde::Serialize;
use serde_json::{Map, Value};

pub use skel::json_kind as kind;

/// Parse a document the way `json.Unmarshal` into a struct does: empty input
/// and non-objects are errors, `null` is an empty object. `type_name` is the
/// Go type named in errors (`debug.Debug`).
pub fn parse_object(bytes: &[u8], type_name: &str) -> Result<Map<String, Value>, String> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err("unexpected end of JSON input".into());
    }
    match serde_json::from_slice::<Value>(bytes).map_err(|e| e.to_string())? {
        Value::Object(m) => Ok(m),
        Value::Null => Ok(Map::new()),
        other => Err(format!(
            "json: cannot unmarshal {} into Go value of type {type_name}",
            kind(&other)
        )),
    }
}

/// A struct's view of a JSON object: fields found by Go's rules (exact name
/// first, then case-insensitive), typed getters with Go's error text.
pub struct Fields<'a> {
    obj: &'a Map<String, Value>,
    /// `Debug` in `Go struct field Debug.ReportResult`.
    type_name: &'a str,
}

impl<'a> Fields<'a> {
    pub fn new(obj: &'a Map<String, Value>, type_name: &'a str) -> Self {
        Fields { obj, type_name }
    }

    fn get(&self, name: &str) -> Option<&'a Value> {
        self.obj.get(name).or_else(|| {
            self.obj
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v)
        })
    }

    fn type_error(&self, name: &str, v: &Value, go_type: &str) -> String {
        let what = match v {
            Value::Number(n) => format!("number {n}"),
            other => kind(other).to_string(),
        };
        format!(
            "json: cannot unmarshal {what} into Go struct field {}.{name} of type {go_type}",
            self.type_name
        )
    }

    pub fn string(&self, name: &str) -> Result<String, String> {
        match self.get(name) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(v) => Err(self.type_error(name, v, "string")),
        }
    }

    /// A string that may be absent (`null`), kept distinct from `""`.
    pub fn opt_string(&self, name: &str) -> Result<Option<String>, String> {
        match self.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(self.type_error(name, v, "string")),
        }
    }

    pub fn uint(&self, name: &str) -> Result<u64, String> {
        match self.get(name) {
            None | Some(Value::Null) => Ok(0),
            Some(v @ Value::Number(n)) => {
                n.as_u64().ok_or_else(|| self.type_error(name, v, "uint"))
            }
            Some(v) => Err(self.type_error(name, v, "uint")),
        }
    }

    pub fn int(&self, name: &str) -> Result<i64, String> {
        match self.get(name) {
            None | Some(Value::Null) => Ok(0),
            Some(v @ Value::Number(n)) => n.as_i64().ok_or_else(|| self.type_error(name, v, "int")),
            Some(v) => Err(self.type_error(name, v, "int")),
        }
    }

    /// A `[]string`: `null` stays distinct from `[]`, as Go's nil slice does.
    pub fn strings(&self, name: &str) -> Result<Option<Vec<String>>, String> {
        match self.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| match item {
                    Value::Null => Ok(String::new()),
                    Value::String(s) => Ok(s.clone()),
                    v => Err(self.type_error(name, v, "string")),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(v) => Err(self.type_error(name, v, "[]string")),
        }
    }

    /// A nested struct: `null`/absent is the zero value.
    pub fn object(
        &self,
        name: &str,
        go_type: &str,
    ) -> Result<Option<&'a Map<String, Value>>, String> {
        match self.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(v) => Err(self.type_error(name, v, go_type)),
        }
    }
}

/// `json.Marshal`: compact, with `<`, `>`, `&`, U+2028 and U+2029 escaped.
/// Those characters can only occur inside strings, so escaping them in the
/// serialised text is exact.
pub fn marshal<T: Serialize>(value: &T) -> String {
    let text = serde_json::to_string(value).unwrap_or_default();
    html_escape(&text)
}

pub fn html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_match_like_go() {
        let obj = parse_object(
            br#"{"reportresult":"x","ExitWithCode":3,"ReportErrorCode":null}"#,
            "debug.Debug",
        )
        .unwrap();
        let f = Fields::new(&obj, "Debug");
        assert_eq!(f.string("ReportResult").unwrap(), "x");
        assert_eq!(f.int("ExitWithCode").unwrap(), 3);
        assert_eq!(f.uint("ReportErrorCode").unwrap(), 0);
        assert_eq!(f.strings("ReportVersionSupport").unwrap(), None);
    }

    #[test]
    fn go_error_wording() {
        assert_eq!(
            parse_object(b" ", "debug.Debug").unwrap_err(),
            "unexpected end of JSON input"
        );
        assert_eq!(
            parse_object(b"[]", "debug.Debug").unwrap_err(),
            "json: cannot unmarshal array into Go value of type debug.Debug"
        );
        assert!(parse_object(b"null", "debug.Debug").unwrap().is_empty());
        let obj = parse_object(
            br#"{"ReportErrorCode":-1,"ReportResult":5,"ReportVersionSupport":"1.0.0"}"#,
            "x",
        )
        .unwrap();
        let f = Fields::new(&obj, "Debug");
        assert_eq!(
            f.uint("ReportErrorCode").unwrap_err(),
            "json: cannot unmarshal number -1 into Go struct field Debug.ReportErrorCode of type uint"
        );
        assert_eq!(
            f.string("ReportResult").unwrap_err(),
            "json: cannot unmarshal number 5 into Go struct field Debug.ReportResult of type string"
        );
        assert_eq!(
            f.strings("ReportVersionSupport").unwrap_err(),
            "json: cannot unmarshal string into Go struct field Debug.ReportVersionSupport of type []string"
        );
    }

    #[test]
    fn marshal_escapes_like_go() {
        assert_eq!(
            marshal(&serde_json::json!({"a": "<b>&\u{2028}"})),
            r#"{"a":"\u003cb\u003e\u0026\u2028"}"#
        );
    }
}
