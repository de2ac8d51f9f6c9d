//! The plugin's errors and their CNI codes.

use std::fmt;
use std::net::IpAddr;

#[derive(Debug)]
pub enum Error {
    /// A namespace or netlink operation failed.
    Net(cni_net::Error),
    /// `lo` carries an address that is not a loopback address.
    NonLoopbackAddress(IpAddr),
    /// CHECK found `lo` down.
    Down,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Net(e) => write!(f, "{e}"),
            Error::NonLoopbackAddress(ip) => write!(
                f,
                "loopback interface found with non-loopback address \"{ip}\""
            ),
            Error::Down => write!(f, "loopback interface is down"),
        }
    }
}

impl From<cni_net::Error> for Error {
    fn from(e: cni_net::Error) -> Error {
        Error::Net(e)
    }
}

/// None of these has a dedicated spec code; the reference reports them as
/// plain errors (999).
impl From<Error> for skel::Error {
    fn from(e: Error) -> skel::Error {
        skel::Error::internal(e.to_string())
    }
}
