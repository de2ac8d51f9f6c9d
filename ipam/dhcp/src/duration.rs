//! Go's `time.Duration` text: what the daemon's flags take (`-timeout
//! 10s`, `-resendmax 1m2s`) and how durations are printed back.

use std::time::Duration;

/// `time.ParseDuration`: a sequence of decimal numbers, each with an
/// optional fraction and a unit (`ns`, `us`/`µs`, `ms`, `s`, `m`, `h`),
/// like `300ms` or `1h45m`; `0` alone is zero. Negative durations mean
/// nothing here and are refused.
pub fn parse(s: &str) -> Result<Duration, String> {
    let bad = || format!("time: invalid duration {}", skel::gojson::quote(s));
    let rest = s.strip_prefix('+').unwrap_or(s);
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total: u128 = 0;
    let mut rest = rest;
    while !rest.is_empty() {
        let int_len = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (int, after) = rest.split_at(int_len);
        let (frac, after) = match after.strip_prefix('.') {
            Some(a) => {
                let n = a.find(|c: char| !c.is_ascii_digit()).unwrap_or(a.len());
                a.split_at(n)
            }
            None => ("", after),
        };
        if int.is_empty() && frac.is_empty() {
            return Err(bad());
        }
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let nanos: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "" => {
                return Err(format!(
                    "time: missing unit in duration {}",
                    skel::gojson::quote(s)
                ));
            }
            u => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    skel::gojson::quote(u),
                    skel::gojson::quote(s)
                ));
            }
        };
        let whole: u128 = if int.is_empty() {
            0
        } else {
            int.parse().map_err(|_| bad())?
        };
        let mut part = whole.checked_mul(nanos).ok_or_else(bad)?;
        let mut scale = nanos;
        for d in frac.bytes().take(30) {
            scale /= 10;
            part += u128::from(d - b'0') * scale;
        }
        total = total.checked_add(part).ok_or_else(bad)?;
        rest = after;
    }
    if total > i64::MAX as u128 {
        return Err(bad());
    }
    Ok(Duration::from_nanos(total as u64))
}

/// `Duration.String()`: `10s`, `5m0s`, `1h2m3.5s`, `250ms`, `0s`.
pub fn format(d: Duration) -> String {
    let n = d.as_nanos();
    if n == 0 {
        return "0s".into();
    }
    if n < 1_000_000_000 {
        let (unit, scale) = match n {
            n if n < 1_000 => ("ns", 1),
            n if n < 1_000_000 => ("µs", 1_000),
            _ => ("ms", 1_000_000),
        };
        return format!("{}{unit}", decimal(n, scale));
    }
    let secs = n / 1_000_000_000;
    let frac = n % 1_000_000_000;
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let s = decimal(s * 1_000_000_000 + frac, 1_000_000_000);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, m) => format!("{m}m{s}s"),
        (h, m) => format!("{h}h{m}m{s}s"),
    }
}

/// `n / scale` with the fraction's trailing zeros dropped.
fn decimal(n: u128, scale: u128) -> String {
    let (whole, frac) = (n / scale, n % scale);
    if frac == 0 {
        return whole.to_string();
    }
    let width = scale.to_string().len() - 1;
    let digits = format!("{frac:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_go_durations() {
        let ms = Duration::from_millis;
        for (s, d) in [
            ("10s", ms(10_000)),
            ("1m2s", ms(62_000)),
            ("3m28s", ms(208_000)),
            ("1.5s", ms(1500)),
            (".5s", ms(500)),
            ("300ms", ms(300)),
            ("1h", ms(3_600_000)),
            ("0", Duration::ZERO),
            ("+2s", ms(2000)),
            ("1us", Duration::from_micros(1)),
            ("1µs", Duration::from_micros(1)),
            ("7ns", Duration::from_nanos(7)),
        ] {
            assert_eq!(parse(s), Ok(d), "{s}");
        }
        assert_eq!(
            parse("10"),
            Err("time: missing unit in duration \"10\"".into())
        );
        assert_eq!(
            parse("1x"),
            Err("time: unknown unit \"x\" in duration \"1x\"".into())
        );
        for bad in ["", "s", ".s", "-1s", "1..2s", "99999999999h"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn prints_as_go_does() {
        let ms = Duration::from_millis;
        for (d, s) in [
            (ms(10_000), "10s"),
            (ms(300_000), "5m0s"),
            (ms(208_000), "3m28s"),
            (ms(3_723_500), "1h2m3.5s"),
            (ms(250), "250ms"),
            (Duration::from_micros(1500), "1.5ms"),
            (Duration::ZERO, "0s"),
        ] {
            assert_eq!(format(d), s);
        }
    }

    proptest! {
        #[test]
        fn format_parses_back(n in 0u64..(1 << 62)) {
            let d = Duration::from_nanos(n);
            prop_assert_eq!(parse(&format(d)), Ok(d));
        }
    }
}
