//! CHECK: every configured value, read back from the kernel.

use cni_net::Netlink;
use skel::{CmdArgs, Reply};

use crate::add::prev_result;
use crate::config::{self, Config, Plan};
use crate::error::Error;
use crate::{link, sysctl};

pub fn check(args: &CmdArgs) -> Result<Reply, Error> {
    config::check_duplicate_sysctl_keys(&args.stdin)?;
    let conf = Config::parse(&args.stdin, &args.args)?;
    prev_result(&conf)?.into_v1()?;
    let plan = Plan::new(&conf, &args.ifname)?;
    let ns = args.netns.file()?;
    for (file, want) in &plan.sysctls {
        let current = sysctl::read_in(ns, file)?;
        if !same_value(want, &current) {
            return Err(Error::config(format!(
                "Error: Tuning configured value of {file} is {want}, current value is {current}"
            )));
        }
    }
    let nl = Netlink::in_netns(ns)?;
    let Some(found) = nl.find_link(&args.ifname)? else {
        return Err(Error::config(format!(
            "Cannot find container link {}",
            args.ifname
        )));
    };
    link::check(&plan, &conf.mac, &found)?;
    Ok(Reply::None)
}

/// Values with several fields read back tab-separated
/// (`net.ipv4.tcp_rmem`), however they were written; the reference
/// compares the text and fails such configs forever.
fn same_value(want: &str, current: &str) -> bool {
    want == current || want.split_whitespace().eq(current.split_whitespace())
}

#[cfg(test)]
mod tests {
    #[test]
    fn multi_field_values_compare_by_field() {
        assert!(super::same_value(
            "4096 87380 6291456",
            "4096\t87380\t6291456"
        ));
        assert!(super::same_value("1", "1"));
        assert!(!super::same_value("1", "0"));
        assert!(!super::same_value("1 2", "1\t2\t3"));
    }
}
