//! How the reference reads the text of its files, so that the same files
//! mean the same thing to both plugins.
//!
//! - `last_reserved_ip.<N>` is `net.ParseIP` of the raw content: no
//!   trimming, so an address followed by a newline is no address at all.
//! - A lease is a file whose *name* `net.ParseIP` accepts; its owner is its
//!   content after `strings.TrimSpace`.
//! - An address is reserved by creating the file named `IP.String()`, so
//!   only that exact name makes the address taken.
//!
//! `net.ParseIP` is `netip.ParseAddr` minus zones since Go 1.22 (the
//! reference's current releases); Rust's parser accepts exactly the same
//! language: dotted quads without leading zeros, at most four hex digits a
//! group, an embedded IPv4 only at the end, `::` for at least one group,
//! no whitespace, no zone. The v1.1.1 binaries were built with Go 1.19,
//! whose parser also took IPv6 groups with more than four digits when the
//! value fits (`00fd40::1`); we follow the current one.

use std::net::IpAddr;

use crate::range::canon;

/// Go's `net.ParseIP` on raw bytes, IPv4-mapped IPv6 read as IPv4 (what
/// `To4()` and every comparison in the reference do).
pub fn parse_ip(text: &[u8]) -> Option<IpAddr> {
    let text = std::str::from_utf8(text).ok()?;
    text.parse::<IpAddr>().ok().map(canon)
}

/// Go's `IP.String()`: the name of the lease file for `ip`.
pub fn ip_string(ip: IpAddr) -> String {
    canon(ip).to_string()
}

/// The address whose lease file is named `name`: `name` must be exactly
/// what Go's `IP.String()` prints for it (`FD40::5` or `::ffff:10.0.0.5`
/// name an address but do not reserve it).
pub fn lease_name_ip(name: &str) -> Option<IpAddr> {
    parse_ip(name.as_bytes()).filter(|ip| ip_string(*ip) == name)
}

/// Go's `strings.TrimSpace`: Unicode white space off both ends, decoding
/// UTF-8 as it goes; an invalid byte is not white space and stops the trim.
pub fn trim_space(bytes: &[u8]) -> &[u8] {
    let mut start = 0;
    while let Some((c, len)) = decode_first(&bytes[start..]) {
        if !c.is_whitespace() {
            break;
        }
        start += len;
    }
    let mut end = bytes.len();
    while end > start {
        match decode_last(&bytes[start..end]) {
            Some((c, len)) if c.is_whitespace() => end -= len,
            _ => break,
        }
    }
    &bytes[start..end]
}

fn decode_first(bytes: &[u8]) -> Option<(char, usize)> {
    let len = bytes.len().min(4);
    (1..=len).find_map(|n| {
        let c = std::str::from_utf8(&bytes[..n]).ok()?.chars().next()?;
        Some((c, n))
    })
}

fn decode_last(bytes: &[u8]) -> Option<(char, usize)> {
    let len = bytes.len().min(4);
    (1..=len).find_map(|n| {
        let c = std::str::from_utf8(&bytes[bytes.len() - n..])
            .ok()?
            .chars()
            .next()?;
        Some((c, n))
    })
}

#[cfg(test)]
mod tests;
