//! The daemon's RPC methods over its table of leases: `DHCP.Allocate`
//! and `DHCP.Release` as the reference's (same arguments, replies and
//! messages), and our `DHCP.GC`.
//!
//! No method ever waits on a lease's thread to answer: a lease being
//! renewed still answers from its current ACK, a lease whose thread
//! ended is replaced (the reference's ADD and CHECK hang for ever there).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::config::Config;
use crate::error::Error;
use crate::gob::Value;
use crate::lease::{self, Attachment, Ctx, Lease};
use crate::log::log;
use crate::options;
use crate::rpc::{self, Reply};
use crate::wire::{self, ALLOCATE, CmdArgs, GC, RELEASE};

/// How long a release waits for the lease's thread to finish it: the
/// thread may be in the middle of an exchange (at most one `-timeout`).
fn stop_wait(ctx: &Ctx) -> Duration {
    ctx.params.timeout + Duration::from_secs(5)
}

/// The leases, by client identifier.
pub struct Service {
    pub ctx: Arc<Ctx>,
    leases: Mutex<HashMap<String, Arc<Lease>>>,
    /// Prepended to every namespace path (`-hostprefix`).
    host_prefix: String,
}

impl Service {
    pub fn new(ctx: Arc<Ctx>, host_prefix: String) -> Service {
        Service {
            ctx,
            leases: Mutex::new(HashMap::new()),
            host_prefix,
        }
    }

    fn table(&self) -> MutexGuard<'_, HashMap<String, Arc<Lease>>> {
        self.leases.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Drop the leases that ended on their own from the table.
    fn prune(&self) {
        let ids = self.ctx.take_ended();
        if ids.is_empty() {
            return;
        }
        let mut table = self.table();
        for id in ids {
            if table.get(&id).is_some_and(|l| l.ended()) {
                table.remove(&id);
            }
        }
    }

    /// Take up the leases of the store (the daemon restarted).
    pub fn resume(&self) -> usize {
        let records = self.ctx.store.list();
        let n = records.len();
        for rec in records {
            let l = Lease::new(rec.att);
            log(format!("{}: resuming lease", l.att.client_id));
            l.resume(&self.ctx, rec.bound);
            self.table().insert(l.att.client_id.clone(), l);
        }
        n
    }

    /// The lease of `args`, acquiring one if there is none, or none that
    /// is still kept, or one in another namespace.
    fn allocate(&self, args: &CmdArgs) -> Result<Value, Error> {
        let conf = Config::parse(&args.stdin_data)
            .map_err(|e| Error::Config(format!("error parsing netconf: {e}")))?;
        let opts =
            options::prepare(&args.args, &conf.provide, &conf.request).map_err(Error::Config)?;
        let id = String::from_utf8_lossy(&options::client_id(
            &args.container_id,
            &conf.name,
            &args.ifname,
        ))
        .into_owned();
        let netns = format!("{}{}", self.host_prefix, args.netns);
        let wait = self.ctx.params.resend_timeout + self.ctx.params.timeout * 3;
        let lease = loop {
            let existing = self.table().get(&id).cloned();
            if let Some(l) = existing {
                match l.current(wait) {
                    Some(b) if l.att.netns == netns => {
                        return Ok(wire::result_value(&b.result(conf.priority)?));
                    }
                    // Ended, or in another namespace (the container was
                    // made again): give it up and take a new one.
                    _ => {
                        self.forget(&id, &l);
                        continue;
                    }
                }
            }
            let (iface, netns_id) = lease::open_new(&netns, &args.ifname)?;
            let mut mac = [0u8; 6];
            if iface.link.mac.len() != 6 {
                return Err(Error::Net(format!(
                    "{} has no Ethernet address",
                    args.ifname
                )));
            }
            mac.copy_from_slice(&iface.link.mac);
            let l = Lease::new(Attachment {
                client_id: id.clone(),
                container_id: args.container_id.clone(),
                network: conf.name.clone(),
                ifname: args.ifname.clone(),
                netns: netns.clone(),
                netns_id,
                mac,
                options: opts.clone(),
            });
            let mut table = self.table();
            if table.contains_key(&id) {
                // Another call got there first: use its lease.
                continue;
            }
            table.insert(id.clone(), Arc::clone(&l));
            drop(table);
            break (l, iface);
        };
        let (l, iface) = lease;
        match l.acquire(&self.ctx, iface) {
            Ok(b) => Ok(wire::result_value(&b.result(conf.priority)?)),
            Err(e) => {
                self.forget(&id, &l);
                Err(e)
            }
        }
    }

    /// Stop `l` and drop it from the table if it is still the entry of
    /// `id`, and its record.
    fn forget(&self, id: &str, l: &Arc<Lease>) {
        l.stop(stop_wait(&self.ctx));
        let mut table = self.table();
        if table.get(id).is_some_and(|cur| Arc::ptr_eq(cur, l)) {
            table.remove(id);
            self.ctx.store.remove(id);
        }
    }

    /// Release the lease of `id`: the kept one, else the one the store
    /// holds (a daemon before us took it).
    fn release_id(&self, id: &str) {
        let kept = self.table().remove(id);
        match kept {
            Some(l) => l.stop(stop_wait(&self.ctx)),
            None => {
                if let Some(rec) = self.ctx.store.load(id) {
                    lease::release_with(&rec.att, &rec.bound, self.ctx.params);
                }
            }
        }
        self.ctx.store.remove(id);
    }

    fn release(&self, args: &CmdArgs) -> Result<Value, Error> {
        let conf = Config::parse(&args.stdin_data)
            .map_err(|e| Error::Config(format!("error parsing netconf: {e}")))?;
        let id = options::client_id(&args.container_id, &conf.name, &args.ifname);
        self.release_id(&String::from_utf8_lossy(&id));
        Ok(Value::strukt(vec![]))
    }

    /// Release every lease of the config's network whose attachment is
    /// not in `cni.dev/valid-attachments` (none without the key: the
    /// runtime said nothing about what is in use).
    fn gc(&self, args: &CmdArgs) -> Result<Value, Error> {
        let conf = Config::parse(&args.stdin_data)
            .map_err(|e| Error::Config(format!("error parsing netconf: {e}")))?;
        let Some(valid) =
            skel::conf::valid_attachments(&args.stdin_data).map_err(|e| Error::Config(e.msg))?
        else {
            return Ok(Value::strukt(vec![]));
        };
        let stale = |a: &Attachment| {
            a.network == conf.name
                && !valid
                    .iter()
                    .any(|(c, i)| *c == a.container_id && *i == a.ifname)
        };
        let mut ids: Vec<String> = self
            .table()
            .values()
            .filter(|l| stale(&l.att))
            .map(|l| l.att.client_id.clone())
            .collect();
        ids.extend(
            self.ctx
                .store
                .list()
                .into_iter()
                .filter(|r| stale(&r.att))
                .map(|r| r.att.client_id),
        );
        ids.sort();
        ids.dedup();
        for id in ids {
            log(format!("{id}: garbage collected"));
            self.release_id(&id);
        }
        Ok(Value::strukt(vec![]))
    }
}

impl rpc::Service for Service {
    fn has(&self, method: &str) -> bool {
        matches!(method, ALLOCATE | RELEASE | GC)
    }

    fn call(&self, method: &str, args: &Value) -> Reply {
        self.prune();
        let args = CmdArgs::from_value(args);
        let reply = match method {
            ALLOCATE => self.allocate(&args).map(|v| (wire::RESULT, v)),
            RELEASE => self.release(&args).map(|v| (wire::EMPTY, v)),
            _ => self.gc(&args).map(|v| (wire::EMPTY, v)),
        };
        reply.map_err(|e| e.to_string())
    }
}
