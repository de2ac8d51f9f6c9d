//! firewalld over D-Bus, as the reference's firewall plugin uses it
//! (`plugins/meta/firewall/firewalld.go`): a container address is bound to
//! a zone as a *source* of that zone (`addSource`), unbound at DEL
//! (`removeSource`) and looked for at CHECK (`querySource`), all on
//! `/org/fedoraproject/FirewallD1`, interface
//! `org.fedoraproject.FirewallD1.zone`. Only runtime state changes:
//! sources added this way are gone when firewalld restarts or reloads,
//! as with the reference.
//!
//! The bus is the system bus: `DBUS_SYSTEM_BUS_ADDRESS` (`unix:path=` or
//! `unix:abstract=`), else `/run/dbus/system_bus_socket`. firewalld is
//! running when its name `org.fedoraproject.FirewallD1` has an owner
//! (`GetNameOwner` answers, as the reference asks).
//!
//! Errors: no bus, or firewalld not on it, is
//! [`ErrorKind::Unavailable`]`(Firewalld)`; a refusal is
//! [`ErrorKind::Dbus`] with the D-Bus error name and firewalld's code
//! ([`Error::firewalld_code`]); a bus that does not answer within
//! [`TIMEOUT`] is [`ErrorKind::Failed`].

use std::time::Duration;

use crate::backend::Backend;
use crate::dbus::{self, Conn, Message, Value, conn::system_bus_address};
use crate::error::{Error, ErrorKind, Result};

pub const NAME: &str = "org.fedoraproject.FirewallD1";
pub const PATH: &str = "/org/fedoraproject/FirewallD1";
pub const ZONE_INTERFACE: &str = "org.fedoraproject.FirewallD1.zone";
/// The D-Bus error of every firewalld refusal; the code leads its message.
pub const EXCEPTION: &str = crate::error::FIREWALLD_EXCEPTION;

/// How long a call (or connecting) may take: D-Bus's default reply
/// timeout. firewalld applies a change before it answers, which takes
/// tens of milliseconds; a bus that takes this long is stuck.
pub const TIMEOUT: Duration = Duration::from_secs(25);

/// Whether firewalld is running on the system bus. Any failure (no bus,
/// refused, no owner) counts as not running, as in the reference. When it
/// runs, the connection is kept for the next [`Firewalld::connect`]: auto
/// selection then `addSource` is one connection (one authentication, one
/// `Hello`), as the reference's shared godbus `SystemBus()`.
pub fn running() -> bool {
    let Ok(mut f) = Firewalld::connect() else {
        return false;
    };
    let up = f.running();
    if up && let Ok(mut kept) = SYSTEM_BUS.lock() {
        *kept = Some(f);
    }
    up
}

/// The system bus connection [`running`] found firewalld on, until a
/// [`Firewalld::connect`] takes it. A plugin call is one short process.
static SYSTEM_BUS: std::sync::Mutex<Option<Firewalld>> = std::sync::Mutex::new(None);

/// [`running`] on the bus at `address`.
pub fn running_at(address: &str) -> bool {
    Firewalld::connect_to(address).is_ok_and(|mut f| f.running())
}

/// A connection to the bus firewalld is on.
pub struct Firewalld {
    conn: Conn,
}

impl Firewalld {
    /// Connect to the system bus (see the module overview), or take the
    /// connection [`running`] kept.
    pub fn connect() -> Result<Firewalld> {
        if let Some(f) = SYSTEM_BUS.lock().ok().and_then(|mut kept| kept.take()) {
            return Ok(f);
        }
        Firewalld::connect_to(&system_bus_address())
    }

    /// Connect to the bus at `address` (`unix:path=/run/x/bus`).
    pub fn connect_to(address: &str) -> Result<Firewalld> {
        let conn = Conn::open(address, TIMEOUT).map_err(|e| {
            let what = format!("connect to the system bus at {address}");
            match e {
                dbus::Error::NoBus(why) => {
                    Error::unavailable(Backend::Firewalld, format!("{what}: {why}"))
                }
                other => classify(other, what),
            }
        })?;
        Ok(Firewalld { conn })
    }

    /// Whether firewalld's name has an owner on this bus.
    pub fn running(&mut self) -> bool {
        let m = Message::call(
            dbus::BUS_NAME,
            dbus::BUS_PATH,
            dbus::BUS_INTERFACE,
            "GetNameOwner",
            vec![Value::Str(NAME.into())],
        );
        matches!(self.conn.call(m).as_deref(), Ok([Value::Str(_)]))
    }

    /// Bind `source` (`10.88.0.2/32`) to `zone`: `true` when added,
    /// `false` when it was already bound to that zone (firewalld's
    /// `ZONE_ALREADY_SET`, which the reference accepts). Bound to another
    /// zone is an error (`ZONE_CONFLICT`), as in the reference.
    pub fn add_source(&mut self, zone: &str, source: &str) -> Result<bool> {
        let what = format!("failed to add the address {source} to {zone} zone");
        match self.zone_call("addSource", &[zone, source], what) {
            Ok(_) => Ok(true),
            Err(e) if e.firewalld_code() == Some("ZONE_ALREADY_SET") => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Unbind `source` from `zone`: `true` when removed, `false` when it
    /// was not bound to that zone: not bound at all (`UNKNOWN_SOURCE`;
    /// `NOT_ENABLED` from older firewalld), bound to another zone
    /// (`ZONE_CONFLICT`), which is not ours to remove, or the zone does
    /// not exist (`INVALID_ZONE`, or a name holding a NUL, which no
    /// D-Bus string can carry: it holds nothing; a DEL after an ADD that
    /// failed on it must succeed). The reference ignores every error
    /// here; DEL callers may too.
    pub fn remove_source(&mut self, zone: &str, source: &str) -> Result<bool> {
        if zone.contains('\0') {
            // No D-Bus string, so no zone, holds a NUL: nothing is bound.
            return Ok(false);
        }
        let what = format!("failed to remove the address {source} from {zone} zone");
        match self.zone_call("removeSource", &[zone, source], what) {
            Ok(_) => Ok(true),
            Err(e) => match e.firewalld_code() {
                Some("UNKNOWN_SOURCE" | "NOT_ENABLED" | "ZONE_CONFLICT" | "INVALID_ZONE") => {
                    Ok(false)
                }
                _ => Err(e),
            },
        }
    }

    /// Whether `source` is bound to `zone` (`querySource`).
    pub fn query_source(&mut self, zone: &str, source: &str) -> Result<bool> {
        let what = format!("failed to find the address {source} in {zone} zone");
        match self.zone_call("querySource", &[zone, source], what.clone())?[..] {
            [Value::Bool(b)] => Ok(b),
            _ => Err(Error::failed(format!("{what}: unexpected reply"))),
        }
    }

    /// The zone `source` is bound to, if any (`getZoneOfSource`; firewalld
    /// answers `""` for none).
    pub fn zone_of_source(&mut self, source: &str) -> Result<Option<String>> {
        let what = format!("failed to get the zone of the address {source}");
        match &self.zone_call("getZoneOfSource", &[source], what.clone())?[..] {
            [Value::Str(z)] => Ok(Some(z.clone()).filter(|z| !z.is_empty())),
            _ => Err(Error::failed(format!("{what}: unexpected reply"))),
        }
    }

    fn zone_call(&mut self, method: &str, args: &[&str], what: String) -> Result<Vec<Value>> {
        let args = args.iter().map(|a| Value::Str(a.to_string())).collect();
        let m = Message::call(NAME, PATH, ZONE_INTERFACE, method, args);
        self.conn.call(m).map_err(|e| classify(e, what))
    }
}

/// A failed call as this crate's error: firewalld missing from the bus is
/// unavailable; other D-Bus errors keep their name.
fn classify(e: dbus::Error, what: String) -> Error {
    match e {
        dbus::Error::Reply { name, message } => {
            let kind = match name.as_str() {
                dbus::SERVICE_UNKNOWN | dbus::NAME_HAS_NO_OWNER => {
                    ErrorKind::Unavailable(Backend::Firewalld)
                }
                _ => ErrorKind::Dbus,
            };
            Error::dbus(kind, what, &name, &message)
        }
        other => Error::failed(format!("{what}: {other}")),
    }
}
