//! The rtnetlink connection: one socket bound to one namespace, driven by
//! the crate's single current-thread tokio runtime, with a synchronous
//! request/ack loop on top.
//!
//! The socket is created while the thread is switched into the target
//! namespace (through [`crate::netns`]) and keeps that namespace for its
//! whole life, so no later request needs `setns`.

use std::fs::File;
use std::sync::OnceLock;

use futures::StreamExt;
use rtnetlink::packet_core::{
    NLM_F_ACK, NLM_F_DUMP, NLM_F_DUMP_INTR, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage,
    NetlinkPayload,
};
use rtnetlink::packet_route::RouteNetlinkMessage;
use tokio::runtime::Runtime;

use crate::error::{Errno, Error, Result};
use crate::netns;

/// How often a dump the kernel flagged `NLM_F_DUMP_INTR` (the table changed
/// while it was read) is retried, as the reference's netlinksafe does.
const DUMP_ATTEMPTS: usize = 5;

static RUNTIME: OnceLock<std::result::Result<Runtime, String>> = OnceLock::new();

/// The shared runtime. Current-thread: work only runs inside `block_on`,
/// on the caller's thread, which is never switched while it does.
fn runtime() -> Result<&'static Runtime> {
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Error::other("start netlink runtime", e.clone()))
}

/// An rtnetlink connection bound to one network namespace.
#[derive(Debug, Clone)]
pub struct Netlink {
    handle: rtnetlink::Handle,
}

impl Netlink {
    /// A connection in the calling thread's current namespace (the
    /// plugin's own, "host", namespace).
    pub fn host() -> Result<Netlink> {
        connect()
    }

    /// A connection inside the namespace `ns` (e.g. `args.netns.file()?`).
    pub fn in_netns(ns: &File) -> Result<Netlink> {
        netns::run(ns, connect)?
    }

    /// Send one request and collect the replies. `flags` are added to
    /// `NLM_F_REQUEST | NLM_F_ACK` (dumps get no ACK flag). Dumps
    /// interrupted by concurrent changes are retried.
    pub(crate) fn request(
        &self,
        op: &str,
        msg: RouteNetlinkMessage,
        flags: u16,
    ) -> Result<Vec<RouteNetlinkMessage>> {
        let dump = flags & NLM_F_DUMP == NLM_F_DUMP;
        let flags = if dump {
            NLM_F_REQUEST | flags
        } else {
            NLM_F_REQUEST | NLM_F_ACK | flags
        };
        for _ in 0..DUMP_ATTEMPTS {
            let (replies, interrupted) = self.exchange(op, msg.clone(), flags)?;
            if !(dump && interrupted) {
                return Ok(replies);
            }
        }
        Err(Error::other(
            op,
            format!("dump interrupted {DUMP_ATTEMPTS} times"),
        ))
    }

    fn exchange(
        &self,
        op: &str,
        msg: RouteNetlinkMessage,
        flags: u16,
    ) -> Result<(Vec<RouteNetlinkMessage>, bool)> {
        let mut header = NetlinkHeader::default();
        header.flags = flags;
        let mut req = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(msg));
        req.finalize();
        let mut handle = self.handle.clone();
        runtime()?.block_on(async move {
            let mut replies = handle
                .request(req)
                .map_err(|_| Error::other(op, "netlink connection closed"))?;
            let mut out = Vec::new();
            let mut interrupted = false;
            while let Some(reply) = replies.next().await {
                interrupted |= reply.header.flags & NLM_F_DUMP_INTR != 0;
                match reply.payload {
                    NetlinkPayload::InnerMessage(m) => out.push(m),
                    NetlinkPayload::Error(e) if e.code.is_some() => {
                        return Err(Error::errno(op, Errno::from_raw(e.raw_code().abs())));
                    }
                    NetlinkPayload::Error(_) | NetlinkPayload::Done(_) => break,
                    NetlinkPayload::Overrun(_) => {
                        return Err(Error::other(op, "netlink buffer overrun"));
                    }
                    _ => {}
                }
            }
            Ok((out, interrupted))
        })
    }
}

fn connect() -> Result<Netlink> {
    let rt = runtime()?;
    // Registering the socket with the reactor needs the runtime context.
    let _ctx = rt.enter();
    let (conn, handle, _) =
        rtnetlink::new_connection().map_err(|e| Error::io("open netlink socket", &e))?;
    // The task ends by itself once every clone of the handle is dropped.
    rt.spawn(conn);
    Ok(Netlink { handle })
}
