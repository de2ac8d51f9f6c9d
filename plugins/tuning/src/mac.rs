//! MAC addresses as Go's `net.ParseMAC` reads them, so that the same
//! strings are accepted and refused with the same words.

/// Parse `s` in one of Go's forms: `00:00:5e:00:53:01`,
/// `00-00-5e-00-53-01` or `0000.5e00.5301`, with 6, 8 or 20 bytes.
/// The error is Go's `address <s>: invalid MAC address`.
pub fn parse(s: &str) -> Result<Vec<u8>, String> {
    parse_bytes(s.as_bytes()).ok_or_else(|| format!("address {s}: invalid MAC address"))
}

fn parse_bytes(s: &[u8]) -> Option<Vec<u8>> {
    if s.len() < 14 {
        return None;
    }
    let valid_len = |n: usize| matches!(n, 6 | 8 | 20);
    if s[2] == b':' || s[2] == b'-' {
        let sep = s[2];
        if !(s.len() + 1).is_multiple_of(3) || !valid_len((s.len() + 1) / 3) {
            return None;
        }
        s.chunks(3)
            .map(|group| byte(group, sep))
            .collect::<Option<Vec<u8>>>()
    } else if s[4] == b'.' {
        if !(s.len() + 1).is_multiple_of(5) || !valid_len(2 * (s.len() + 1) / 5) {
            return None;
        }
        let mut out = Vec::with_capacity(2 * (s.len() + 1) / 5);
        for group in s.chunks(5) {
            out.push(byte(&group[..2], 0)?);
            out.push(byte(&group[2..], b'.')?);
        }
        Some(out)
    } else {
        None
    }
}

/// Two hex digits, then either the end or the separator `sep` (Go's
/// `xtoi2`).
fn byte(group: &[u8], sep: u8) -> Option<u8> {
    if group.len() > 2 && group[2] != sep {
        return None;
    }
    let hex = |b: u8| (b as char).to_digit(16);
    let (hi, lo) = (hex(*group.first()?)?, hex(*group.get(1)?)?);
    Some((hi * 16 + lo) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_forms_are_accepted() {
        let six = vec![0, 0, 0x5e, 0, 0x53, 1];
        for s in ["00:00:5e:00:53:01", "00-00-5E-00-53-01", "0000.5e00.5301"] {
            assert_eq!(parse(s).unwrap(), six, "{s}");
        }
        assert_eq!(parse("02:00:5e:10:00:00:00:01").unwrap().len(), 8);
        assert_eq!(parse("0200.5e10.0000.0001").unwrap().len(), 8);
        let ipoib = "00:00:00:00:fe:80:00:00:00:00:00:00:02:00:5e:10:00:00:00:01";
        assert_eq!(parse(ipoib).unwrap().len(), 20);
    }

    #[test]
    fn everything_else_is_refused_with_gos_words() {
        for s in [
            "",
            "zz",
            "00:00:5e:00:53",
            "00:00:5e:00:53:01:",
            "00:00:5e:00:53:0g",
            "00:00-5e:00:53:01",
            "00:00:5e:00:53:01:02",
            "0000.5e00.530",
            "0000:5e00:5301",
            "000:05e:00:53:01",
            "00:00:5e:00:53:1 ",
            "+0:00:5e:00:53:01",
        ] {
            assert_eq!(
                parse(s).unwrap_err(),
                format!("address {s}: invalid MAC address"),
                "{s:?}"
            );
        }
    }
}
