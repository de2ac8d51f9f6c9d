//! The frame of a main plugin's ADD: IPAM started early so that it runs
//! while the plugin sets up links, and the rule that a failed ADD undoes
//! everything it did, whatever step failed (the reference leaves links
//! behind, plugins #29 and its macvlan/ipvlan/vlan IPAM traps).
//!
//! [`run`] calls the plugin's body with a [`Frame`]. The body records each
//! side effect once it has happened, as an [`Undo`]: the frame's own
//! helpers do it ([`Frame::create_link`], [`Frame::create_veth`]), and a
//! plugin records what it did by other means ([`Frame::record`]). When
//! the body fails, [`run`] waits for everything still running (the
//! plugin's helpers, [`Extra::settle`], and IPAM), so that the undo
//! follows their work; then runs the recorded undo steps in reverse order,
//! IPAM DEL (only after an IPAM ADD that succeeded or gave no answer:
//! killed at the deadline, or dead, it may hold what it took), and the
//! plugin's own undo ([`Extra::undo`]: its firewall rules); and logs on
//! stderr what could not be undone.
//!
//! A link is recorded where it is when the step that made or moved it
//! succeeded: created in the host, created in (or moved into) the
//! container, under a temporary name and then under its final name (two
//! records; deleting a link that is not there is no error).

use cni_net::{Link, LinkSpec, Netlink, netns};
use skel::CmdArgs;
use skel::invoke::Running;
use skel::types::Result1;

use crate::error::Error;
use crate::veth;

/// A network namespace of an attachment: the plugin's own (the host's)
/// or the container's (`CNI_NETNS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Host,
    Container,
}

/// One step of a failed ADD's undo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Undo {
    /// Delete the link `name` of `side` if it is there: a link this ADD
    /// made (a veth's host end, whose deletion takes the container end
    /// with it whatever that is called by now; a macvlan in the
    /// container).
    Delete { side: Side, name: String },
    /// A host device this ADD moved into the container, where it is
    /// `name`: move it back to the host under its `original` name, clear
    /// the alias it got there, and set it up again when it was `up`.
    MoveBack {
        name: String,
        original: String,
        up: bool,
    },
}

/// What a failed ADD undoes and waits for, common to every main plugin.
pub struct Frame<'a> {
    args: &'a CmdArgs,
    ipam_type: &'a str,
    /// IPAM ADD started and not yet collected.
    running: Option<Running>,
    /// IPAM ADD succeeded, or gave no answer (killed at the deadline, or
    /// dead: it may hold what it took): a failed ADD runs IPAM DEL, which
    /// releases it. An IPAM ADD that answered with an error holds nothing
    /// (IPAM undoes its own failure), and its DEL would release what an
    /// earlier ADD of the same attachment holds: a retried ADD that
    /// host-local refuses as a duplicate allocation took the live
    /// attachment's lease down with it. As the reference, which runs IPAM
    /// DEL only after an IPAM ADD that succeeded.
    ipam_added: bool,
    /// The side effects so far, in order.
    undo: Vec<Undo>,
}

/// A plugin's own part of a failed ADD.
pub trait Extra {
    /// Wait for the plugin's helper processes; their outcome does not
    /// matter, the undo removes what they did.
    fn settle(&mut self) {}
    /// Undo the plugin's own work, best effort; what could not be undone.
    fn undo(&self, _host: &Netlink) -> Vec<Error> {
        Vec::new()
    }
}

impl Extra for () {}

impl<'a> Frame<'a> {
    /// Start IPAM ADD (`ipam_type`, with the full stdin) in the background.
    /// Not for an attachment that already exists in the container (`cont`
    /// has `CNI_IFNAME`): the undo of this ADD would release that
    /// attachment's addresses; refused with `taken` (the plugin's words,
    /// see [`crate::ifname`]).
    pub fn start_ipam(
        &mut self,
        cont: &Netlink,
        taken: impl FnOnce() -> Error,
    ) -> Result<(), Error> {
        if cont.find_link(&self.args.ifname)?.is_some() {
            return Err(taken());
        }
        let a = self.args;
        self.running = Some(skel::invoke::start(
            self.ipam_type,
            "ADD",
            &a.path,
            &a.stdin,
        )?);
        Ok(())
    }

    /// IPAM's result, converted to 1.x; it must hold an address.
    pub fn ipam_result(&mut self, cni_version: &str) -> Result<Result1, Error> {
        let running = self
            .running
            .take()
            .ok_or_else(|| Error::internal("IPAM plugin was not started"))?;
        let result = skel::invoke::finish_add(running, self.ipam_type, cni_version);
        self.ipam_added = result.as_ref().map_or_else(|f| !f.answered, |_| true);
        let result = result.map_err(skel::Error::from)?;
        let result = result.into_v1()?;
        if result.ips.is_empty() {
            return Err(Error::internal("IPAM plugin returned missing IP config"));
        }
        Ok(result)
    }

    /// Record a side effect to undo should the ADD fail.
    pub fn record(&mut self, undo: Undo) {
        self.undo.push(undo);
    }

    /// Create `spec` through `nl` ([`Netlink::create_link`]), recorded for
    /// the undo as a link of `side`: where the link is made, i.e.
    /// [`Side::Container`] for a link created with `spec.netns` or through
    /// a connection in the container.
    pub fn create_link(&mut self, nl: &Netlink, side: Side, spec: &LinkSpec) -> Result<(), Error> {
        nl.create_link(spec)?;
        self.record(Undo::Delete {
            side,
            name: spec.name.to_string(),
        });
        Ok(())
    }

    /// Create `spec` in the container (`cont`, a connection opened there)
    /// from `host`, where its parent is, under its final name whatever
    /// the kernel ([`Netlink::create_link_in`]: a temporary name when the
    /// host has the name and the kernel checks both namespaces); recorded
    /// for the undo as a container link. Returns it as the container sees
    /// it.
    pub fn create_link_in(
        &mut self,
        host: &Netlink,
        cont: &Netlink,
        spec: &LinkSpec,
    ) -> Result<Link, Error> {
        let link = host.create_link_in(cont, spec)?;
        self.record(Undo::Delete {
            side: Side::Container,
            name: link.name.clone(),
        });
        Ok(link)
    }

    /// The veth pair ([`veth::create`]), recorded for the undo by its host
    /// end.
    pub fn create_veth(
        &mut self,
        host: &Netlink,
        spec: &veth::Spec,
        host_name: String,
    ) -> Result<Link, Error> {
        let port = veth::create(host, spec, host_name)?;
        self.record(Undo::Delete {
            side: Side::Host,
            name: port.name.clone(),
        });
        Ok(port)
    }

    /// Undo what was recorded and IPAM, best effort, after waiting for
    /// IPAM if it still runs.
    fn undo(&mut self, host: &Netlink) -> Vec<Error> {
        if let Some(running) = self.running.take() {
            self.ipam_added = running.finish().map_or_else(|f| !f.answered, |_| true);
        }
        let mut cont = Container::new(self.args);
        let mut errors: Vec<Error> = self
            .undo
            .iter()
            .rev()
            .filter_map(|u| undo_one(u, host, &mut cont).err())
            .collect();
        let a = self.args;
        if self.ipam_added
            && let Err(e) = skel::invoke::delegate(self.ipam_type, "DEL", &a.path, &a.stdin)
        {
            errors.push(e.into());
        }
        errors
    }
}

/// A connection in the container's namespace, opened when first needed.
struct Container<'a> {
    args: &'a CmdArgs,
    nl: Option<Netlink>,
}

impl<'a> Container<'a> {
    fn new(args: &'a CmdArgs) -> Container<'a> {
        Container { args, nl: None }
    }

    fn get(&mut self) -> Result<&Netlink, Error> {
        if self.nl.is_none() {
            self.nl = Some(Netlink::in_netns(self.args.netns.file()?)?);
        }
        self.nl
            .as_ref()
            .ok_or_else(|| Error::internal("no connection in the container"))
    }
}

/// Delete the link `name` of `nl`'s namespace if it is there.
pub fn delete_if_present(nl: &Netlink, name: &str) -> Result<(), Error> {
    match nl.find_link(name)? {
        Some(l) => match nl.delete_link(&l) {
            Err(e) if !e.is_not_found() => Err(e.into()),
            _ => Ok(()),
        },
        None => Ok(()),
    }
}

fn undo_one(u: &Undo, host: &Netlink, cont: &mut Container) -> Result<(), Error> {
    match u {
        Undo::Delete {
            side: Side::Host,
            name,
        } => delete_if_present(host, name),
        Undo::Delete {
            side: Side::Container,
            name,
        } => delete_if_present(cont.get()?, name),
        Undo::MoveBack { name, original, up } => {
            let inside = cont.get()?;
            let Some(dev) = inside.find_link(name)? else {
                return Ok(());
            };
            inside.move_link_with(&dev, &netns::current()?, Some(original), Some(""), None)?;
            let back = host.link_by_name(original)?;
            if *up {
                host.set_up(&back)?;
            }
            Ok(())
        }
    }
}

/// Run the ADD `body` of plugin `plugin` (IPAM plugin `ipam_type`) in a
/// [`Frame`]; on failure undo what the frame and `extra` recorded.
pub fn run<T, X: Extra>(
    plugin: &str,
    args: &CmdArgs,
    ipam_type: &str,
    extra: &mut X,
    body: impl FnOnce(&mut Frame, &mut X) -> Result<T, Error>,
) -> Result<T, Error> {
    let mut frame = Frame {
        args,
        ipam_type,
        running: None,
        ipam_added: false,
        undo: Vec::new(),
    };
    let out = body(&mut frame, extra);
    if let Err(e) = &out {
        extra.settle();
        let errors = match Netlink::host() {
            Ok(host) => {
                let mut errors = frame.undo(&host);
                errors.extend(extra.undo(&host));
                errors
            }
            Err(e) => vec![e.into()],
        };
        for u in errors {
            eprintln!("{plugin}: cleanup after failed ADD ({e}): {u}");
        }
    }
    out
}
