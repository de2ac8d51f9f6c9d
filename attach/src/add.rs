//! The frame of a main plugin's ADD: IPAM started early so that it runs
//! while the plugin sets up links, the veth pair, and the rule that a
//! failed ADD undoes everything it did, whatever step failed (the
//! reference leaves the veth behind, plugins #29).
//!
//! [`run`] calls the plugin's body with a [`Frame`], which starts IPAM,
//! creates the veth pair and collects IPAM's result, recording what to
//! undo. When the body fails, [`run`] waits for everything still running
//! (so that the undo follows their work), then undoes the plugin's own
//! work ([`Extra::undo`]: its firewall rules) and the frame's (the veth
//! pair, IPAM's addresses), and logs on stderr what could not be undone.

use cni_net::{Link, Netlink};
use skel::CmdArgs;
use skel::invoke::Running;
use skel::types::Result1;

use crate::error::Error;
use crate::veth;

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
    /// The host end of the veth pair, by its (random, our own) name:
    /// deleting it removes the container end too, whatever that is called
    /// by now and whether or not the container's namespace is still there.
    veth: Option<String>,
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
    /// Not for an attachment that already exists in the container (`cont`):
    /// the undo of this ADD would release that attachment's addresses.
    /// `host_name` is the host end's name, for the error.
    pub fn start_ipam(&mut self, cont: &Netlink, host_name: &str) -> Result<(), Error> {
        let ifname = &self.args.ifname;
        if cont.find_link(ifname)?.is_some() {
            return Err(veth::ifname_taken(ifname, host_name));
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

    /// The veth pair ([`veth::create`]), recorded for the undo.
    pub fn create_veth(
        &mut self,
        host: &Netlink,
        spec: &veth::Spec,
        host_name: String,
    ) -> Result<Link, Error> {
        let port = veth::create(host, spec, host_name)?;
        self.veth = Some(port.name.clone());
        Ok(port)
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

    /// Undo the veth pair and IPAM, best effort.
    fn undo(&mut self, host: &Netlink) -> Vec<Error> {
        let mut errors = Vec::new();
        if let Some(running) = self.running.take() {
            self.ipam_added = running.finish().map_or_else(|f| !f.answered, |_| true);
        }
        if let Some(name) = &self.veth
            && let Err(e) = veth::remove(host, name)
        {
            errors.push(e);
        }
        let a = self.args;
        if self.ipam_added
            && let Err(e) = skel::invoke::delegate(self.ipam_type, "DEL", &a.path, &a.stdin)
        {
            errors.push(e.into());
        }
        errors
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
        veth: None,
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
