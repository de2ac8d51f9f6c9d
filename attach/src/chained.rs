//! The steps every chained plugin shares around `prevResult` (its table is
//! [`crate::Chained`]): reading it in the config's version, requiring it,
//! and converting it to the current (1.x) shape to work on, in the
//! reference's words. ADD's output is `prevResult` itself (in the
//! config's version) when the plugin changes nothing in it.
//!
//! ```no_run
//! # use cni_attach::{Error, chained};
//! # use skel::{CmdArgs, CniResult};
//! fn add(args: &CmdArgs) -> Result<CniResult, Error> {
//!     let net = skel::conf::NetConf::parse(&args.stdin)?;
//!     let prev = chained::require(chained::prev_result(&net)?, "must be called as chained plugin")?;
//!     let current = chained::current(&prev)?;
//!     // ... work on current.ips, current.interfaces ...
//!     # let _ = current;
//!     Ok(prev)
//! }
//! ```

use skel::conf::NetConf;
use skel::types::{CniResult, Result1};

use crate::error::Error;

/// `prevResult` of the config `net`, parsed in the config's version
/// (`could not parse prevResult: …`, a decoding failure's code kept);
/// `None` without one.
pub fn prev_result(net: &NetConf) -> Result<Option<CniResult>, Error> {
    Ok(net.prev_result()?)
}

/// `prev`, or the plugin's error for a call without one (`missing` is its
/// wording: `must be called as chained plugin`, `Required prevResult
/// missing`, ...), a plain error (999) as in the reference.
pub fn require<T>(prev: Option<T>, missing: &str) -> Result<T, Error> {
    prev.ok_or_else(|| Error::internal(missing))
}

/// `prev` in the current (1.x) shape, to read and change:
/// `could not convert result to current version: …` when it cannot be.
pub fn current(prev: &CniResult) -> Result<Result1, Error> {
    Ok(prev
        .clone()
        .into_v1()
        .map_err(|e| e.context("could not convert result to current version"))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(json: &str) -> NetConf {
        NetConf::parse(json.as_bytes()).unwrap()
    }

    #[test]
    fn prev_result_in_the_configs_version_or_the_references_errors() {
        let n = net(
            r#"{"cniVersion":"0.4.0","name":"n","prevResult":{"cniVersion":"1.0.0","ips":[{"address":"10.240.0.2/24"}]}}"#,
        );
        let prev = prev_result(&n).unwrap().unwrap();
        assert_eq!(prev.version(), "0.4.0");
        assert_eq!(current(&prev).unwrap().ips.len(), 1);
        let none = prev_result(&net(r#"{"cniVersion":"1.0.0","name":"n"}"#)).unwrap();
        let e = require(none, "must be called as chained plugin").unwrap_err();
        assert_eq!(
            (e.code, e.msg.as_str()),
            (skel::code::INTERNAL, "must be called as chained plugin")
        );
        let bad =
            net(r#"{"cniVersion":"1.0.0","name":"n","prevResult":{"ips":[{"address":"x"}]}}"#);
        let e = prev_result(&bad).unwrap_err();
        assert!(
            e.msg.starts_with("could not parse prevResult: "),
            "{}",
            e.msg
        );
    }
}
