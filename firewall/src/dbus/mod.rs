//! A minimal blocking D-Bus client, enough for firewalld: connect to a
//! bus over a unix socket, authenticate, call methods with basic
//! arguments and read their replies or errors, never waiting past a
//! deadline. No async runtime, no new crates: one `UnixStream`.
//!
//! - [`wire`]: values and their marshalling by signature;
//! - [`message`]: whole messages (header, header fields, body);
//! - [`conn`]: address, SASL `EXTERNAL`, `Hello`, calls.

pub mod conn;
pub mod message;
pub mod wire;

#[cfg(test)]
mod tests;

use std::fmt;

pub use conn::Conn;
pub use message::Message;
pub use wire::Value;

/// The bus itself.
pub const BUS_NAME: &str = "org.freedesktop.DBus";
pub const BUS_PATH: &str = "/org/freedesktop/DBus";
pub const BUS_INTERFACE: &str = "org.freedesktop.DBus";

/// The error the bus answers a call to a name nobody owns with.
pub const SERVICE_UNKNOWN: &str = "org.freedesktop.DBus.Error.ServiceUnknown";
pub const NAME_HAS_NO_OWNER: &str = "org.freedesktop.DBus.Error.NameHasNoOwner";

/// Why a call did not return.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The bus cannot be reached or refused us: no socket, connection
    /// refused, authentication rejected.
    NoBus(String),
    /// The call was answered with a D-Bus error: its name and message.
    Reply { name: String, message: String },
    /// No answer before the deadline.
    Timeout,
    /// The connection broke or the bus sent something malformed.
    Failed(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoBus(why) | Error::Failed(why) => f.write_str(why),
            // As godbus shows a D-Bus error: its message, else its name.
            Error::Reply { name, message } if message.is_empty() => f.write_str(name),
            Error::Reply { message, .. } => f.write_str(message),
            Error::Timeout => f.write_str("no reply from the bus in time"),
        }
    }
}
