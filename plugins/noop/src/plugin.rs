//! The noop plugin: start-up (stdin, supported versions) and the behaviour
//! every verb shares (`debugBehavior` in the reference).

use std::io::{Read, Write};

use skel::types::CniResult;
use skel::{CmdArgs, Error, Outcome, Plugin, Reply};

use crate::config;
use crate::debug::{self, Debug, LogEntry, Recorded};

pub const ABOUT: &str = "CNI noop plugin v0.7.0";

/// Reported when no debug file overrides it. `0.-42.0` is deliberately
/// bogus: it lets tests see that a runtime copes with odd version strings.
pub const DEFAULT_VERSIONS: &[&str] = &[
    "0.-42.0", "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0",
];

/// Exit status for a broken test setup. The reference panics, and Go exits
/// 2 on a panic; suites assert that status, so we keep it but print a clear
/// CNI error instead of a stack trace.
pub const SETUP_ERROR_EXIT: i32 = 2;

/// Nameserver that `INJECT-DNS` puts into the passed-through result.
const INJECTED_NAMESERVER: &str = "1.2.3.4";

/// The largest stdin we read; skel reports anything bigger.
const MAX_STDIN: u64 = (64 << 20) + 1;

pub struct Noop {
    versions: Vec<String>,
}

impl Plugin for Noop {
    fn about(&self) -> String {
        ABOUT.to_string()
    }
    fn versions(&self) -> Vec<String> {
        self.versions.clone()
    }
    fn add(&self, args: &CmdArgs) -> Outcome {
        behave(args, "ADD")
    }
    fn del(&self, args: &CmdArgs) -> Outcome {
        behave(args, "DEL")
    }
    fn check(&self, args: &CmdArgs) -> Outcome {
        behave(args, "CHECK")
    }
    fn gc(&self, args: &CmdArgs) -> Outcome {
        behave(args, "GC")
    }
    fn status(&self, args: &CmdArgs) -> Outcome {
        behave(args, "STATUS")
    }
}

/// Read stdin ourselves (the debug file can change which versions skel
/// accepts), then hand over to skel.
pub fn main() -> ! {
    let mut stdin = Vec::new();
    if let Err(e) = std::io::stdin()
        .lock()
        .take(MAX_STDIN)
        .read_to_end(&mut stdin)
    {
        let e = format!(
            "test setup error: unable to read stdin: {}",
            skel::io_text(&e)
        );
        setup_failed(&Error::internal(e));
    }
    let cni_args = std::env::var("CNI_ARGS").unwrap_or_default();
    match supported_versions(&stdin, &cni_args) {
        Ok(versions) => skel::main_with_stdin(&Noop { versions }, &stdin),
        Err(e) => setup_failed(&e),
    }
}

fn setup_failed(e: &Error) -> ! {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(e.to_json().as_bytes());
    let _ = out.flush();
    std::process::exit(SETUP_ERROR_EXIT)
}

/// The reference's `debugGetSupportedVersions`: with a non-empty CNI_ARGS
/// the config must load and the debug file must be readable, whatever the
/// command (even VERSION); its `ReportVersionSupport` replaces the default.
pub fn supported_versions(stdin: &[u8], cni_args: &str) -> Result<Vec<String>, Error> {
    let default = || DEFAULT_VERSIONS.iter().map(|s| s.to_string()).collect();
    if cni_args.is_empty() {
        return Ok(default());
    }
    let (path, _) = config::load_with_debug_path(stdin, cni_args)
        .map_err(|e| e.context("test setup error: unable to get debug file path"))?;
    let debug =
        Debug::read(&path).map_err(|e| e.context("test setup error: unable to read debug file"))?;
    match debug.report_version_support {
        None => Ok(default()),
        Some(v) if v.is_empty() => Err(Error::internal(format!(
            "test setup error: debug file {path}: ReportVersionSupport lists no versions"
        ))),
        Some(v) => Ok(v),
    }
}

fn behave(args: &CmdArgs, command: &str) -> Outcome {
    let (path, conf) = config::load_with_debug_path(&args.stdin, &args.args)?;
    if path.is_empty() {
        let _ = std::io::stderr().write_all(b"CNI_ARGS or config empty, no debug behavior\n");
        return Ok(Reply::Text("{}".into()));
    }

    let mut debug = Debug::read(&path)?;
    debug.command = command.to_string();
    debug.cmd_args = Recorded::of(args);
    debug.write(&path)?;

    if !conf.command_log.is_empty() {
        let entry = LogEntry {
            command: command.to_string(),
            cmd_args: Recorded::of(args),
        };
        debug::append_command_log(&conf.command_log, entry)?;
    }

    if !debug.report_stderr.is_empty() {
        let _ = std::io::stderr().write_all(debug.report_stderr.as_bytes());
    }

    if !debug.report_error.is_empty() {
        return Err(reported_error(debug.report_error, debug.report_error_code));
    }
    let output = match debug.report_result.as_str() {
        "PASSTHROUGH" | "INJECT-DNS" => pass_through(&debug.report_result, &conf)?,
        _ => debug.report_result,
    };

    if debug.exit_with_code > 0 {
        // A simulated crash: whatever was printed, then the status, and no
        // error object (the status is truncated to 8 bits as by exit(2)).
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(output.as_bytes());
        let _ = out.flush();
        std::process::exit((debug.exit_with_code & 0xff) as i32);
    }
    Ok(if output.is_empty() {
        Reply::None
    } else {
        Reply::Text(output)
    })
}

/// The error the test asked for; code 0 means "no code", i.e. 999.
fn reported_error(msg: String, code: u64) -> Error {
    match code {
        0 => Error::new(skel::code::INTERNAL, msg),
        n => match u32::try_from(n) {
            Ok(code) => Error::new(code, msg),
            Err(_) => Error::internal(format!(
                "ReportErrorCode {n} does not fit a CNI error code (reporting {msg:?})"
            )),
        },
    }
}

/// `PASSTHROUGH`: the config's `prevResult`, in the config's version.
/// `INJECT-DNS`: the same with `dns.nameservers` replaced. Printed compact,
/// as the reference's `json.Marshal`.
fn pass_through(mode: &str, conf: &config::Conf) -> Result<String, Error> {
    let prev = conf.prev_result.clone().ok_or_else(|| {
        Error::internal(format!(
            "ReportResult {mode} needs a prevResult in the config, and there is none"
        ))
    })?;
    let result = if mode == "INJECT-DNS" {
        let mut r = prev.into_v1()?;
        r.dns.nameservers = vec![INJECTED_NAMESERVER.to_string()];
        CniResult::V1(r)
    } else {
        prev
    };
    let converted = result.convert(&conf.cni_version).map_err(|e| {
        Error::internal(format!(
            "failed to convert result to config {:?}: {}",
            conf.cni_version, e.msg
        ))
    })?;
    Ok(converted.to_json_compact())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_versions_without_cni_args() {
        // Not even the config is read: VERSION works with garbage stdin.
        let v = supported_versions(b"garbage", "").unwrap();
        assert_eq!(v, DEFAULT_VERSIONS);
    }

    #[test]
    fn setup_errors_are_clear() {
        let e = supported_versions(br#"{"name":"n"}"#, "FOO=BAR").unwrap_err();
        assert_eq!(e.code, skel::code::INTERNAL);
        assert_eq!(
            e.msg,
            "test setup error: unable to read debug file: open : no such file or directory"
        );
        let e = supported_versions(b"", "DEBUG=/x").unwrap_err();
        assert!(
            e.msg.starts_with(
                "test setup error: unable to get debug file path: failed to load netconf: "
            ),
            "{e:?}"
        );
        let e = supported_versions(br#"{"name":"n"}"#, "DEBUG").unwrap_err();
        assert_eq!(
            e.msg,
            "test setup error: unable to get debug file path: CNI_ARGS invalid key/value pair: [DEBUG]"
        );
    }

    #[test]
    fn reported_error_codes() {
        assert_eq!(reported_error("b".into(), 0), Error::new(999, "b"));
        assert_eq!(reported_error("b".into(), 51), Error::new(51, "b"));
        let e = reported_error("b".into(), 1 << 40);
        assert_eq!(e.code, 999);
        assert!(e.msg.contains("does not fit"), "{e:?}");
    }

    fn conf(json: &str) -> config::Conf {
        config::load(json.as_bytes()).unwrap()
    }

    #[test]
    fn pass_through_converts_to_config_version() {
        let c = conf(
            r#"{"name":"n","cniVersion":"0.2.0","prevResult":{"cniVersion":"1.0.0","ips":[{"address":"10.240.0.2/24","gateway":"10.240.0.1"}]}}"#,
        );
        assert_eq!(
            pass_through("PASSTHROUGH", &c).unwrap(),
            r#"{"cniVersion":"0.2.0","ip4":{"ip":"10.240.0.2/24","gateway":"10.240.0.1"},"dns":{}}"#
        );
        assert_eq!(
            pass_through("INJECT-DNS", &c).unwrap(),
            r#"{"cniVersion":"0.2.0","ip4":{"ip":"10.240.0.2/24","gateway":"10.240.0.1"},"dns":{"nameservers":["1.2.3.4"]}}"#
        );
    }

    #[test]
    fn pass_through_without_prev_result_is_an_error() {
        let e = pass_through("PASSTHROUGH", &conf(r#"{"name":"n"}"#)).unwrap_err();
        assert_eq!(e.code, skel::code::INTERNAL);
        assert!(e.msg.contains("needs a prevResult"));
        let c = conf(r#"{"name":"n","cniVersion":"0.2.0","prevResult":{"cniVersion":"1.0.0"}}"#);
        assert_eq!(
            pass_through("PASSTHROUGH", &c).unwrap_err().msg,
            "failed to convert result to config \"0.2.0\": cannot convert: no valid IP addresses"
        );
    }
}
