//! The token bucket filter (`tbf`) qdisc: its netlink options, and the
//! reference bandwidth plugin's parameter math, reproduced bit for bit
//! because the Go plugin's CHECK compares the kernel's numbers with its own.

use crate::error::{Error, Result};
use crate::netlink::{Msg, attrs, u32_of};

const TCA_TBF_PARMS: u16 = 1;
const TCA_TBF_RATE64: u16 = 4;
const TCA_TBF_BURST: u16 = 6;

/// `struct tc_ratespec`: 12 bytes, the rate (bytes/s) last.
const RATESPEC_LEN: usize = 12;
/// `struct tc_tbf_qopt`: rate, peak rate, limit, buffer, mtu.
const QOPT_LEN: usize = 2 * RATESPEC_LEN + 12;

/// `TIME_UNITS_PER_SEC`: the reference's times are microseconds.
const USEC_PER_SEC: f64 = 1_000_000.0;
/// The queueing latency the reference allows (`latencyInMillis`).
const LATENCY_MS: f64 = 25.0;

/// Token bucket parameters as the kernel takes and reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tbf {
    /// Bytes per second.
    pub rate: u64,
    /// Bytes that may wait in the queue.
    pub limit: u32,
    /// The bucket, in psched ticks (the time to send it at `rate`).
    pub buffer: u32,
    /// `TCA_TBF_BURST`: the bucket in bytes, as iproute2 sends it; the
    /// kernel then derives the buffer from it. `None` (the reference's
    /// way) leaves `buffer` as given. Never reported back by the kernel.
    pub burst: Option<u32>,
}

impl Tbf {
    /// The reference plugin's qdisc for `rate_bits` bits/s and
    /// `burst_bits` bits, with `tick` psched ticks per microsecond
    /// ([`psched_tick`]): rates and bursts in bytes (integer division), the
    /// buffer as the microseconds to send the burst converted to ticks, and
    /// a limit of 25 ms at the rate plus the burst. Float math and the
    /// truncating conversions of Go on amd64, so the numbers are Go's.
    pub fn reference(rate_bits: u64, burst_bits: u64, tick: f64) -> Tbf {
        let rate = rate_bits / 8;
        // The plugin refuses bursts of 4 GB and more before this point;
        // the reference converts with uint32() all the same.
        let burst = (burst_bits / 8) as u32;
        let usecs = go_u32(f64::from(burst) * USEC_PER_SEC / rate as f64);
        let buffer = go_u32(f64::from(usecs) * tick);
        let latency = USEC_PER_SEC * (LATENCY_MS / 1000.0);
        let limit = go_u32(rate as f64 * latency / USEC_PER_SEC).wrapping_add(burst);
        Tbf {
            rate,
            limit,
            buffer,
            burst: None,
        }
    }

    /// Rate, limit and buffer are the same (`burst` is never reported).
    pub fn same_shape(&self, other: &Tbf) -> bool {
        (self.rate, self.limit, self.buffer) == (other.rate, other.limit, other.buffer)
    }

    /// Write the options (`TCA_OPTIONS` content).
    pub(crate) fn write(&self, m: &mut Msg) {
        let mut qopt = [0u8; QOPT_LEN];
        // As iproute2: a rate beyond 32 bits reads ~0 here and is given in
        // full by TCA_TBF_RATE64 (the kernel takes the larger).
        let rate32 = u32::try_from(self.rate).unwrap_or(u32::MAX);
        qopt[8..12].copy_from_slice(&rate32.to_ne_bytes());
        qopt[24..28].copy_from_slice(&self.limit.to_ne_bytes());
        qopt[28..32].copy_from_slice(&self.buffer.to_ne_bytes());
        m.attr(TCA_TBF_PARMS, &qopt);
        if self.rate > u64::from(u32::MAX) {
            m.attr(TCA_TBF_RATE64, &self.rate.to_ne_bytes());
        }
        if let Some(burst) = self.burst {
            m.u32(TCA_TBF_BURST, burst);
        }
    }

    /// Read the options the kernel reports (`TCA_OPTIONS` content).
    pub(crate) fn parse(options: &[u8]) -> Option<Tbf> {
        let mut tbf = None;
        let mut rate64 = None;
        for (kind, d) in attrs(options) {
            match kind {
                TCA_TBF_PARMS if d.len() >= QOPT_LEN => {
                    tbf = Some(Tbf {
                        rate: u64::from(u32_of(&d[8..])?),
                        limit: u32_of(&d[24..])?,
                        buffer: u32_of(&d[28..])?,
                        burst: None,
                    })
                }
                TCA_TBF_RATE64 => {
                    rate64 = d
                        .get(..8)
                        .map(|b| u64::from_ne_bytes(b.try_into().unwrap_or_default()))
                }
                _ => {}
            }
        }
        let mut tbf = tbf?;
        if let Some(r) = rate64 {
            tbf.rate = r;
        }
        Some(tbf)
    }
}

/// Go's `uint32(f)` for a float64 on amd64: truncation toward zero through
/// a signed 64-bit integer (out of range or NaN gives `i64::MIN`), then the
/// low 32 bits. Absurd configurations (a burst of gigabytes at a few bytes
/// a second) wrap exactly as the reference's do.
pub fn go_u32(f: f64) -> u32 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    let wide = if f.is_nan() || !(-LIMIT..LIMIT).contains(&f) {
        i64::MIN
    } else {
        f as i64
    };
    wide as u32
}

/// Psched ticks per microsecond, from `/proc/net/psched`.
pub fn psched_tick() -> Result<f64> {
    let path = "/proc/net/psched";
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(format!("read {path}"), &e))?;
    tick_of(&text).ok_or_else(|| {
        Error::other(
            format!("read {path}"),
            format!("unexpected content {text:?}"),
        )
    })
}

/// The tick from `/proc/net/psched`'s text, as the reference's netlink
/// library computes it: the first three hex fields (`t2us`, `us2t`, clock
/// resolution); with a 1 GHz clock `t2us` is replaced by `us2t`.
pub fn tick_of(text: &str) -> Option<f64> {
    let mut fields = text
        .trim()
        .split(' ')
        .map(|f| u32::from_str_radix(f, 16).ok());
    let mut next = || fields.next().flatten().map(f64::from);
    let (mut t2us, us2t, clock_res) = (next()?, next()?, next()?);
    if clock_res == 1_000_000_000.0 {
        t2us = us2t;
    }
    let tick = t2us / us2t * (clock_res / USEC_PER_SEC);
    (tick.is_finite() && tick > 0.0).then_some(tick)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK: f64 = 15.625;

    #[test]
    fn tick_is_the_kernels() {
        assert_eq!(tick_of("000003e8 00000040 000f4240 3b9aca00\n"), Some(TICK));
        // A 1 GHz clock resolution: t2us is taken from us2t.
        assert_eq!(tick_of("000003e8 00000040 3b9aca00 3b9aca00"), Some(1000.0));
        assert_eq!(tick_of("000003e8 00000000 000f4240 3b9aca00"), None);
        assert_eq!(tick_of("zz 40 f4240"), None);
        assert_eq!(tick_of("3e8 40"), None);
        assert_eq!(tick_of(""), None);
    }

    #[test]
    fn matches_what_the_go_plugin_creates() {
        // Observed from the Go plugin (reference §14.3): 1 Mbit/s with a
        // 100 kbit burst gives buffer 1,562,500 ticks and limit 15,625 B.
        let t = Tbf::reference(1_000_000, 100_000, TICK);
        assert_eq!((t.rate, t.buffer, t.limit), (125_000, 1_562_500, 15_625));
        let t = Tbf::reference(2_000_000, 200_000, TICK);
        assert_eq!((t.rate, t.buffer, t.limit), (250_000, 1_562_500, 31_250));
    }

    #[test]
    fn truncates_like_go() {
        // 1000 bytes at 3 B/s: 333,333,333.3 µs, truncated, then ticks
        // beyond 32 bits wrap (through int64, as Go on amd64).
        let t = Tbf::reference(24, 8000, TICK);
        // 333,333,333 µs × 15.625 = 5,208,333,328 ticks, less 2^32.
        assert_eq!(t.buffer, 913_366_032);
        // Rate 0 B/s (fewer than 8 bits): +Inf microseconds becomes 0.
        let t = Tbf::reference(7, 800, TICK);
        assert_eq!((t.rate, t.buffer, t.limit), (0, 0, 100));
        assert_eq!(go_u32(f64::NAN), 0);
        assert_eq!(go_u32(-1.0), u32::MAX);
        assert_eq!(go_u32(4_294_967_296.5), 0);
        assert_eq!(go_u32(1e30), 0);
        assert_eq!(go_u32(12.9), 12);
    }

    #[test]
    fn options_round_trip() {
        for tbf in [
            Tbf::reference(1_000_000, 100_000, TICK),
            Tbf {
                rate: 1 << 40,
                limit: 7,
                buffer: 9,
                burst: None,
            },
        ] {
            let mut m = Msg::new(36, 0, &[]);
            tbf.write(&mut m);
            assert_eq!(Tbf::parse(m.body()), Some(tbf));
        }
        let mut m = Msg::new(36, 0, &[]);
        Tbf {
            rate: 1,
            limit: 2,
            buffer: 3,
            burst: Some(4),
        }
        .write(&mut m);
        let kinds: Vec<u16> = attrs(m.body()).map(|(k, _)| k).collect();
        assert_eq!(kinds, vec![TCA_TBF_PARMS, TCA_TBF_BURST]);
        assert_eq!(Tbf::parse(&[]), None);
    }
}
