//! `/proc/sys` keys, in the caller's namespace or inside another one.
//!
//! The `net/` part of `/proc/sys` shows the namespace of the thread that
//! opens the file, so per-namespace keys are read and written while the
//! thread is switched (through [`crate::netns`]).

use std::fs::File;

use crate::error::{Error, Result};
use crate::netns;

/// The file of `key` (`net/ipv4/ip_forward`: slash-separated, relative to
/// `/proc/sys`; dots are not separators because interface names may hold
/// them).
fn path_of(key: &str) -> Result<String> {
    if key.is_empty() || key.starts_with('/') || key.split('/').any(|c| c.is_empty() || c == "..") {
        return Err(Error::other(format!("sysctl {key:?}"), "invalid key"));
    }
    Ok(format!("/proc/sys/{key}"))
}

/// Read `key` in the caller's namespace, without the trailing newline.
pub fn get(key: &str) -> Result<String> {
    let path = path_of(key)?;
    std::fs::read_to_string(&path)
        .map(|s| s.trim_end().to_string())
        .map_err(|e| Error::io(format!("read sysctl {key}"), &e))
}

/// Write `value` to `key` in the caller's namespace.
pub fn set(key: &str, value: &str) -> Result<()> {
    let path = path_of(key)?;
    std::fs::write(&path, value).map_err(|e| Error::io(format!("write sysctl {key}={value}"), &e))
}

/// [`get`] inside the namespace `ns`.
pub fn get_in(ns: &File, key: &str) -> Result<String> {
    netns::run(ns, || get(key))?
}

/// [`set`] inside the namespace `ns`.
pub fn set_in(ns: &File, key: &str, value: &str) -> Result<()> {
    netns::run(ns, || set(key, value))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_cannot_escape_proc_sys() {
        for bad in ["", "/etc/passwd", "net/../../etc", "net//x"] {
            assert!(path_of(bad).is_err(), "{bad}");
        }
        assert_eq!(
            path_of("net/ipv6/conf/br.10/accept_ra").unwrap(),
            "/proc/sys/net/ipv6/conf/br.10/accept_ra"
        );
    }

    #[test]
    fn reads_a_key() {
        let v = get("kernel/ostype").unwrap();
        assert_eq!(v, "Linux");
        let e = get("net/no_such_key_cnirs").unwrap_err();
        assert!(e.is_not_found(), "{e}");
    }
}
