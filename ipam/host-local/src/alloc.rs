//! Picking an address from one range set (the reference's `Get`): a
//! requested address, or round robin after `last_reserved_ip.<set>`.

use std::net::IpAddr;

use crate::error::Error;
use crate::gotext::ip_string;
use crate::index::Index;
use crate::range::{Range, RangeSet};
use crate::store::{Scan, Store, lease_key, legacy_key, scan_dir, walk_order};

/// One address handed out by this call.
#[derive(Debug, Clone, Copy)]
pub struct Lease {
    pub ip: IpAddr,
    pub range: Range,
}

/// Candidates tried with a bare `link()` before reading the directory to
/// skip the leased ones in memory (only a nearly full network gets there).
const BLIND_TRIES: usize = 32;

/// Who is asking.
pub struct Owner<'a> {
    pub container_id: &'a str,
    pub ifname: &'a str,
}

/// Allocate one address from `set` (number `idx`) for `owner`. Errors are
/// the reference's messages, without the `failed to allocate for range`
/// prefix the caller adds.
pub fn get(
    store: &mut Store,
    index: &mut Index,
    set: &RangeSet,
    idx: usize,
    owner: &Owner,
    requested: Option<IpAddr>,
) -> Result<Lease, Error> {
    let key = lease_key(owner.container_id, owner.ifname);
    let (ip, range) = match requested {
        Some(ip) => {
            let range = *set.range_for(ip).map_err(Error::config)?;
            if ip == range.gateway {
                return Err(Error::config(format!(
                    "requested ip {ip} is subnet's gateway"
                )));
            }
            // Like the reference, a requested address skips the duplicate
            // check: the runtime asked for exactly this.
            if !store.reserve(ip, &key)? {
                return Err(Error::config(format!(
                    "requested IP address {ip} is not available in range set {set}"
                )));
            }
            (ip, range)
        }
        None => {
            // One walk in the reference finds both kinds of lease; the
            // first one in walk order inside this set is named.
            let mut held = index.lookup(store, &key)?;
            held.extend(index.lookup(store, &legacy_key(owner.container_id))?);
            held.sort_by(|a, b| walk_order(&a.path, &b.path));
            if let Some(f) = held.into_iter().find(|f| set.contains(f.ip)) {
                return Err(Error::config(format!(
                    "{} has been allocated to {}, duplicate allocation is not allowed",
                    ip_string(f.ip),
                    owner.container_id
                )));
            }
            let mut found = None;
            let mut scan: Option<Scan> = None;
            for (n, (ip, ri)) in set.iter_from(store.last_reserved(idx)).enumerate() {
                if n == BLIND_TRIES {
                    scan = Some(scan_dir(store.net_dir())?);
                }
                if scan.as_ref().is_some_and(|s| s.taken.contains(&ip)) {
                    continue;
                }
                if store.reserve(ip, &key)? {
                    found = Some((ip, set.0[ri]));
                    break;
                }
            }
            found.ok_or_else(|| {
                Error::config(format!("no IP addresses available in range set: {set}"))
            })?
        }
    };
    if let Err(e) = index
        .add(&key, &ip_string(ip))
        .and_then(|_| store.set_last_reserved(idx, ip))
    {
        let _ = store.release(ip);
        index.invalidate();
        return Err(e);
    }
    Ok(Lease { ip, range })
}
