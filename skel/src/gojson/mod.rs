//! Go's `encoding/json` (and `%q`), wherever compatibility with the
//! reference plugins depends on it. Every crate of the suite decodes Go
//! shaped input and prints Go shaped output through this module, so the
//! rules live in one place:
//!
//! - **Keys** match struct fields as Go's decoder matches them: the exact
//!   JSON name first, else any key equal under Go's case folding
//!   (`HostPort` and `HOSTPORT` fill `hostPort`; so does `hoſtPort` with a
//!   long s, as in Go). Unknown keys are ignored. See [`lookup`].
//! - **`null` and absent keys** leave Go's zero value (`""`, `0`, `false`,
//!   an empty list, a struct of zero values); `Option` stands for a Go
//!   pointer and is `None` for both.
//! - **Type errors** read as Go's: `json: cannot unmarshal string into Go
//!   struct field PortMapEntry.runtimeConfig.portMappings.hostPort of type
//!   int` (innermost struct, then the JSON names from the top). A number
//!   that does not fit is named with its digits (`number -1`); see
//!   [`kind`] for the other names. Rust's `i64`/`u64` are reported as Go's
//!   `int`/`uint`, `i32` as `int32` and so on; a struct by its serde name,
//!   so name it as Go does with `#[serde(rename = "main.PortMapEntry")]`.
//! - **Output** is what `json.Marshal` / `json.MarshalIndent(v, "", "    ")`
//!   print: `<`, `>`, `&`, U+2028, U+2029 escaped as `\u003c` …, Go's
//!   float format, object keys sorted (serde_json's `Map` keeps them
//!   sorted; use it or `BTreeMap`, never `HashMap`, for Go maps), struct
//!   fields in declaration order. See [`marshal`], [`marshal_indent`].
//!
//! Derived `Deserialize` types decode with [`unmarshal`] / [`from_value`]
//! in one line. Do not use `#[serde(flatten)]`, `alias` or
//! `deny_unknown_fields` on them, and apply defaults after decoding (as Go
//! code does), since every field is decoded, absent ones from `null`.
//! Hand-written decoders walk an [`Object`] instead, which keeps the same
//! rules and error places.
//!
//! ```
//! use serde::Deserialize;
//! use skel::gojson;
//!
//! /// The reference portmap's `PortMapConf`, in part.
//! #[derive(Debug, Deserialize)]
//! #[serde(rename = "main.PortMapConf")]
//! struct Conf {
//!     #[serde(rename = "runtimeConfig")]
//!     runtime_config: RuntimeConfig,
//!     snat: Option<bool>,
//! }
//!
//! #[derive(Debug, Deserialize)]
//! struct RuntimeConfig {
//!     #[serde(rename = "portMappings")]
//!     port_mappings: Vec<PortMapEntry>,
//! }
//!
//! #[derive(Debug, Deserialize)]
//! #[serde(rename = "main.PortMapEntry")]
//! struct PortMapEntry {
//!     #[serde(rename = "hostPort")]
//!     host_port: i64,
//!     #[serde(rename = "containerPort")]
//!     container_port: i64,
//!     protocol: String,
//!     #[serde(rename = "hostIP")]
//!     host_ip: String,
//! }
//!
//! // containerd sends Go's field names; Go's decoder matches them anyway.
//! let stdin = br#"{"runtimeConfig":{"portMappings":[
//!     {"HostPort":8080,"ContainerPort":80,"Protocol":"tcp","HostIP":null}]}}"#;
//! let conf: Conf = gojson::unmarshal(stdin).unwrap();
//! let m = &conf.runtime_config.port_mappings[0];
//! assert_eq!((m.host_port, m.container_port, m.protocol.as_str()), (8080, 80, "tcp"));
//! assert_eq!((m.host_ip.as_str(), conf.snat), ("", None));
//!
//! let bad = br#"{"runtimeConfig":{"portMappings":[{"hostPort":"80"}]}}"#;
//! assert_eq!(
//!     gojson::unmarshal::<Conf>(bad).unwrap_err().to_string(),
//!     "json: cannot unmarshal string into Go struct field \
//!      PortMapEntry.runtimeConfig.portMappings.hostPort of type int"
//! );
//!
//! // The same by hand, for code that decides field by field.
//! let doc = gojson::parse(stdin).unwrap();
//! let conf = gojson::Object::new(&doc, "main.PortMapConf").unwrap();
//! let maps = conf.get("runtimeConfig").object("struct { ... }").unwrap().unwrap();
//! for entry in maps.get("portMappings").items("[]main.PortMapEntry").unwrap() {
//!     let entry = entry.object("main.PortMapEntry").unwrap().unwrap();
//!     assert_eq!(entry.field::<i64>("hostPort").unwrap(), 8080);
//! }
//!
//! assert_eq!(gojson::marshal(&["a<b"]), r#"["a\u003cb"]"#);
//! ```

mod decode;
mod encode;
mod fold;
mod quote;

pub use decode::{DecodeError, Field, Object, from_value, parse, unmarshal};
pub use encode::{marshal, marshal_indent};
pub use fold::{lookup, to_lower};
pub use quote::quote;

use serde_json::Value;

/// Go's name for the kind of a JSON value in type errors: `null`, `bool`,
/// `number`, `string`, `array`, `object`.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests;
