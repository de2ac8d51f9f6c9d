//! Interface names: `CNI_IFNAME` checked as the name of a new link, random
//! names (a veth's host end, a link on its way into the container), and
//! the veth pair's error for a name the container already has (other
//! kinds word theirs as their reference plugin does, through
//! [`crate::add::Frame::start_ipam`]'s `taken`).

use crate::error::Error;

/// `CNI_IFNAME` as the name of a new link. skel has made the reference's
/// checks; this refuses what the kernel would still refuse or rewrite
/// (`%d` is a template), with the same code and wording.
pub fn check(ifname: &str) -> Result<(), Error> {
    let Some(p) = cni_net::link::name_problem(ifname) else {
        return Ok(());
    };
    let mut e = Error::internal(format!("interface name {p}"));
    e.code = skel::code::INVALID_ENVIRONMENT;
    Err(e)
}

/// `veth` + 8 random hex digits (the reference's `ip.RandomVethName`).
pub fn random() -> Result<String, Error> {
    cni_net::link::random_name().map_err(Error::from)
}

/// The error for an `ifname` that already exists in the container, when
/// the veth pair with host end `host_name` was to be made (the
/// reference's words).
pub fn taken_by_veth(ifname: &str, host_name: &str) -> Error {
    Error::internal(format!(
        "container veth name ({ifname:?}) peer provided ({host_name:?}) already exists"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ifname_the_kernel_would_rewrite_is_invalid_environment() {
        let e = check("%d").unwrap_err();
        assert_eq!(e.code, skel::code::INVALID_ENVIRONMENT);
        assert_eq!(
            e.msg,
            "interface name contains %, which the kernel reads as a name template"
        );
        check("eth0").unwrap();
    }

    #[test]
    fn random_names_are_veth_and_eight_hex_digits() {
        let a = random().unwrap();
        assert_eq!(a.len(), 12, "{a}");
        assert!(a.starts_with("veth"), "{a}");
        assert_ne!(a, random().unwrap());
    }

    #[test]
    fn taken_names_in_the_references_words() {
        assert_eq!(
            taken_by_veth("eth0", "veth01020304").msg,
            r#"container veth name ("eth0") peer provided ("veth01020304") already exists"#
        );
    }
}
