//! ADD: a tbf on the host end of the veth for traffic into the container;
//! for traffic out of it, an IFB device, a tbf on it (put on while the
//! device is down, which spares a wait in the kernel), and the host end's
//! ingress redirected to it. Whatever step fails, what this ADD made is
//! removed; objects already there exactly as we make them are kept (a
//! retried ADD succeeds).

use cni_attach::chained;
use cni_net::Netlink;
use cni_net::tc::tbf::{Tbf, psched_tick};
use skel::failpoint::hit;
use skel::types::{Interface, Result1};
use skel::{CmdArgs, CniResult};

use crate::config::{Config, Limits};
use crate::shape::{Undo, failed};
use crate::{Error, ifb, veth};

pub fn add(args: &CmdArgs) -> Result<CniResult, Error> {
    let conf = Config::parse(&args.stdin)?;
    // The reference passes a result without limits through before it
    // looks for one, and dereferences a missing one (a panic).
    let prev = chained::require(conf.prev_result.clone(), "must be called as chained plugin")?;
    let limits = match conf.limits {
        Some(l) if !l.is_zero() => l,
        _ => return Ok(prev),
    };
    let mut result = chained::current(&prev)?;
    let netns = args.netns.file()?;
    let host = Netlink::host().map_err(failed("open netlink"))?;
    let veth = veth::host_end(&result.interfaces, &args.ifname, netns, &host)?;
    let mut undo = Undo::new(&host);
    match shape(&mut undo, &conf, args, &limits, &veth, &mut result) {
        Ok(()) => Ok(CniResult::V1(result)),
        Err(mut e) => {
            let left = undo.run();
            if !left.is_empty() {
                e.msg
                    .push_str(&format!("; undoing the ADD failed: {}", left.join("; ")));
            }
            Err(e)
        }
    }
}

fn shape(
    undo: &mut Undo<'_>,
    conf: &Config,
    args: &CmdArgs,
    limits: &Limits,
    veth: &cni_net::Link,
    result: &mut Result1,
) -> Result<(), Error> {
    let tick = psched_tick().map_err(failed("read the kernel's clock"))?;
    if let Some((rate, burst)) = limits.ingress() {
        undo.root_tbf(veth, Tbf::reference(rate, burst, tick))?;
        hit("bandwidth/ingress-shaped")?;
    }
    if let Some((rate, burst)) = limits.egress() {
        let name = ifb::name(&conf.name, &args.container_id);
        let alias = ifb::alias(&conf.name, &args.container_id);
        let dev = undo.ifb(&name, veth.mtu, alias.as_deref(), veth, &args.container_id)?;
        hit("bandwidth/ifb-created")?;
        result.interfaces.push(Interface {
            name: dev.name.clone(),
            mac: dev.mac_string(),
            ..Interface::default()
        });
        undo.root_tbf(&dev, Tbf::reference(rate, burst, tick))
            .map_err(|e| e.context("create ifb qdisc"))?;
        hit("bandwidth/ifb-shaped")?;
        undo.ifb_up(&dev, alias.as_deref())?;
        hit("bandwidth/ifb-up")?;
        undo.redirect(veth, &dev)?;
        hit("bandwidth/redirected")?;
    }
    Ok(())
}
