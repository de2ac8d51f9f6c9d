//! IP masquerade of the container's addresses, through the suite's
//! firewall layer (the same rules, names and comments as bridge's).
//! PLACEHOLDER until `cni-firewall` lands.

use cni_net::{IpNetwork, Netlink};
use skel::CmdArgs;
use skel::types::Result1;

use crate::config::Config;
use crate::error::Error;

pub struct Pending;

impl Pending {
    pub fn wait(self) -> Result<(), Error> {
        Ok(())
    }
}

pub fn setup(_: &CmdArgs, _: &Config, _: &Netlink, _: &Result1) -> Result<Pending, Error> {
    Err(Error::internal("ipMasq is not available yet"))
}

pub fn teardown(_: &CmdArgs, _: &Config, _: &Netlink, _: &[IpNetwork]) -> Result<(), Error> {
    Ok(())
}

pub fn check(_: &CmdArgs, _: &Config, _: &Result1) -> Result<(), Error> {
    Ok(())
}

pub fn gc(_: &Config, _: &[(String, String)]) -> Result<(), Error> {
    Ok(())
}
