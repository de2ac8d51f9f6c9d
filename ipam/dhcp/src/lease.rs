//! A lease: the attachment it belongs to, what the server granted (the
//! ACK) and when, the result it gives the runtime, and the thread that
//! keeps it: renew at T1, rebind at T2, give it up at expiry or when the
//! interface is gone, release it at the server when told.
//!
//! The thread holds nothing between exchanges: the namespace, a netlink
//! socket and the packet socket are opened for each exchange and closed
//! after, so a lease never pins a container's namespace. The namespace
//! is recognised by its inode and the interface by name and MAC, so a
//! reused path or name is not mistaken for the lease's.

use std::fs::File;
use std::net::{IpAddr, Ipv4Addr};
use std::os::unix::fs::MetadataExt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use cni_net::{Link, Netlink};
use ipnetwork::IpNetwork;
use skel::types::{Cidr, IpConfig, Result1, Route};

use crate::client::{self, Client, Params, RawWire, Reply, To};
use crate::error::{Error, Result};
use crate::log::log;
use crate::options::Options;
use crate::packet::{self, Message, opt};
use crate::store::{Record, Store};

/// Without option 51, a lease lasts an hour (the reference's default).
const DEFAULT_LEASE: u32 = 3600;
/// Between two attempts to renew or rebind, at least this long (and half
/// the time left until the next state, RFC 2131 §4.4.5).
const MIN_RETRY: Duration = Duration::from_secs(4);
/// A sleeping lease looks at the clock again at least this often, so a
/// clock step or a suspended machine does not make it miss T1.
const MAX_SLEEP: Duration = Duration::from_secs(60);
/// The route scope of a destination on the link (`RT_SCOPE_LINK`).
const SCOPE_LINK: i64 = 253;
/// Stack of a lease's thread: it only sleeps, and runs small exchanges.
const STACK: usize = 256 << 10;

/// Whom a lease is for: one interface of one container on one network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// `<containerID>/<network>/<ifname>`, the key of the lease.
    pub client_id: String,
    pub container_id: String,
    pub network: String,
    pub ifname: String,
    /// The namespace path as the daemon opens it (host prefix included).
    pub netns: String,
    /// The namespace's device and inode when the lease was taken.
    pub netns_id: (u64, u64),
    /// The interface's MAC, which is also the DHCP `chaddr`.
    pub mac: [u8; 6],
    pub options: Options,
}

/// What a server granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound {
    pub ack: Message,
    /// The link-layer address the ACK came from: the next hop towards the
    /// server, for unicast renewals and the release.
    pub server_mac: [u8; 6],
    pub acked_at: SystemTime,
}

/// When a bound lease must be renewed, rebound, and when it is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Times {
    pub renew: SystemTime,
    pub rebind: SystemTime,
    pub expiry: SystemTime,
}

impl Bound {
    pub fn new(reply: Reply) -> Bound {
        Bound {
            ack: reply.msg,
            server_mac: reply.mac,
            acked_at: SystemTime::now(),
        }
    }

    pub fn addr(&self) -> Ipv4Addr {
        self.ack.yiaddr
    }

    /// The server identifier (option 54), else the `siaddr` field.
    pub fn server_id(&self) -> Ipv4Addr {
        self.ack.ip_opt(opt::SERVER_ID).unwrap_or(self.ack.siaddr)
    }

    /// Where unicast messages to the server go.
    pub fn server(&self) -> To {
        To::Server {
            ip: self.server_id(),
            mac: self.server_mac,
        }
    }

    /// The lease's timers: T2 from option 59 unless missing or beyond the
    /// lease (then 85 %), T1 from option 58 unless missing or beyond T2
    /// (then 50 %).
    pub fn times(&self) -> Times {
        let lease = self.ack.u32_opt(opt::LEASE_TIME).unwrap_or(DEFAULT_LEASE);
        let rebind = self
            .ack
            .u32_opt(opt::REBINDING_TIME)
            .filter(|&t| t <= lease)
            .unwrap_or((u64::from(lease) * 85 / 100) as u32);
        let renew = self
            .ack
            .u32_opt(opt::RENEWAL_TIME)
            .filter(|&t| t <= rebind)
            .unwrap_or(lease / 2)
            .min(rebind);
        let at = |s: u32| self.acked_at + Duration::from_secs(u64::from(s));
        Times {
            renew: at(renew),
            rebind: at(rebind),
            expiry: at(lease),
        }
    }

    /// The result of the lease, as the reference builds it: the address
    /// with its mask, the first router as gateway; routes from option 121
    /// alone when present (a destination on the link gets gateway 0.0.0.0
    /// and link scope), else those of option 33 and a default route via
    /// the router. `priority`, when set, is every route's metric.
    pub fn result(&self, priority: i64) -> Result<Result1> {
        let ack = &self.ack;
        let prefix = ack
            .prefix()
            .ok_or_else(|| Error::Dhcp("DHCP option Subnet Mask not found in DHCPACK".into()))?;
        let net = |ip: Ipv4Addr, p: u8| {
            Cidr(
                IpNetwork::new(IpAddr::V4(ip), p)
                    .unwrap_or_else(|_| IpNetwork::from(IpAddr::V4(ip))),
            )
        };
        let gateway = ack.routers().first().copied();
        let mut routes = Vec::new();
        let classless = ack
            .get(opt::CLASSLESS_ROUTE)
            .and_then(packet::classless_routes)
            .filter(|r| !r.is_empty());
        if let Some(list) = classless {
            for r in list {
                let mut route = Route::new(net(r.dst, r.prefix), Some(IpAddr::V4(r.router)));
                if r.router.is_unspecified() {
                    route.scope = Some(SCOPE_LINK);
                }
                routes.push(route);
            }
        } else {
            for r in ack
                .get(opt::STATIC_ROUTE)
                .map(packet::static_routes)
                .unwrap_or_default()
            {
                routes.push(Route::new(net(r.dst, r.prefix), Some(IpAddr::V4(r.router))));
            }
            if let Some(gw) = gateway {
                routes.push(Route::new(
                    net(Ipv4Addr::UNSPECIFIED, 0),
                    Some(IpAddr::V4(gw)),
                ));
            }
        }
        if priority != 0 {
            for r in &mut routes {
                r.priority = priority;
            }
        }
        Ok(Result1 {
            cni_version: skel::version::CURRENT.into(),
            ips: vec![IpConfig {
                address: net(ack.yiaddr, prefix),
                gateway: gateway.map(IpAddr::V4),
                interface: None,
            }],
            routes,
            ..Default::default()
        })
    }
}

/// An attachment's interface, found again.
pub struct Iface {
    pub ns: File,
    pub link: Link,
}

/// The namespace at `path` and its interface `ifname`, for a new lease,
/// with the reference's messages when either is missing.
pub fn open_new(path: &str, ifname: &str) -> Result<(Iface, (u64, u64))> {
    let ns = match skel::netns::open(path, true).map_err(|e| Error::Net(e.msg))? {
        skel::Netns::Open { file, .. } => file,
        other => {
            return Err(Error::Net(
                other.file().err().map(|e| e.msg).unwrap_or_default(),
            ));
        }
    };
    let meta = ns
        .metadata()
        .map_err(|e| Error::io("stat", path.as_ref(), &e))?;
    let link = Netlink::in_netns(&ns)?
        .find_link(ifname)?
        .ok_or_else(|| Error::Net(format!("error looking up {ifname:?}: Link not found")))?;
    Ok((Iface { ns, link }, (meta.dev(), meta.ino())))
}

/// The attachment's interface if it is still there: the same namespace
/// (by inode), a link of the same name and MAC in it. `Err` with the
/// reason otherwise.
fn find(att: &Attachment) -> std::result::Result<Iface, String> {
    let ns = match skel::netns::open(&att.netns, true) {
        Ok(skel::Netns::Open { file, .. }) => file,
        Ok(_) => return Err(format!("namespace {} is gone", att.netns)),
        Err(e) => return Err(e.msg),
    };
    let id = ns
        .metadata()
        .map(|m| (m.dev(), m.ino()))
        .map_err(|e| e.to_string())?;
    if id != att.netns_id {
        return Err(format!("{} is another namespace now", att.netns));
    }
    let nl = Netlink::in_netns(&ns).map_err(|e| e.to_string())?;
    match nl.find_link(&att.ifname).map_err(|e| e.to_string())? {
        Some(link) if link.mac == att.mac => Ok(Iface { ns, link }),
        Some(_) => Err(format!("interface {} was replaced", att.ifname)),
        None => Err(format!("interface {} no longer exists", att.ifname)),
    }
}

/// [`skel::failpoint::hit`], as this crate's error.
fn failpoint(point: &'static str) -> Result<()> {
    skel::failpoint::hit(point).map_err(|e| Error::Dhcp(e.msg))
}

/// What the daemon's leases share: its DHCP settings and the store.
pub struct Ctx {
    pub params: Params,
    pub store: Store,
    /// Leases whose thread ended on its own (interface gone, expired), for
    /// the table to drop ([`Ctx::take_ended`]).
    ended: Mutex<Vec<String>>,
}

impl Ctx {
    pub fn new(params: Params, store: Store) -> Ctx {
        Ctx {
            params,
            store,
            ended: Mutex::new(Vec::new()),
        }
    }

    /// The client identifiers of the leases that ended on their own since
    /// the last call.
    pub fn take_ended(&self) -> Vec<String> {
        std::mem::take(&mut *self.ended.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

#[derive(Debug, Default)]
struct State {
    bound: Option<Bound>,
    /// Why the lease ended (or its acquisition failed); `None` while it
    /// is being acquired or kept.
    ended: Option<String>,
    /// Release asked for.
    stop: bool,
    /// The next attempt to renew or rebind after a failed one.
    retry_at: Option<SystemTime>,
}

/// What a lease is doing next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Renew,
    Rebind,
    Expire,
    Release,
}

/// A lease of one attachment, acquired or being acquired, and kept by a
/// thread of its own.
pub struct Lease {
    pub att: Attachment,
    state: Mutex<State>,
    cv: Condvar,
}

impl Lease {
    pub fn new(att: Attachment) -> Arc<Lease> {
        Arc::new(Lease {
            att,
            state: Mutex::new(State::default()),
            cv: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn stopped(&self) -> bool {
        self.lock().stop
    }

    /// Whether the lease is over (released, expired, interface gone, or
    /// never acquired).
    pub fn ended(&self) -> bool {
        self.lock().ended.is_some()
    }

    fn end(&self, why: String) {
        let mut st = self.lock();
        st.ended = Some(why);
        self.cv.notify_all();
    }

    fn client<'a>(
        &'a self,
        wire: &'a mut RawWire,
        params: Params,
        stopped: &'a dyn Fn() -> bool,
    ) -> Client<'a, &'a mut RawWire> {
        Client {
            wire,
            ifname: &self.att.ifname,
            chaddr: self.att.mac,
            client_id: self.att.client_id.as_bytes(),
            options: &self.att.options,
            params,
            stopped,
        }
    }

    /// Take a lease on `iface` (DISCOVER/OFFER/REQUEST/ACK, with the
    /// retries of [`client::with_retries`]), store it and start keeping
    /// it. On failure the lease is ended and nothing is stored.
    pub fn acquire(self: &Arc<Self>, ctx: &Arc<Ctx>, iface: Iface) -> Result<Bound> {
        let id = &self.att.client_id;
        log(format!("{id}: acquiring lease"));
        let result = self.take(ctx, &iface);
        match &result {
            Ok(b) => {
                let t = b.times();
                log(format!(
                    "{id}: lease acquired, expiration is {} UTC",
                    crate::log::stamp(t.expiry)
                ));
                self.spawn(ctx);
            }
            Err(e) => self.end(e.to_string()),
        }
        result
    }

    /// The acquisition: link up, the exchange, then the lease kept and
    /// stored. A failure after the ACK gives the lease back at once and
    /// leaves no record (the failpoints name each step).
    fn take(&self, ctx: &Ctx, iface: &Iface) -> Result<Bound> {
        if !iface.link.up {
            log(format!(
                "Link {:?} down. Attempting to set up",
                self.att.ifname
            ));
            Netlink::in_netns(&iface.ns)?.set_up(&iface.link)?;
            failpoint("dhcp/link-up")?;
        }
        let mut wire = RawWire::open(&iface.ns, iface.link.index, &self.att.ifname)?;
        let stopped = || self.stopped();
        let reply = client::with_retries(&ctx.params, &stopped, || {
            self.client(&mut wire, ctx.params, &stopped).acquire(None)
        })?;
        let bound = Bound::new(reply);
        let kept = self.keep_new(ctx, &bound);
        if kept.is_err() {
            // Unusable or unwanted: give it back at once, as the reference
            // does with a lease that has no mask.
            self.lock().bound = None;
            ctx.store.remove(&self.att.client_id);
            let _ = self.client(&mut wire, ctx.params, &|| false).release(
                bound.addr(),
                bound.server_id(),
                bound.server(),
            );
        }
        kept.map(|()| bound)
    }

    /// The steps after the ACK: check it, keep it, store it.
    fn keep_new(&self, ctx: &Ctx, bound: &Bound) -> Result<()> {
        bound.result(0)?;
        failpoint("dhcp/acked")?;
        {
            let mut st = self.lock();
            if st.stop {
                return Err(client::released());
            }
            st.bound = Some(bound.clone());
        }
        self.save(ctx, bound);
        failpoint("dhcp/stored")
    }

    fn save(&self, ctx: &Ctx, bound: &Bound) {
        let rec = Record {
            att: self.att.clone(),
            bound: bound.clone(),
        };
        if let Err(e) = ctx.store.save(&rec) {
            log(format!("{}: lease not persisted: {e}", self.att.client_id));
        }
    }

    /// Keep a lease read from the store (the daemon restarted). Its
    /// interface is looked for at once: a container deleted while no
    /// daemon ran is forgotten now, not at T1.
    pub fn resume(self: &Arc<Self>, ctx: &Arc<Ctx>, bound: Bound) {
        self.lock().bound = Some(bound);
        self.spawn_checked(ctx, true);
    }

    fn spawn(self: &Arc<Self>, ctx: &Arc<Ctx>) {
        self.spawn_checked(ctx, false);
    }

    fn spawn_checked(self: &Arc<Self>, ctx: &Arc<Ctx>, check: bool) {
        let (me, ctx) = (Arc::clone(self), Arc::clone(ctx));
        let started = std::thread::Builder::new()
            .name("lease".into())
            .stack_size(STACK)
            .spawn(move || {
                let gone = if check { find(&me.att).err() } else { None };
                let why = match gone {
                    Some(why) => {
                        log(format!(
                            "{}: {why}, not resuming the lease",
                            me.att.client_id
                        ));
                        ctx.store.remove(&me.att.client_id);
                        why
                    }
                    None => me.keep(&ctx),
                };
                let released = me.stopped();
                me.end(why);
                if !released {
                    let mut ended = ctx.ended.lock().unwrap_or_else(|p| p.into_inner());
                    ended.push(me.att.client_id.clone());
                }
            });
        if let Err(e) = started {
            log(format!(
                "{}: cannot start its lease thread: {e}",
                self.att.client_id
            ));
            self.end(format!("no lease thread: {e}"));
        }
    }

    /// The lease while it is kept; waits (up to `wait`) for an
    /// acquisition in progress. `None` once it ended.
    pub fn current(&self, wait: Duration) -> Option<Bound> {
        let deadline = Instant::now() + wait;
        let mut st = self.lock();
        loop {
            if st.ended.is_some() || st.stop {
                return None;
            }
            if let Some(b) = &st.bound {
                return Some(b.clone());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            st = self
                .cv
                .wait_timeout(st, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Stop keeping the lease; the thread releases it at the server.
    /// Waits up to `wait` for that to be done.
    pub fn stop(&self, wait: Duration) {
        let deadline = Instant::now() + wait;
        let mut st = self.lock();
        st.stop = true;
        self.cv.notify_all();
        while st.ended.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                log(format!(
                    "{}: lease thread still busy after {}",
                    self.att.client_id,
                    crate::duration::format(wait)
                ));
                return;
            }
            st = self
                .cv
                .wait_timeout(st, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Sleep until the next step is due (or release is asked for).
    /// `None` when there is no lease to keep.
    fn next(&self) -> Option<(Bound, Step)> {
        let mut st = self.lock();
        loop {
            let bound = st.bound.clone()?;
            if st.stop {
                return Some((bound, Step::Release));
            }
            let now = SystemTime::now();
            let t = bound.times();
            let (step, at) = if now >= t.expiry {
                (Step::Expire, now)
            } else if now >= t.rebind {
                (Step::Rebind, st.retry_at.unwrap_or(now).min(t.expiry))
            } else if now >= t.renew {
                (Step::Renew, st.retry_at.unwrap_or(now).min(t.rebind))
            } else {
                (Step::Renew, t.renew)
            };
            if at <= now {
                return Some((bound, step));
            }
            let wait = at.duration_since(now).unwrap_or_default().min(MAX_SLEEP);
            st = self
                .cv
                .wait_timeout(st, wait)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// The lease's thread: one step after the other until the lease ends;
    /// returns why it ended.
    fn keep(&self, ctx: &Ctx) -> String {
        let id = &self.att.client_id;
        loop {
            let Some((bound, step)) = self.next() else {
                return "no lease".into();
            };
            if step == Step::Release {
                self.release(ctx, &bound);
                return "released".into();
            }
            let iface = match find(&self.att) {
                Ok(i) => i,
                Err(why) => {
                    log(format!("{id}: {why}, terminating lease maintenance"));
                    ctx.store.remove(id);
                    return why;
                }
            };
            if step == Step::Expire {
                log(format!("{id}: lease expired, bringing interface DOWN"));
                if let Err(e) = Netlink::in_netns(&iface.ns).and_then(|nl| nl.set_down(&iface.link))
                {
                    log(format!(
                        "{id}: failed to bring {} interface DOWN: {e}",
                        self.att.ifname
                    ));
                }
                ctx.store.remove(id);
                return "expired".into();
            }
            let (verb, done) = match step {
                Step::Renew => ("renewing lease", "renewed"),
                _ => ("renewal time expired, rebinding", "rebound"),
            };
            log(format!("{id}: {verb}"));
            match self.exchange(ctx, &iface, &bound, step) {
                Ok(new) => {
                    log(format!(
                        "{id}: lease {done}, expiration is {} UTC",
                        crate::log::stamp(new.times().expiry)
                    ));
                    self.save(ctx, &new);
                    let mut st = self.lock();
                    st.bound = Some(new);
                    st.retry_at = None;
                }
                Err(_) if self.stopped() => {}
                Err(e) => {
                    let t = bound.times();
                    let until = if step == Step::Renew {
                        t.rebind
                    } else {
                        t.expiry
                    };
                    let now = SystemTime::now();
                    let half = until.duration_since(now).unwrap_or_default() / 2;
                    let at = (now + half.max(MIN_RETRY)).min(until);
                    log(format!(
                        "{id}: {e}; next try in {}",
                        crate::duration::format(Duration::from_secs(
                            at.duration_since(now).unwrap_or_default().as_secs()
                        ))
                    ));
                    self.lock().retry_at = Some(at);
                }
            }
        }
    }

    /// One renewal (unicast to the server) or rebinding (broadcast; when
    /// refused or unanswered, a DISCOVER for the same address).
    fn exchange(&self, ctx: &Ctx, iface: &Iface, bound: &Bound, step: Step) -> Result<Bound> {
        let mut wire = RawWire::open(&iface.ns, iface.link.index, &self.att.ifname)?;
        let stopped = || self.stopped();
        let mut c = self.client(&mut wire, ctx.params, &stopped);
        let addr = bound.addr();
        let reply = match step {
            Step::Renew => c.renew(addr, bound.server())?,
            _ => match c.rebind(addr) {
                Ok(r) => r,
                Err(_) if stopped() => return Err(client::released()),
                Err(_) => c.acquire(Some(addr))?,
            },
        };
        if reply.msg.yiaddr != addr {
            return Err(Error::Dhcp(format!(
                "server acknowledged {} instead of {addr}",
                reply.msg.yiaddr
            )));
        }
        Ok(Bound::new(reply))
    }

    /// DHCPRELEASE from the leased address, if the lease is still valid
    /// and its interface still there.
    fn release(&self, ctx: &Ctx, bound: &Bound) {
        release_with(&self.att, bound, ctx.params);
    }
}

/// Give `bound` back to its server through `att`'s interface, if both
/// are still there; the reason when not.
pub fn release_with(att: &Attachment, bound: &Bound, params: Params) {
    let id = &att.client_id;
    if bound.ack.yiaddr.is_unspecified() || SystemTime::now() >= bound.times().expiry {
        return;
    }
    let iface = match find(att) {
        Ok(i) => i,
        Err(why) => {
            log(format!("{id}: not releasing lease: {why}"));
            return;
        }
    };
    log(format!("{id}: releasing lease"));
    let sent = RawWire::open(&iface.ns, iface.link.index, &att.ifname).and_then(|mut wire| {
        Client {
            wire: &mut wire,
            ifname: &att.ifname,
            chaddr: att.mac,
            client_id: att.client_id.as_bytes(),
            options: &att.options,
            params,
            stopped: &|| false,
        }
        .release(bound.addr(), bound.server_id(), bound.server())
    });
    if let Err(e) = sent {
        log(format!("{id}: failed to release DHCP lease: {e}"));
    }
}

#[cfg(test)]
mod tests;
