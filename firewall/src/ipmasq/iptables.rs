//! The iptables side of ipmasq: per container chain in table `nat`, one
//! `iptables-restore` batch per family.
//!
//! ADD writes without reading first: declaring the chain creates or
//! flushes it, so its content is exact either way, and the POSTROUTING
//! jump is appended unconditionally. Only an ADD repeated for an
//! attachment whose rules are still installed adds a second, identical
//! jump; it changes no verdict, and teardown removes every jump from the
//! attachment's addresses. The chain is the container's in the network,
//! shared by its attachments (multus: eth0 and eth1): it goes with the
//! last one.

use cni_net::IpNetwork;

use super::{Owner, families, iptables_chain, iptables_comment, of_family, subnet};
use crate::error::Result;
use crate::iptables::{self, Batch, Family, Save, split_words};

const TABLE: &str = "nat";

/// Multicast, which is never masqueraded.
fn multicast(f: Family) -> &'static str {
    match f {
        Family::V4 => "224.0.0.0/4",
        Family::V6 => "ff00::/8",
    }
}

/// The ADD batch of one family's addresses (all of the same family): the
/// chain declared, every ACCEPT for a subnet before the MASQUERADE (the
/// reference appends per address, which can leave a second subnet's
/// ACCEPT unreachable), a POSTROUTING jump per address.
pub fn setup_batch(addrs: &[IpNetwork], network: &str, cid: &str) -> Batch {
    let mut b = Batch::new();
    let Some(family) = addrs.first().map(|a| Family::of(&a.ip())) else {
        return b;
    };
    let chain = iptables_chain(network, cid);
    let comment = iptables_comment(network, cid);
    let with_comment = |args: &[&str], target: &str| -> Vec<String> {
        let mut v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        v.extend(["-m", "comment", "--comment", &comment, "-j", target].map(String::from));
        v
    };
    b.declare(TABLE, &chain);
    for a in addrs {
        let args = with_comment(&["-d", &subnet(a).to_string()], "ACCEPT");
        b.append(TABLE, &chain, &refs(&args));
    }
    let args = with_comment(&["!", "-d", multicast(family)], "MASQUERADE");
    b.append(TABLE, &chain, &refs(&args));
    for a in addrs {
        let args = with_comment(&["-s", &a.ip().to_string()], &chain);
        b.append(TABLE, "POSTROUTING", &refs(&args));
    }
    b
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Start one `iptables-restore` per family of `addrs`.
pub fn start_setup(addrs: &[IpNetwork], o: &Owner<'_>) -> Result<super::Pending> {
    let mut pending = super::Pending::default();
    for family in families(addrs) {
        let batch = setup_batch(&of_family(addrs, family), o.network, o.container_id);
        // On a failure, the runs already started end before the error is
        // returned, so the caller's cleanup follows their work.
        match iptables::start_restore(family, &batch) {
            Ok(Some(run)) => pending.runs.push(run),
            Ok(None) => {}
            Err(e) => {
                let _ = pending.wait();
                return Err(e.context("set up ip masquerade"));
            }
        }
    }
    Ok(pending)
}

/// The batch removing `chains` and every rule of `nat` that jumps to
/// them; empty when there is nothing to remove.
pub fn teardown_batch(save: &Save, chains: &[String]) -> Batch {
    let mut b = Batch::new();
    for chain in chains {
        for line in save.rules_referencing(TABLE, chain) {
            b.delete_saved(TABLE, line);
        }
    }
    for chain in chains.iter().filter(|c| save.chain_declared(TABLE, c)) {
        b.flush(TABLE, chain).delete_chain(TABLE, chain);
    }
    b
}

/// The batch removing one attachment's jumps to `chain`: those from
/// `addrs` (of `family`). The chain is shared by every attachment of the
/// container to the network (the ifname plays no part in its name): it
/// goes, with every jump, only when no other address jumps to it, or when
/// `addrs` is empty (nothing tells the attachments apart).
pub fn detach_batch(save: &Save, family: Family, chain: &str, addrs: &[IpNetwork]) -> Batch {
    detach_batch_by(save, chain, |j| {
        addrs.is_empty() || addrs.iter().any(|a| jumps_from(j, family, a))
    })
}

/// The batch removing the jumps to `chain` that are `mine`, and the chain
/// with every jump when all are.
fn detach_batch_by(save: &Save, chain: &str, mine: impl Fn(&str) -> bool) -> Batch {
    let (mine, others): (Vec<&str>, Vec<&str>) = save
        .rules_referencing(TABLE, chain)
        .into_iter()
        .partition(|j| mine(j));
    if others.is_empty() {
        return teardown_batch(save, &[chain.to_string()]);
    }
    let mut b = Batch::new();
    for line in mine {
        b.delete_saved(TABLE, line);
    }
    b
}

/// Whether the saved rule `line` is a POSTROUTING jump from `a`.
fn jumps_from(line: &str, family: Family, a: &IpNetwork) -> bool {
    // As an address: `iptables-save` prints `::a00:2` as `::10.0.0.2`.
    let src = [format!("{}/{}", a.ip(), family.host_prefix())];
    let w = split_words(line);
    w.get(1).map(String::as_str) == Some("POSTROUTING")
        && w.windows(2)
            .any(|p| p[0] == "-s" && iptables::same_words(&p[1..], &src))
}

/// The `nat` table of `family`. Callers removing rules in both families
/// read both tables first: a tool that exits right after a removal would
/// wait for the kernel's cleanup of it (see [`crate::iptables`]).
pub fn save(family: Family) -> Result<Save> {
    iptables::save(family, TABLE)
}

/// Remove the jumps from `addrs` to `chain` in one family, and the chain
/// when no other attachment uses it ([`detach_batch`]), as planned from
/// `save`.
pub fn detach(family: Family, save: &Save, chain: &str, addrs: &[IpNetwork]) -> Result<()> {
    restore_until_done(family, save, |s| detach_batch(s, family, chain, addrs))
}

/// Remove the jumps to `chain` in one family from every address but
/// `spare`'s (other attachments of the container), and the chain when no
/// jump is left: for an attachment none of whose addresses of the family
/// is known.
pub fn detach_unseen(family: Family, save: &Save, chain: &str, spare: &[IpNetwork]) -> Result<()> {
    let ours = |j: &str| !spare.iter().any(|a| jumps_from(j, family, a));
    restore_until_done(family, save, |s| detach_batch_by(s, chain, ours))
}

/// Remove `chains` and the jumps to them, in one family.
pub fn teardown(family: Family, chains: &[String]) -> Result<()> {
    let save = iptables::save(family, TABLE)?;
    teardown_from(family, &save, chains)
}

/// Remove `chains` and the jumps to them as `save` shows them.
pub fn teardown_from(family: Family, save: &Save, chains: &[String]) -> Result<()> {
    restore_until_done(family, save, |s| teardown_batch(s, chains))
}

/// Apply the batch `plan` makes of `save`. When it fails because someone
/// removed some of it meanwhile (another DEL of the attachment: ours with
/// another dataDir, or the Go plugin's), the table is read again and what
/// is left removed, for as long as what is left changes, at most
/// [`MAX_ATTEMPTS`] times.
fn restore_until_done(family: Family, save: &Save, plan: impl Fn(&Save) -> Batch) -> Result<()> {
    until_done(
        plan(save),
        |b| iptables::restore(family, b),
        || Ok(plan(&iptables::save(family, TABLE)?)),
    )
}

/// The most batches [`restore_until_done`] applies: each retry follows
/// someone else's change to the same rules, and a table that keeps
/// changing under us (a peer adding jumps as fast as we fail) must not
/// keep a DEL here for ever.
const MAX_ATTEMPTS: u32 = 5;

/// Apply `batch`; on failure `replan` and apply again while the plan
/// changes, at most [`MAX_ATTEMPTS`] applications in all.
fn until_done(
    mut batch: Batch,
    apply: impl Fn(&Batch) -> Result<()>,
    replan: impl Fn() -> Result<Batch>,
) -> Result<()> {
    for _ in 1..MAX_ATTEMPTS {
        let Err(e) = apply(&batch) else {
            return Ok(());
        };
        let now = replan()?;
        if now == batch {
            return Err(e);
        }
        batch = now;
    }
    apply(&batch)
}

/// Chains of `network`, found by the comment of their POSTROUTING jumps,
/// whose container is not among `valid_ids`.
pub fn stale_chains(save: &Save, network: &str, valid_ids: &[&str]) -> Vec<String> {
    let mut stale = Vec::new();
    for line in save.rules(TABLE, "POSTROUTING") {
        let words = split_words(line);
        let value = |flag: &str| {
            words
                .windows(2)
                .find(|w| w[0] == flag)
                .map(|w| w[1].as_str())
        };
        let (Some(c), Some(target)) = (value("--comment"), value("-j")) else {
            continue;
        };
        let Some(cid) = container_of(c, network) else {
            continue;
        };
        let chain = iptables_chain(network, &cid);
        if target == chain && !valid_ids.contains(&cid.as_str()) && !stale.contains(&chain) {
            stale.push(chain);
        }
    }
    stale
}

/// The container ID of a comment `name: "<network>" id: "<cid>"`, when it
/// is exactly the comment we (and the reference) would write.
fn container_of(comment: &str, network: &str) -> Option<String> {
    let prefix = format!("name: {} id: ", skel::gojson::quote(network));
    let quoted = comment.strip_prefix(&prefix)?;
    let inner = quoted.strip_prefix('"')?.strip_suffix('"')?;
    let cid = inner.replace("\\\"", "\"").replace("\\\\", "\\");
    (iptables_comment(network, &cid) == comment).then_some(cid)
}

/// Remove the chains of `network`'s invalid attachments, in one family.
pub fn gc(family: Family, save: &Save, network: &str, valid_ids: &[&str]) -> Result<()> {
    let stale = stale_chains(save, network, valid_ids);
    teardown_from(family, save, &stale)
}

/// The addresses of `addrs` whose chain or jump is missing.
pub fn missing(addrs: &[IpNetwork], o: &Owner<'_>) -> Result<Vec<IpNetwork>> {
    let chain = iptables_chain(o.network, o.container_id);
    let mut out = Vec::new();
    for family in families(addrs) {
        let list = of_family(addrs, family);
        if list.is_empty() {
            continue;
        }
        let save = iptables::save(family, TABLE)?;
        let declared = save.chain_declared(TABLE, &chain);
        let jumps = save.rules_referencing(TABLE, &chain);
        for a in list {
            let jumped = jumps.iter().any(|j| jumps_from(j, family, &a));
            if !declared || !jumped {
                out.push(a);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cidr(s: &str) -> IpNetwork {
        s.parse().unwrap()
    }

    const SAVE: &str = "# Generated by iptables-save\n*nat\n:PREROUTING ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n\
:CNI-fb21b640fde7fb73bc20647d - [0:0]\n\
-A POSTROUTING -s 10.33.0.2/32 -m comment --comment \"name: \\\"mq\\\" id: \\\"c1\\\"\" -j CNI-fb21b640fde7fb73bc20647d\n\
-A CNI-fb21b640fde7fb73bc20647d -d 10.33.0.0/24 -m comment --comment \"name: \\\"mq\\\" id: \\\"c1\\\"\" -j ACCEPT\n\
-A CNI-fb21b640fde7fb73bc20647d ! -d 224.0.0.0/4 -m comment --comment \"name: \\\"mq\\\" id: \\\"c1\\\"\" -j MASQUERADE\nCOMMIT\n";

    #[test]
    fn setup_batch_declares_the_chain_accepts_first() {
        let b = setup_batch(&[cidr("10.33.0.2/24"), cidr("10.34.0.2/16")], "mq", "c1");
        assert_eq!(
            b.text(),
            "*nat\n:CNI-fb21b640fde7fb73bc20647d - [0:0]\n\
-A CNI-fb21b640fde7fb73bc20647d -d 10.33.0.0/24 -m comment --comment \"name: \\\"mq\\\" id: \\\"c1\\\"\" -j ACCEPT\n\
-A CNI-fb21b640fde7fb73bc20647d -d 10.34.0.0/16 -m comment --comment \"name: \\\"mq\\\" id: \\\"c1\\\"\" -j ACCEPT\n\
-A CNI-fb21b640fde7fb73bc20647d ! -d 224.0.0.0/4 -m comment --comment \"name: \\\"mq\\\" id: \\\"c1\\\"\" -j MASQUERADE\n\
-A POSTROUTING -s 10.33.0.2 -m comment --comment \"name: \\\"mq\\\" id: \\\"c1\\\"\" -j CNI-fb21b640fde7fb73bc20647d\n\
-A POSTROUTING -s 10.34.0.2 -m comment --comment \"name: \\\"mq\\\" id: \\\"c1\\\"\" -j CNI-fb21b640fde7fb73bc20647d\n\
COMMIT\n"
        );
        let b6 = setup_batch(&[cidr("fd40::2/64")], "mq", "c1").text();
        assert!(b6.contains("! -d ff00::/8"), "{b6}");
        assert!(b6.contains("-d fd40::/64"), "{b6}");
        assert!(setup_batch(&[], "mq", "c1").is_empty());
    }

    #[test]
    fn teardown_needs_no_addresses() {
        let save = Save::new(SAVE.into());
        let chain = iptables_chain("mq", "c1");
        let b = teardown_batch(&save, std::slice::from_ref(&chain));
        assert_eq!(
            b.text(),
            format!(
                "*nat\n-D POSTROUTING -s 10.33.0.2/32 -m comment --comment \"name: \\\"mq\\\" id: \\\"c1\\\"\" -j {chain}\n-F {chain}\n-X {chain}\nCOMMIT\n"
            )
        );
        let empty = Save::new("*nat\nCOMMIT\n".into());
        assert!(teardown_batch(&empty, &[chain]).is_empty());
    }

    /// A failed batch is made again while the table changes, but not for
    /// ever: one that changes at every read still ends.
    #[test]
    fn retries_are_bounded() {
        use std::cell::Cell;
        let fail = |_: &Batch| Err(crate::Error::failed("gone"));
        let batch = |n: u32| {
            let mut b = Batch::new();
            b.delete_chain(TABLE, &format!("CNI-{n}"));
            b
        };
        // The plan changes at every read: MAX_ATTEMPTS applications.
        let (applied, read) = (Cell::new(0), Cell::new(0));
        let r = until_done(
            batch(0),
            |b| {
                applied.set(applied.get() + 1);
                fail(b)
            },
            || {
                read.set(read.get() + 1);
                Ok(batch(read.get()))
            },
        );
        assert_eq!(r.unwrap_err().to_string(), "gone");
        assert_eq!(
            (applied.get(), read.get()),
            (MAX_ATTEMPTS, MAX_ATTEMPTS - 1)
        );
        // The same plan again: no second application.
        applied.set(0);
        let r = until_done(
            batch(0),
            |b| {
                applied.set(applied.get() + 1);
                fail(b)
            },
            || Ok(batch(0)),
        );
        assert!(r.is_err());
        assert_eq!(applied.get(), 1);
        // What is left applies: done.
        let r = until_done(
            batch(0),
            |b| if *b == batch(1) { Ok(()) } else { fail(b) },
            || Ok(batch(1)),
        );
        assert!(r.is_ok());
    }

    #[test]
    fn gc_finds_chains_by_comment() {
        let save = Save::new(SAVE.into());
        assert_eq!(
            stale_chains(&save, "mq", &[]),
            vec![iptables_chain("mq", "c1")]
        );
        assert!(stale_chains(&save, "mq", &["c1"]).is_empty());
        assert!(stale_chains(&save, "other", &[]).is_empty());
        assert!(stale_chains(&save, "m", &[]).is_empty());
        assert_eq!(
            container_of(r#"name: "mq" id: "a\"b""#, "mq").as_deref(),
            Some("a\"b")
        );
        assert_eq!(container_of(r#"name: "mq" id: c1"#, "mq"), None);
    }
}
