//! Traffic control over rtnetlink, as `tc` does it: qdiscs (`tbf`,
//! `ingress`, and `clsact` recognised when listed), `u32` filters with a
//! `mirred` redirect ([`filter`]), added, replaced, deleted and listed
//! back, so callers can tell their own objects from someone else's.
//!
//! Handles are `major:minor` packed in 32 bits ([`handle`]); a qdisc sits
//! at a parent ([`ROOT`], or [`INGRESS_PARENT`] for ingress and clsact).

pub mod filter;
#[cfg(test)]
mod proptests;
pub mod tbf;

use crate::error::Result;
use crate::link::Link;
use crate::netlink::{Msg, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL, Netlink, attrs, str_of, u32_of};

pub use filter::{Filter, Mirred, U32Redirect};
pub use tbf::Tbf;

pub(crate) const RTM_NEWQDISC: u16 = 36;
pub(crate) const RTM_DELQDISC: u16 = 37;
pub(crate) const RTM_GETQDISC: u16 = 38;

pub(crate) const TCA_KIND: u16 = 1;
pub(crate) const TCA_OPTIONS: u16 = 2;

const NLM_F_REPLACE: u16 = 0x100;

/// `TC_H_ROOT`: the parent of a device's root (egress) qdisc.
pub const ROOT: u32 = 0xffff_ffff;
/// `TC_H_INGRESS`: the parent of an `ingress` or `clsact` qdisc.
pub const INGRESS_PARENT: u32 = 0xffff_fff1;
/// `ffff:`, the handle of an `ingress` or `clsact` qdisc.
pub const INGRESS_HANDLE: u32 = 0xffff_0000;

/// `major:minor` as one handle.
pub const fn handle(major: u16, minor: u16) -> u32 {
    (major as u32) << 16 | minor as u32
}

/// A handle as `tc` prints it: `root`, `1:`, `ffff:fff1`.
pub fn format_handle(h: u32) -> String {
    match h {
        ROOT => "root".to_string(),
        0 => "none".to_string(),
        _ if h & 0xffff == 0 => format!("{:x}:", h >> 16),
        _ => format!("{:x}:{:x}", h >> 16, h & 0xffff),
    }
}

/// `struct tcmsg`: family, device, handle, parent, info (a filter's
/// priority and protocol).
pub(crate) fn tcmsg(ifindex: u32, handle: u32, parent: u32, info: u32) -> [u8; 20] {
    let mut h = [0u8; 20];
    h[4..8].copy_from_slice(&ifindex.to_ne_bytes());
    h[8..12].copy_from_slice(&handle.to_ne_bytes());
    h[12..16].copy_from_slice(&parent.to_ne_bytes());
    h[16..20].copy_from_slice(&info.to_ne_bytes());
    h
}

/// A tc reply body (qdisc, filter): the `tcmsg` fields, the kind and the
/// options (`TCA_OPTIONS`, empty when absent).
pub(crate) struct TcBody<'a> {
    pub ifindex: u32,
    pub handle: u32,
    pub parent: u32,
    pub info: u32,
    pub kind: String,
    pub options: &'a [u8],
}

impl TcBody<'_> {
    pub(crate) fn parse(b: &[u8]) -> Option<TcBody<'_>> {
        let mut out = TcBody {
            ifindex: u32_of(b.get(4..)?)?,
            handle: u32_of(b.get(8..)?)?,
            parent: u32_of(b.get(12..)?)?,
            info: u32_of(b.get(16..)?)?,
            kind: String::new(),
            options: &[],
        };
        for (kind, d) in attrs(b.get(20..)?) {
            match kind {
                TCA_KIND => out.kind = str_of(d),
                TCA_OPTIONS => out.options = d,
                _ => {}
            }
        }
        Some(out)
    }
}

/// A qdisc to create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QdiscSpec {
    /// `tbf` with these parameters.
    Tbf(Tbf),
    /// `ingress`: a hook for filters on what the device receives.
    Ingress,
    /// `clsact`: ingress and egress hooks for filters.
    Clsact,
}

impl QdiscSpec {
    pub fn kind(&self) -> &'static str {
        match self {
            QdiscSpec::Tbf(_) => "tbf",
            QdiscSpec::Ingress => "ingress",
            QdiscSpec::Clsact => "clsact",
        }
    }
}

/// What the kernel reports about a qdisc.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Qdisc {
    pub ifindex: u32,
    pub handle: u32,
    pub parent: u32,
    /// `tbf`, `ingress`, `clsact`, `noqueue`, `fq_codel`, ...
    pub kind: String,
    /// The parameters of a `tbf`.
    pub tbf: Option<Tbf>,
}

impl Qdisc {
    pub(crate) fn from_body(b: &[u8]) -> Option<Qdisc> {
        let t = TcBody::parse(b)?;
        let tbf = if t.kind == "tbf" {
            Tbf::parse(t.options)
        } else {
            None
        };
        Some(Qdisc {
            ifindex: t.ifindex,
            handle: t.handle,
            parent: t.parent,
            kind: t.kind,
            tbf,
        })
    }

    /// A device's default qdisc (handle `0:`), which any added qdisc
    /// replaces without `EEXIST`.
    pub fn is_default(&self) -> bool {
        self.handle == 0
    }

    /// Whether the qdisc is what `spec` would create.
    pub fn is(&self, spec: &QdiscSpec) -> bool {
        if self.kind != spec.kind() {
            return false;
        }
        match (spec, &self.tbf) {
            (QdiscSpec::Tbf(want), Some(have)) => want.same_shape(have),
            (QdiscSpec::Tbf(_), None) => false,
            _ => true,
        }
    }

    /// `tbf 1: root`, `clsact ffff: parent ffff:fff1`, as `tc` words it.
    pub fn describe(&self) -> String {
        let parent = match self.parent {
            ROOT => "root".to_string(),
            p => format!("parent {}", format_handle(p)),
        };
        // tc prints a qdisc's own handle as `major:` (`0:` for a default).
        format!("{} {:x}: {parent}", self.kind, self.handle >> 16)
    }
}

fn qdisc_message(kind: u16, flags: u16, dev: &Link, parent: u32, h: u32) -> Msg {
    Msg::new(kind, flags, &tcmsg(dev.index, h, parent, 0))
}

fn new_qdisc(flags: u16, dev: &Link, parent: u32, h: u32, spec: &QdiscSpec) -> Msg {
    let mut m = qdisc_message(RTM_NEWQDISC, flags, dev, parent, h);
    m.str(TCA_KIND, spec.kind());
    // Like tc, no options at all for the kinds that take none.
    if let QdiscSpec::Tbf(t) = spec {
        m.nest(TCA_OPTIONS, |m| t.write(m));
    }
    m
}

fn describe_new(spec: &QdiscSpec, parent: u32, h: u32, dev: &Link) -> String {
    format!(
        "{} qdisc {} {} on {}",
        spec.kind(),
        format_handle(h),
        format_handle(parent),
        dev.name
    )
}

impl Netlink {
    /// Add a qdisc at `parent` with handle `h` (`tc qdisc add`). A qdisc
    /// other than the device's default already there is `EEXIST`.
    pub fn add_qdisc(&self, dev: &Link, parent: u32, h: u32, spec: &QdiscSpec) -> Result<()> {
        let op = format!("add {}", describe_new(spec, parent, h, dev));
        let m = new_qdisc(NLM_F_CREATE | NLM_F_EXCL, dev, parent, h, spec);
        self.request(&op, m).map(drop)
    }

    /// Create or replace the qdisc at `parent` (`tc qdisc replace`).
    pub fn replace_qdisc(&self, dev: &Link, parent: u32, h: u32, spec: &QdiscSpec) -> Result<()> {
        let op = format!("replace {}", describe_new(spec, parent, h, dev));
        let m = new_qdisc(NLM_F_CREATE | NLM_F_REPLACE, dev, parent, h, spec);
        self.request(&op, m).map(drop)
    }

    /// Delete the qdisc at `parent` with handle `h` (its filters and
    /// children go with it). `ENOENT` when there is none
    /// ([`Error::is_not_found`]).
    pub fn delete_qdisc(&self, dev: &Link, parent: u32, h: u32) -> Result<()> {
        let op = format!(
            "delete qdisc {} {} on {}",
            format_handle(h),
            format_handle(parent),
            dev.name
        );
        self.request(&op, qdisc_message(RTM_DELQDISC, 0, dev, parent, h))
            .map(drop)
    }

    /// The qdiscs of `dev`, root first as the kernel lists them.
    pub fn qdiscs(&self, dev: &Link) -> Result<Vec<Qdisc>> {
        self.set_strict();
        let op = format!("list qdiscs of {}", dev.name);
        let m = Msg::new(RTM_GETQDISC, NLM_F_DUMP, &tcmsg(dev.index, 0, 0, 0));
        let replies = self.request(&op, m)?;
        Ok(replies
            .iter()
            .filter_map(|b| Qdisc::from_body(b))
            // Kernels without strict checking list every device's.
            .filter(|q| q.ifindex == dev.index)
            .collect())
    }

    /// The qdisc of `dev` at `parent`, if any (a default one included).
    pub fn qdisc_at(&self, dev: &Link, parent: u32) -> Result<Option<Qdisc>> {
        Ok(self.qdiscs(dev)?.into_iter().find(|q| q.parent == parent))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_read_like_tc() {
        assert_eq!(handle(1, 0), 0x1_0000);
        assert_eq!(format_handle(handle(1, 0)), "1:");
        assert_eq!(format_handle(handle(1, 1)), "1:1");
        assert_eq!(format_handle(INGRESS_HANDLE), "ffff:");
        assert_eq!(format_handle(INGRESS_PARENT), "ffff:fff1");
        assert_eq!(format_handle(ROOT), "root");
        assert_eq!(format_handle(0), "none");
    }

    #[test]
    fn parses_a_qdisc_message_body() {
        let dev = Link::named(7, "veth0");
        let tbf = Tbf {
            rate: 125_000,
            limit: 15_625,
            buffer: 1_562_500,
            burst: None,
        };
        let m = new_qdisc(0, &dev, ROOT, handle(1, 0), &QdiscSpec::Tbf(tbf));
        let q = Qdisc::from_body(m.body()).unwrap();
        assert_eq!((q.ifindex, q.handle, q.parent), (7, 0x1_0000, ROOT));
        assert_eq!((q.kind.as_str(), q.tbf), ("tbf", Some(tbf)));
        assert!(q.is(&QdiscSpec::Tbf(tbf)));
        assert!(!q.is(&QdiscSpec::Tbf(Tbf { buffer: 1, ..tbf })));
        assert!(!q.is(&QdiscSpec::Ingress));
        assert_eq!(q.describe(), "tbf 1: root");
        let m = new_qdisc(0, &dev, INGRESS_PARENT, INGRESS_HANDLE, &QdiscSpec::Clsact);
        let q = Qdisc::from_body(m.body()).unwrap();
        assert!(q.is(&QdiscSpec::Clsact) && !q.is_default());
        assert_eq!(q.describe(), "clsact ffff: parent ffff:fff1");
        let m = new_qdisc(0, &dev, ROOT, 0, &QdiscSpec::Ingress);
        assert_eq!(
            Qdisc::from_body(m.body()).unwrap().describe(),
            "ingress 0: root"
        );
        assert!(Qdisc::from_body(&[0; 12]).is_none());
    }
}
