//! MAC addresses from configs and arguments, in the forms Go's
//! `net.ParseMAC` takes for Ethernet (`aa:bb:cc:dd:ee:ff`,
//! `aa-bb-cc-dd-ee-ff`, `aabb.ccdd.eeff`, any case), refused in Go's
//! words (`address <s>: invalid MAC address`).

/// The six bytes of `s`, or Go's error text for it.
pub fn parse(s: &str) -> Result<[u8; 6], String> {
    parse_bytes(s).ok_or_else(|| format!("address {s}: invalid MAC address"))
}

fn parse_bytes(s: &str) -> Option<[u8; 6]> {
    let b = s.as_bytes();
    // Only ASCII: slicing a multi-byte character would panic.
    if !s.is_ascii() {
        return None;
    }
    let hex = |t: &[u8]| -> Option<u8> {
        if t.len() != 2 || !t.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        u8::from_str_radix(std::str::from_utf8(t).ok()?, 16).ok()
    };
    let mut out = [0u8; 6];
    if b.len() == 17 && (b[2] == b':' || b[2] == b'-') {
        let parts: Vec<&[u8]> = b.split(|c| *c == b[2]).collect();
        if parts.len() != 6 {
            return None;
        }
        for (o, p) in out.iter_mut().zip(parts) {
            *o = hex(p)?;
        }
    } else if b.len() == 14 && b[4] == b'.' && b[9] == b'.' {
        for (i, group) in b.split(|c| *c == b'.').enumerate() {
            if group.len() != 4 || i > 2 {
                return None;
            }
            out[i * 2] = hex(&group[..2])?;
            out[i * 2 + 1] = hex(&group[2..])?;
        }
    } else {
        return None;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_forms_of_six_bytes() {
        let six = [0x02, 0, 0x5e, 0, 0x53, 0xab];
        for s in ["02:00:5e:00:53:ab", "02-00-5E-00-53-AB", "0200.5e00.53ab"] {
            assert_eq!(parse(s).unwrap(), six, "{s}");
        }
    }

    #[test]
    fn anything_else_in_gos_words() {
        for s in [
            "",
            "zz",
            "02:00:5e:00:53",
            "02:00:5e:00:53:0g",
            "02:00-5e:00:53:01",
            "+2:00:5e:00:53:01",
            "0200.5e00.53a",
            "02:00:5e:00:53:01:02:03",
            "é2:00:5e:00:53:0",
        ] {
            assert_eq!(
                parse(s).unwrap_err(),
                format!("address {s}: invalid MAC address")
            );
        }
    }
}
