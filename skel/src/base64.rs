//! Standard base64 with padding, the encoding Go's `encoding/json` uses for
//! `[]byte` fields (the `StdinData` of a recorded invocation).

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

pub fn encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn value(c: u8) -> Option<u32> {
    ALPHABET.iter().position(|&a| a == c).map(|p| p as u32)
}

/// Strict decoding as Go's `base64.StdEncoding` does it (which skips `\r`
/// and `\n`); the error names the offending byte offset like Go.
pub fn decode(text: &str) -> Result<Vec<u8>, String> {
    let data: Vec<u8> = text
        .bytes()
        .filter(|b| *b != b'\r' && *b != b'\n')
        .collect();
    let bad = |i: usize| format!("illegal base64 data at input byte {i}");
    if !data.len().is_multiple_of(4) {
        return Err(bad(data.len() / 4 * 4));
    }
    let mut out = Vec::with_capacity(data.len() / 4 * 3);
    for (q, quad) in data.chunks(4).enumerate() {
        let last = (q + 1) * 4 == data.len();
        let pad = quad.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return Err(bad(
                q * 4 + quad.iter().position(|&c| c == b'=').unwrap_or(0)
            ));
        }
        let mut n = 0u32;
        for (i, &c) in quad[..4 - pad].iter().enumerate() {
            n |= value(c).ok_or_else(|| bad(q * 4 + i))? << (18 - 6 * i);
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4648_vectors() {
        for (plain, enc) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(encode(plain.as_bytes()), enc);
            assert_eq!(decode(enc).unwrap(), plain.as_bytes());
        }
    }

    #[test]
    fn round_trips_every_byte() {
        let all: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).collect();
        for len in 0..all.len() {
            assert_eq!(decode(&encode(&all[..len])).unwrap(), &all[..len]);
        }
    }

    #[test]
    fn rejects_malformed_input() {
        assert_eq!(
            decode("Zg="),
            Err("illegal base64 data at input byte 0".into())
        );
        assert_eq!(
            decode("Z!=="),
            Err("illegal base64 data at input byte 1".into())
        );
        assert!(decode("Zg==Zg==").is_err());
        assert!(decode("Z===").is_err());
        assert_eq!(decode("Zm9v\nYmFy").unwrap(), b"foobar");
    }
}
