//! The sysctl allowlist, `/etc/cni/tuning/allowlist.conf`: when the file
//! exists, every configured sysctl key must match one of its lines, each a
//! Go regular expression matched unanchored (as `regexp.MatchString`), so
//! an entry without `^...$` allows every key that contains it.

use std::path::PathBuf;

use crate::error::Error;
use crate::regexp::Regex;

pub const PATH: &str = "/etc/cni/tuning/allowlist.conf";

/// Debug builds only: read the allowlist from this file instead, so tests
/// never touch `/etc`. Release builds always read [`PATH`].
#[cfg(debug_assertions)]
pub const PATH_VAR: &str = "CNI_RS_TUNING_ALLOWLIST";

fn path() -> PathBuf {
    #[cfg(debug_assertions)]
    if let Some(p) = std::env::var_os(PATH_VAR) {
        return PathBuf::from(p);
    }
    PathBuf::from(PATH)
}

/// Refuse the first key (in key order) that no entry allows. No file
/// means no restriction; a file that cannot be read fails ADD.
pub fn check<'a>(keys: impl IntoIterator<Item = &'a String>) -> Result<(), Error> {
    let path = path();
    let bytes = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(Error::config(format!(
                "open {}: {}",
                path.display(),
                skel::io_text(&e)
            )));
        }
    };
    let entries: Vec<Entry> = bytes
        .split(|&b| b == b'\n')
        .map(Entry::of_line)
        .filter(|e| !e.text.is_empty())
        .collect();
    allowed(keys, &entries)
}

/// One entry: a line, trimmed as Go's `strings.TrimSpace` trims it.
/// A line that is not UTF-8 (a Latin-1 comment, say) fails as Go's
/// `regexp` fails it, only when reached; reading the whole file as text
/// failed every ADD. Its text shows invalid bytes as U+FFFD, as Go's
/// JSON encoder prints them.
#[derive(Debug, Clone)]
pub struct Entry {
    text: String,
    /// Go's `invalid UTF-8` error text: the line from its first invalid
    /// byte.
    invalid: Option<String>,
}

impl Entry {
    fn of_line(line: &[u8]) -> Entry {
        let lossy = String::from_utf8_lossy(line);
        let invalid = std::str::from_utf8(line).err().map(|e| {
            let rest = String::from_utf8_lossy(&line[e.valid_up_to()..]);
            format!("error parsing regexp: invalid UTF-8: `{}`", rest.trim_end())
        });
        Entry {
            text: lossy.trim().to_string(),
            invalid,
        }
    }
}

impl From<&str> for Entry {
    fn from(s: &str) -> Entry {
        Entry {
            text: s.to_string(),
            invalid: None,
        }
    }
}

/// The check against the `entries` of an allowlist. Entries are compiled
/// as the reference compiles them, when first needed, so a bad entry
/// after the one that allows every key goes unnoticed there too.
pub fn allowed<'a>(
    keys: impl IntoIterator<Item = &'a String>,
    entries: &[Entry],
) -> Result<(), Error> {
    let mut compiled: Vec<Option<Regex>> = vec![None; entries.len()];
    for key in keys {
        let mut found = false;
        for (i, entry) in entries.iter().enumerate() {
            if compiled[i].is_none() {
                if let Some(e) = &entry.invalid {
                    return Err(Error::config(e.clone()));
                }
                let entry = &entry.text;
                let re = Regex::new(entry).map_err(|e| match e {
                    crate::regexp::Error::Unsupported(_) => {
                        Error::config(format!("allowlist entry {entry:?}: {e}"))
                    }
                    crate::regexp::Error::Syntax(_) => Error::config(e.to_string()),
                })?;
                compiled[i] = Some(re);
            }
            if compiled[i].as_ref().is_some_and(|re| re.is_match(key)) {
                found = true;
                break;
            }
        }
        if !found {
            return Err(Error::config(format!(
                "Sysctl {key} is not allowed. Only the following sysctls are allowed: [{}]",
                entries
                    .iter()
                    .map(|e| e.text.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(keys: &[&str], entries: &[&str]) -> Result<(), String> {
        let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        let entries: Vec<Entry> = entries.iter().map(|e| Entry::from(*e)).collect();
        allowed(&keys, &entries).map_err(|e| e.to_string())
    }

    #[test]
    fn every_key_needs_an_entry() {
        let list = [
            r"^net\.ipv4\.conf\.IFNAME\.[a-z_]*$",
            r"^net\.core\.somaxconn$",
        ];
        check(
            &["net.core.somaxconn", "net.ipv4.conf.IFNAME.arp_notify"],
            &list,
        )
        .unwrap();
        assert_eq!(
            check(&["net.core.somaxconn", "net.ipv4.ip_forward"], &list).unwrap_err(),
            r"Sysctl net.ipv4.ip_forward is not allowed. Only the following sysctls are allowed: [^net\.ipv4\.conf\.IFNAME\.[a-z_]*$ ^net\.core\.somaxconn$]"
        );
        // An empty allowlist file allows nothing.
        assert!(check(&["net.core.somaxconn"], &[]).is_err());
        check(&[], &[]).unwrap();
    }

    #[test]
    fn entries_match_unanchored_as_in_go() {
        check(&["net.ipv4.conf.eth0.forwarding"], &["ipv4"]).unwrap();
    }

    #[test]
    fn bad_entries_fail_when_reached() {
        assert_eq!(
            check(&["net.x"], &["(net"]).unwrap_err(),
            "error parsing regexp: missing closing ): `(net`"
        );
        // Never compiled: the first entry already allows the key.
        check(&["net.x"], &["net", "(net"]).unwrap();
        let e = check(&["net.x"], &["(?i)NET"]).unwrap_err();
        assert!(
            e.starts_with(r#"allowlist entry "(?i)NET": unsupported regexp syntax"#),
            "{e}"
        );
    }

    /// A line that is not UTF-8 fails only when reached, with Go's
    /// words; lines end in CRLF or other Unicode space are trimmed.
    #[test]
    fn lines_of_any_bytes_are_entries_as_in_go() {
        let file = b"^net\\.core\\.somaxconn$\r\n# caf\xe9 au lait \r\n\xc2\xa0^net\\.ipv4\\.x$\xe2\x80\x83\n\n";
        let entries: Vec<Entry> = file
            .split(|&b| b == b'\n')
            .map(Entry::of_line)
            .filter(|e| !e.text.is_empty())
            .collect();
        let texts: Vec<&str> = entries.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                r"^net\.core\.somaxconn$",
                "# caf\u{fffd} au lait",
                r"^net\.ipv4\.x$"
            ]
        );
        let keys = |k: &str| vec![k.to_string()];
        allowed(&keys("net.core.somaxconn"), &entries).unwrap();
        assert_eq!(
            allowed(&keys("net.ipv4.x"), &entries)
                .unwrap_err()
                .to_string(),
            "error parsing regexp: invalid UTF-8: `\u{fffd} au lait`"
        );
    }
}
