//! IP masquerade for container addresses (bridge, ptp), with the
//! reference's names (`pkg/ip/ipmasq_*_linux.go`), so a node can move
//! between the Go plugins and ours and each can remove the other's rules.
//!
//! - nftables ([`nft`]): table `inet cni_plugins_masquerade`, regular
//!   chain `masq_checks`, base chain `postrouting` (nat, priority 100 =
//!   srcnat) holding `ip daddr 224.0.0.0/4 return`, `ip6 daddr ff00::/8
//!   return`, `goto masq_checks`; one `ip[6] saddr == <ip> ip[6] daddr !=
//!   <subnet> masquerade` rule per address commented [`comment`]
//!   (`<16 hex sha512(net)>-<16 hex sha512(ifname:cid)>, net: …, if: …,
//!   id: …`). Rules are found again by that comment's prefix, so removal
//!   needs no addresses.
//! - iptables ([`iptables`]): per container chain [`iptables_chain`]
//!   (`CNI-<24 hex sha512(net + cid)>`) in table `nat` with an ACCEPT for
//!   the container's subnet and a MASQUERADE for all but multicast,
//!   reached from `POSTROUTING -s <ip> -j <chain>`, every rule commented
//!   [`iptables_comment`] (`name: "<net>" id: "<cid>"`).

pub mod iptables;
pub mod nft;

use cni_net::{IpNetwork, Netlink};
use skel::sha512::hex_prefix;

use crate::backend::Backend;
use crate::error::{Error, Result, join};
use crate::iptables::Family;
use crate::select::Scope;

/// The attachment a set of rules belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner<'a> {
    pub network: &'a str,
    pub ifname: &'a str,
    pub container_id: &'a str,
}

/// The longest rule comment (knftables' `CommentLengthMax`).
const COMMENT_MAX: usize = cni_net::nftables::COMMENT_MAX;

/// `<16 hex sha512(network)>`: the prefix of every nftables rule of the
/// network.
pub fn network_hash(network: &str) -> String {
    hex_prefix(network, 16)
}

/// `<16 hex sha512(network)>-<16 hex sha512(ifname:cid)>`: the prefix of
/// the attachment's nftables rules.
pub fn instance_hash(o: &Owner<'_>) -> String {
    format!(
        "{}-{}",
        network_hash(o.network),
        hex_prefix(&format!("{}:{}", o.ifname, o.container_id), 16)
    )
}

/// The comment of the attachment's nftables rules: [`instance_hash`],
/// then the names without `"`, cut to 128 bytes.
pub fn comment(o: &Owner<'_>) -> String {
    let strip = |s: &str| s.replace('"', "");
    let mut c = format!(
        "{}, net: {}, if: {}, id: {}",
        instance_hash(o),
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

/// `CNI-<24 hex sha512(network + cid)>` (the ifname plays no part, as in
/// the reference).
pub fn iptables_chain(network: &str, container_id: &str) -> String {
    format!(
        "CNI-{}",
        hex_prefix(&format!("{network}{container_id}"), 24)
    )
}

/// `name: "<network>" id: "<cid>"` (Go `%q`).
pub fn iptables_comment(network: &str, container_id: &str) -> String {
    format!(
        "name: {} id: {}",
        skel::gojson::quote(network),
        skel::gojson::quote(container_id)
    )
}

/// The subnet of an address (`10.240.0.0/24` for `10.240.0.2/24`).
fn subnet(a: &IpNetwork) -> IpNetwork {
    IpNetwork::new(a.network(), a.prefix()).unwrap_or(*a)
}

/// An ADD's masquerade work still running: the `iptables-restore` runs
/// (nftables rules are in place when [`setup`] returns).
#[derive(Debug, Default)]
#[must_use = "wait for the rules to be in place"]
pub struct Pending {
    runs: Vec<crate::iptables::Restore>,
}

impl Pending {
    /// Wait for every run; the first failure is returned after all ended.
    pub fn wait(self) -> Result<()> {
        let errors = self
            .runs
            .into_iter()
            .filter_map(|r| r.wait().err())
            .collect();
        join(errors).map_err(|e| e.context("set up ip masquerade"))
    }
}

/// Install the masquerade rules of `addrs` (the container's addresses with
/// their prefix) with `backend` (chosen once per call with
/// [`crate::select::ipmasq`]). nftables: one listing and one transaction
/// in `nl`'s namespace, done when this returns. iptables: one
/// `iptables-restore` per family, started; [`Pending::wait`] awaits them.
pub fn setup(
    nl: &Netlink,
    backend: Backend,
    addrs: &[IpNetwork],
    o: &Owner<'_>,
) -> Result<Pending> {
    if addrs.is_empty() {
        return Ok(Pending::default());
    }
    match backend {
        Backend::Nftables => {
            let mut tx = cni_net::nftables::Transaction::new();
            nft::plan_setup(nl, &mut tx, addrs, o)?;
            nl.nft_apply(tx)
                .map_err(|e| Error::from(e).context("set up ip masquerade"))?;
            Ok(Pending::default())
        }
        Backend::Iptables => iptables::start_setup(addrs, o),
        Backend::Firewalld => Err(Error::invalid("ip masquerade has no firewalld backend")),
    }
}

/// Remove the attachment's rules from the backends of `scope`: nftables
/// rules by comment prefix, iptables jumps from `addrs` (from
/// `prevResult` or the container's link) and the container's chain when
/// no other attachment of it jumps there; with no addresses the chain and
/// every jump to it, so none are needed. A backend that is unusable here is skipped under
/// [`Scope::Every`].
pub fn teardown(nl: &Netlink, scope: Scope, addrs: &[IpNetwork], o: &Owner<'_>) -> Result<()> {
    teardown_view(nl, scope, addrs, None, o)
}

/// [`teardown`] from what DEL saw without `prevResult`: `addrs` were on
/// the container's interface, which need not have held every address of
/// the attachment (an ADD killed after its rules were written and before
/// its IPv6 address was set). So every family is looked at, and in one
/// where none of `addrs` is, the jumps to the attachment's chain from
/// addresses that none of `others` (the container's other interfaces,
/// other attachments of the same container that share the chain) holds
/// are the attachment's.
pub fn teardown_seen(
    nl: &Netlink,
    scope: Scope,
    addrs: &[IpNetwork],
    others: &[IpNetwork],
    o: &Owner<'_>,
) -> Result<()> {
    teardown_view(nl, scope, addrs, Some(others), o)
}

fn teardown_view(
    nl: &Netlink,
    scope: Scope,
    addrs: &[IpNetwork],
    others: Option<&[IpNetwork]>,
    o: &Owner<'_>,
) -> Result<()> {
    let mut errors = Vec::new();
    if scope.includes(Backend::Nftables) {
        keep_error(&mut errors, scope, nft::teardown(nl, o));
    }
    if scope.includes(Backend::Iptables) {
        let chain = iptables_chain(o.network, o.container_id);
        let families = match others {
            Some(_) => vec![Family::V4, Family::V6],
            None => families(addrs),
        };
        for (family, save) in saved(families) {
            let mine = of_family(addrs, family);
            let r = save.and_then(|s| match others {
                Some(others) if mine.is_empty() => {
                    iptables::detach_unseen(family, &s, &chain, others)
                }
                _ => iptables::detach(family, &s, &chain, &mine),
            });
            keep_error(&mut errors, scope, r);
        }
    }
    join(errors).map_err(|e| e.context("tear down ip masquerade"))
}

/// Remove the rules of `network` whose attachment (container ID, ifname)
/// is not in `valid`.
pub fn gc(nl: &Netlink, scope: Scope, network: &str, valid: &[(String, String)]) -> Result<()> {
    let mut errors = Vec::new();
    if scope.includes(Backend::Nftables) {
        keep_error(&mut errors, scope, nft::gc(nl, network, valid));
    }
    if scope.includes(Backend::Iptables) {
        let ids: Vec<&str> = valid.iter().map(|(cid, _)| cid.as_str()).collect();
        for (family, save) in saved(vec![Family::V4, Family::V6]) {
            let r = save.and_then(|s| iptables::gc(family, &s, network, &ids));
            keep_error(&mut errors, scope, r);
        }
    }
    join(errors).map_err(|e| e.context("garbage-collect ip masquerade rules"))
}

/// Verify every address of `addrs` has its masquerade rule in a backend of
/// `scope`: `ip masquerade rule for <ip> not found`.
pub fn check(nl: &Netlink, scope: Scope, addrs: &[IpNetwork], o: &Owner<'_>) -> Result<()> {
    let mut missing = addrs.to_vec();
    let mut errors = Vec::new();
    for backend in [Backend::Nftables, Backend::Iptables] {
        if missing.is_empty() || !scope.includes(backend) {
            continue;
        }
        let found = match backend {
            Backend::Nftables => nft::missing(nl, &missing, o),
            _ => iptables::missing(&missing, o),
        };
        match found {
            Ok(m) => missing = m,
            Err(e) => keep_error(&mut errors, scope, Err(e)),
        }
    }
    join(errors)?;
    match missing.first() {
        None => Ok(()),
        Some(a) => Err(Error::failed(format!(
            "ip masquerade rule for {} not found",
            a.ip()
        ))),
    }
}

/// Keep a failure, except, when every backend is looked at, one saying
/// the backend is unusable here: nothing can have been installed with it.
fn keep_error(errors: &mut Vec<Error>, scope: Scope, r: Result<()>) {
    if let Err(e) = r
        && !(scope == Scope::Every && e.is_unavailable())
    {
        errors.push(e);
    }
}

/// The `nat` table of each family, all read before any is written (see
/// [`iptables::save`]).
fn saved(families: Vec<Family>) -> Vec<(Family, Result<crate::iptables::Save>)> {
    let tables: Vec<_> = families.iter().map(|f| iptables::save(*f)).collect();
    families.into_iter().zip(tables).collect()
}

/// The families of `addrs` in order of appearance; both when empty.
fn families(addrs: &[IpNetwork]) -> Vec<Family> {
    let mut out: Vec<Family> = Vec::new();
    for a in addrs {
        let f = Family::of(&a.ip());
        if !out.contains(&f) {
            out.push(f);
        }
    }
    if out.is_empty() {
        out = vec![Family::V4, Family::V6];
    }
    out
}

/// The addresses of `addrs` of `family`.
fn of_family(addrs: &[IpNetwork], family: Family) -> Vec<IpNetwork> {
    addrs
        .iter()
        .filter(|a| Family::of(&a.ip()) == family)
        .copied()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner() -> Owner<'static> {
        Owner {
            network: "mq",
            ifname: "eth0",
            container_id: "c1",
        }
    }

    #[test]
    fn names_and_comments_match_the_reference() {
        // Observed from the reference plugins.
        assert_eq!(iptables_chain("mq", "c1"), "CNI-fb21b640fde7fb73bc20647d");
        assert_eq!(
            iptables_chain("ptpnet", "c1"),
            "CNI-fd326d185fb2c7ffa632f30f"
        );
        assert_eq!(iptables_comment("mq", "c1"), r#"name: "mq" id: "c1""#);
        // The reference document's example (network ptpnet, eth0, c1);
        // the other hashes from `sha512sum`.
        let ptp = Owner {
            network: "ptpnet",
            ..owner()
        };
        assert_eq!(
            comment(&ptp),
            "9937ea8cc9b806ce-f4d01f2ef4b92245, net: ptpnet, if: eth0, id: c1"
        );
        assert_eq!(instance_hash(&owner()), "2d1e569ee910a48d-f4d01f2ef4b92245");
        assert_eq!(network_hash("mynet"), "d23676b4f2d9fe04");
        let long = "x".repeat(200);
        let o = Owner {
            container_id: &long,
            ..owner()
        };
        assert_eq!(comment(&o).len(), 128);
        let quoted = Owner {
            network: "a\"b",
            ..owner()
        };
        assert!(comment(&quoted).ends_with("net: ab, if: eth0, id: c1"));
        assert_eq!(iptables_comment("a\"b", "c1"), r#"name: "a\"b" id: "c1""#);
    }

    #[test]
    fn families_in_order_or_both() {
        let a: Vec<IpNetwork> = ["fd40::2/64", "10.0.0.2/24", "fd40::3/64"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        assert_eq!(families(&a), vec![Family::V6, Family::V4]);
        assert_eq!(families(&[]), vec![Family::V4, Family::V6]);
        assert_eq!(of_family(&a, Family::V6).len(), 2);
        assert_eq!(subnet(&a[1]).to_string(), "10.0.0.0/24");
    }
}
