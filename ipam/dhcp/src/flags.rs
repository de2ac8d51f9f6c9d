//! The daemon's flags, parsed as Go's `flag` package parses them: `-x`
//! or `--x`, `-x=v` or `-x v` (a boolean takes only `-x` or `-x=v`),
//! parsing stops at the first argument that is not a flag or after `--`.
//! Unknown flags and bad values are errors worded as Go's.

use std::path::PathBuf;
use std::time::Duration;

use crate::config::DEFAULT_SOCKET;
use crate::duration;

/// Where the daemon keeps its leases unless `-statedir` says otherwise.
pub const DEFAULT_STATE_DIR: &str = "/var/lib/cni/dhcp";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flags {
    pub pidfile: Option<PathBuf>,
    pub hostprefix: String,
    pub socketpath: PathBuf,
    pub broadcast: bool,
    pub timeout: Duration,
    pub resendmax: Duration,
    pub resendtimeout: Duration,
    /// Ours: where leases are persisted.
    pub statedir: PathBuf,
}

impl Default for Flags {
    fn default() -> Flags {
        Flags {
            pidfile: None,
            hostprefix: String::new(),
            socketpath: PathBuf::from(DEFAULT_SOCKET),
            broadcast: false,
            timeout: Duration::from_secs(10),
            resendmax: Duration::from_secs(62),
            resendtimeout: Duration::from_secs(208),
            statedir: PathBuf::from(DEFAULT_STATE_DIR),
        }
    }
}

/// The usage text (`-h`).
pub const USAGE: &str = "Usage of daemon:
  -broadcast
    \tbroadcast DHCP leases
  -hostprefix string
    \toptional prefix to host root
  -pidfile string
    \toptional path to write daemon PID to
  -resendmax duration
    \toptional dhcp client max resend delay between requests (default 1m2s)
  -resendtimeout duration
    \toptional dhcp client resend timeout, no more retries after this timeout (default 3m28s)
  -socketpath string
    \toptional dhcp server socketpath
  -statedir string
    \twhere leases are kept across restarts (default \"/var/lib/cni/dhcp\")
  -timeout duration
    \toptional dhcp client timeout duration for each request (default 10s)
";

/// What parsing found: flags to run with, or help asked for.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    Run(Flags),
    Help,
}

/// Parse the arguments after `daemon`. The error is Go's message; the
/// caller prints it with [`USAGE`] and exits 2, as `flag.ExitOnError`.
pub fn parse(args: &[String]) -> Result<Parsed, String> {
    let mut f = Flags::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let Some(body) = arg.strip_prefix('-') else {
            break;
        };
        let body = match body.strip_prefix('-') {
            Some("") => break,
            Some(b) => b,
            None if body.is_empty() => break,
            None => body,
        };
        if body.starts_with('-') || body.starts_with('=') {
            return Err(format!("bad flag syntax: {arg}"));
        }
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (body, None),
        };
        if name == "h" || name == "help" {
            return Ok(Parsed::Help);
        }
        if name == "broadcast" {
            f.broadcast = match inline.as_deref() {
                None => true,
                Some(v) => parse_bool(v).ok_or_else(|| {
                    format!(
                        "invalid boolean value {} for -{name}: parse error",
                        skel::gojson::quote(v)
                    )
                })?,
            };
            continue;
        }
        if !matches!(
            name,
            "pidfile"
                | "hostprefix"
                | "socketpath"
                | "timeout"
                | "resendmax"
                | "resendtimeout"
                | "statedir"
        ) {
            return Err(format!("flag provided but not defined: -{name}"));
        }
        let value = match inline {
            Some(v) => v,
            None if i < args.len() => {
                i += 1;
                args[i - 1].clone()
            }
            None => return Err(format!("flag needs an argument: -{name}")),
        };
        let dur = |v: &str| {
            duration::parse(v).map_err(|_| {
                format!(
                    "invalid value {} for flag -{name}: parse error",
                    skel::gojson::quote(v)
                )
            })
        };
        match name {
            "pidfile" => f.pidfile = (!value.is_empty()).then(|| PathBuf::from(&value)),
            "hostprefix" => f.hostprefix = value,
            // An empty path means the default, as in the reference.
            "socketpath" if value.is_empty() => f.socketpath = PathBuf::from(DEFAULT_SOCKET),
            "socketpath" => f.socketpath = PathBuf::from(value),
            "statedir" if value.is_empty() => f.statedir = PathBuf::from(DEFAULT_STATE_DIR),
            "statedir" => f.statedir = PathBuf::from(value),
            "timeout" => f.timeout = dur(&value)?,
            "resendmax" => f.resendmax = dur(&value)?,
            _ => f.resendtimeout = dur(&value)?,
        }
    }
    Ok(Parsed::Run(f))
}

/// Go's `strconv.ParseBool`.
fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Flags, String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse(&args)? {
            Parsed::Run(f) => Ok(f),
            Parsed::Help => Err("help".into()),
        }
    }

    #[test]
    fn defaults_are_the_references() {
        let f = run(&[]).unwrap();
        assert_eq!(f, Flags::default());
        assert_eq!(f.socketpath, PathBuf::from("/run/cni/dhcp.sock"));
        assert_eq!(f.timeout, Duration::from_secs(10));
    }

    #[test]
    fn every_go_spelling_is_taken() {
        let f = run(&[
            "-hostprefix=/host",
            "--socketpath",
            "/x.sock",
            "-broadcast",
            "--timeout=2s",
            "-resendmax",
            "5s",
            "-resendtimeout=1m",
            "-pidfile",
            "/run/d.pid",
            "-statedir=/tmp/s",
        ])
        .unwrap();
        assert_eq!(f.hostprefix, "/host");
        assert_eq!(f.socketpath, PathBuf::from("/x.sock"));
        assert!(f.broadcast);
        assert_eq!(f.timeout, Duration::from_secs(2));
        assert_eq!(f.resendmax, Duration::from_secs(5));
        assert_eq!(f.resendtimeout, Duration::from_secs(60));
        assert_eq!(f.pidfile, Some(PathBuf::from("/run/d.pid")));
        assert_eq!(f.statedir, PathBuf::from("/tmp/s"));
        assert!(!run(&["-broadcast=false"]).unwrap().broadcast);
    }

    #[test]
    fn parsing_stops_at_the_first_non_flag() {
        // `false` after a boolean is an argument, as in Go.
        let f = run(&["-broadcast", "false", "-timeout=1s"]).unwrap();
        assert!(f.broadcast);
        assert_eq!(f.timeout, Duration::from_secs(10));
        let f = run(&["--", "-timeout=1s"]).unwrap();
        assert_eq!(f.timeout, Duration::from_secs(10));
    }

    #[test]
    fn errors_read_as_gos() {
        assert_eq!(
            run(&["-nope"]).unwrap_err(),
            "flag provided but not defined: -nope"
        );
        assert_eq!(
            run(&["-timeout"]).unwrap_err(),
            "flag needs an argument: -timeout"
        );
        assert_eq!(
            run(&["-timeout=soon"]).unwrap_err(),
            "invalid value \"soon\" for flag -timeout: parse error"
        );
        assert_eq!(
            run(&["-broadcast=maybe"]).unwrap_err(),
            "invalid boolean value \"maybe\" for -broadcast: parse error"
        );
        assert_eq!(run(&["---x"]).unwrap_err(), "bad flag syntax: ---x");
        assert_eq!(run(&["-h"]).unwrap_err(), "help");
    }
}
