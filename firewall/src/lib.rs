//! `cni-firewall`: the firewall layer of the suite, shared by bridge
//! (masquerade, MAC spoof check), ptp (masquerade), portmap and the
//! `firewall` plugin.
//!
//! - [`backend`]: [`Backend`], its names parsed (`FromStr`) and printed in
//!   one place;
//! - [`select`]: backend selection in one place, with the reference's
//!   rules for each consumer (ipmasq, portmap, firewall), "auto" decided
//!   without starting a process, and [`Scope`] for DEL, CHECK and GC,
//!   which look at every backend when none is configured.
//! - Transports, one per backend: [`nft`] (nf_tables over netlink through
//!   `cni-net`; the `nft` binary is a test oracle, not a runtime
//!   dependency) and [`iptables`] (`iptables-save` to read, one
//!   `iptables-restore` batch per family to write).
//! - [`firewalld`]: firewalld's zone sources over D-Bus (the firewall
//!   plugin's `firewalld` backend), on a minimal blocking D-Bus client of
//!   our own (private `dbus` module: wire format, messages, one
//!   `UnixStream` with SASL `EXTERNAL` and deadlines).
//! - Rule sets used by more than one plugin, with the reference's names,
//!   comments and hashes so a node can switch suites in either direction
//!   and each suite can remove the other's rules: [`ipmasq`] and
//!   [`spoofchk`]. portmap's and the firewall plugin's rule sets live in
//!   their plugin crates, on these transports.
//! - [`records`]: the files of the per-attachment records portmap and the
//!   firewall plugin keep (names, atomic writes, the data directory's lock).
//! - [`Error`] with an [`ErrorKind`]: a backend that cannot be used here
//!   is [`ErrorKind::Unavailable`] (from `cni_net`'s `NftUnavailable`, an
//!   iptables tool missing from `PATH`, no system bus or no firewalld on
//!   it), never recognised by its text; a D-Bus refusal is
//!   [`ErrorKind::Dbus`] with the error's name;
//!   [`ErrorKind::NoBackend`] names every backend tried and why it failed.
//!
//! Modules depend one way: [`backend`] and [`error`] below everything,
//! the transports and [`firewalld`] on them, [`select`] on the
//! transports' probes (the nftables probe is [`nft::usable`]), the rule
//! sets on all of these.
//!
//! ```no_run
//! use cni_firewall::{Scope, System, ipmasq, select};
//! # fn demo(addrs: &[cni_net::IpNetwork]) -> cni_firewall::Result<()> {
//! let host = cni_net::Netlink::host()?;
//! let owner = ipmasq::Owner { network: "mynet", ifname: "eth0", container_id: "c1" };
//! // ADD: choose once, install (iptables runs in the background).
//! let configured = select::parse_ipmasq(Some("nftables"))?;
//! let backend = select::ipmasq(configured, &System::new(&host))?;
//! let pending = ipmasq::setup(&host, backend, addrs, &owner)?;
//! pending.wait()?;
//! // DEL: the configured backend, or every backend when unset.
//! ipmasq::teardown(&host, Scope::of(configured), &[], &owner)?;
//! # Ok(()) }
//! ```

pub mod backend;
mod dbus;
pub mod error;
pub mod firewalld;
pub mod ipmasq;
pub mod iptables;
pub mod nft;
pub mod records;
pub mod select;
pub mod spoofchk;

pub use backend::Backend;
pub use error::{Error, ErrorKind, Result, join};
pub use select::{Probe, Scope, System};
