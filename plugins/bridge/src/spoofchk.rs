//! MAC spoof check: frames entering the bridge from the container's host
//! veth must carry the container's MAC. Same nftables objects as the
//! reference (`bridge nat`, base chain `PREROUTING`, chains
//! `cni-br-iface-<id>` and `…-mac`, comments `macspoofchk-<id>` with
//! `id = <containerID>-<ifname>`), written in one batch.

use serde_json::{Value, json};

use crate::error::Error;
use crate::nft::{self, NftError};

const FAMILY: &str = "bridge";
const TABLE: &str = "nat";
const BASE: &str = "PREROUTING";

pub fn id(container_id: &str, ifname: &str) -> String {
    format!("{container_id}-{ifname}")
}

fn iface_chain(id: &str) -> String {
    format!("cni-br-iface-{id}")
}

fn comment(id: &str) -> String {
    format!("macspoofchk-{id}")
}

fn rule(chain: &str, id: &str, expr: Vec<Value>) -> Value {
    json!({"add": {"rule": {"family": FAMILY, "table": TABLE, "chain": chain, "comment": comment(id), "expr": expr}}})
}

pub fn setup_batch(id: &str, host_veth: &str, mac: &str) -> Vec<Value> {
    let iface = iface_chain(id);
    let mac_chain = format!("{iface}-mac");
    let chain = |name: &str| json!({"family": FAMILY, "table": TABLE, "name": name});
    vec![
        json!({"add": {"table": {"family": FAMILY, "name": TABLE}}}),
        json!({"add": {"chain": {"family": FAMILY, "table": TABLE, "name": BASE,
            "type": "filter", "hook": "prerouting", "prio": -300, "policy": "accept"}}}),
        json!({"add": {"chain": chain(&iface)}}),
        json!({"add": {"chain": chain(&mac_chain)}}),
        // Same-batch flush: a repeated setup replaces the rules.
        json!({"flush": {"chain": chain(&iface)}}),
        json!({"flush": {"chain": chain(&mac_chain)}}),
        rule(
            BASE,
            id,
            vec![
                json!({"match": {"op": "==", "left": {"meta": {"key": "iifname"}}, "right": host_veth}}),
                json!({"jump": {"target": iface}}),
            ],
        ),
        rule(&iface, id, vec![json!({"jump": {"target": mac_chain}})]),
        rule(
            &mac_chain,
            id,
            vec![
                json!({"match": {"op": "==", "left": {"payload": {"protocol": "ether", "field": "saddr"}}, "right": mac}}),
                json!({"return": null}),
            ],
        ),
        rule(&mac_chain, id, vec![json!({"drop": null})]),
    ]
}

/// Deletions of the attachment's jump rule and chains, from a listing of
/// the `bridge nat` table.
pub fn teardown_batch(listing: &[Value], id: &str) -> Vec<Value> {
    let iface = iface_chain(id);
    let mac_chain = format!("{iface}-mac");
    let mut b: Vec<Value> = nft::rules(listing)
        .iter()
        .filter(|r| r.chain == BASE && r.comment == comment(id))
        .map(|r| nft::delete_rule(FAMILY, TABLE, r))
        .collect();
    let chains = nft::chains(listing);
    for c in [&iface, &mac_chain] {
        if chains.contains(c) {
            b.push(json!({"delete": {"chain": {"family": FAMILY, "table": TABLE, "name": c}}}));
        }
    }
    b
}

/// Ids (`<cid>-<ifname>`) with spoof-check chains whose host veth is gone,
/// excluding `keep`. A chain's veth is the `iifname` its jump matches.
pub fn stale_ids(
    listing: &[Value],
    keep: &[String],
    link_exists: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let mut out = Vec::new();
    for r in nft::rules(listing).iter().filter(|r| r.chain == BASE) {
        let Some(id) = r.comment.strip_prefix("macspoofchk-") else {
            continue;
        };
        let iif = r.expr.as_array().and_then(|e| {
            e.iter().find_map(|x| {
                let m = x.get("match")?;
                (m.get("left")?.get("meta")?.get("key")?.as_str()? == "iifname")
                    .then(|| m.get("right")?.as_str())
                    .flatten()
            })
        });
        if keep.iter().any(|k| k == id) || iif.is_some_and(link_exists) {
            continue;
        }
        if !out.iter().any(|o| o == id) {
            out.push(id.to_string());
        }
    }
    out
}

fn listing() -> Result<Vec<Value>, Error> {
    nft::list_table(FAMILY, TABLE).map_err(|e| e.into_error("list spoof-check rules"))
}

pub fn teardown(id: &str) -> Result<(), Error> {
    let l = match nft::list_table(FAMILY, TABLE) {
        Ok(l) => l,
        Err(NftError::Unavailable(_)) => return Ok(()),
        Err(e) => return Err(e.into_error("list spoof-check rules")),
    };
    nft::apply(&teardown_batch(&l, id)).map_err(|e| e.into_error("failed to teardown spoof-check"))
}

/// Whether the attachment's spoof-check rules are in place.
pub fn check(id: &str) -> Result<(), Error> {
    let l = listing()?;
    let chains = nft::chains(&l);
    let has_jump = nft::rules(&l)
        .iter()
        .any(|r| r.chain == BASE && r.comment == comment(id));
    if !has_jump || !chains.contains(&iface_chain(id)) {
        return Err(Error::internal(format!(
            "spoof-check rules for {id} not found"
        )));
    }
    Ok(())
}

/// Remove spoof-check rules of attachments not in `keep` whose host veth
/// no longer exists (the ids carry no network name, so a live veth means
/// the rules may belong to another network's attachment).
pub fn gc(keep: &[String], link_exists: &dyn Fn(&str) -> bool) -> Result<(), Error> {
    let l = match nft::list_table(FAMILY, TABLE) {
        Ok(l) => l,
        Err(NftError::Unavailable(_)) => return Ok(()),
        Err(e) => return Err(e.into_error("list spoof-check rules")),
    };
    let mut batch = Vec::new();
    for id in stale_ids(&l, keep, link_exists) {
        batch.extend(teardown_batch(&l, &id));
    }
    nft::apply(&batch).map_err(|e| e.into_error("garbage-collect spoof-check rules"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_batch_uses_the_reference_names() {
        let b = setup_batch("c1-eth0", "veth12345678", "02:00:00:00:00:01");
        assert_eq!(b.len(), 10);
        assert_eq!(b[1]["add"]["chain"]["prio"], -300);
        assert_eq!(b[2]["add"]["chain"]["name"], "cni-br-iface-c1-eth0");
        assert_eq!(b[3]["add"]["chain"]["name"], "cni-br-iface-c1-eth0-mac");
        assert_eq!(b[6]["add"]["rule"]["chain"], "PREROUTING");
        assert_eq!(b[6]["add"]["rule"]["comment"], "macspoofchk-c1-eth0");
        assert_eq!(
            b[6]["add"]["rule"]["expr"][0]["match"]["right"],
            "veth12345678"
        );
        assert_eq!(
            b[8]["add"]["rule"]["expr"][0]["match"]["right"],
            "02:00:00:00:00:01"
        );
        assert_eq!(b[9]["add"]["rule"]["expr"][0], json!({"drop": null}));
    }

    fn listing() -> Vec<Value> {
        vec![
            json!({"chain": {"name": "PREROUTING"}}),
            json!({"chain": {"name": "cni-br-iface-c1-eth0"}}),
            json!({"chain": {"name": "cni-br-iface-c1-eth0-mac"}}),
            json!({"rule": {"chain": "PREROUTING", "handle": 4, "comment": "macspoofchk-c1-eth0",
                "expr": [{"match": {"op": "==", "left": {"meta": {"key": "iifname"}}, "right": "vethaaaa"}}]}}),
            json!({"rule": {"chain": "PREROUTING", "handle": 9, "comment": "macspoofchk-c2-eth0",
                "expr": [{"match": {"op": "==", "left": {"meta": {"key": "iifname"}}, "right": "vethbbbb"}}]}}),
        ]
    }

    #[test]
    fn teardown_deletes_jump_and_chains_of_one_attachment() {
        let b = teardown_batch(&listing(), "c1-eth0");
        assert_eq!(b.len(), 3);
        assert_eq!(b[0]["delete"]["rule"]["handle"], 4);
        assert_eq!(b[2]["delete"]["chain"]["name"], "cni-br-iface-c1-eth0-mac");
        assert!(teardown_batch(&listing(), "zz-eth0").is_empty());
    }

    #[test]
    fn gc_only_for_vanished_veths() {
        let exists = |n: &str| n == "vethbbbb";
        assert_eq!(stale_ids(&listing(), &[], &exists), vec!["c1-eth0"]);
        assert!(stale_ids(&listing(), &["c1-eth0".into()], &exists).is_empty());
    }
}
