//! CHECK: every configured value, read back from the kernel.

use cni_net::Netlink;
use skel::CmdArgs;

use crate::add::prev_result;
use crate::config::{self, Config, Plan};
use crate::error::Error;
use crate::{link, sysctl};

pub fn check(args: &CmdArgs) -> Result<(), cni_attach::Error> {
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
            ))
            .into());
        }
    }
    let nl = Netlink::in_netns(ns)?;
    let Some(found) = nl.find_link(&args.ifname)? else {
        return Err(Error::config(format!("Cannot find container link {}", args.ifname)).into());
    };
    link::check(&plan, &conf.mac, &found)?;
    Ok(())
}

/// Values with several fields read back tab-separated
/// (`net.ipv4.tcp_rmem`), however they were written, and integers read
/// back in decimal: the kernel parses them as C does (`0x10` is 16, `010`
/// is 8, `01` is 1). The reference compares the text and fails such
/// configs forever.
fn same_value(want: &str, current: &str) -> bool {
    let (w, c): (Vec<&str>, Vec<&str>) = (
        want.split_whitespace().collect(),
        current.split_whitespace().collect(),
    );
    want == current
        || (w.len() == c.len()
            && w.iter()
                .zip(&c)
                .all(|(w, c)| w == c || c_integer(w).is_some_and(|n| c_integer(c) == Some(n))))
}

/// An integer as the kernel's sysctl handlers read it (`strtoul` with
/// base 0, after an optional `-`); `None` when `s` is not one.
fn c_integer(s: &str) -> Option<i128> {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let (radix, digits) = if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        (16, hex)
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let n = i128::from_str_radix(digits, radix).ok()?;
    Some(if neg { -n } else { n })
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

    #[test]
    fn integers_compare_as_the_kernel_reads_them() {
        use super::same_value;
        for (want, current) in [("01", "1"), ("0x2", "2"), ("010", "8"), ("-05", "-5")] {
            assert!(same_value(want, current), "{want}");
        }
        assert!(same_value("4096 0x4000 010", "4096\t16384\t8"));
        for (want, current) in [("010", "10"), ("0x", "0"), ("x1", "1"), ("08", "8")] {
            assert!(!same_value(want, current), "{want} {current}");
        }
    }
}
