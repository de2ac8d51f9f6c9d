//! Shared setup of the macvlan plugin's root tests: a [`PluginHost`] (the
//! plugin runs in a throwaway "host" namespace) whose master `master0` is
//! a veth ([`testsupport::onelink`]).

#![allow(dead_code)]

use std::path::Path;

use serde_json::Value;
#[allow(unused_imports)]
pub use testsupport::onelink::{MASTER, is_empty, link_json, segment};
#[allow(unused_imports)]
pub use testsupport::{PluginHost, has_link, ip_of, links, ping, ping_unanswered, with_prev};

pub fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_macvlan"))
}

/// A host running macvlan, with `master0` up.
pub fn host(tag: &str) -> PluginHost {
    testsupport::onelink::host(tag, bin())
}

/// A macvlan config on `master0` in `version`, host-local on `subnets`;
/// `extra` keys merged on top.
pub fn conf(h: &PluginHost, version: &str, subnets: &[&str], extra: Value) -> Value {
    testsupport::onelink::conf(h, "macvlan", version, subnets, extra)
}
