//! IP masquerade for container addresses, with the reference plugin's
//! object names so a node can move between the Go plugin and this one and
//! each can remove the other's rules.
//!
//! nftables: table `inet cni_plugins_masquerade`, regular chain
//! `masq_checks`, base chain `postrouting` (nat, srcnat); one rule per
//! address commented
//! `<16 hex sha512(net)>-<16 hex sha512(ifname:cid)>, net: .., if: .., id: ..`.
//! Rules are found again by that comment, so teardown needs no addresses.
//! Every write is one `nft` transaction. Unlike the reference, ADD does not
//! flush and rebuild `postrouting` each time: a transaction that deletes or
//! replaces rules makes `nft` wait for an RCU grace period when it closes
//! its socket (7–25 ms measured on two busy CPUs), so ADD appends its rules
//! and lists `postrouting` in the same run, and rebuilds the base chain only
//! when that listing shows it missing or altered (see [`NftSetup`]).
//!
//! iptables: per container chain `CNI-<24 hex sha512(net+cid)>` in table
//! `nat` with an ACCEPT for the container's subnet and a MASQUERADE for the
//! rest (not multicast), and a `POSTROUTING -s <ip> -j <chain>` jump, all
//! commented `name: "<net>" id: "<cid>"`. We read `iptables-save` once and
//! write one `iptables-restore --noflush` batch per address family;
//! teardown removes every jump to the chain, whatever its source address.

use std::net::IpAddr;

use serde_json::{Value, json};
use skel::types::Cidr;

use crate::config::Backend;
use crate::error::Error;
use crate::nft::{self, NftError};
use skel::sha512::hex_prefix;

pub const TABLE: &str = "cni_plugins_masquerade";
pub const CHAIN: &str = "masq_checks";
const FAMILY: &str = "inet";
/// knftables' limit for rule comments.
const COMMENT_MAX: usize = 128;

/// The attachment a set of rules belongs to.
#[derive(Debug, Clone, Copy)]
pub struct Owner<'a> {
    pub network: &'a str,
    pub ifname: &'a str,
    pub container_id: &'a str,
}

fn hash_network(network: &str) -> String {
    hex_prefix(network, 16)
}

fn hash_instance(o: &Owner) -> String {
    format!(
        "{}-{}",
        hash_network(o.network),
        hex_prefix(&format!("{}:{}", o.ifname, o.container_id), 16)
    )
}

pub fn nft_comment(o: &Owner) -> String {
    let strip = |s: &str| s.replace('"', "");
    let mut c = format!(
        "{}, net: {}, if: {}, id: {}",
        hash_instance(o),
        strip(o.network),
        strip(o.ifname),
        strip(o.container_id)
    );
    if c.len() > COMMENT_MAX {
        let mut end = COMMENT_MAX;
        while !c.is_char_boundary(end) {
            end -= 1;
        }
        c.truncate(end);
    }
    c
}

pub fn iptables_chain(network: &str, container_id: &str) -> String {
    format!(
        "CNI-{}",
        hex_prefix(&format!("{network}{container_id}"), 24)
    )
}

pub fn iptables_comment(network: &str, container_id: &str) -> String {
    format!("name: {network:?} id: {container_id:?}")
}

// ------------------------------------------------------------------ nftables

fn ip_kw(ip: &IpAddr) -> &'static str {
    if ip.is_ipv4() { "ip" } else { "ip6" }
}

fn payload_match(proto: &str, field: &str, op: &str, right: Value) -> Value {
    json!({"match": {"op": op, "left": {"payload": {"protocol": proto, "field": field}}, "right": right}})
}

/// The ADD batch: table and chains (created if missing), `postrouting`
/// flushed and rebuilt, one masquerade rule per address.
pub fn nft_setup_batch(addrs: &[Cidr], o: &Owner) -> Vec<Value> {
    let mut b = vec![
        json!({"add": {"table": {"family": FAMILY, "name": TABLE,
            "comment": "Masquerading for plugins from github.com/containernetworking/plugins"}}}),
        json!({"add": {"chain": {"family": FAMILY, "table": TABLE, "name": CHAIN,
            "comment": "Masquerade traffic from certain IPs to any (non-multicast) IP outside their subnet"}}}),
        json!({"add": {"chain": {"family": FAMILY, "table": TABLE, "name": "postrouting",
            "type": "nat", "hook": "postrouting", "prio": 100, "policy": "accept"}}}),
        json!({"flush": {"chain": {"family": FAMILY, "table": TABLE, "name": "postrouting"}}}),
    ];
    let base_rule = |expr: Vec<Value>| json!({"add": {"rule": {"family": FAMILY, "table": TABLE, "chain": "postrouting", "expr": expr}}});
    b.push(base_rule(vec![
        payload_match(
            "ip",
            "daddr",
            "==",
            json!({"prefix": {"addr": "224.0.0.0", "len": 4}}),
        ),
        json!({"return": null}),
    ]));
    b.push(base_rule(vec![
        payload_match(
            "ip6",
            "daddr",
            "==",
            json!({"prefix": {"addr": "ff00::", "len": 8}}),
        ),
        json!({"return": null}),
    ]));
    b.push(base_rule(vec![json!({"goto": {"target": CHAIN}})]));
    let comment = nft_comment(o);
    for a in addrs {
        let ip = a.ip();
        let net = a.network();
        b.push(
            json!({"add": {"rule": {"family": FAMILY, "table": TABLE, "chain": CHAIN,
            "comment": comment,
            "expr": [
                payload_match(ip_kw(&ip), "saddr", "==", json!(ip.to_string())),
                payload_match(ip_kw(&ip), "daddr", "!=",
                    json!({"prefix": {"addr": net.ip().to_string(), "len": net.prefix()}})),
                {"masquerade": null},
            ]}}}),
        );
    }
    b
}

/// The rules of `postrouting` as `nft list` prints them.
const BASE_RULES: [&str; 3] = [
    "ip daddr 224.0.0.0/4 return",
    "ip6 daddr ff00::/8 return",
    "goto masq_checks",
];

/// ADD through `nft`, normally in one run that appends the attachment's
/// rules and lists `postrouting`, started without waiting so that it runs
/// while ADD configures the container. nft evaluates the whole batch before
/// it commits, so when the table or `masq_checks` is missing nothing is
/// applied and [`NftSetup::finish`] runs the full batch instead; when the
/// listing shows the base chain altered, only the base chain is rebuilt.
pub struct NftSetup {
    run: nft::Running,
    /// The batch to apply when the fast one finds no table or chain.
    full: String,
}

pub fn nft_setup_start(addrs: &[Cidr], o: &Owner) -> Result<NftSetup, NftError> {
    let fast = format!(
        "{}list chain {FAMILY} {TABLE} postrouting\n",
        nft_rules_text(addrs, o)
    );
    Ok(NftSetup {
        run: nft::start(&["-f", "-"], Some(fast.as_bytes()))?,
        full: nft_setup_text(addrs, o),
    })
}

impl NftSetup {
    pub fn finish(self) -> Result<(), NftError> {
        match self.run.wait() {
            Ok(listing) if base_chain_ok(&String::from_utf8_lossy(&listing)) => Ok(()),
            Ok(_) => nft::apply_text(&nft_base_text()),
            Err(NftError::Failed(_)) => nft::apply_text(&self.full),
            Err(e) => Err(e),
        }
    }
}

impl std::fmt::Debug for NftSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NftSetup")
    }
}

/// Whether a `list chain ... postrouting` output holds exactly our rules.
fn base_chain_ok(listing: &str) -> bool {
    let rules: Vec<&str> = listing
        .lines()
        .map(str::trim)
        .skip_while(|l| !l.starts_with("chain postrouting"))
        .skip(1)
        .filter(|l| !l.starts_with("type ") && !l.is_empty())
        .take_while(|l| *l != "}")
        .collect();
    rules == BASE_RULES
}

/// The whole ADD batch in nft's text syntax (`nft -f -` starts measurably
/// faster than `nft -j -f -`, which loads a JSON library).
pub fn nft_setup_text(addrs: &[Cidr], o: &Owner) -> String {
    nft_base_text() + &nft_rules_text(addrs, o)
}

/// Table, chains and a rebuilt `postrouting`, as the reference writes them.
fn nft_base_text() -> String {
    let t = format!("{FAMILY} {TABLE}");
    format!(
        "add table {t}\n\
         add chain {t} {CHAIN}\n\
         add chain {t} postrouting {{ type nat hook postrouting priority 100 ; policy accept ; }}\n\
         flush chain {t} postrouting\n\
         add rule {t} postrouting ip daddr == 224.0.0.0/4 return\n\
         add rule {t} postrouting ip6 daddr == ff00::/8 return\n\
         add rule {t} postrouting goto {CHAIN}\n"
    )
}

/// The attachment's rules. Comments never contain `"` (see
/// [`nft_comment`]), so quoting is safe.
fn nft_rules_text(addrs: &[Cidr], o: &Owner) -> String {
    let t = format!("{FAMILY} {TABLE}");
    let mut s = String::new();
    let comment = nft_comment(o);
    for a in addrs {
        let ip = a.ip();
        let kw = ip_kw(&ip);
        s.push_str(&format!(
            "add rule {t} {CHAIN} {kw} saddr == {ip} {kw} daddr != {} masquerade comment \"{comment}\"\n",
            a.network()
        ));
    }
    s
}

fn our_rules(listing: &[Value], prefix: &str) -> Vec<nft::RuleRef> {
    nft::rules(listing)
        .into_iter()
        .filter(|r| r.chain == CHAIN && r.comment.starts_with(prefix))
        .collect()
}

/// Deletions for every rule of the attachment in a listing of the table.
pub fn nft_teardown_batch(listing: &[Value], o: &Owner) -> Vec<Value> {
    our_rules(listing, &hash_instance(o))
        .iter()
        .map(|r| nft::delete_rule(FAMILY, TABLE, r))
        .collect()
}

/// Deletions for rules of `network` whose attachment is not in `valid`.
pub fn nft_gc_batch(listing: &[Value], network: &str, valid: &[(String, String)]) -> Vec<Value> {
    let keep: Vec<String> = valid
        .iter()
        .map(|(cid, ifname)| {
            nft_comment(&Owner {
                network,
                ifname,
                container_id: cid,
            })
        })
        .collect();
    our_rules(listing, &format!("{}-", hash_network(network)))
        .iter()
        .filter(|r| !keep.contains(&r.comment))
        .map(|r| nft::delete_rule(FAMILY, TABLE, r))
        .collect()
}

/// The source address a masquerade rule matches.
fn rule_saddr(expr: &Value) -> Option<String> {
    expr.as_array()?.iter().find_map(|e| {
        let m = e.get("match")?;
        if m.get("left")?.get("payload")?.get("field")?.as_str()? != "saddr" {
            return None;
        }
        m.get("right")?.as_str().map(str::to_string)
    })
}

/// Addresses of `addrs` without a masquerade rule of the attachment.
pub fn nft_missing(listing: &[Value], addrs: &[Cidr], o: &Owner) -> Vec<IpAddr> {
    let rules = our_rules(listing, &hash_instance(o));
    addrs
        .iter()
        .map(Cidr::ip)
        .filter(|ip| {
            !rules
                .iter()
                .any(|r| rule_saddr(&r.expr).and_then(|s| s.parse::<IpAddr>().ok()) == Some(*ip))
        })
        .collect()
}

// ------------------------------------------------------------------ iptables

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpFamily {
    V4,
    V6,
}

impl IpFamily {
    fn of(ip: &IpAddr) -> IpFamily {
        if ip.is_ipv4() {
            IpFamily::V4
        } else {
            IpFamily::V6
        }
    }
    fn tools(self) -> (&'static str, &'static str) {
        match self {
            IpFamily::V4 => ("iptables-save", "iptables-restore"),
            IpFamily::V6 => ("ip6tables-save", "ip6tables-restore"),
        }
    }
    fn multicast(self) -> &'static str {
        match self {
            IpFamily::V4 => "224.0.0.0/4",
            IpFamily::V6 => "ff00::/8",
        }
    }
    fn host_prefix(self) -> u8 {
        match self {
            IpFamily::V4 => 32,
            IpFamily::V6 => 128,
        }
    }
}

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn chain_declared(save: &str, chain: &str) -> bool {
    save.lines()
        .any(|l| l.strip_prefix(':').and_then(|r| r.split(' ').next()) == Some(chain))
}

fn postrouting_jumps<'a>(save: &'a str, chain: &str) -> Vec<&'a str> {
    let target = format!(" -j {chain}");
    save.lines()
        .filter(|l| l.starts_with("-A POSTROUTING ") && l.trim_end().ends_with(&target))
        .collect()
}

/// The restore batch for ADD, given the current `iptables-save -t nat`.
/// The chain is (re)declared, which creates or flushes it, so its content
/// is exact; a POSTROUTING jump is added only for addresses without one.
pub fn ipt_setup_restore(save: &str, addrs: &[Cidr], network: &str, cid: &str) -> String {
    let chain = iptables_chain(network, cid);
    let comment = quote(&iptables_comment(network, cid));
    let Some(family) = addrs.first().map(|a| IpFamily::of(&a.ip())) else {
        return String::new();
    };
    let mut out = format!("*nat\n:{chain} - [0:0]\n");
    // Every ACCEPT before the MASQUERADE (the reference appends per
    // address, which can leave a second subnet's ACCEPT unreachable).
    for a in addrs {
        out.push_str(&format!(
            "-A {chain} -d {} -m comment --comment {comment} -j ACCEPT\n",
            a.network()
        ));
    }
    out.push_str(&format!(
        "-A {chain} ! -d {} -m comment --comment {comment} -j MASQUERADE\n",
        family.multicast()
    ));
    let jumps = postrouting_jumps(save, &chain);
    for a in addrs {
        let src = format!("-s {}/{} ", a.ip(), family.host_prefix());
        if !jumps.iter().any(|j| j.contains(&src)) {
            out.push_str(&format!(
                "-A POSTROUTING -s {} -m comment --comment {comment} -j {chain}\n",
                a.ip()
            ));
        }
    }
    out.push_str("COMMIT\n");
    out
}

/// The restore batch removing a chain and every jump to it; `None` when
/// there is nothing to remove.
pub fn ipt_teardown_restore(save: &str, chains: &[String]) -> Option<String> {
    let mut body = String::new();
    for chain in chains {
        for j in postrouting_jumps(save, chain) {
            body.push_str(&format!("-D{}\n", &j[2..]));
        }
    }
    for chain in chains {
        if chain_declared(save, chain) {
            body.push_str(&format!("-F {chain}\n-X {chain}\n"));
        }
    }
    if body.is_empty() {
        None
    } else {
        Some(format!("*nat\n{body}COMMIT\n"))
    }
}

/// Chains of `network` (found by the jump comments) whose container is not
/// among `valid_ids`.
pub fn ipt_stale_chains(save: &str, network: &str, valid_ids: &[String]) -> Vec<String> {
    let mut stale = Vec::new();
    let prefix = format!("--comment {}", quote(&format!("name: {network:?} id: ")));
    for line in save.lines().filter(|l| l.starts_with("-A POSTROUTING ")) {
        let Some(at) = line.find(&prefix[..prefix.len() - 1]) else {
            continue;
        };
        let rest = &line[at + prefix.len() - 1..];
        // rest: `\"<cid>\"" -j CHAIN`
        let Some(cid) = rest
            .strip_prefix("\\\"")
            .and_then(|r| r.split("\\\"").next())
        else {
            continue;
        };
        let chain = iptables_chain(network, cid);
        if !valid_ids.iter().any(|v| v == cid)
            && line.trim_end().ends_with(&format!(" -j {chain}"))
            && !stale.contains(&chain)
        {
            stale.push(chain);
        }
    }
    stale
}

/// A helper process (`iptables-restore`, ...) started by [`start_tool`].
#[derive(Debug)]
pub struct ToolRun {
    tool: String,
    run: skel::exec::Running,
}

fn start_tool(tool: &str, args: &[&str], stdin: Option<&str>) -> Result<ToolRun, Error> {
    // "run <tool>" marks a tool that could not be started (see `teardown`).
    let run = nft::spawn_tool(tool, args, stdin.map(str::as_bytes))
        .map_err(|e| Error::internal(format!("run {tool}: {e}")))?;
    Ok(ToolRun {
        tool: tool.to_string(),
        run,
    })
}

impl ToolRun {
    fn wait(self) -> Result<String, Error> {
        let tool = self.tool;
        let out = self
            .run
            .wait()
            .map_err(|e| Error::internal(e.to_string()))?;
        if !out.status.success() {
            return Err(Error::internal(format!(
                "{tool}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

fn run_tool(tool: &str, args: &[&str], stdin: Option<&str>) -> Result<String, Error> {
    start_tool(tool, args, stdin)?.wait()
}

fn ipt_save(family: IpFamily) -> Result<String, Error> {
    run_tool(family.tools().0, &["-t", "nat"], None)
}

fn ipt_restore(family: IpFamily, batch: &str) -> Result<(), Error> {
    run_tool(family.tools().1, &["-w", "--noflush"], Some(batch)).map(|_| ())
}

fn by_family(addrs: &[Cidr]) -> Vec<(IpFamily, Vec<Cidr>)> {
    let mut out: Vec<(IpFamily, Vec<Cidr>)> = Vec::new();
    for a in addrs {
        let f = IpFamily::of(&a.ip());
        match out.iter_mut().find(|(g, _)| *g == f) {
            Some((_, v)) => v.push(*a),
            None => out.push((f, vec![*a])),
        }
    }
    out
}

/// iptables ADD: one `iptables-restore --noflush` per family, started and
/// not awaited. No `iptables-save` first: the chain declaration creates or
/// flushes the chain, so its content is exact either way, and the jump is
/// appended unconditionally. Only an ADD repeated for an attachment that
/// still has its rules can add a second, identical jump; it changes no
/// verdict and teardown removes every jump to the chain.
fn ipt_setup_start(addrs: &[Cidr], o: &Owner) -> Result<Vec<ToolRun>, Error> {
    let mut runs = Vec::new();
    for (family, list) in by_family(addrs) {
        let batch = ipt_setup_restore("", &list, o.network, o.container_id);
        runs.push(start_tool(
            family.tools().1,
            &["-w", "--noflush"],
            Some(&batch),
        )?);
    }
    Ok(runs)
}

fn ipt_teardown(families: &[IpFamily], o: &Owner) -> Result<(), Error> {
    let chain = iptables_chain(o.network, o.container_id);
    let mut errors = Vec::new();
    for family in families {
        let result = ipt_save(*family).and_then(|save| {
            match ipt_teardown_restore(&save, std::slice::from_ref(&chain)) {
                Some(batch) => ipt_restore(*family, &batch),
                None => Ok(()),
            }
        });
        if let Err(e) = result {
            errors.push(e.context(format!("tear down ip masquerade chain {chain}")));
        }
    }
    crate::error::join(errors)
}

// ------------------------------------------------------------------ entry points

/// Masquerade setup started in the background by [`setup_start`].
#[derive(Debug)]
pub enum Started {
    Nothing,
    Iptables(Vec<ToolRun>),
    Nftables(NftSetup),
}

/// Start installing masquerade rules for `addrs`; [`setup_finish`] waits
/// for the helper processes. With no configured backend, nftables is used
/// when `nft` works, iptables otherwise.
pub fn setup_start(backend: Option<Backend>, addrs: &[Cidr], o: &Owner) -> Result<Started, Error> {
    if addrs.is_empty() {
        return Ok(Started::Nothing);
    }
    if backend == Some(Backend::Iptables) {
        return ipt_setup_start(addrs, o).map(Started::Iptables);
    }
    match nft_setup_start(addrs, o) {
        Ok(run) => Ok(Started::Nftables(run)),
        Err(NftError::Unavailable(_)) if backend.is_none() => {
            ipt_setup_start(addrs, o).map(Started::Iptables)
        }
        Err(e) => Err(e.into_error("set up ip masquerade")),
    }
}

/// Wait for what [`setup_start`] started (nftables rules are already in
/// place when it returns).
pub fn setup_finish(started: Started) -> Result<(), Error> {
    match started {
        Started::Nothing => Ok(()),
        Started::Nftables(run) => run
            .finish()
            .map_err(|e| e.into_error("set up ip masquerade")),
        Started::Iptables(runs) => {
            let errors = runs
                .into_iter()
                .filter_map(|r| r.wait().err())
                .map(|e| e.context("set up ip masquerade"))
                .collect();
            crate::error::join(errors)
        }
    }
}

/// Remove the attachment's rules. nftables rules are found by comment;
/// iptables jumps by chain name, so neither needs `addrs`; `addrs` only
/// narrows which iptables families are read. With no configured backend
/// both are cleaned, as the reference does.
pub fn teardown(backend: Option<Backend>, addrs: &[Cidr], o: &Owner) -> Result<(), Error> {
    let mut errors = Vec::new();
    if backend != Some(Backend::Iptables) {
        match nft::list_table(FAMILY, TABLE) {
            Ok(listing) => {
                if let Err(e) = nft::apply(&nft_teardown_batch(&listing, o)) {
                    errors.push(e.into_error("tear down ip masquerade"));
                }
            }
            // No nft: nothing can have been installed through it.
            Err(NftError::Unavailable(_)) if backend.is_none() => {}
            Err(e) => errors.push(e.into_error("list ip masquerade rules")),
        }
    }
    if backend != Some(Backend::Nftables) {
        let mut families: Vec<IpFamily> = by_family(addrs).into_iter().map(|(f, _)| f).collect();
        if families.is_empty() {
            families = vec![IpFamily::V4, IpFamily::V6];
        }
        if let Err(e) = ipt_teardown(&families, o) {
            // Without a configured backend, an unusable iptables is not an
            // error: nothing can have been installed through it.
            if backend.is_some() || !e.msg.contains("run ip") {
                errors.push(e);
            }
        }
    }
    crate::error::join(errors)
}

/// Verify every address has its masquerade rule.
pub fn check(backend: Option<Backend>, addrs: &[Cidr], o: &Owner) -> Result<(), Error> {
    let missing_err =
        |ip: IpAddr| Error::internal(format!("ip masquerade rule for {ip} not found"));
    let nft_result = match backend {
        Some(Backend::Iptables) => Err(NftError::Unavailable(String::new())),
        _ => nft::list_table(FAMILY, TABLE),
    };
    match nft_result {
        Ok(listing) => {
            if let Some(ip) = nft_missing(&listing, addrs, o).first() {
                // Without a configured backend the rules may be iptables ones.
                if backend.is_some() || ipt_missing(addrs, o)?.is_some() {
                    return Err(missing_err(*ip));
                }
            }
            Ok(())
        }
        Err(NftError::Unavailable(_)) => match ipt_missing(addrs, o)? {
            Some(ip) => Err(missing_err(ip)),
            None => Ok(()),
        },
        Err(e) => Err(e.into_error("list ip masquerade rules")),
    }
}

fn ipt_missing(addrs: &[Cidr], o: &Owner) -> Result<Option<IpAddr>, Error> {
    let chain = iptables_chain(o.network, o.container_id);
    for (family, list) in by_family(addrs) {
        let save = ipt_save(family)?;
        let jumps = postrouting_jumps(&save, &chain);
        for a in list {
            let src = format!("-s {}/{} ", a.ip(), family.host_prefix());
            if !chain_declared(&save, &chain) || !jumps.iter().any(|j| j.contains(&src)) {
                return Ok(Some(a.ip()));
            }
        }
    }
    Ok(None)
}

/// Remove rules of `network` whose attachment (container id, ifname) is not
/// in `valid`.
pub fn gc(
    backend: Option<Backend>,
    network: &str,
    valid: &[(String, String)],
) -> Result<(), Error> {
    let mut errors = Vec::new();
    if backend != Some(Backend::Iptables) {
        match nft::list_table(FAMILY, TABLE) {
            Ok(listing) => {
                if let Err(e) = nft::apply(&nft_gc_batch(&listing, network, valid)) {
                    errors.push(e.into_error("garbage-collect ip masquerade rules"));
                }
            }
            Err(NftError::Unavailable(_)) if backend.is_none() => {}
            Err(e) => errors.push(e.into_error("list ip masquerade rules")),
        }
    }
    if backend != Some(Backend::Nftables) {
        let ids: Vec<String> = valid.iter().map(|(cid, _)| cid.clone()).collect();
        for family in [IpFamily::V4, IpFamily::V6] {
            let result = ipt_save(family).and_then(|save| {
                let stale = ipt_stale_chains(&save, network, &ids);
                match ipt_teardown_restore(&save, &stale) {
                    Some(batch) => ipt_restore(family, &batch),
                    None => Ok(()),
                }
            });
            if let Err(e) = result
                && (backend.is_some() || !e.msg.contains("run ip"))
            {
                errors.push(e.context("garbage-collect iptables masquerade chains"));
            }
        }
    }
    crate::error::join(errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_chain_listing_is_checked_rule_by_rule() {
        let healthy = "table inet cni_plugins_masquerade {\n\tchain postrouting {\n\t\ttype nat hook postrouting priority srcnat; policy accept;\n\t\tip daddr 224.0.0.0/4 return\n\t\tip6 daddr ff00::/8 return\n\t\tgoto masq_checks\n\t}\n}\n";
        assert!(base_chain_ok(healthy));
        let flushed = "table inet cni_plugins_masquerade {\n\tchain postrouting {\n\t\ttype nat hook postrouting priority srcnat; policy accept;\n\t}\n}\n";
        assert!(!base_chain_ok(flushed));
        let extra = healthy.replace("goto masq_checks", "goto masq_checks\n\t\tcounter accept");
        assert!(!base_chain_ok(&extra));
        assert!(!base_chain_ok(""));
    }

    #[test]
    fn iptables_chain_name_matches_the_reference() {
        // Observed from the reference plugin: network "mq", container "c1".
        assert_eq!(
            format!("CNI-{}", hex_prefix("mqc1", 24)),
            "CNI-fb21b640fde7fb73bc20647d"
        );
    }

    fn owner() -> Owner<'static> {
        Owner {
            network: "mq",
            ifname: "eth0",
            container_id: "c1",
        }
    }

    fn cidr(s: &str) -> Cidr {
        s.parse().unwrap()
    }

    #[test]
    fn names_and_comments_match_the_reference() {
        assert_eq!(iptables_chain("mq", "c1"), "CNI-fb21b640fde7fb73bc20647d");
        assert_eq!(iptables_comment("mq", "c1"), r#"name: "mq" id: "c1""#);
        let c = nft_comment(&owner());
        assert!(c.ends_with(", net: mq, if: eth0, id: c1"), "{c}");
        assert_eq!(&c[..16], &hex_prefix("mq", 16));
        assert_eq!(&c[17..33], &hex_prefix("eth0:c1", 16));
        let long = "x".repeat(200);
        let o = Owner {
            network: "n",
            ifname: "eth0",
            container_id: &long,
        };
        assert_eq!(nft_comment(&o).len(), 128);
    }

    #[test]
    fn nft_setup_text_matches_json() {
        let t = nft_setup_text(&[cidr("10.240.0.2/24"), cidr("fd40::2/64")], &owner());
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 9);
        assert_eq!(
            lines[3],
            "flush chain inet cni_plugins_masquerade postrouting"
        );
        assert_eq!(
            lines[7],
            format!(
                "add rule inet cni_plugins_masquerade masq_checks ip saddr == 10.240.0.2 ip daddr != 10.240.0.0/24 masquerade comment \"{}\"",
                nft_comment(&owner())
            )
        );
        assert!(lines[8].contains("ip6 saddr == fd40::2 ip6 daddr != fd40::/64"));
    }

    #[test]
    fn nft_json_setup_is_one_batch() {
        let b = nft_setup_batch(&[cidr("10.240.0.2/24"), cidr("fd40::2/64")], &owner());
        // table, 2 chains, flush, 3 base rules, 2 masquerade rules
        assert_eq!(b.len(), 9);
        assert_eq!(b[3]["flush"]["chain"]["name"], "postrouting");
        assert_eq!(b[2]["add"]["chain"]["prio"], 100);
        let r = &b[7]["add"]["rule"];
        assert_eq!(r["chain"], CHAIN);
        assert_eq!(r["comment"], nft_comment(&owner()));
        assert_eq!(r["expr"][0]["match"]["right"], "10.240.0.2");
        assert_eq!(r["expr"][1]["match"]["op"], "!=");
        assert_eq!(
            r["expr"][1]["match"]["right"]["prefix"]["addr"],
            "10.240.0.0"
        );
        assert_eq!(
            b[8]["add"]["rule"]["expr"][0]["match"]["left"]["payload"]["protocol"],
            "ip6"
        );
        assert_eq!(
            b[8]["add"]["rule"]["expr"][1]["match"]["right"]["prefix"]["addr"],
            "fd40::"
        );
    }

    fn listing() -> Vec<Value> {
        let ours = nft_comment(&owner());
        let other = nft_comment(&Owner {
            network: "mq",
            ifname: "eth0",
            container_id: "c2",
        });
        let foreign = nft_comment(&Owner {
            network: "zz",
            ifname: "eth0",
            container_id: "c3",
        });
        let rule = |h: u64, c: &str, ip: &str| {
            json!({"rule": {"family": "inet", "table": TABLE, "chain": CHAIN, "handle": h, "comment": c,
                "expr": [{"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "saddr"}}, "right": ip}}]}})
        };
        vec![
            json!({"chain": {"family": "inet", "table": TABLE, "name": CHAIN}}),
            rule(5, &ours, "10.240.0.2"),
            rule(6, &other, "10.240.0.3"),
            rule(7, &foreign, "10.240.1.3"),
            json!({"rule": {"family": "inet", "table": TABLE, "chain": "postrouting", "handle": 2, "expr": []}}),
        ]
    }

    #[test]
    fn nft_teardown_by_comment() {
        let b = nft_teardown_batch(&listing(), &owner());
        assert_eq!(b.len(), 1);
        assert_eq!(b[0]["delete"]["rule"]["handle"], 5);
        assert!(nft_missing(&listing(), &[cidr("10.240.0.2/24")], &owner()).is_empty());
        assert_eq!(
            nft_missing(&listing(), &[cidr("10.240.0.9/24")], &owner()),
            vec!["10.240.0.9".parse::<IpAddr>().unwrap()]
        );
    }

    #[test]
    fn nft_gc_keeps_valid_and_other_networks() {
        let b = nft_gc_batch(&listing(), "mq", &[("c1".into(), "eth0".into())]);
        assert_eq!(b.len(), 1);
        assert_eq!(b[0]["delete"]["rule"]["handle"], 6);
        assert_eq!(nft_gc_batch(&listing(), "mq", &[]).len(), 2);
    }

    const SAVE: &str = "# Generated by iptables-save\n*nat\n:PREROUTING ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n\
:CNI-fb21b640fde7fb73bc20647d - [0:0]\n\
-A POSTROUTING -s 10.33.0.2/32 -m comment --comment \"name: \\\"mq\\\" id: \\\"c1\\\"\" -j CNI-fb21b640fde7fb73bc20647d\n\
-A CNI-fb21b640fde7fb73bc20647d -d 10.33.0.0/24 -m comment --comment \"name: \\\"mq\\\" id: \\\"c1\\\"\" -j ACCEPT\n\
-A CNI-fb21b640fde7fb73bc20647d ! -d 224.0.0.0/4 -m comment --comment \"name: \\\"mq\\\" id: \\\"c1\\\"\" -j MASQUERADE\nCOMMIT\n";

    #[test]
    fn ipt_setup_batch_declares_chain_and_adds_jump_once() {
        let b = ipt_setup_restore("", &[cidr("10.33.0.2/24")], "mq", "c1");
        assert_eq!(
            b,
            "*nat\n:CNI-fb21b640fde7fb73bc20647d - [0:0]\n\
-A CNI-fb21b640fde7fb73bc20647d -d 10.33.0.0/24 -m comment --comment \"name: \\\"mq\\\" id: \\\"c1\\\"\" -j ACCEPT\n\
-A CNI-fb21b640fde7fb73bc20647d ! -d 224.0.0.0/4 -m comment --comment \"name: \\\"mq\\\" id: \\\"c1\\\"\" -j MASQUERADE\n\
-A POSTROUTING -s 10.33.0.2 -m comment --comment \"name: \\\"mq\\\" id: \\\"c1\\\"\" -j CNI-fb21b640fde7fb73bc20647d\n\
COMMIT\n"
        );
        // An existing jump is not duplicated.
        let b = ipt_setup_restore(SAVE, &[cidr("10.33.0.2/24")], "mq", "c1");
        assert!(!b.contains("-A POSTROUTING"));
        let b6 = ipt_setup_restore("", &[cidr("fd40::2/64")], "mq", "c1");
        assert!(b6.contains("! -d ff00::/8"));
        assert!(b6.contains("-d fd40::/64"));
    }

    #[test]
    fn ipt_teardown_needs_no_addresses() {
        let chain = iptables_chain("mq", "c1");
        let b = ipt_teardown_restore(SAVE, std::slice::from_ref(&chain)).unwrap();
        assert_eq!(
            b,
            format!(
                "*nat\n-D POSTROUTING -s 10.33.0.2/32 -m comment --comment \"name: \\\"mq\\\" id: \\\"c1\\\"\" -j {chain}\n-F {chain}\n-X {chain}\nCOMMIT\n"
            )
        );
        assert_eq!(ipt_teardown_restore("*nat\nCOMMIT\n", &[chain]), None);
    }

    #[test]
    fn ipt_gc_finds_chains_by_comment() {
        assert_eq!(
            ipt_stale_chains(SAVE, "mq", &[]),
            vec![iptables_chain("mq", "c1")]
        );
        assert!(ipt_stale_chains(SAVE, "mq", &["c1".into()]).is_empty());
        assert!(ipt_stale_chains(SAVE, "other", &[]).is_empty());
    }
}
