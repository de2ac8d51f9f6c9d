//! STATUS and GC (CNI 1.1).

use cni_attach::error::join;
use skel::CmdArgs;

use crate::config::Config;
use crate::error::Error;
use crate::masq;

/// Ready when the IPAM plugin is.
pub fn status(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin)?;
    skel::invoke::delegate(&conf.ipam_type, "STATUS", &args.path, &args.stdin)?;
    Ok(())
}

/// Remove the masquerade rules of this network's attachments that are no
/// longer valid, then forward GC to IPAM. Both steps run; failures are
/// reported together. Without a list of valid attachments no rule is
/// removed: every attachment may still be in use.
pub fn gc(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin)?;
    let mut errors = Vec::new();
    match skel::conf::valid_attachments(&args.stdin)? {
        // Also with `ipMasq` off: it may have been on for older attachments.
        Some(valid) => {
            if let Err(e) = masq::gc(&conf, &valid) {
                errors.push(e);
            }
        }
        None => eprintln!(
            "ptp: GC of network {} without cni.dev/valid-attachments: removing no rules",
            conf.name
        ),
    }
    if let Err(e) = skel::invoke::delegate(&conf.ipam_type, "GC", &args.path, &args.stdin) {
        errors.push(e.into());
    }
    join(errors)
}
