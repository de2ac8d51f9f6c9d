//! CNI version strings: parsing and ordering as the reference does it, and
//! the versions this suite speaks.

/// Every spec version, oldest first; what our plugins report.
pub const ALL: &[&str] = &[
    "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0",
];

/// The newest spec version; the `cniVersion` of a VERSION answer.
pub const CURRENT: &str = "1.1.0";

/// A parsed version. Parts are signed because the reference accepts
/// `strconv.Atoi` input (the noop plugin deliberately reports `0.-42.0`).
pub type Triple = (i64, i64, i64);

/// Every version from `first` on, as the reference's
/// `VersionsStartingFrom` (plugins that need a `prevResult` of 0.3.0 or
/// CHECK of 0.4.0 support no older configs).
pub fn starting_from(first: &str) -> Vec<String> {
    let all = ALL.iter();
    all.skip_while(|v| **v != first)
        .map(|v| v.to_string())
        .collect()
}

/// Parse like the reference: `""` is 0.1.0, missing parts are zero, at most
/// three parts, each a decimal integer.
pub fn parse(version: &str) -> Result<Triple, String> {
    if version.is_empty() {
        return Ok((0, 1, 0));
    }
    let parts: Vec<&str> = version.split('.').collect();
    if parts.len() >= 4 {
        return Err(format!("invalid version {version:?}: too many parts"));
    }
    let mut out = [0i64; 3];
    for (i, (part, name)) in parts.iter().zip(["major", "minor", "micro"]).enumerate() {
        out[i] = atoi(part)
            .map_err(|e| format!("failed to convert {name} version part {part:?}: {e}"))?;
    }
    Ok((out[0], out[1], out[2]))
}

/// Go's `strconv.Atoi`, with its error text.
fn atoi(s: &str) -> Result<i64, String> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("strconv.Atoi: parsing {s:?}: invalid syntax"));
    }
    s.parse::<i64>()
        .map_err(|_| format!("strconv.Atoi: parsing {s:?}: value out of range"))
}

/// `a >= b`, both parsed with [`parse`].
pub fn greater_or_equal(a: &str, b: &str) -> Result<bool, String> {
    Ok(parse(a)? >= parse(b)?)
}

/// Which result shape a version label selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// 0.1.0, 0.2.0 (and the empty label): `ip4`/`ip6`.
    V02,
    /// 0.3.0, 0.3.1, 0.4.0: `interfaces`, `ips` with `version`.
    V04,
    /// 1.0.0, 1.1.0.
    V1,
}

pub fn family(version: &str) -> Option<Family> {
    match version {
        "" | "0.1.0" | "0.2.0" => Some(Family::V02),
        "0.3.0" | "0.3.1" | "0.4.0" => Some(Family::V04),
        "1.0.0" | "1.1.0" => Some(Family::V1),
        _ => None,
    }
}

/// Go's `%q` rendering of a string slice: `["0.1.0" "0.2.0"]`.
pub fn quote_list<S: AsRef<str>>(items: &[S]) -> String {
    let inner: Vec<String> = items
        .iter()
        .map(|s| crate::gojson::quote(s.as_ref()))
        .collect();
    format!("[{}]", inner.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_like_reference() {
        assert_eq!(parse(""), Ok((0, 1, 0)));
        assert_eq!(parse("1"), Ok((1, 0, 0)));
        assert_eq!(parse("1.1"), Ok((1, 1, 0)));
        assert_eq!(parse("0.-42.0"), Ok((0, -42, 0)));
        assert_eq!(
            parse("1.2.3.4"),
            Err("invalid version \"1.2.3.4\": too many parts".into())
        );
        assert_eq!(
            parse("x.y"),
            Err("failed to convert major version part \"x\": strconv.Atoi: parsing \"x\": invalid syntax".into())
        );
        assert_eq!(
            parse("1.z"),
            Err("failed to convert minor version part \"z\": strconv.Atoi: parsing \"z\": invalid syntax".into())
        );
        assert!(
            parse("1.0.99999999999999999999")
                .unwrap_err()
                .contains("value out of range")
        );
        assert!(parse("1..0").is_err());
    }

    #[test]
    fn ordering() {
        assert_eq!(greater_or_equal("0.4.0", "0.4.0"), Ok(true));
        assert_eq!(greater_or_equal("1.0", "0.4.0"), Ok(true));
        assert_eq!(greater_or_equal("0.3.1", "0.4.0"), Ok(false));
        assert_eq!(greater_or_equal("0.10.0", "0.4.0"), Ok(true));
    }

    #[test]
    fn families_and_quoting() {
        assert_eq!(family(""), Some(Family::V02));
        assert_eq!(family("0.3.1"), Some(Family::V04));
        assert_eq!(family("1.1.0"), Some(Family::V1));
        assert_eq!(family("1.0"), None);
        assert_eq!(quote_list(&["0.1.0", "1.1.0"]), "[\"0.1.0\" \"1.1.0\"]");
    }
}
