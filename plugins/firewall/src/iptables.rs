//! The iptables backend: the reference's objects in table `filter`, rule
//! for rule (same chains, arguments, comments and positions), so either
//! suite finds and removes the other's rules:
//!
//! ```text
//! -A FORWARD -m comment --comment "CNI firewall plugin rules (ingressPolicy: same-bridge|isolated)" -j CNI-ISOLATION-STAGE-1
//! -A FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD
//! -A CNI-FORWARD -m comment --comment "CNI firewall plugin admin overrides" -j CNI-ADMIN
//! -A CNI-FORWARD -d <ip>/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
//! -A CNI-FORWARD -s <ip>/32 -j ACCEPT
//! -A CNI-ISOLATION-STAGE-1 -i <br> -o <br> -m comment --comment "CNI firewall plugin rules (ingressPolicy: isolated)" -j DROP
//! -A CNI-ISOLATION-STAGE-1 -i <br> ! -o <br> -m comment --comment "CNI firewall plugin rules (ingressPolicy: <p>)" -j CNI-ISOLATION-STAGE-2
//! -A CNI-ISOLATION-STAGE-1 -m comment --comment "<default>" -j RETURN
//! -A CNI-ISOLATION-STAGE-2 -o <br> -m comment --comment "<default>" -j DROP
//! -A CNI-ISOLATION-STAGE-2 -m comment --comment "<default>" -j RETURN
//! ```
//!
//! Where the reference runs one `iptables` process per check and per rule
//! (about 15 for a dual-stack ADD), ADD here reads each family's table
//! once (`iptables-save`) and writes everything missing in one
//! `iptables-restore` batch (missing chains made with `-N`, which
//! fails rather than empty a chain someone made meanwhile); the two
//! families run in parallel. DEL first tries the deletions without
//! reading (one restore per family), and reads only when that batch
//! fails because a rule is already gone.
//! A rule is "there" when a saved rule has the same arguments, which is
//! what `iptables -C` decides for these rules (addresses compared as
//! addresses: `iptables-save` writes `::a00:2` as `::10.0.0.2`).

use std::net::IpAddr;

use cni_firewall::iptables::{self as ipt, Batch, Family, Save, split_words};
use skel::Error;
use skel::failpoint::hit;

use crate::config::{Isolation, Policy};

const TABLE: &str = "filter";
pub const FORWARD: &str = "FORWARD";
pub const CNI_FORWARD: &str = "CNI-FORWARD";
pub const STAGE_1: &str = "CNI-ISOLATION-STAGE-1";
pub const STAGE_2: &str = "CNI-ISOLATION-STAGE-2";
const RULES_COMMENT: &str = "CNI firewall plugin rules";
const ADMIN_COMMENT: &str = "CNI firewall plugin admin overrides";
const DEFAULT_POLICY_COMMENT: &str =
    "CNI firewall plugin rules (ingressPolicy: same-bridge|isolated)";
/// What v1.1.0–v1.6.x wrote where v1.7.0 writes [`DEFAULT_POLICY_COMMENT`].
const LEGACY_POLICY_COMMENT: &str = "CNI firewall plugin rules (ingressPolicy: same-bridge)";

/// A rule: its chain and its arguments in `iptables-save`'s order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub chain: String,
    pub args: Vec<String>,
}

fn rule(chain: &str, args: &[&str]) -> Rule {
    Rule {
        chain: chain.to_string(),
        args: args.iter().map(|a| a.to_string()).collect(),
    }
}

fn commented(chain: &str, matches: &[&str], comment: &str, target: &str) -> Rule {
    let mut args: Vec<&str> = matches.to_vec();
    args.extend(["-m", "comment", "--comment", comment, "-j", target]);
    rule(chain, &args)
}

impl Rule {
    /// How the reference prints a rule in its messages (Go's `%v` of the
    /// argument list).
    pub fn go_list(&self) -> String {
        format!("[{}]", self.args.join(" "))
    }

    /// The rule as `iptables-save` prints it.
    pub fn saved(&self) -> String {
        let args: Vec<String> = self.args.iter().map(|a| ipt::quote_arg(a)).collect();
        format!("-A {} {}", self.chain, args.join(" "))
    }

    fn args(&self) -> Vec<&str> {
        self.args.iter().map(String::as_str).collect()
    }

    /// Whether `save` holds this rule, or the same rule as the reference's
    /// v1.1.0–v1.6.x wrote it (their isolation rules all say
    /// `(ingressPolicy: same-bridge)`), so a node upgraded from them gets
    /// no second copy (upgrading the reference itself duplicates them).
    pub fn is_in(&self, save: &Save) -> bool {
        let legacy = self.legacy();
        save.rules(TABLE, &self.chain).iter().any(|l| {
            let saved = split_words(l);
            let saved = saved.get(2..).unwrap_or_default();
            ipt::same_words(saved, &self.args)
                || legacy.as_deref().is_some_and(|o| ipt::same_words(saved, o))
        })
    }

    /// The rule with the pre-v1.7.0 comment, when it had another one.
    fn legacy(&self) -> Option<Vec<String>> {
        let at = self.args.iter().position(|a| a == DEFAULT_POLICY_COMMENT)?;
        let mut old = self.args.clone();
        old[at] = LEGACY_POLICY_COMMENT.to_string();
        Some(old)
    }
}

pub fn forward_jump() -> Rule {
    commented(FORWARD, &[], RULES_COMMENT, CNI_FORWARD)
}

pub fn admin_jump(admin: &str) -> Rule {
    commented(CNI_FORWARD, &[], ADMIN_COMMENT, admin)
}

/// The two rules of one container address (`/32` or `/128` whatever the
/// prefix, as the reference).
pub fn addr_rules(ip: IpAddr) -> [Rule; 2] {
    let host = format!("{ip}/{}", Family::of(&ip).host_prefix());
    [
        rule(
            CNI_FORWARD,
            &[
                "-d",
                &host,
                "-m",
                "conntrack",
                "--ctstate",
                "RELATED,ESTABLISHED",
                "-j",
                "ACCEPT",
            ],
        ),
        rule(CNI_FORWARD, &["-s", &host, "-j", "ACCEPT"]),
    ]
}

/// Where a missing rule goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pos {
    First,
    Last,
}

/// The isolation rules of a bridge, in the reference's order of
/// insertion, with where each goes.
fn isolation_rules(iso: &Isolation) -> Vec<(Rule, Pos)> {
    let br = iso.bridge.as_str();
    let named = format!(
        "CNI firewall plugin rules (ingressPolicy: {})",
        iso.policy.name()
    );
    let mut out = vec![
        (
            commented(FORWARD, &[], DEFAULT_POLICY_COMMENT, STAGE_1),
            Pos::First,
        ),
        (
            commented(STAGE_1, &["-i", br, "!", "-o", br], &named, STAGE_2),
            Pos::First,
        ),
    ];
    if iso.policy == Policy::Isolated {
        out.push((
            commented(STAGE_1, &["-i", br, "-o", br], &named, "DROP"),
            Pos::First,
        ));
    }
    out.extend([
        (
            commented(STAGE_1, &[], DEFAULT_POLICY_COMMENT, "RETURN"),
            Pos::Last,
        ),
        (
            commented(STAGE_2, &["-o", br], DEFAULT_POLICY_COMMENT, "DROP"),
            Pos::First,
        ),
        (
            commented(STAGE_2, &[], DEFAULT_POLICY_COMMENT, "RETURN"),
            Pos::Last,
        ),
    ]);
    out
}

/// What ADD installs in one family.
#[derive(Debug, Clone)]
pub struct Wanted<'a> {
    pub admin: &'a str,
    /// The container's addresses of this family.
    pub ips: Vec<IpAddr>,
    /// The `CNI-FORWARD` rules (not with firewalld, which only takes the
    /// isolation rules from this backend, as in the reference).
    pub forward: bool,
    pub isolation: Option<&'a Isolation>,
}

/// An ADD batch and its exact inverse (what it created, removed again).
#[derive(Debug, Default)]
pub struct Plan {
    pub batch: Batch,
    pub undo: Batch,
}

/// What a plan adds, kept to build its inverse.
#[derive(Debug, Default)]
struct Building {
    plan: Plan,
    declared: Vec<String>,
    undo_rules: Vec<Rule>,
}

/// The ADD batch of one family, from its saved table: every missing
/// chain and rule, in the reference's order.
pub fn plan_add(save: &Save, w: &Wanted<'_>) -> Plan {
    let mut b = Building::default();
    if w.ips.is_empty() {
        return b.plan;
    }
    if w.forward {
        for chain in [CNI_FORWARD, w.admin] {
            b.chain(save, chain);
        }
        b.rule(save, &forward_jump(), Pos::First);
        b.rule(save, &admin_jump(w.admin), Pos::First);
        for ip in &w.ips {
            for r in addr_rules(*ip) {
                b.rule(save, &r, Pos::Last);
            }
        }
    }
    if let Some(iso) = w.isolation {
        for chain in [STAGE_1, STAGE_2] {
            b.chain(save, chain);
        }
        for (r, pos) in isolation_rules(iso) {
            b.rule(save, &r, pos);
        }
    }
    b.finish()
}

impl Building {
    fn chain(&mut self, save: &Save, chain: &str) {
        if save.chain_declared(TABLE, chain) || self.declared.iter().any(|d| d == chain) {
            return;
        }
        self.declared.push(chain.to_string());
        // `-N`, not `:<chain>`: should someone not under our lock (the
        // Go plugin) make the chain after our save, the batch fails
        // rather than empty it.
        self.plan.batch.create_chain(TABLE, chain);
    }

    fn rule(&mut self, save: &Save, r: &Rule, pos: Pos) {
        if r.is_in(save) || self.undo_rules.contains(r) {
            return;
        }
        match pos {
            Pos::First => self.plan.batch.insert(TABLE, &r.chain, 1, &r.args()),
            Pos::Last => self.plan.batch.append(TABLE, &r.chain, &r.args()),
        };
        self.undo_rules.push(r.clone());
    }

    /// The inverse: the added rules deleted (newest first), then the
    /// declared chains, now empty and unreferenced, deleted.
    fn finish(mut self) -> Plan {
        for r in self.undo_rules.iter().rev() {
            self.plan.undo.delete(TABLE, &r.chain, &r.args());
        }
        for chain in self.declared.iter().rev() {
            self.plan.undo.delete_chain(TABLE, chain);
        }
        self.plan
    }
}

/// CHECK of one family: the reference's checks and messages, then (ours)
/// the isolation rules.
pub fn check_saved(save: &Save, w: &Wanted<'_>) -> Result<(), String> {
    if w.ips.is_empty() {
        return Ok(());
    }
    if w.forward {
        check_forward(save, w)?;
    }
    for (r, _) in w.isolation.map(isolation_rules).unwrap_or_default() {
        if !r.is_in(save) {
            return Err(format!(
                "expected {} rule {} not found",
                r.chain,
                r.go_list()
            ));
        }
    }
    Ok(())
}

fn check_forward(save: &Save, w: &Wanted<'_>) -> Result<(), String> {
    let fwd = forward_jump();
    if !fwd.is_in(save) {
        return Err(format!(
            "expected {FORWARD} rule {} not found",
            fwd.go_list()
        ));
    }
    let adm = admin_jump(w.admin);
    if !adm.is_in(save) {
        return Err(format!(
            "expected {CNI_FORWARD} rule {} not found",
            adm.go_list()
        ));
    }
    for ip in &w.ips {
        for r in addr_rules(*ip) {
            if !r.is_in(save) {
                return Err(format!("expected rule {} not found", r.go_list()));
            }
        }
    }
    Ok(())
}

/// The deletions of the rules of `ips` (one family), present or not.
pub fn del_batch(ips: &[IpAddr]) -> Batch {
    let mut b = Batch::new();
    for ip in ips {
        for r in addr_rules(*ip) {
            b.delete(TABLE, &r.chain, &r.args());
        }
    }
    b
}

/// The deletions of the rules of `ips` that `save` holds.
pub fn del_present(save: &Save, ips: &[IpAddr]) -> Batch {
    let mut b = Batch::new();
    for ip in ips {
        for r in addr_rules(*ip).iter().filter(|r| r.is_in(save)) {
            b.delete(TABLE, &r.chain, &r.args());
        }
    }
    b
}

/// Refuse a bridge whose name iptables cannot match exactly, before any
/// change: one holding `"` (`iptables-save` prints interface names as they
/// are, so its rules would not read back as written: each ADD would add
/// them again, CHECK never find them), and one ending in `+`, which
/// iptables reads as a wildcard (`-i br+` is every interface whose name
/// starts with `br`, so the isolation rules would let other bridges'
/// traffic through; `-i +` is every interface, and is not even printed
/// back). The reference writes both as they are.
pub fn check_bridge(iso: Option<&Isolation>) -> Result<(), Error> {
    let Some(i) = iso else { return Ok(()) };
    let why = if i.bridge.contains('"') {
        "holds a quote, which iptables-save does not print back"
    } else if i.bridge.ends_with('+') {
        "ends in +, which iptables reads as a wildcard over every interface starting with the rest"
    } else {
        return Ok(());
    };
    Err(Error::internal(format!(
        "bridge name {} {why}",
        skel::gojson::quote(&i.bridge)
    )))
}

fn fw_error(e: cni_firewall::Error) -> Error {
    Error::internal(e.to_string())
}

/// `ips` split by family (only families with addresses).
pub fn by_family(ips: &[IpAddr]) -> Vec<(Family, Vec<IpAddr>)> {
    [Family::V4, Family::V6]
        .into_iter()
        .map(|f| {
            (
                f,
                ips.iter().copied().filter(|i| Family::of(i) == f).collect(),
            )
        })
        .filter(|(_, v): &(Family, Vec<IpAddr>)| !v.is_empty())
        .collect()
}

/// Run `f` for each family at once; the results in family order.
fn each_family<T: Send>(
    fams: &[(Family, Vec<IpAddr>)],
    f: impl Fn(Family, &[IpAddr]) -> T + Sync,
) -> Vec<T> {
    std::thread::scope(|s| {
        let running: Vec<_> = fams
            .iter()
            .map(|(fam, ips)| {
                let f = &f;
                s.spawn(move || f(*fam, ips))
            })
            .collect();
        running
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

fn failpoint(f: Family) -> &'static str {
    match f {
        Family::V4 => "firewall/iptables-v4",
        Family::V6 => "firewall/iptables-v6",
    }
}

/// ADD: per family, save, plan, restore. The inverses of the batches
/// that were applied come back even when another family failed, for the
/// caller to undo.
pub fn add(
    admin: &str,
    ips: &[IpAddr],
    forward: bool,
    isolation: Option<&Isolation>,
    applied: &mut Vec<(Family, Batch)>,
) -> Result<(), Error> {
    let fams = by_family(ips);
    let results = each_family(&fams, |fam, ips| {
        let save = match ipt::save(fam, TABLE) {
            Ok(s) => s,
            Err(e) => return (None, Err(fw_error(e))),
        };
        let w = Wanted {
            admin,
            ips: ips.to_vec(),
            forward,
            isolation,
        };
        let plan = plan_add(&save, &w);
        if let Err(e) = ipt::restore(fam, &plan.batch) {
            return (None, Err(fw_error(e)));
        }
        (Some((fam, plan.undo)), hit(failpoint(fam)))
    });
    let mut first = None;
    for (undo, r) in results {
        applied.extend(undo);
        if let Err(e) = r {
            first.get_or_insert(e);
        }
    }
    first.map_or(Ok(()), Err)
}

/// Undo applied ADD batches; what could not be undone.
pub fn undo(applied: &[(Family, Batch)]) -> Vec<String> {
    applied
        .iter()
        .filter_map(|(fam, b)| ipt::restore(*fam, b).err().map(|e| e.to_string()))
        .collect()
}

/// DEL of the rules of `ips`: per family, all deletions in one batch;
/// when it fails (a rule already gone), the table is read and only the
/// rules it holds are deleted.
pub fn del(ips: &[IpAddr]) -> Vec<cni_firewall::Error> {
    let fams = by_family(ips);
    each_family(&fams, |fam, ips| {
        if ipt::restore(fam, &del_batch(ips)).is_ok() {
            return Ok(());
        }
        let save = ipt::save(fam, TABLE)?;
        ipt::restore(fam, &del_present(&save, ips))
    })
    .into_iter()
    .filter_map(Result::err)
    .collect()
}

/// CHECK: per family with addresses.
pub fn check(
    admin: &str,
    ips: &[IpAddr],
    forward: bool,
    isolation: Option<&Isolation>,
) -> Result<(), Error> {
    let fams = by_family(ips);
    for r in each_family(&fams, |fam, ips| {
        let save = ipt::save(fam, TABLE).map_err(fw_error)?;
        let w = Wanted {
            admin,
            ips: ips.to_vec(),
            forward,
            isolation,
        };
        check_saved(&save, &w).map_err(Error::internal)
    }) {
        r?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
