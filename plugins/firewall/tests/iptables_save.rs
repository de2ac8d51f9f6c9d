//! A property test against the real tools, in a throwaway namespace: the
//! iptables rules an ADD plans for generated addresses (among them IPv6
//! spellings where `inet_ntop` and Rust differ) and bridge names (what a
//! kernel interface may be called, but `"`), once `iptables-restore` has
//! applied them and `iptables-save` has printed them, are found again:
//! CHECK passes, a second ADD plans nothing, DEL's batch removes the
//! container's rules and nothing else is left to delete, the plan's
//! inverse brings the table back as it was.

use std::net::IpAddr;

use cni_firewall::iptables::{self as ipt, Family, Save};
use firewall::config::{Isolation, Policy};
use firewall::iptables::{Wanted, check_saved, del_batch, del_present, plan_add};
use proptest::prelude::*;
use testsupport::TestNetns;

fn v6() -> impl Strategy<Value = IpAddr> {
    let seg = prop_oneof![Just(0u16), 1u16..16, any::<u16>()];
    prop_oneof![
        prop::array::uniform8(seg).prop_map(IpAddr::from),
        // IPv4-compatible and IPv4-mapped: `::10.0.0.2`, `::ffff:10.0.0.2`.
        any::<u32>().prop_map(|v| IpAddr::from(u128::from(v).to_be_bytes())),
        any::<u32>().prop_map(|v| IpAddr::from(((0xffffu128 << 32) | u128::from(v)).to_be_bytes())),
    ]
}

fn v4() -> impl Strategy<Value = IpAddr> {
    any::<[u8; 4]>().prop_map(IpAddr::from)
}

/// A name the kernel takes for an interface (1 to 15 bytes, no `/`, `:`
/// or blank, not `.` or `..`), without `"` and a trailing `+` (both
/// refused with iptables) and not `!`, which iptables reads as a negation.
fn bridge() -> impl Strategy<Value = String> {
    "[!#-.0-9;-~]{1,15}".prop_filter("not a name", |n| {
        !matches!(n.as_str(), "." | ".." | "!") && !n.ends_with('+')
    })
}

fn wanted<'a>(ips: &[IpAddr], iso: Option<&'a Isolation>) -> Wanted<'a> {
    Wanted {
        admin: "CNI-ADMIN",
        ips: ips.to_vec(),
        forward: true,
        isolation: iso,
    }
}

/// The table as saved, without the lines that carry a time.
fn saved(fam: Family) -> Save {
    let s = ipt::save(fam, "filter").unwrap();
    let text: Vec<&str> = s.text().lines().filter(|l| !l.starts_with('#')).collect();
    Save::new(text.join("\n") + "\n")
}

fn apply(fam: Family, b: &ipt::Batch) {
    ipt::restore(fam, b).unwrap_or_else(|e| panic!("{e}\n{}", b.text()));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn our_rules_read_back_from_iptables_save(
        is_v6 in any::<bool>(),
        v4s in prop::collection::vec(v4(), 1..3),
        v6s in prop::collection::vec(v6(), 1..3),
        iso in prop::option::of((bridge(), any::<bool>())),
    ) {
        let ns = TestNetns::new("fwsave");
        let (fam, mut ips) = match is_v6 {
            true => (Family::V6, v6s),
            false => (Family::V4, v4s),
        };
        ips.sort();
        ips.dedup();
        let iso = iso.map(|(bridge, isolated)| Isolation {
            bridge,
            policy: if isolated { Policy::Isolated } else { Policy::SameBridge },
        });
        let w = wanted(&ips, iso.as_ref());
        ns.enter(|| -> Result<(), TestCaseError> {
            let start = saved(fam);
            let plan = plan_add(&start, &w);
            apply(fam, &plan.batch);
            let added = saved(fam);
            prop_assert_eq!(check_saved(&added, &w), Ok(()), "{}", added.text());
            let again = plan_add(&added, &w);
            prop_assert!(again.batch.is_empty(), "{}\n{}", again.batch.text(), added.text());
            apply(fam, &del_batch(&ips));
            let deleted = saved(fam);
            prop_assert!(del_present(&deleted, &ips).is_empty(), "{}", deleted.text());
            prop_assert!(check_saved(&deleted, &w).is_err());
            apply(fam, &plan_add(&deleted, &w).batch);
            apply(fam, &plan.undo);
            prop_assert_eq!(saved(fam), start);
            Ok(())
        })?;
    }
}

/// A chain someone made between ADD's save and its restore (the Go
/// plugin's ADD of another container, or ours with another `dataDir`:
/// neither under our lock) is not flushed: ADD creates the chains it
/// found missing with `-N`, which fails where `:<chain>` would empty the
/// chain, so the ADD fails (the runtime retries it) and the other
/// container keeps its rules.
#[test]
fn a_chain_made_meanwhile_is_not_flushed() {
    let ns = TestNetns::new("fwsave");
    ns.enter(|| {
        let ips: Vec<IpAddr> = vec!["10.240.89.2".parse().unwrap()];
        let w = wanted(&ips, None);
        let stale = saved(Family::V4);
        let mut other = ipt::Batch::new();
        other.declare("filter", "CNI-FORWARD").append(
            "filter",
            "CNI-FORWARD",
            &["-s", "10.240.89.3/32", "-j", "ACCEPT"],
        );
        apply(Family::V4, &other);
        let plan = plan_add(&stale, &w);
        let r = ipt::restore(Family::V4, &plan.batch);
        let now = saved(Family::V4);
        assert!(r.is_err(), "{}", now.text());
        assert!(
            now.text().contains("-s 10.240.89.3/32 -j ACCEPT"),
            "{}",
            now.text()
        );
        apply(Family::V4, &plan_add(&now, &w).batch);
        assert_eq!(check_saved(&saved(Family::V4), &w), Ok(()));
    });
}
