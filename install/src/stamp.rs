//! The backup directory's timestamp, `YYYYmmdd-HHMMSS` in UTC: a static
//! binary in a scratch image has no time zone to read, so every installer
//! names backups alike.

use std::time::{SystemTime, UNIX_EPOCH};

/// `secs` since the epoch as `YYYYmmdd-HHMMSS` (UTC).
pub fn format(secs: u64) -> String {
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil(days as i64);
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// Now, formatted by [`format`].
pub fn now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format(secs)
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard
/// Hinnant's days-to-civil, by 400-year eras).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_instants() {
        assert_eq!(format(0), "19700101-000000");
        assert_eq!(format(951_782_400), "20000229-000000");
        assert_eq!(format(1_796_000_000), "20261130-005320");
        // 2100 is no leap year.
        assert_eq!(format(4_107_542_399), "21000228-235959");
        assert_eq!(format(4_107_542_400), "21000301-000000");
    }

    proptest! {
        /// What `date -u` prints for the same instant.
        #[test]
        fn agrees_with_date(secs in 0u64..8_000_000_000) {
            let out = std::process::Command::new("date")
                .args(["-u", "-d", &format!("@{secs}"), "+%Y%m%d-%H%M%S"])
                .output()
                .unwrap();
            let date = String::from_utf8_lossy(&out.stdout);
            prop_assert_eq!(date.trim(), format(secs));
        }
    }
}
