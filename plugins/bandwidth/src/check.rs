//! CHECK: the qdiscs ADD made are there with the numbers it would give
//! them. Stricter than the reference, which stops at the first qdisc that
//! is not a tbf (so a missing tbf passed) and never looks at the redirect.

use cni_attach::chained;
use cni_net::tc::tbf::psched_tick;
use cni_net::tc::{self, Qdisc, QdiscSpec, Tbf};
use cni_net::{Link, Netlink};
use skel::CmdArgs;

use crate::config::Config;
use crate::shape::failed;
use crate::{Error, ifb, veth};

pub fn check(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin)?;
    let prev = chained::require(
        conf.prev_result.as_ref(),
        "must be called as a chained plugin",
    )?;
    let result = chained::current(prev)?;
    let netns = args.netns.file()?;
    let host = Netlink::host().map_err(failed("open netlink"))?;
    let veth = veth::host_end(&result.interfaces, &args.ifname, netns, &host)?;
    // No limits, nothing to check (the reference before v1.9.1 panicked).
    let Some(limits) = conf.limits.filter(|l| !l.is_zero()) else {
        return Ok(());
    };
    let tick = psched_tick().map_err(failed("read the kernel's clock"))?;
    if let Some((rate, burst)) = limits.ingress() {
        check_tbf(&host, &veth, &Tbf::reference(rate, burst, tick))?;
    }
    if let Some((rate, burst)) = limits.egress() {
        let name = ifb::name(&conf.name, &args.container_id);
        let dev = host.link_by_name(&name).map_err(failed("get ifb device"))?;
        check_tbf(&host, &dev, &Tbf::reference(rate, burst, tick))?;
        check_redirect(&host, &veth, &dev)?;
    }
    Ok(())
}

/// The root qdisc of `dev` is `want`, with the reference's messages for
/// each number.
fn check_tbf(host: &Netlink, dev: &Link, want: &Tbf) -> Result<(), Error> {
    let qdiscs: Vec<Qdisc> = host
        .qdiscs(dev)
        .map_err(failed("list qdiscs"))?
        .into_iter()
        .filter(|q| q.kind != "pfifo_fast")
        .collect();
    if qdiscs.is_empty() {
        return Err(Error::internal("Failed to find qdisc"));
    }
    let root = qdiscs.iter().find(|q| q.parent == tc::ROOT);
    let Some(have) = root.and_then(|q| q.tbf) else {
        let what = root.map_or("none".to_string(), Qdisc::describe);
        return Err(Error::internal(format!(
            "no tbf qdisc on {}: its root qdisc is {what}",
            dev.name
        )));
    };
    let msg = if have.rate != want.rate {
        "Rate doesn't match"
    } else if have.limit != want.limit {
        "Limit doesn't match"
    } else if have.buffer != want.buffer {
        "Buffer doesn't match"
    } else {
        return Ok(());
    };
    Err(Error::internal(msg))
}

/// `veth`'s ingress qdisc redirects everything to `ifb`.
fn check_redirect(host: &Netlink, veth: &Link, ifb: &Link) -> Result<(), Error> {
    let ingress = host
        .qdisc_at(veth, tc::INGRESS_PARENT)
        .map_err(failed("list qdiscs"))?;
    if !ingress.is_some_and(|q| q.is(&QdiscSpec::Ingress)) {
        return Err(Error::internal(format!(
            "no ingress qdisc on {}",
            veth.name
        )));
    }
    let filters = host
        .filters(veth, tc::INGRESS_HANDLE)
        .map_err(failed("list filters"))?;
    if filters.iter().any(|f| f.redirects_all_to(ifb.index)) {
        Ok(())
    } else {
        Err(Error::internal(format!(
            "no filter on {} redirects its traffic to {}",
            veth.name, ifb.name
        )))
    }
}
