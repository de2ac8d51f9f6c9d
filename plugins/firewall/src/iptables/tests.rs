use super::*;

/// The reference's objects for 10.44.0.3 on `cni0` with `same-bridge`, as
/// `iptables-save` prints them (v1.9.1 comments).
const SAVED: &str = include_str!("../../testdata/same-bridge-v4.save");

fn iso(policy: Policy) -> Isolation {
    Isolation {
        bridge: "cni0".into(),
        policy,
    }
}

fn wanted<'a>(ips: &[&str], isolation: Option<&'a Isolation>) -> Wanted<'a> {
    Wanted {
        admin: "CNI-ADMIN",
        ips: ips.iter().map(|i| i.parse().unwrap()).collect(),
        forward: true,
        isolation,
    }
}

#[test]
fn a_fresh_table_gets_everything_in_one_batch() {
    let same = iso(Policy::SameBridge);
    let plan = plan_add(&Save::default(), &wanted(&["10.44.0.3"], Some(&same)));
    let c = |s: &str| format!("-m comment --comment \"{s}\"");
    let d = c(DEFAULT_POLICY_COMMENT);
    let p = c("CNI firewall plugin rules (ingressPolicy: same-bridge)");
    assert_eq!(
        plan.batch.text(),
        format!(
            "*filter\n-N CNI-FORWARD\n-N CNI-ADMIN\n\
-I FORWARD 1 {} -j CNI-FORWARD\n\
-I CNI-FORWARD 1 {} -j CNI-ADMIN\n\
-A CNI-FORWARD -d 10.44.0.3/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n\
-A CNI-FORWARD -s 10.44.0.3/32 -j ACCEPT\n\
-N CNI-ISOLATION-STAGE-1\n-N CNI-ISOLATION-STAGE-2\n\
-I FORWARD 1 {d} -j CNI-ISOLATION-STAGE-1\n\
-I CNI-ISOLATION-STAGE-1 1 -i cni0 ! -o cni0 {p} -j CNI-ISOLATION-STAGE-2\n\
-A CNI-ISOLATION-STAGE-1 {d} -j RETURN\n\
-I CNI-ISOLATION-STAGE-2 1 -o cni0 {d} -j DROP\n\
-A CNI-ISOLATION-STAGE-2 {d} -j RETURN\nCOMMIT\n",
            c(RULES_COMMENT),
            c(ADMIN_COMMENT)
        )
    );
    // The inverse deletes every rule, newest first, then the chains.
    let undo = plan.undo.text();
    assert!(undo.starts_with(&format!(
        "*filter\n-D CNI-ISOLATION-STAGE-2 {d} -j RETURN\n"
    )));
    assert!(undo.ends_with(
        "-X CNI-ISOLATION-STAGE-2\n-X CNI-ISOLATION-STAGE-1\n-X CNI-ADMIN\n-X CNI-FORWARD\nCOMMIT\n"
    ));
    assert_eq!(undo.matches("\n-D ").count(), 9);
}

#[test]
fn the_references_rules_are_found() {
    let save = Save::new(SAVED.to_string());
    let same = iso(Policy::SameBridge);
    let w = wanted(&["10.44.0.3"], Some(&same));
    let plan = plan_add(&save, &w);
    assert!(plan.batch.is_empty(), "{}", plan.batch.text());
    assert!(plan.undo.is_empty());
    assert_eq!(check_saved(&save, &w), Ok(()));
    // isolated adds only the same-bridge drop.
    let isolated = iso(Policy::Isolated);
    let plan = plan_add(&save, &wanted(&["10.44.0.3"], Some(&isolated)));
    let t = plan.batch.text();
    assert!(
        t.contains("-I CNI-ISOLATION-STAGE-1 1 -i cni0 -o cni0 -m comment"),
        "{t}"
    );
    // A second address: only its two rules.
    let plan = plan_add(&save, &wanted(&["10.44.0.4"], Some(&same)));
    assert_eq!(plan.batch.text().lines().count(), 4);
    for r in addr_rules("10.44.0.3".parse().unwrap()) {
        assert!(r.is_in(&save), "{}", r.saved());
        assert!(SAVED.contains(&r.saved()));
    }
}

#[test]
fn check_names_the_first_missing_rule_as_the_reference() {
    let w = wanted(&["10.44.0.9"], None);
    assert_eq!(
        check_saved(&Save::default(), &w).unwrap_err(),
        "expected FORWARD rule [-m comment --comment CNI firewall plugin rules -j CNI-FORWARD] not found"
    );
    let save = Save::new(SAVED.to_string());
    assert_eq!(
        check_saved(&save, &w).unwrap_err(),
        "expected rule [-d 10.44.0.9/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT] not found"
    );
    let w = Wanted {
        admin: "OTHER",
        ..wanted(&["10.44.0.3"], None)
    };
    assert_eq!(
        check_saved(&save, &w).unwrap_err(),
        "expected CNI-FORWARD rule [-m comment --comment CNI firewall plugin admin overrides -j OTHER] not found"
    );
    let isolated = iso(Policy::Isolated);
    let e = check_saved(&save, &wanted(&["10.44.0.3"], Some(&isolated))).unwrap_err();
    assert!(e.starts_with("expected CNI-ISOLATION-STAGE-1 rule [-i cni0 ! -o cni0 -m comment --comment CNI firewall plugin rules (ingressPolicy: isolated)"), "{e}");
}

#[test]
fn deletions() {
    let ips: Vec<IpAddr> = vec!["10.44.0.3".parse().unwrap(), "10.44.0.4".parse().unwrap()];
    assert_eq!(del_batch(&ips).text().matches("-D CNI-FORWARD").count(), 4);
    let present = del_present(&Save::new(SAVED.to_string()), &ips).text();
    assert_eq!(
        present,
        "*filter\n-D CNI-FORWARD -d 10.44.0.3/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n-D CNI-FORWARD -s 10.44.0.3/32 -j ACCEPT\nCOMMIT\n"
    );
    let v6: IpAddr = "fd44::3".parse().unwrap();
    assert_eq!(
        addr_rules(v6)[1].saved(),
        "-A CNI-FORWARD -s fd44::3/128 -j ACCEPT"
    );
    let fams = by_family(&[ips[0], v6, ips[1]]);
    assert_eq!(fams.len(), 2);
    assert_eq!((fams[0].0, fams[0].1.len()), (Family::V4, 2));
}

#[test]
fn isolation_rules_of_v1_1_to_v1_6_count_as_there() {
    let old = SAVED.replace(DEFAULT_POLICY_COMMENT, LEGACY_POLICY_COMMENT);
    assert_ne!(old, SAVED);
    let save = Save::new(old);
    let same = iso(Policy::SameBridge);
    let w = wanted(&["10.44.0.3"], Some(&same));
    assert!(plan_add(&save, &w).batch.is_empty());
    assert_eq!(check_saved(&save, &w), Ok(()));
}

/// `iptables-save` prints addresses with `inet_ntop`, which writes an
/// IPv4-compatible IPv6 address as `::10.0.0.2` where Rust writes
/// `::a00:2`: the rules are still found (else each ADD added them again
/// and CHECK never passed).
#[test]
fn addresses_are_compared_as_addresses() {
    let save = Save::new(
        "*filter\n:FORWARD ACCEPT [0:0]\n:CNI-FORWARD - [0:0]\n\
-A CNI-FORWARD -d ::10.0.0.2/128 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n\
-A CNI-FORWARD -s ::10.0.0.2/128 -j ACCEPT\nCOMMIT\n"
            .to_string(),
    );
    for r in addr_rules("::a00:2".parse().unwrap()) {
        assert!(r.is_in(&save), "{r:?}");
    }
    assert_eq!(
        del_present(&save, &["::a00:2".parse().unwrap()])
            .text()
            .lines()
            .count(),
        4
    );
    // Another address, or a word that only looks alike, is not the same.
    for r in addr_rules("::a00:3".parse().unwrap()) {
        assert!(!r.is_in(&save), "{r:?}");
    }
    let other = Save::new("*filter\n-A CNI-FORWARD -s ::10.0.0.2 -j ACCEPT\nCOMMIT\n".into());
    assert!(!addr_rules("::a00:2".parse().unwrap())[1].is_in(&other));
}
