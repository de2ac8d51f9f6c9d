//! The iptables backend, object for object the reference's
//! (`portmap_iptables.go`), in table `nat` of each family:
//!
//! - shared, once per node: `CNI-HOSTPORT-SETMARK` (`-m comment --comment
//!   "CNI portfwd masquerade mark" -j MARK --set-xmark <m>/<m>`),
//!   `CNI-HOSTPORT-MASQ` (`-m mark --mark <m>/<m> -j MASQUERADE`) and its
//!   POSTROUTING jump inserted first (`CNI portfwd requiring
//!   masquerade`), when `snat` and no `externalSetMarkChain`;
//!   `CNI-HOSTPORT-DNAT` with `-m addrtype --dst-type LOCAL` jumps from
//!   PREROUTING and OUTPUT;
//! - per attachment: `CNI-DN-<21 hex sha512(net + cid)>` with, per
//!   mapping, the hairpin mark rule (`-s <container subnet>`), the
//!   localhost mark rule (IPv4, `-s 127.0.0.1`) and the DNAT rule, reached
//!   from `CNI-HOSTPORT-DNAT` by one multiport rule per protocol and 15
//!   ports, commented `dnat name: "<net>" id: "<cid>"`.
//!
//! ADD reads the table once (`iptables-save`) and writes one
//! `iptables-restore` batch per family: shared chains and rules only when
//! missing (matched by their saved text, so the Go plugin's are
//! recognised; missing chains created with `-N`, so one made meanwhile
//! fails the batch instead of being flushed), the attachment's chain
//! declared afresh (`:<chain>`, flushed if there) and its old entry
//! rules deleted (the reference appends after stale rules on a repeated
//! ADD). Rules are written with the reference's arguments in its order,
//! so `iptables-save` shows exactly what it shows for the Go plugin's.
//! DEL removes the attachment's chain and every rule jumping to it, found
//! by name, so it needs neither mappings nor addresses.

use std::net::IpAddr;

use cni_firewall::ipmasq::iptables::teardown_from;
use cni_firewall::iptables::{self as ipt, Batch, Family, Save, split_words};
use cni_net::IpNetwork;
use skel::Error;
use skel::sha512::hex_prefix;

use crate::config::{Config, proto_name};
use crate::conntrack::Target;

const TABLE: &str = "nat";
pub const TOP_DNAT: &str = "CNI-HOSTPORT-DNAT";
pub const SETMARK: &str = "CNI-HOSTPORT-SETMARK";
pub const MASQ: &str = "CNI-HOSTPORT-MASQ";
const SETMARK_COMMENT: &str = "CNI portfwd masquerade mark";
const MASQ_COMMENT: &str = "CNI portfwd requiring masquerade";
/// multiport takes at most 15 ports.
const PORTS_PER_RULE: usize = 15;

/// `CNI-DN-<21 hex>`: the attachment's chain.
pub fn dn_chain(network: &str, cid: &str) -> String {
    format!("CNI-DN-{}", hex_prefix(&format!("{network}{cid}"), 21))
}

/// `CNI-SN-<21 hex>`: the chain of plugins before v0.7, only torn down.
pub fn sn_chain(network: &str, cid: &str) -> String {
    format!("CNI-SN-{}", hex_prefix(&format!("{network}{cid}"), 21))
}

/// `dnat name: "<net>" id: "<cid>"` (literal quotes), cut to 253 bytes
/// and `...` when longer than 255, as the reference does.
pub fn comment(network: &str, cid: &str) -> String {
    let c = format!("dnat name: \"{network}\" id: \"{cid}\"");
    if c.len() <= 255 {
        return c;
    }
    let mut end = 253;
    while !c.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &c[..end])
}

/// Go's `%#x/%#x` of the mark.
fn mark_def(mark: u32) -> String {
    format!("{mark:#x}/{mark:#x}")
}

fn family(v6: bool) -> Family {
    if v6 { Family::V6 } else { Family::V4 }
}

fn words(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The shared rules a configuration needs, as (chain, arguments, insert
/// first), each also in its saved form.
fn shared_rules(conf: &Config) -> Vec<(&'static str, Vec<String>, bool)> {
    let mut out = Vec::new();
    if conf.snat && conf.external_set_mark_chain.is_none() {
        let mark = mark_def(conf.mark);
        out.push((
            SETMARK,
            words(&[
                "-m",
                "comment",
                "--comment",
                SETMARK_COMMENT,
                "-j",
                "MARK",
                "--set-xmark",
                &mark,
            ]),
            false,
        ));
        out.push((
            MASQ,
            words(&["-m", "mark", "--mark", &mark, "-j", "MASQUERADE"]),
            false,
        ));
        out.push((
            "POSTROUTING",
            words(&["-m", "comment", "--comment", MASQ_COMMENT, "-j", MASQ]),
            true,
        ));
    }
    for chain in ["PREROUTING", "OUTPUT"] {
        let args = words(&["-m", "addrtype", "--dst-type", "LOCAL", "-j", TOP_DNAT]);
        out.push((chain, args, false));
    }
    out
}

/// Whether `save` holds `args` in `chain` (compared word by word).
fn has_rule(save: &Save, chain: &str, args: &[String]) -> bool {
    save.rules(TABLE, chain)
        .iter()
        .any(|l| split_words(l).get(2..) == Some(args))
}

/// The value after `flag` in a saved rule's words (`--dport` → `8080`).
fn value<'a>(words: &'a [String], flag: &str) -> Option<&'a str> {
    words
        .windows(2)
        .find(|p| p[0] == flag)
        .map(|p| p[1].as_str())
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// `ip:port`, `[ip]:port` for IPv6.
fn ip_port(ip: IpAddr, port: u16) -> String {
    match ip {
        IpAddr::V4(a) => format!("{a}:{port}"),
        IpAddr::V6(a) => format!("[{a}]:{port}"),
    }
}

/// The rules of the attachment's chain for `addr`, with the reference's
/// arguments in its order; each with its `iptables-save` text.
pub fn dn_rules(conf: &Config, addr: &IpNetwork) -> Vec<(Vec<String>, String)> {
    let v6 = addr.is_ipv6();
    let subnet = IpNetwork::new(addr.network(), addr.prefix()).unwrap_or(*addr);
    let host_bits = if v6 { 128 } else { 32 };
    let mark_chain = conf.external_set_mark_chain.as_deref().unwrap_or(SETMARK);
    let mut out = Vec::new();
    for m in conf.mappings.iter().filter(|m| m.applies(v6)) {
        let proto = proto_name(m.proto);
        let port = m.host_port.to_string();
        let mut base = words(&["-p", proto, "--dport", &port]);
        let mut saved_dst = String::new();
        if let Some(h) = m.host_ip {
            base.extend(words(&["-d", &h.to_string()]));
            saved_dst = format!("-d {h}/{host_bits} ");
        }
        let saved_match = format!("{saved_dst}-p {proto} -m {proto} --dport {port}");
        if conf.snat {
            let (src, saved_src) = if conf.masq_all {
                let any = if v6 { "::/0" } else { "0.0.0.0/0" };
                (any.to_string(), String::new())
            } else {
                (addr.to_string(), format!("-s {subnet} "))
            };
            let mut hairpin = base.clone();
            hairpin.extend(words(&["-s", &src, "-j", mark_chain]));
            out.push((hairpin, format!("{saved_src}{saved_match} -j {mark_chain}")));
            if !v6 && !conf.masq_all {
                let mut local = base.clone();
                local.extend(words(&["-s", "127.0.0.1", "-j", mark_chain]));
                out.push((
                    local,
                    format!("-s 127.0.0.1/32 {saved_match} -j {mark_chain}"),
                ));
            }
        }
        let to = ip_port(addr.ip(), m.container_port);
        let mut dnat = base;
        dnat.extend(words(&["-j", "DNAT", "--to-destination", &to]));
        out.push((dnat, format!("{saved_match} -j DNAT --to-destination {to}")));
    }
    unique(out, |(args, _)| args.clone())
}

/// `rules` without those whose `key` an earlier one has. The reference
/// adds a rule only when `iptables -C` does not find it in the chain
/// (`InsertUnique`), so a repeated mapping adds nothing, and one that
/// differs only in its container port adds only its DNAT rule. Our
/// arguments are canonical (lowercase protocol, parsed addresses), so
/// equal words are what `-C` finds equal.
fn unique<T, K: PartialEq>(rules: Vec<T>, key: impl Fn(&T) -> K) -> Vec<T> {
    let mut seen = Vec::new();
    rules
        .into_iter()
        .filter(|r| {
            let k = key(r);
            let new = !seen.contains(&k);
            if new {
                seen.push(k);
            }
            new
        })
        .collect()
}

/// The entry rules' (protocol, ports) groups: every mapping, whatever its
/// `hostIP`'s family (as the reference), grouped by protocol as
/// configured, groups sorted, at most 15 ports each (a repeated mapping's
/// port repeated, as in the reference), each distinct group once.
pub fn entry_groups(conf: &Config) -> Vec<(String, String)> {
    let mut protos: Vec<&str> = conf.mappings.iter().map(|m| m.protocol.as_str()).collect();
    protos.sort_unstable();
    protos.dedup();
    let mut out = Vec::new();
    for p in protos {
        let ports: Vec<String> = conf
            .mappings
            .iter()
            .filter(|m| m.protocol == p)
            .map(|m| m.host_port.to_string())
            .collect();
        for chunk in ports.chunks(PORTS_PER_RULE) {
            out.push((p.to_string(), chunk.join(",")));
        }
    }
    // Groups of `tcp` and `TCP` with the same ports are one rule to `-C`.
    unique(out, |(p, ports)| (p.to_ascii_lowercase(), ports.clone()))
}

/// The ADD batch for `addr`, given the table as saved.
pub fn setup_batch(save: &Save, conf: &Config, addr: &IpNetwork, cid: &str) -> Batch {
    let mut b = Batch::new();
    let mut shared = vec![TOP_DNAT];
    if conf.snat && conf.external_set_mark_chain.is_none() {
        shared.extend([SETMARK, MASQ]);
    }
    // `-N`, not `:<chain>`: a shared chain someone made since `save` was
    // read (the Go plugin, or we with another dataDir: not under our
    // lock) makes the batch fail, where `:<chain>` would empty it.
    for chain in shared {
        if !save.chain_declared(TABLE, chain) {
            b.create_chain(TABLE, chain);
        }
    }
    for (chain, args, first) in shared_rules(conf) {
        if has_rule(save, chain, &args) {
            continue;
        }
        if first {
            b.insert(TABLE, chain, 1, &refs(&args));
        } else {
            b.append(TABLE, chain, &refs(&args));
        }
    }
    let dn = dn_chain(&conf.name, cid);
    b.declare(TABLE, &dn);
    for line in save.rules_referencing(TABLE, &dn) {
        b.delete_saved(TABLE, line);
    }
    for (args, _) in dn_rules(conf, addr) {
        b.append(TABLE, &dn, &refs(&args));
    }
    let c = comment(&conf.name, cid);
    let conds = conf.conditions(addr.is_ipv6());
    for (proto, ports) in entry_groups(conf) {
        let mut args = words(&[
            "-m",
            "comment",
            "--comment",
            &c,
            "-m",
            "multiport",
            "-p",
            &proto,
            "--destination-ports",
            &ports,
        ]);
        args.extend(conds.iter().cloned());
        args.extend(words(&["-j", &dn]));
        b.append(TABLE, TOP_DNAT, &refs(&args));
    }
    b
}

fn failed(what: &str, e: cni_firewall::Error) -> Error {
    Error::internal(format!("{what}: {e}"))
}

/// Install the rules of `addr`: one save, one restore.
pub fn setup(conf: &Config, addr: &IpNetwork, cid: &str) -> Result<(), Error> {
    let f = family(addr.is_ipv6());
    let save = ipt::save(f, TABLE).map_err(|e| failed("failed to open iptables", e))?;
    ipt::restore(f, &setup_batch(&save, conf, addr, cid))
        .map_err(|e| failed("unable to setup DNAT", e))
}

/// The UDP DNAT targets of the attachment's chain, from its saved rules.
pub fn udp_targets(save: &Save, dn: &str) -> Vec<Target> {
    save.rules(TABLE, dn)
        .iter()
        .filter_map(|l| {
            let w = split_words(l);
            if !value(&w, "-p")?.eq_ignore_ascii_case("udp") || value(&w, "-j")? != "DNAT" {
                return None;
            }
            let (ip, port) = value(&w, "--to-destination")?.rsplit_once(':')?;
            Some(Target {
                host_port: value(&w, "--dport")?.parse().ok()?,
                addr: ip
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse()
                    .ok()?,
                port: port.parse().ok()?,
            })
        })
        .collect()
}

/// The `nat` table of one family as saved.
pub fn save(v6: bool) -> Result<Save, cni_firewall::Error> {
    ipt::save(family(v6), TABLE)
}

/// Remove the attachments' chains (and the legacy `CNI-SN-` ones) with
/// every rule jumping to them, in the family `save` was read from (what
/// another DEL removed meanwhile is no error); returns the UDP DNAT
/// targets the removed chains held.
pub fn teardown(
    save: &Save,
    v6: bool,
    network: &str,
    cids: &[&str],
) -> Result<Vec<Target>, cni_firewall::Error> {
    let mut chains = Vec::new();
    let mut targets = Vec::new();
    for cid in cids {
        let dn = dn_chain(network, cid);
        targets.extend(udp_targets(save, &dn));
        chains.push(dn);
        chains.push(sn_chain(network, cid));
    }
    teardown_from(family(v6), save, &chains).map_err(|e| {
        e.context(if v6 {
            "could not teardown ipv6 dnat"
        } else {
            "could not teardown ipv4 dnat"
        })
    })?;
    Ok(targets)
}

/// CHECK of `addr`'s family: the chain, each of its rules (addresses
/// compared as addresses: `iptables-save` prints `::a00:2` as
/// `::10.0.0.2`), and the entry rules (by protocol, ports and target;
/// conditions are not compared).
pub fn check(conf: &Config, addr: &IpNetwork, cid: &str) -> Result<(), Error> {
    let v6 = addr.is_ipv6();
    let ctx = if v6 {
        "could not check ipv6 dnat"
    } else {
        "could not check ipv4 dnat"
    };
    let save = ipt::save(family(v6), TABLE).map_err(|e| failed(ctx, e))?;
    let dn = dn_chain(&conf.name, cid);
    if !save.chain_declared(TABLE, &dn) {
        return Err(Error::internal(format!(
            "{ctx}: chain {dn} not found in iptables table {TABLE}"
        )));
    }
    let have = save.rules(TABLE, &dn);
    for (_, saved) in dn_rules(conf, addr) {
        let line = format!("-A {dn} {saved}");
        if !have
            .iter()
            .any(|h| ipt::same_words(&split_words(h), &split_words(&line)))
        {
            return Err(Error::internal(format!(
                "{ctx}: rule {saved} in chain {dn} not found in table {TABLE}"
            )));
        }
    }
    let entries = save.rules(TABLE, TOP_DNAT);
    for (proto, ports) in entry_groups(conf) {
        let found = entries.iter().any(|l| {
            let w = split_words(l);
            value(&w, "-p").is_some_and(|p| p.eq_ignore_ascii_case(&proto))
                && value(&w, "--dports") == Some(ports.as_str())
                && value(&w, "-j") == Some(dn.as_str())
        });
        if !found {
            return Err(Error::internal(format!(
                "{ctx}: rule -p {proto} --dports {ports} -j {dn} in chain {TOP_DNAT} not found in table {TABLE}"
            )));
        }
    }
    Ok(())
}

/// The container IDs of `network`'s attachments in `CNI-HOSTPORT-DNAT`,
/// read from the entry rules' comments (only comments exactly as the
/// reference and we write them, jumping to the chain they name).
pub fn attachments(save: &Save, network: &str) -> Vec<String> {
    let prefix = format!("dnat name: \"{network}\" id: \"");
    let mut out = Vec::new();
    for line in save.rules(TABLE, TOP_DNAT) {
        let w = split_words(line);
        let (Some(c), Some(target)) = (value(&w, "--comment"), value(&w, "-j")) else {
            continue;
        };
        let Some(cid) = c.strip_prefix(&prefix).and_then(|r| r.strip_suffix('"')) else {
            continue;
        };
        if dn_chain(network, cid) == target && !out.iter().any(|o| o == cid) {
            out.push(cid.to_string());
        }
    }
    out
}

/// The container IDs of `network`'s attachments in `save` whose
/// container is not in `valid`.
pub fn stale(save: &Save, network: &str, valid: &[&str]) -> Vec<String> {
    attachments(save, network)
        .into_iter()
        .filter(|cid| !valid.contains(&cid.as_str()))
        .collect()
}

#[cfg(test)]
mod tests;
