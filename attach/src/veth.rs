//! The veth pair of an attachment (the reference's `ip.SetupVeth`): the
//! container end, named `CNI_IFNAME`, created directly in the container's
//! namespace; the host end, `veth` + 8 random hex digits, up.

use std::fs::File;
use std::io::Read;

use cni_net::{Kind, Link, LinkSpec, Netlink, Peer};

use crate::error::Error;

/// `CNI_IFNAME` as the name of a new link. skel has made the reference's
/// checks; this refuses what the kernel would still refuse or rewrite
/// (`%d` is a template), with the same code and wording.
pub fn check_ifname(ifname: &str) -> Result<(), Error> {
    let Some(p) = cni_net::link::name_problem(ifname) else {
        return Ok(());
    };
    let mut e = Error::internal(format!("interface name {p}"));
    e.code = skel::code::INVALID_ENVIRONMENT;
    Err(e)
}

/// `veth` + 8 random hex digits.
pub fn random_name() -> Result<String, Error> {
    let mut b = [0u8; 4];
    File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| Error::internal(format!("read /dev/urandom: {}", skel::io_text(&e))))?;
    Ok(format!(
        "veth{:02x}{:02x}{:02x}{:02x}",
        b[0], b[1], b[2], b[3]
    ))
}

/// The error for an `ifname` that already exists in the container.
pub fn ifname_taken(ifname: &str, host_name: &str) -> Error {
    Error::internal(format!(
        "container veth name ({ifname:?}) peer provided ({host_name:?}) already exists"
    ))
}

/// What [`create`] makes.
#[derive(Debug, Clone, Copy)]
pub struct Spec<'a> {
    /// The container's namespace and the container end's name there.
    pub ns: &'a File,
    pub ifname: &'a str,
    /// MAC of the container end; the kernel picks one when `None`.
    pub mac: Option<[u8; 6]>,
    /// MTU of both ends; 0 is the kernel default.
    pub mtu: u32,
    /// The bridge to enslave the host end to.
    pub master: Option<&'a Link>,
}

/// Create the veth pair in one message: the container end inside its
/// namespace, a random `veth…` host end (`first_name` on the first try)
/// already up (and enslaved). Returns the host end as the kernel reports
/// it after creation (its index and MAC).
pub fn create(host: &Netlink, spec: &Spec, first_name: String) -> Result<Link, Error> {
    let mut name = first_name;
    for _ in 0..10 {
        let mtu = (spec.mtu > 0).then_some(spec.mtu);
        let pair = LinkSpec {
            mtu,
            master: spec.master.map(|m| m.index),
            up: true,
            peer: Some(Peer {
                name: spec.ifname,
                netns: Some(spec.ns),
                mac: spec.mac,
                mtu,
            }),
            ..LinkSpec::new(&name, Kind::Veth)
        };
        match host.create_link_get(&pair) {
            Ok(port) => return Ok(port),
            Err(e) if e.is_exists() => {
                // Either our random name collided (retry) or the container
                // already has `ifname`.
                if host.find_link(&name)?.is_some() {
                    name = random_name()?;
                    continue;
                }
                return Err(ifname_taken(spec.ifname, &name));
            }
            Err(e) => {
                // The pair exists if only the lookup sent with the create
                // failed; the random host name is ours, so remove it (the
                // kernel takes the container end with it).
                if let Ok(Some(l)) = host.find_link(&name) {
                    let _ = host.delete_link(&l);
                }
                return Err(e.into());
            }
        }
    }
    Err(Error::internal(
        "failed to find a free name for the host veth after 10 tries",
    ))
}

/// Delete the host end `name` if it still exists (the kernel removes the
/// container end with it, whatever that is called by now and whether or
/// not the container's namespace is still there).
pub fn remove(host: &Netlink, name: &str) -> Result<(), Error> {
    if let Some(l) = host.find_link(name)? {
        host.delete_link(&l)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ifname_the_kernel_would_rewrite_is_invalid_environment() {
        let e = check_ifname("%d").unwrap_err();
        assert_eq!(e.code, skel::code::INVALID_ENVIRONMENT);
        assert_eq!(
            e.msg,
            "interface name contains %, which the kernel reads as a name template"
        );
        check_ifname("eth0").unwrap();
    }

    #[test]
    fn host_names_are_veth_and_eight_hex_digits() {
        let a = random_name().unwrap();
        assert_eq!(a.len(), 12, "{a}");
        assert!(a.starts_with("veth"), "{a}");
        assert!(
            a[4..]
                .chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(a, random_name().unwrap());
    }
}
