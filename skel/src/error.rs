//! The CNI error object: a spec code, a message and optional details.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::gojson::{self, DecodeError};

/// Spec error codes (SPEC §5 and the reference `types` package).
pub mod code {
    pub const UNKNOWN: u32 = 0;
    pub const INCOMPATIBLE_VERSION: u32 = 1;
    pub const UNSUPPORTED_FIELD: u32 = 2;
    pub const UNKNOWN_CONTAINER: u32 = 3;
    pub const INVALID_ENVIRONMENT: u32 = 4;
    pub const IO_FAILURE: u32 = 5;
    pub const DECODING_FAILURE: u32 = 6;
    pub const INVALID_NETWORK_CONFIG: u32 = 7;
    pub const INVALID_NETNS: u32 = 8;
    pub const TRY_AGAIN_LATER: u32 = 11;
    pub const PLUGIN_NOT_AVAILABLE: u32 = 50;
    pub const LIMITED_CONNECTIVITY: u32 = 51;
    pub const INTERNAL: u32 = 999;
}

/// An error as a plugin reports it on stdout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub code: u32,
    pub msg: String,
    pub details: String,
}

impl Error {
    pub fn new(code: u32, msg: impl Into<String>) -> Self {
        Error {
            code,
            msg: msg.into(),
            details: String::new(),
        }
    }

    pub fn with_details(code: u32, msg: impl Into<String>, details: impl Into<String>) -> Self {
        Error {
            code,
            msg: msg.into(),
            details: details.into(),
        }
    }

    /// An error without a more specific code; the reference skel maps every
    /// plain Go error to 999.
    pub fn internal(msg: impl Into<String>) -> Self {
        Error::new(code::INTERNAL, msg)
    }

    /// An invalid configuration value or combination (code 7).
    pub fn config(msg: impl Into<String>) -> Self {
        Error::new(code::INVALID_NETWORK_CONFIG, msg)
    }

    /// Undecodable input (code 6).
    pub fn decode(msg: impl Into<String>) -> Self {
        Error::new(code::DECODING_FAILURE, msg)
    }

    /// Prefix the message with what was being done, keeping code and details.
    pub fn context(mut self, what: impl fmt::Display) -> Self {
        self.msg = format!("{what}: {}", self.msg);
        self
    }

    /// The wire form, byte for byte the reference's `Print`: Go's
    /// `MarshalIndent` of `{"code", "msg", "details"?}` with four spaces and
    /// no trailing newline. The spec also lists `cniVersion`, but the
    /// reference never prints it and test suites written against the Go
    /// plugins compare the whole object, so we don't either.
    pub fn to_json(&self) -> String {
        gojson::marshal_indent(&Wire {
            code: u64::from(self.code),
            msg: self.msg.clone(),
            details: self.details.clone(),
        })
    }

    /// Decode an error object printed by another plugin, as the reference's
    /// `invoke` decodes it into `types.Error` (keys matched as Go matches
    /// them, absent ones zero). A code beyond `u32` becomes 999.
    pub fn from_json(bytes: &[u8]) -> Result<Error, DecodeError> {
        let w: Wire = gojson::unmarshal(bytes)?;
        Ok(Error {
            code: u32::try_from(w.code).unwrap_or(code::INTERNAL),
            msg: w.msg,
            details: w.details,
        })
    }
}

/// The reference's `types.Error`, field for field.
#[derive(Serialize, Deserialize)]
#[serde(rename = "types.Error")]
struct Wire {
    code: u64,
    msg: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    details: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.details.is_empty() {
            write!(f, "{}", self.msg)
        } else {
            write!(f, "{}; {}", self.msg, self.details)
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_form_matches_reference() {
        let e = Error::new(4, "required env variables [CNI_NETNS] missing");
        assert_eq!(
            e.to_json(),
            "{\n    \"code\": 4,\n    \"msg\": \"required env variables [CNI_NETNS] missing\"\n}"
        );
        let e = Error::with_details(1, "incompatible CNI versions", "config is \"9.9.9\"");
        assert_eq!(
            e.to_json(),
            "{\n    \"code\": 1,\n    \"msg\": \"incompatible CNI versions\",\n    \"details\": \"config is \\\"9.9.9\\\"\"\n}"
        );
    }

    #[test]
    fn parses_foreign_error() {
        let e = Error::from_json(br#"{"code":7,"msg":"banana","details":"d"}"#).unwrap();
        assert_eq!(e, Error::with_details(7, "banana", "d"));
        // As Go decodes into types.Error: any key case, absent keys zero.
        let e = Error::from_json(br#"{"Code":7,"MSG":"banana"}"#).unwrap();
        assert_eq!(e, Error::new(7, "banana"));
        assert_eq!(
            Error::from_json(br#"{"msg":"m"}"#).unwrap(),
            Error::new(0, "m")
        );
        assert!(Error::from_json(b"garbage").is_err());
        assert_eq!(
            Error::from_json(br#"{"code":"7"}"#)
                .unwrap_err()
                .to_string(),
            "json: cannot unmarshal string into Go struct field Error.code of type uint"
        );
    }
}
