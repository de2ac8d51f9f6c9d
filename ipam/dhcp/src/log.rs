//! The daemon's log: one line per event on stderr, prefixed with the
//! time as Go's `log` package prints it (`2026/11/27 14:38:27`, UTC here).

use std::fmt::Display;
use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

/// Print `msg` with a timestamp.
pub fn log(msg: impl Display) {
    let line = format!("{} {msg}\n", stamp(SystemTime::now()));
    // One write per line, so lines of concurrent threads do not mix.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// `YYYY/MM/DD HH:MM:SS` of `t` in UTC.
pub fn stamp(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    let (days, rest) = (secs / 86400, secs % 86400);
    let (y, m, d) = civil(days as i64);
    format!(
        "{y:04}/{m:02}/{d:02} {:02}:{:02}:{:02}",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn stamps_are_gos_layout_in_utc() {
        assert_eq!(stamp(UNIX_EPOCH), "1970/01/01 00:00:00");
        let t = UNIX_EPOCH + Duration::from_secs(1_795_790_433);
        assert_eq!(stamp(t), "2026/11/27 14:40:33");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(stamp(leap), "2000/02/29 00:00:00");
    }
}
