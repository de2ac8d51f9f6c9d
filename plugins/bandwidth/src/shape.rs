//! The tc objects of ADD, each made only if it is not already there
//! exactly as we would make it (a retried ADD succeeds), refused with a
//! clear error when something else is in the way, and recorded so that a
//! failed ADD removes what it made and nothing else.

use cni_net::tc::filter::ETH_P_ALL;
use cni_net::tc::{self, Filter, QdiscSpec, Tbf, U32Redirect};
use cni_net::{Link, Netlink};

use crate::Error;

/// Handle of the tbf qdiscs (`1:`) and flow id of the filter (`1:1`),
/// the reference's.
const TBF_HANDLE: u32 = tc::handle(1, 0);
const CLASSID: u32 = tc::handle(1, 1);
/// Priority of the redirect filter.
const PRIO: u16 = 1;

/// Something this ADD made, to undo if a later step fails.
#[derive(Debug)]
enum Made {
    RootTbf(Link),
    Ifb(Link),
    Ingress(Link),
    Filter(Link),
}

/// What this ADD made, in order.
#[derive(Debug)]
pub struct Undo<'a> {
    nl: &'a Netlink,
    made: Vec<Made>,
}

/// A `cni-net` failure as the plugin reports it: code 999, with what was
/// being done in the reference's words in front.
pub fn failed(what: &str) -> impl Fn(cni_net::Error) -> Error + '_ {
    move |e| Error::internal(format!("{what}: {e}"))
}

impl<'a> Undo<'a> {
    pub fn new(nl: &'a Netlink) -> Undo<'a> {
        Undo {
            nl,
            made: Vec::new(),
        }
    }

    /// Remove what was made, newest first; the failures, if any.
    pub fn run(self) -> Vec<String> {
        let nl = self.nl;
        let mut errors = Vec::new();
        for m in self.made.into_iter().rev() {
            let r = match &m {
                Made::Filter(dev) => nl.delete_filters(dev, tc::INGRESS_HANDLE, PRIO, ETH_P_ALL),
                Made::Ingress(dev) => nl.delete_qdisc(dev, tc::INGRESS_PARENT, tc::INGRESS_HANDLE),
                // The device takes its qdisc with it.
                Made::Ifb(dev) => nl.delete_link(dev),
                Made::RootTbf(dev) => nl.delete_qdisc(dev, tc::ROOT, TBF_HANDLE),
            };
            match r {
                Err(e) if !e.is_not_found() => errors.push(e.to_string()),
                _ => {}
            }
        }
        errors
    }

    /// `tbf 1: root` on `dev`. A root qdisc already there is fine only if
    /// it is that very tbf.
    pub fn root_tbf(&mut self, dev: &Link, tbf: Tbf) -> Result<(), Error> {
        let spec = QdiscSpec::Tbf(tbf);
        let fail = failed("create qdisc");
        match self.nl.add_qdisc(dev, tc::ROOT, TBF_HANDLE, &spec) {
            Ok(()) => {
                self.made.push(Made::RootTbf(dev.clone()));
                Ok(())
            }
            Err(e) if e.is_exists() => match self.nl.qdisc_at(dev, tc::ROOT).map_err(&fail)? {
                Some(q) if q.handle == TBF_HANDLE && q.is(&spec) => Ok(()),
                Some(q) => Err(in_the_way(
                    "create qdisc",
                    dev,
                    &format!("qdisc {}", q.describe()),
                )),
                None => Err(fail(e)),
            },
            Err(e) => Err(fail(e)),
        }
    }

    /// The IFB device `name` with `mtu` for the host end `veth` of
    /// container `cid`'s attachment, down until [`Undo::ifb_up`]. One of
    /// that name already there is the attachment's own (the name is its
    /// hash) if it is an IFB that no other veth redirects to: another
    /// attachment of the same container to this network (multus, another
    /// ifname) hashes to the same name, as does network `ab` with
    /// container `c` and network `a` with container `bc`; sharing its IFB
    /// left it redirecting to nothing when either was deleted.
    pub fn ifb(
        &mut self,
        name: &str,
        mtu: u32,
        alias: Option<&str>,
        veth: &Link,
        cid: &str,
    ) -> Result<Link, Error> {
        let fail = failed("adding link");
        // Made with its alias, so that GC knows it for this network's even
        // when this ADD is killed right after.
        match self.nl.create_link_get(&crate::ifb::spec(name, mtu, alias)) {
            Ok(link) => {
                self.made.push(Made::Ifb(link.clone()));
                Ok(link)
            }
            Err(e) if e.is_exists() => {
                let link = self.nl.link_by_name(name).map_err(&fail)?;
                if link.kind != "ifb" {
                    return Err(Error::internal(format!(
                        "adding link: {name} already exists and is not an ifb device (kind {:?})",
                        link.kind.name()
                    )));
                }
                if let Some(other) = redirected_from(self.nl, &link, Some(veth)).map_err(&fail)? {
                    return Err(Error::internal(format!(
                        "adding link: {name} is the ifb device of another attachment \
                         (container {cid} again, or a network name and container ID that \
                         join to the same text): traffic from {} is redirected to it",
                        other.name
                    )));
                }
                Ok(link)
            }
            Err(e) => Err(fail(e)),
        }
    }

    /// Bring the IFB up (after its qdisc is on) with the alias that proves
    /// whose it is; an IFB of the reference's gets the alias too, which is
    /// true of it (its name is the same hash).
    pub fn ifb_up(&mut self, dev: &Link, alias: Option<&str>) -> Result<(), Error> {
        self.nl
            .set_up_with_alias(dev, alias)
            .map_err(failed("adding link"))
    }

    /// The `ingress` qdisc of `dev` and its redirect of everything to
    /// `ifb`. An ingress qdisc already there is used if it holds no filter
    /// but ours (a retried ADD, or the reference's own objects); a clsact
    /// qdisc or someone else's filters are in the way.
    pub fn redirect(&mut self, dev: &Link, ifb: &Link) -> Result<(), Error> {
        let fail = failed("create ingress qdisc");
        let fresh = match self.nl.add_qdisc(
            dev,
            tc::INGRESS_PARENT,
            tc::INGRESS_HANDLE,
            &QdiscSpec::Ingress,
        ) {
            Ok(()) => {
                self.made.push(Made::Ingress(dev.clone()));
                true
            }
            Err(e) if e.is_exists() => {
                match self.nl.qdisc_at(dev, tc::INGRESS_PARENT).map_err(&fail)? {
                    Some(q) if q.is(&QdiscSpec::Ingress) => false,
                    Some(q) => {
                        let what = format!("qdisc {}", q.describe());
                        return Err(in_the_way("create ingress qdisc", dev, &what));
                    }
                    None => return Err(fail(e)),
                }
            }
            Err(e) => return Err(fail(e)),
        };
        skel::failpoint::hit("bandwidth/ingress-qdisc")?;
        if !fresh {
            let filters = self
                .nl
                .filters(dev, tc::INGRESS_HANDLE)
                .map_err(failed("add filter"))?;
            if let Some(f) = filters.iter().find(|f| !is_ours(f, ifb.index)) {
                let what = format!("ingress qdisc ffff: with filter {}", f.describe());
                return Err(in_the_way("add filter", dev, &what));
            }
            if filters.iter().any(|f| f.redirects_all_to(ifb.index)) {
                return Ok(());
            }
        }
        let f = U32Redirect {
            parent: tc::INGRESS_HANDLE,
            prio: PRIO,
            protocol: ETH_P_ALL,
            classid: CLASSID,
            to: ifb.index,
        };
        self.nl
            .add_u32_redirect(dev, &f)
            .map_err(failed("add filter"))?;
        self.made.push(Made::Filter(dev.clone()));
        Ok(())
    }
}

/// Remove from the host end `veth` what ADD put there for the IFB
/// `ifb`: the ingress qdisc when it holds nothing but our redirect, or
/// nothing at all (an ADD killed between the qdisc and its filter), and
/// the root qdisc when it is `tbf` (ADD's, from the same limits). Anything
/// else is left alone. Returns the failures, and whether `veth`'s ingress
/// redirected everything to `ifb` (as [`redirects`] tells, from the same
/// listing of its filters).
pub fn unshape(
    nl: &Netlink,
    veth: &Link,
    ifb: Option<&Link>,
    tbf: Option<Tbf>,
) -> (Vec<Error>, bool) {
    let mut errors = Vec::new();
    let mut redirected = false;
    let mut remove = |r: cni_net::Result<()>| match r {
        Err(e) if !e.is_not_found() => errors.push(failed("remove qdisc")(e)),
        _ => {}
    };
    if let Some(ifb) = ifb {
        match nl.filters(veth, tc::INGRESS_HANDLE) {
            Ok(filters) => {
                redirected = filters.iter().any(|f| f.redirects_all_to(ifb.index));
                let ours = filters.iter().all(|f| is_ours(f, ifb.index));
                // No filter: an ingress qdisc ADD made and was killed
                // before filling, or none at all (listing finds nothing).
                let bare = || {
                    filters.is_empty()
                        && nl
                            .qdisc_at(veth, tc::INGRESS_PARENT)
                            .is_ok_and(|q| q.is_some_and(|q| q.is(&QdiscSpec::Ingress)))
                };
                if ours && (redirected || bare()) {
                    remove(nl.delete_qdisc(veth, tc::INGRESS_PARENT, tc::INGRESS_HANDLE));
                }
            }
            Err(e) => remove(Err(e)),
        }
    }
    if let Some(tbf) = tbf {
        match nl.qdisc_at(veth, tc::ROOT) {
            Ok(Some(q)) if q.handle == TBF_HANDLE && q.is(&QdiscSpec::Tbf(tbf)) => {
                remove(nl.delete_qdisc(veth, tc::ROOT, TBF_HANDLE));
            }
            Ok(_) => {}
            Err(e) => remove(Err(e)),
        }
    }
    (errors, redirected)
}

/// A veth of the host, other than `except`, whose ingress redirects
/// everything to `ifb`: the attachment that IFB serves (ADD redirects
/// nothing but veths).
pub fn redirected_from(
    nl: &Netlink,
    ifb: &Link,
    except: Option<&Link>,
) -> cni_net::Result<Option<Link>> {
    for link in nl.links()? {
        if link.kind != "veth" || except.is_some_and(|e| e.index == link.index) {
            continue;
        }
        if redirects(nl, &link, ifb) {
            return Ok(Some(link));
        }
    }
    Ok(None)
}

/// Whether `veth`'s ingress redirects everything to `ifb` (a veth without
/// an ingress qdisc has no filters to list: no).
pub fn redirects(nl: &Netlink, veth: &Link, ifb: &Link) -> bool {
    nl.filters(veth, tc::INGRESS_HANDLE)
        .is_ok_and(|filters| filters.iter().any(|f| f.redirects_all_to(ifb.index)))
}

/// A filter entry of ours (or the reference's): the redirect to `ifb` or
/// the bare entries `u32` lists beside it, at our priority.
fn is_ours(f: &Filter, ifb: u32) -> bool {
    f.kind == "u32"
        && f.prio == PRIO
        && f.protocol == ETH_P_ALL
        && (f.is_bare() || f.redirects_all_to(ifb))
}

/// Another tool's qdisc or filter where ours must go (reference #894: the
/// reference only said "file exists").
fn in_the_way(step: &str, dev: &Link, what: &str) -> Error {
    Error::internal(format!(
        "{step}: device {} already has {what}, which bandwidth did not make; \
         remove it or leave traffic shaping of this device to its owner",
        dev.name
    ))
}
