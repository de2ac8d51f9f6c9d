//! One DHCP exchange on one interface: DISCOVER/OFFER/REQUEST/ACK,
//! renewal, rebinding, release (RFC 2131 §4.3-4.4), and the retries
//! with back-off around an acquisition.
//!
//! Messages go through a [`Wire`]: in the daemon a packet socket created
//! inside the container's namespace on its interface ([`RawWire`]), so a
//! client that has no address yet can send from 0.0.0.0 and hear answers
//! to the address it is offered; in unit tests a scripted server.

use std::fs::File;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use cni_net::packet::PacketSocket;

use crate::error::{Error, Result};
use crate::frame::{self, CLIENT_PORT, SERVER_PORT};
use crate::options::Options;
use crate::packet::{BOOTREPLY, Message, kind, opt};

const ETH_P_IP: u16 = 0x0800;
const BROADCAST_MAC: [u8; 6] = [0xff; 6];
/// How often a wait looks whether the lease was released meanwhile.
const POLL: Duration = Duration::from_millis(100);
/// The largest message we accept (option 57).
const MAX_SIZE: u16 = 1500;

/// Where a client message goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum To {
    /// Everybody on the link, to 255.255.255.255.
    Broadcast,
    /// The server at `ip`, through the next hop `mac` (where its
    /// replies came from).
    Server { ip: Ipv4Addr, mac: [u8; 6] },
}

/// A server's reply and the link-layer address it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub msg: Message,
    pub mac: [u8; 6],
}

/// The interface's side of an exchange.
pub trait Wire {
    /// Send `msg` from `src` (0.0.0.0 before the client has an address).
    fn send(&mut self, msg: &Message, src: Ipv4Addr, to: To) -> Result<()>;
    /// The next DHCP message sent to the client port, waiting at most
    /// `timeout`.
    fn recv(&mut self, timeout: Duration) -> Result<Option<Reply>>;
}

impl<T: Wire + ?Sized> Wire for &mut T {
    fn send(&mut self, msg: &Message, src: Ipv4Addr, to: To) -> Result<()> {
        (**self).send(msg, src, to)
    }

    fn recv(&mut self, timeout: Duration) -> Result<Option<Reply>> {
        (**self).recv(timeout)
    }
}

/// DHCP over a packet socket on one interface of a namespace.
pub struct RawWire {
    sock: PacketSocket,
    buf: Vec<u8>,
    ifname: String,
}

impl RawWire {
    /// A socket in `ns` on interface `ifindex`, hearing only UDP to the
    /// client port.
    pub fn open(ns: &File, ifindex: u32, ifname: &str) -> Result<RawWire> {
        let filter = frame::udp_port_filter(CLIENT_PORT);
        let sock = PacketSocket::open_in(ns, ifindex, ETH_P_IP, &filter)?;
        Ok(RawWire {
            sock,
            buf: vec![0u8; 65536],
            ifname: ifname.to_string(),
        })
    }
}

impl Wire for RawWire {
    fn send(&mut self, msg: &Message, src: Ipv4Addr, to: To) -> Result<()> {
        let (ip, mac) = match to {
            To::Broadcast => (Ipv4Addr::BROADCAST, BROADCAST_MAC),
            To::Server { ip, mac } => (ip, mac),
        };
        let packet = frame::udp_packet(src, ip, CLIENT_PORT, SERVER_PORT, &msg.encode());
        // A link just set up has no carrier for a moment: the kernel says
        // ENETDOWN. Try again shortly, within a bound.
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            match self.sock.send(&mac, &packet) {
                Err(e) if e.is(nix::errno::Errno::ENETDOWN) && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => return Err(Error::from(e).context(format!("send on {:?}", self.ifname))),
                Ok(()) => return Ok(()),
            }
        }
    }

    fn recv(&mut self, timeout: Duration) -> Result<Option<Reply>> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(r) = self.sock.recv(&mut self.buf, left)? else {
                return Ok(None);
            };
            let udp = frame::parse_udp(&self.buf[..r.len]);
            let msg = udp
                .filter(|u| !r.outgoing && u.dport == CLIENT_PORT)
                .and_then(|u| Message::parse(u.payload).ok());
            if let Some(msg) = msg {
                return Ok(Some(Reply {
                    msg,
                    mac: r.src_mac,
                }));
            }
            if left.is_zero() {
                return Ok(None);
            }
        }
    }
}

/// The daemon's DHCP settings (its flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// How long to wait for each answer (`-timeout`).
    pub timeout: Duration,
    /// The longest pause between attempts (`-resendmax`).
    pub resend_max: Duration,
    /// How long one acquisition may take in all (`-resendtimeout`).
    pub resend_timeout: Duration,
    /// Ask servers to broadcast their replies (`-broadcast`).
    pub broadcast: bool,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            timeout: Duration::from_secs(10),
            resend_max: Duration::from_secs(62),
            resend_timeout: Duration::from_secs(208),
            broadcast: false,
        }
    }
}

/// A client of one lease on one wire.
pub struct Client<'a, W: Wire> {
    pub wire: W,
    pub ifname: &'a str,
    pub chaddr: [u8; 6],
    pub client_id: &'a [u8],
    pub options: &'a Options,
    pub params: Params,
    /// Whether the lease was released meanwhile: waits end early.
    pub stopped: &'a dyn Fn() -> bool,
}

/// Why an exchange ended without a lease.
pub fn released() -> Error {
    Error::Dhcp("lease released during the exchange".into())
}

fn xid() -> u32 {
    let mut b = [0u8; 4];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b))
        .is_err()
    {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        return t.subsec_nanos() ^ std::process::id();
    }
    u32::from_ne_bytes(b)
}

impl<W: Wire> Client<'_, W> {
    /// A message of `kind` with the lease's identity and options: the
    /// client identifier, then the configured options (which may replace
    /// it, as in the reference), then the request list.
    fn message(&self, kind: u8, xid: u32) -> Message {
        let mut m = Message::request(kind, xid, self.chaddr);
        let mut id = vec![0u8];
        id.extend_from_slice(self.client_id);
        m.set(opt::CLIENT_ID, &id);
        if kind != crate::packet::kind::RELEASE {
            for (code, value) in &self.options.send {
                m.set(*code, value);
            }
            m.set(opt::PARAMETER_LIST, &self.options.request);
            m.set(opt::MAX_SIZE, &MAX_SIZE.to_be_bytes());
            m.broadcast = self.params.broadcast;
        }
        m
    }

    /// The first reply to `xid` for us that `want` accepts, within the
    /// timeout.
    fn wait(&mut self, xid: u32, want: impl Fn(&Message) -> bool) -> Result<Option<Reply>> {
        let deadline = Instant::now() + self.params.timeout;
        loop {
            if (self.stopped)() {
                return Err(released());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            if let Some(r) = self.wire.recv(left.min(POLL))? {
                let m = &r.msg;
                if m.op == BOOTREPLY && m.xid == xid && m.chaddr == self.chaddr && want(m) {
                    return Ok(Some(r));
                }
            }
        }
    }

    fn silence(&self, what: &str) -> Error {
        Error::Dhcp(format!(
            "no {what} on {:?} within {}",
            self.ifname,
            crate::duration::format(self.params.timeout)
        ))
    }

    /// Wait for the ACK or NAK of a REQUEST.
    fn acked(&mut self, xid: u32, server: Option<Ipv4Addr>, what: &str) -> Result<Reply> {
        let reply = self.wait(xid, |m| {
            matches!(m.kind(), Some(kind::ACK | kind::NAK))
                && (server.is_none() || m.ip_opt(opt::SERVER_ID) == server)
        })?;
        let r = reply.ok_or_else(|| self.silence(&format!("answer to {what}")))?;
        if r.msg.kind() == Some(kind::NAK) {
            let text = r.msg.get(opt::MESSAGE).unwrap_or_default();
            return Err(Error::Dhcp(format!(
                "server rejected request with Nak (msg: {})",
                String::from_utf8_lossy(text)
            )));
        }
        Ok(r)
    }

    /// INIT → SELECTING → REQUESTING → BOUND: one DISCOVER, the first
    /// offer (of address `want` only, when given), its REQUEST, the ACK.
    pub fn acquire(&mut self, want: Option<Ipv4Addr>) -> Result<Reply> {
        let xid = xid();
        let mut discover = self.message(kind::DISCOVER, xid);
        if let Some(ip) = want {
            discover.set(opt::REQUESTED_IP, &ip.octets());
        }
        self.wire
            .send(&discover, Ipv4Addr::UNSPECIFIED, To::Broadcast)?;
        let offer = self
            .wait(xid, |m| {
                m.kind() == Some(kind::OFFER)
                    && !m.yiaddr.is_unspecified()
                    && m.ip_opt(opt::SERVER_ID).is_some()
                    && want.is_none_or(|w| m.yiaddr == w)
            })?
            .ok_or_else(|| self.silence("DHCPOFFER"))?;
        let server = offer.msg.ip_opt(opt::SERVER_ID);
        let mut request = self.message(kind::REQUEST, xid);
        request.set(opt::REQUESTED_IP, &offer.msg.yiaddr.octets());
        if let Some(s) = server {
            request.set(opt::SERVER_ID, &s.octets());
        }
        self.wire
            .send(&request, Ipv4Addr::UNSPECIFIED, To::Broadcast)?;
        self.acked(xid, server, "DHCPREQUEST")
    }

    /// RENEWING: a REQUEST for `addr` unicast to the server that gave it.
    pub fn renew(&mut self, addr: Ipv4Addr, server: To) -> Result<Reply> {
        let xid = xid();
        let mut request = self.message(kind::REQUEST, xid);
        request.ciaddr = addr;
        request.broadcast = false;
        self.wire.send(&request, addr, server)?;
        self.acked(xid, None, "renewal")
    }

    /// REBINDING: a REQUEST for `addr` to any server.
    pub fn rebind(&mut self, addr: Ipv4Addr) -> Result<Reply> {
        let xid = xid();
        let mut request = self.message(kind::REQUEST, xid);
        request.ciaddr = addr;
        self.wire.send(&request, addr, To::Broadcast)?;
        self.acked(xid, None, "rebinding request")
    }

    /// DHCPRELEASE of `addr`, sent from `addr` to the server (servers
    /// ignore one from 0.0.0.0, reference issue #1278). No answer comes.
    pub fn release(&mut self, addr: Ipv4Addr, server_id: Ipv4Addr, server: To) -> Result<()> {
        let mut release = self.message(kind::RELEASE, xid());
        release.ciaddr = addr;
        release.set(opt::SERVER_ID, &server_id.octets());
        self.wire.send(&release, addr, server)
    }
}

/// Run `attempt` until it succeeds, pausing between attempts as the
/// reference does (RFC 2131 §4.1: four quick retries 2 s ± 1 s apart,
/// then 4 s, 8 s, ... ± 1 s, doubling up to `resend_max`), giving up once
/// `resend_timeout` has passed: `no more tries`, with the last failure.
/// Ends early when `stopped` says so.
pub fn with_retries<T>(
    params: &Params,
    stopped: &dyn Fn() -> bool,
    mut attempt: impl FnMut() -> Result<T>,
) -> Result<T> {
    let start = Instant::now();
    let mut fast = 4;
    let mut base = Duration::from_secs(4);
    let mut n = 0u32;
    loop {
        n = n.saturating_add(1);
        let e = match attempt() {
            Ok(v) => return Ok(v),
            Err(e) if (stopped)() => return Err(e),
            Err(e) => e,
        };
        let delay = if fast > 0 {
            fast -= 1;
            jitter(Duration::from_secs(2))
        } else {
            let d = jitter(base);
            if base < params.resend_max {
                base = (base * 2).min(params.resend_max.max(Duration::from_secs(1)));
            }
            d
        };
        let spent = start.elapsed();
        if spent + delay >= params.resend_timeout {
            return Err(Error::Dhcp(format!(
                "no more tries: {e} (gave up after {n} attempt{} in {})",
                if n == 1 { "" } else { "s" },
                crate::duration::format(Duration::from_secs(spent.as_secs()))
            )));
        }
        let until = Instant::now() + delay;
        while Instant::now() < until {
            if (stopped)() {
                return Err(released());
            }
            std::thread::sleep(POLL.min(until.saturating_duration_since(Instant::now())));
        }
    }
}

/// `d` ± 1 s, at random.
fn jitter(d: Duration) -> Duration {
    let r = f64::from(xid()) / f64::from(u32::MAX);
    let ms = d.as_millis() as f64 + (r * 2.0 - 1.0) * 1000.0;
    Duration::from_millis(ms.max(0.0) as u64)
}

#[cfg(test)]
mod tests;
