//! Property tests: the config parser never panics; an iptables ADD plan,
//! applied to a model of `iptables-restore`, leaves a table on which a
//! second plan adds nothing and CHECK passes, whatever was there before
//! (other containers, other bridges, other policies); the plan's inverse
//! brings the table back exactly; DEL's batches remove the rules.
//! nftables comments fit and tell attachments and networks apart; records
//! round-trip.

use std::net::IpAddr;

use cni_firewall::iptables::{Batch, Save, quote_arg, split_words};
use proptest::prelude::*;

use crate::config::{Config, Isolation, Policy};
use crate::iptables::{Wanted, check_saved, del_batch, plan_add};
use crate::nft::{network_prefix, owner};
use crate::record::{self, Record};

/// `table filter` as `iptables-restore --noflush` changes it: chains in
/// order of creation, each with its rules' arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Model {
    chains: Vec<(String, Vec<Vec<String>>)>,
}

impl Model {
    fn new() -> Model {
        Model {
            chains: vec![("FORWARD".into(), Vec::new())],
        }
    }

    fn chain(&mut self, name: &str) -> Result<&mut Vec<Vec<String>>, String> {
        self.chains
            .iter_mut()
            .find(|(n, _)| n == name)
            .map(|(_, r)| r)
            .ok_or(format!("no chain {name}"))
    }

    /// Apply a batch as the tool does: all or nothing.
    fn apply(&mut self, b: &Batch) -> Result<(), String> {
        let mut next = self.clone();
        for line in b.text().lines() {
            let w = split_words(line);
            let args = || w[2..].to_vec();
            match w[0].as_str() {
                "*filter" | "COMMIT" => {}
                l if l.starts_with(':') => {
                    let name = l[1..].to_string();
                    match next.chain(&name) {
                        Ok(rules) => rules.clear(),
                        Err(_) => next.chains.push((name, Vec::new())),
                    }
                }
                "-N" if next.chain(&w[1]).is_ok() => return Err(format!("{} exists", w[1])),
                "-N" => next.chains.push((w[1].clone(), Vec::new())),
                "-A" => next.chain(&w[1])?.push(args()),
                "-I" => next.chain(&w[1])?.insert(0, w[3..].to_vec()),
                "-D" => {
                    let rules = next.chain(&w[1])?;
                    let at = rules
                        .iter()
                        .position(|r| *r == args())
                        .ok_or("no such rule")?;
                    rules.remove(at);
                }
                "-X" => {
                    let referenced = next
                        .chains
                        .iter()
                        .flat_map(|(_, r)| r)
                        .any(|r| r.last() == Some(&w[1]));
                    if referenced || !next.chain(&w[1])?.is_empty() {
                        return Err(format!("chain {} busy", w[1]));
                    }
                    next.chains.retain(|(n, _)| *n != w[1]);
                }
                other => return Err(format!("unexpected {other}")),
            }
        }
        *self = next;
        Ok(())
    }

    fn save(&self) -> Save {
        let mut t = String::from("*filter\n");
        for (name, _) in &self.chains {
            t.push_str(&format!(":{name} - [0:0]\n"));
        }
        for (name, rules) in &self.chains {
            for r in rules {
                let args: Vec<String> = r.iter().map(|a| quote_arg(a)).collect();
                t.push_str(&format!("-A {name} {}\n", args.join(" ")));
            }
        }
        t.push_str("COMMIT\n");
        Save::new(t)
    }
}

fn ip() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        (0u8..4, 1u8..255).prop_map(|(a, b)| IpAddr::from([10, 240, a, b])),
        (0u16..4, 1u16..300).prop_map(|(a, b)| IpAddr::from([0xfd40, a, 0, 0, 0, 0, 0, b])),
    ]
}

fn isolation() -> impl Strategy<Value = Option<Isolation>> {
    prop::option::of((0u8..3, 0u8..2).prop_map(|(b, p)| Isolation {
        bridge: format!("cnirsbr{b}"),
        policy: if p == 0 {
            Policy::SameBridge
        } else {
            Policy::Isolated
        },
    }))
}

/// One container's ADD: its family's addresses, the admin chain, the
/// isolation.
fn attachment() -> impl Strategy<Value = (Vec<IpAddr>, bool, Option<Isolation>)> {
    (
        prop::collection::vec(ip(), 1..4),
        any::<bool>(),
        isolation(),
    )
}

fn wanted<'a>(
    ips: &[IpAddr],
    custom_admin: bool,
    iso: Option<&'a Isolation>,
    v6: bool,
) -> Wanted<'a> {
    Wanted {
        admin: if custom_admin {
            "CNIRS-ADM"
        } else {
            "CNI-ADMIN"
        },
        ips: ips.iter().copied().filter(|i| i.is_ipv6() == v6).collect(),
        forward: true,
        isolation: iso,
    }
}

proptest! {
    #[test]
    fn config_parser_never_panics(s in ".{0,200}") {
        let _ = Config::parse(s.as_bytes());
        let doc = format!("{{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"ingressPolicy\":{s:?},\"backend\":{s:?}}}");
        let _ = Config::parse(doc.as_bytes()).map(|c| c.isolation());
    }

    #[test]
    fn plans_are_idempotent_and_undo_exactly(
        before in prop::collection::vec(attachment(), 0..4),
        (mut ips, custom, iso) in attachment(),
        v6 in any::<bool>(),
    ) {
        // The same address twice is planned once.
        ips.push(ips[0]);
        let mut m = Model::new();
        for (ips, custom, iso) in &before {
            let plan = plan_add(&m.save(), &wanted(ips, *custom, iso.as_ref(), v6));
            m.apply(&plan.batch).unwrap();
        }
        let start = m.clone();
        let w = wanted(&ips, custom, iso.as_ref(), v6);
        let plan = plan_add(&m.save(), &w);
        m.apply(&plan.batch).unwrap();
        prop_assert_eq!(check_saved(&m.save(), &w), Ok(()));
        let again = plan_add(&m.save(), &w);
        prop_assert!(again.batch.is_empty(), "{}", again.batch.text());
        let mut undone = m.clone();
        undone.apply(&plan.undo).unwrap();
        prop_assert_eq!(&undone, &start);
        // DEL: the container's own rules go in one batch, if it added any.
        let mut fresh: Vec<IpAddr> = w.ips.iter().copied().filter(|i| {
            !before.iter().any(|(b, _, _)| b.contains(i))
        }).collect();
        fresh.dedup();
        fresh.sort();
        fresh.dedup();
        if !fresh.is_empty() {
            m.apply(&del_batch(&fresh)).unwrap();
            prop_assert!(check_saved(&m.save(), &w).is_err());
        }
    }
}

/// Names as skel lets them through: network names and container IDs
/// (`[A-Za-z0-9][A-Za-z0-9_.-]*`, long ones too), interface names (1 to
/// 15 bytes, no `/`, `:` or blank; `"` allowed).
fn cni_name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9][a-zA-Z0-9_.-]{0,20}",
        "[a-z0-9][a-z0-9_]{60,300}",
    ]
}

fn ifname() -> impl Strategy<Value = String> {
    "[!-.0-9;-~]{1,15}".prop_filter("not a name", |n| n != "." && n != "..")
}

fn attachments() -> impl Strategy<Value = Vec<(String, String, Vec<IpAddr>)>> {
    prop::collection::vec(
        (cni_name(), ifname(), prop::collection::vec(ip(), 0..3)),
        1..5,
    )
}

proptest! {
    /// nftables comments fit `nft`'s 128 bytes, hold no quote, start with
    /// their network's prefix and with no other network's, and tell any
    /// two attachments apart.
    #[test]
    fn owners_fit_and_tell_attachments_apart(
        nets in (cni_name(), cni_name()),
        a in (cni_name(), ifname()),
        b in (cni_name(), ifname()),
    ) {
        let o = owner(&nets.0, &a.0, &a.1);
        prop_assert!(o.len() <= cni_net::nftables::COMMENT_MAX, "{}", o);
        prop_assert!(!o.contains('"'), "{}", o);
        prop_assert!(o.starts_with(&network_prefix(&nets.0)), "{}", o);
        if a != b {
            prop_assert_ne!(&o, &owner(&nets.0, &b.0, &b.1));
        }
        if nets.0 != nets.1 {
            let other = owner(&nets.1, &b.0, &b.1);
            prop_assert!(!other.starts_with(&network_prefix(&nets.0)), "{} {}", o, other);
        }
    }

    /// Records round-trip whatever the names, one per attachment (the
    /// last write wins), and no bytes make the parser panic.
    #[test]
    fn records_round_trip(all in attachments(), junk in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = record::parse("n", &junk);
        let d = testdir();
        let mut want: Vec<Record> = Vec::new();
        for (cid, ifname, addrs) in all {
            let r = Record { network: "n".into(), container_id: cid, ifname, backend: "nftables".into(), addrs };
            record::write(&d, &r).unwrap();
            want.retain(|w| (&w.container_id, &w.ifname) != (&r.container_id, &r.ifname));
            want.push(r);
        }
        for r in &want {
            let got = record::read(&d, "n", &r.container_id, &r.ifname);
            prop_assert_eq!(got.as_ref(), Some(r));
        }
        prop_assert_eq!(record::of_network(&d, "n").len(), want.len());
        let _ = std::fs::remove_dir_all(&d);
    }
}

/// A fresh directory for one case.
fn testdir() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("cnirs-fwprop-{}-{n}", std::process::id()))
}
