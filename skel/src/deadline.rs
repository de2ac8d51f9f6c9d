//! How long a call waits for anything outside itself: a delegated IPAM
//! plugin, a firewall tool (`iptables-restore`, `iptables-save`, which
//! also wait for `xtables.lock`), a state directory's lock. Every such
//! wait is bounded by [`timeout`], long enough never to end on a healthy
//! node; when it ends, the call fails with an error naming what hung, and
//! what was waited for is killed (a process) or given up (a lock), so
//! that a stuck plugin cannot hold a network's lock, and every later pod
//! of the network, forever.
//!
//! [`VAR`] sets it for every plugin a runtime runs (runtimes pass their
//! environment on): seconds (`90`, `2.5`) or a number with `ms`, `s` or
//! `m`. Each wait gets the whole of it.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The variable that sets [`timeout`].
pub const VAR: &str = "CNI_RS_TIMEOUT";

/// When [`VAR`] is unset or invalid.
pub const DEFAULT: Duration = Duration::from_secs(60);

/// How long one wait may last; [`VAR`], read once per process. An
/// invalid value is reported on stderr and the default used.
pub fn timeout() -> Duration {
    static T: OnceLock<Duration> = OnceLock::new();
    *T.get_or_init(|| match std::env::var(VAR) {
        Err(_) => DEFAULT,
        Ok(v) => parse(&v).unwrap_or_else(|| {
            eprintln!(
                "{VAR}={v:?} is not a duration (seconds, or a number with ms, s or m): \
                 using {}s",
                DEFAULT.as_secs()
            );
            DEFAULT
        }),
    })
}

/// The instant a wait starting now ends.
pub fn from_now() -> Instant {
    Instant::now() + timeout()
}

/// `90`, `2.5`, `500ms`, `30s`, `2m`; positive and at most a day.
fn parse(text: &str) -> Option<Duration> {
    let t = text.trim();
    let (number, unit) = match t.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => t.split_at(i),
        None => (t, "s"),
    };
    let scale = match unit {
        "ms" => 0.001,
        "s" => 1.0,
        "m" => 60.0,
        _ => return None,
    };
    let secs = number.parse::<f64>().ok()? * scale;
    (secs > 0.0 && secs <= 86_400.0).then(|| Duration::from_secs_f64(secs))
}

/// A wait's length for messages: `60s`, `1.5s`, `200ms`.
pub fn describe(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}s", d.as_secs_f64())
    }
}

/// Wait until `attempt` returns `Some`, trying again less and less often
/// (from 50 µs up to 10 ms apart) until `deadline`; `None` then. For
/// what cannot be waited for with a timeout of its own (`flock`).
pub fn retry<T>(deadline: Instant, mut attempt: impl FnMut() -> Option<T>) -> Option<T> {
    let mut pause = Duration::from_micros(50);
    loop {
        if let Some(v) = attempt() {
            return Some(v);
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse("90"), Some(Duration::from_secs(90)));
        assert_eq!(parse(" 2.5 "), Some(Duration::from_millis(2500)));
        assert_eq!(parse("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse("2m"), Some(Duration::from_secs(120)));
        for bad in ["", "0", "-1", "1h", "x", "ms", "1e9", "NaN", "inf"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        assert_eq!(describe(Duration::from_secs(60)), "60s");
        assert_eq!(describe(Duration::from_millis(1500)), "1.5s");
        assert_eq!(describe(Duration::from_millis(200)), "200ms");
    }

    #[test]
    fn retry_until_the_deadline() {
        let mut n = 0;
        let got = retry(Instant::now() + Duration::from_secs(5), || {
            n += 1;
            (n == 3).then_some(n)
        });
        assert_eq!(got, Some(3));
        let never: Option<()> = retry(Instant::now() + Duration::from_millis(20), || None);
        assert_eq!(never, None);
    }
}
