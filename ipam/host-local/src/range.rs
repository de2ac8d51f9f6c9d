//! Address ranges and range sets: canonicalisation, the reference's
//! validation errors, membership, and the round-robin iterator.
//!
//! Addresses are handled as `u128` plus a family so that IPv4 and IPv6 share
//! one arithmetic. IPv4-mapped IPv6 addresses count as IPv4, as Go's
//! `To4()` does.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An address in Go's canonical form: IPv4-mapped IPv6 becomes IPv4.
pub fn canon(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => ip,
        },
        v4 => v4,
    }
}

pub fn to_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u32::from(v4) as u128,
        IpAddr::V6(v6) => u128::from(v6),
    }
}

fn from_u128(v: u128, v4: bool) -> IpAddr {
    if v4 {
        IpAddr::V4(Ipv4Addr::from(v as u32))
    } else {
        IpAddr::V6(Ipv6Addr::from(v))
    }
}

fn bits(ip: IpAddr) -> u8 {
    if ip.is_ipv4() { 32 } else { 128 }
}

/// A `subnet` as written: the address (canonicalised, host bits kept) and
/// the prefix length, plus the mask's own family (`10.0.0.0/8` written as
/// `::ffff:10.0.0.0/104` has a 128-bit mask on an IPv4 address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subnet {
    pub ip: IpAddr,
    pub prefix: u8,
    pub mask_bits: u8,
}

impl Subnet {
    /// Parse `a.b.c.d/n` with Go's `ParseCIDR` error text.
    pub fn parse(s: &str) -> Result<Subnet, String> {
        let bad = || format!("invalid CIDR address: {s}");
        let (addr, prefix) = s.split_once('/').ok_or_else(bad)?;
        let ip: IpAddr = addr.parse().map_err(|_| bad())?;
        if prefix.is_empty() || prefix.len() > 3 || !prefix.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let prefix: u8 = prefix.parse().map_err(|_| bad())?;
        let mask_bits = bits(ip);
        if prefix > mask_bits {
            return Err(bad());
        }
        Ok(Subnet {
            ip: canon(ip),
            prefix,
            mask_bits,
        })
    }

    fn host_mask(&self) -> u128 {
        let width = bits(self.ip);
        let host = width.saturating_sub(self.prefix) as u32;
        if host >= 128 {
            u128::MAX
        } else {
            (1u128 << host) - 1
        }
    }

    fn network_u128(&self) -> u128 {
        to_u128(self.ip) & !self.host_mask()
    }

    pub fn network(&self) -> IpAddr {
        from_u128(self.network_u128(), self.ip.is_ipv4())
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        ip.is_ipv4() == self.ip.is_ipv4()
            && (to_u128(ip) & !self.host_mask()) == self.network_u128()
    }
}

impl fmt::Display for Subnet {
    /// Go's `IPNet.String()`: the address as stored (not masked) and the
    /// prefix length.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.ip, self.prefix)
    }
}

/// One range as found in the config, before canonicalisation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawRange {
    pub subnet: Option<Subnet>,
    pub range_start: Option<IpAddr>,
    pub range_end: Option<IpAddr>,
    pub gateway: Option<IpAddr>,
}

/// A canonical range: every bound known and inside the subnet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub subnet: Subnet,
    pub start: IpAddr,
    pub end: IpAddr,
    pub gateway: IpAddr,
}

/// The reference's `Range.Contains`, usable on partially canonical bounds.
fn in_bounds(subnet: &Subnet, start: Option<IpAddr>, end: Option<IpAddr>, ip: IpAddr) -> bool {
    let ip = canon(ip);
    if !subnet.contains(ip) {
        return false;
    }
    let v = to_u128(ip);
    start.is_none_or(|s| s.is_ipv4() != ip.is_ipv4() || v >= to_u128(s))
        && end.is_none_or(|e| e.is_ipv4() != ip.is_ipv4() || v <= to_u128(e))
}

impl RawRange {
    /// Fill in defaults and validate, with the reference's messages.
    pub fn canonicalize(&self) -> Result<Range, String> {
        let Some(subnet) = self.subnet else {
            return Err("IP <nil> not v4 nor v6".into());
        };
        if subnet.prefix > subnet.mask_bits - 2 {
            return Err(format!("Network {subnet} too small to allocate from"));
        }
        if bits(subnet.ip) != subnet.mask_bits {
            return Err("IPNet IP and Mask version mismatch".into());
        }
        let network = subnet.network();
        if network != subnet.ip {
            return Err(format!(
                "Network has host bits set. For a subnet mask of length {} the network address is {network}",
                subnet.prefix
            ));
        }
        let v4 = subnet.ip.is_ipv4();
        let first = from_u128(to_u128(network) + 1, v4);
        let gateway = self.gateway.map(canon).unwrap_or(first);
        let end_given = self.range_end.map(canon);
        let start = match self.range_start.map(canon) {
            Some(s) => {
                if !in_bounds(&subnet, None, end_given, s) {
                    return Err(format!("RangeStart {s} not in network {subnet}"));
                }
                s
            }
            None => first,
        };
        let end = match end_given {
            Some(e) => {
                if !in_bounds(&subnet, Some(start), None, e) {
                    return Err(format!("RangeEnd {e} not in network {subnet}"));
                }
                e
            }
            None => {
                // IPv4 leaves out the broadcast address; IPv6 keeps the
                // all-ones address, exactly like the reference.
                let last = to_u128(network) | subnet.host_mask();
                let end = from_u128(if v4 { last - 1 } else { last }, v4);
                // Only an IPv4 rangeStart on the broadcast address gets
                // here. The reference accepts it and then counts upwards
                // past the subnet, handing out addresses of other networks;
                // such a range is empty, so refuse it.
                if to_u128(start) > to_u128(end) {
                    return Err(format!(
                        "RangeStart {start} is after the default RangeEnd {end} of network {subnet}"
                    ));
                }
                end
            }
        };
        Ok(Range {
            subnet,
            start,
            end,
            gateway,
        })
    }
}

impl Range {
    pub fn contains(&self, ip: IpAddr) -> bool {
        in_bounds(&self.subnet, Some(self.start), Some(self.end), ip)
    }

    fn overlaps(&self, other: &Range) -> bool {
        if self.start.is_ipv4() != other.start.is_ipv4() {
            return false;
        }
        self.contains(other.start)
            || self.contains(other.end)
            || other.contains(self.start)
            || other.contains(self.end)
    }

    /// Addresses from start to end inclusive (0 for a range that
    /// `canonicalize` would have refused, end before start).
    pub fn size(&self) -> u128 {
        to_u128(self.end)
            .checked_sub(to_u128(self.start))
            .map_or(0, |d| d.saturating_add(1))
    }

    /// Allocatable addresses: the range minus its gateway.
    pub fn capacity(&self) -> u128 {
        let size = self.size();
        if self.contains(self.gateway) {
            size - 1
        } else {
            size
        }
    }

    fn is_gateway(&self, v: u128) -> bool {
        self.gateway.is_ipv4() == self.start.is_ipv4() && to_u128(self.gateway) == v
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.start, self.end)
    }
}

/// Ranges of one family from which one address is handed out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeSet(pub Vec<Range>);

impl RangeSet {
    pub fn canonicalize(raw: &[RawRange]) -> Result<RangeSet, String> {
        if raw.is_empty() {
            return Err("empty range set".into());
        }
        let mut ranges = Vec::with_capacity(raw.len());
        for r in raw {
            let r = r.canonicalize()?;
            if let Some(first) = ranges.first() {
                let first: &Range = first;
                if first.start.is_ipv4() != r.start.is_ipv4() {
                    return Err("mixed address families".into());
                }
            }
            ranges.push(r);
        }
        for (i, r1) in ranges.iter().enumerate() {
            for r2 in &ranges[i + 1..] {
                if r1.overlaps(r2) {
                    return Err(format!("subnets {r1} and {r2} overlap"));
                }
            }
        }
        Ok(RangeSet(ranges))
    }

    pub fn is_ipv4(&self) -> bool {
        self.0.first().is_some_and(|r| r.start.is_ipv4())
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|r| r.contains(ip))
    }

    /// The range holding `ip`, or the reference's error.
    pub fn range_for(&self, ip: IpAddr) -> Result<&Range, String> {
        self.0
            .iter()
            .find(|r| r.contains(ip))
            .ok_or_else(|| format!("{ip} not in range set {self}"))
    }

    pub fn overlaps(&self, other: &RangeSet) -> bool {
        self.0
            .iter()
            .any(|r| other.0.iter().any(|r1| r.overlaps(r1)))
    }

    pub fn capacity(&self) -> u128 {
        self.0
            .iter()
            .fold(0u128, |acc, r| acc.saturating_add(r.capacity()))
    }

    /// Candidates in the reference's round-robin order: after `last` when
    /// it lies in the set, else from the first range's start; the gateway
    /// of each range is skipped; one full turn at most.
    pub fn iter_from(&self, last: Option<IpAddr>) -> RangeIter<'_> {
        let mut it = RangeIter {
            set: self,
            idx: 0,
            next: self.0.first().map_or(0, |r| to_u128(r.start)),
            left: self
                .0
                .iter()
                .fold(0u128, |acc, r| acc.saturating_add(r.size())),
        };
        let found = last.map(canon).and_then(|l| {
            self.0
                .iter()
                .position(|r| r.contains(l))
                .map(|i| (i, to_u128(l)))
        });
        if let Some((i, l)) = found {
            it.idx = i;
            it.next = l;
            it.advance();
        } else {
            it.skip_empty();
        }
        it
    }
}

impl fmt::Display for RangeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

/// The reference's `RangeIter`: every address of every range once, in
/// order, wrapping from the last range to the first.
///
/// The reference stops when it comes back to its first candidate. Here
/// the turn is counted instead: `left` starts at the number of addresses
/// in the set and every step uses one, so the iterator ends after one turn
/// whatever the ranges and the starting point look like.
pub struct RangeIter<'a> {
    set: &'a RangeSet,
    /// The range holding `next`.
    idx: usize,
    /// The next address to look at.
    next: u128,
    /// Addresses left in this turn, the gateways included.
    left: u128,
}

impl RangeIter<'_> {
    /// Step `next` to the following address, into the next non-empty
    /// range after the end of the current one.
    fn advance(&mut self) {
        let r = &self.set.0[self.idx];
        if self.next >= to_u128(r.end) {
            self.idx = (self.idx + 1) % self.set.0.len();
            self.next = to_u128(self.set.0[self.idx].start);
            self.skip_empty();
        } else {
            self.next += 1;
        }
    }

    /// Move past ranges without addresses (at most one lap of the set).
    fn skip_empty(&mut self) {
        for _ in 0..self.set.0.len() {
            let r = &self.set.0[self.idx];
            if r.size() > 0 {
                return;
            }
            self.idx = (self.idx + 1) % self.set.0.len();
            self.next = to_u128(self.set.0[self.idx].start);
        }
    }
}

impl Iterator for RangeIter<'_> {
    /// A candidate address and the range it belongs to.
    type Item = (IpAddr, usize);

    fn next(&mut self) -> Option<Self::Item> {
        while self.left > 0 {
            self.left -= 1;
            let (v, idx) = (self.next, self.idx);
            self.advance();
            let r = &self.set.0[idx];
            if !r.is_gateway(v) {
                return Some((from_u128(v, r.start.is_ipv4()), idx));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests;
