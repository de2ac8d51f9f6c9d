//! `selinuxContext`: the SELinux label of the tap device. The kernel
//! labels a tun/tap device with the context of the process that creates
//! it, so where SELinux is on the device is made by a child (`ip tuntap
//! add`, in the container's namespace) exec'd under that context
//! (`/proc/thread-self/attr/exec`), as the reference does; the rest of the
//! setup is netlink's. Where SELinux is off there is nothing to label and
//! the key is ignored (the reference fails ADD there, writing the label
//! to a kernel that takes none).

use std::fs::File;
use std::path::Path;

use cni_net::netns;

use crate::config::Config;
use crate::error::Error;

/// Whether SELinux is on here: selinuxfs mounted and the process labeled.
pub fn enabled() -> bool {
    Path::new("/sys/fs/selinux/enforce").exists()
        && std::fs::read_to_string("/proc/thread-self/attr/current")
            .is_ok_and(|c| !c.trim_end_matches(['\0', '\n']).is_empty() && c.trim() != "kernel")
}

/// Whether the tap must be made under `conf`'s context.
pub fn applies(conf: &Config) -> bool {
    !conf.selinux_context.is_empty() && enabled()
}

/// Make the tap `name` in the namespace `ns` by a child exec'd under
/// `conf`'s context.
pub fn create_labeled(ns: &File, name: &str, conf: &Config) -> Result<(), Error> {
    let mut args = vec!["tuntap", "add", "mode", "tap", "name", name];
    if conf.multi_queue {
        args.push("multi_queue");
    }
    let (owner, group) = (
        conf.owner.map(|u| u.to_string()),
        conf.group.map(|g| g.to_string()),
    );
    if let Some(u) = &owner {
        args.extend(["user", u]);
    }
    if let Some(g) = &group {
        args.extend(["group", g]);
    }
    netns::run(ns, || -> Result<(), Error> {
        let label = "/proc/thread-self/attr/exec";
        std::fs::write(label, &conf.selinux_context).map_err(|e| {
            Error::internal(format!(
                "failed set socket label: write {label}: {}",
                skel::io_text(&e)
            ))
        })?;
        // Bounded like every wait of a call: a hung `ip` is killed and named.
        let out = skel::exec::Command::new("ip")
            .args(&args)
            .timeout(skel::deadline::timeout())
            .run();
        // The label is for that one exec only.
        let _ = std::fs::write(label, "");
        let out = out.map_err(|e| Error::internal(format!("failed to run command ip: {e}")))?;
        if !out.success() {
            let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&out.stderr));
            return Err(Error::internal(format!(
                "failed to run command {text}: {}",
                out.status
            )));
        }
        Ok(())
    })?
}
