//! The IPAM plugin: every command is one call to the daemon, which holds
//! the leases. ADD and CHECK call `DHCP.Allocate`, DEL `DHCP.Release`, as
//! the reference does; STATUS checks that the daemon answers, GC asks it
//! to release the leases of attachments the runtime no longer has.

use std::time::Duration;

use skel::conf::NetConf;
use skel::{CmdArgs, Error, Outcome, Plugin, Reply, Result1, code};

use crate::config::Config;
use crate::gob::Value;
use crate::rpc::{CallError, Client};
use crate::wire::{self, ALLOCATE, GC, RELEASE};

/// What STATUS says when the daemon does not answer.
pub const NOT_RUNNING: &str =
    "is the dhcp daemon running? start it with `dhcp daemon` or enable cni-dhcp.socket";
/// STATUS waits no longer than this for the daemon's handshake.
const STATUS_TIMEOUT: Duration = Duration::from_secs(10);

/// The plugin: skel calls one method per CNI command.
pub struct Dhcp;

impl Plugin for Dhcp {
    fn about(&self) -> String {
        skel::about("dhcp")
    }

    fn add(&self, args: &CmdArgs) -> Outcome {
        Ok(Reply::Result(allocate(args)?.into()))
    }

    /// A lease the daemon cannot release because nobody answers on its
    /// socket is not an error: DEL must not fail for ever while the
    /// daemon is away (see the README).
    fn del(&self, args: &CmdArgs) -> Outcome {
        match call(args, RELEASE) {
            Ok(_) => Ok(Reply::None),
            Err(Failure::Dial(msg, true)) => {
                eprintln!(
                    "dhcp: lease of {}/{} not released: error dialing DHCP daemon: {msg}; \
                     the server takes the address back when the lease expires",
                    args.container_id, args.ifname
                );
                Ok(Reply::None)
            }
            Err(f) => Err(f.into_error(RELEASE)),
        }
    }

    /// The lease must be held (the daemon takes a new one if it lapsed)
    /// and be the address of `prevResult` when there is one.
    fn check(&self, args: &CmdArgs) -> Outcome {
        let lease = allocate(args)?;
        let conf = NetConf::parse(&args.stdin)?;
        if let Some(prev) = conf.prev_result()? {
            let prev = prev.into_v1()?;
            for ip in &lease.ips {
                if !prev.ips.iter().any(|p| p.address.ip() == ip.address.ip()) {
                    return Err(Error::internal(format!(
                        "dhcp: lease address {} of {} is not in prevResult",
                        ip.address.0, args.ifname
                    )));
                }
            }
        }
        Ok(Reply::None)
    }

    fn status(&self, args: &CmdArgs) -> Outcome {
        let conf = socket_conf(&args.stdin)?;
        let timeout = conf.daemon_timeout.min(STATUS_TIMEOUT);
        match Client::dial(&conf.socket_path, timeout) {
            Ok(_) => Ok(Reply::None),
            Err(e) => Err(Error::with_details(
                code::PLUGIN_NOT_AVAILABLE,
                NOT_RUNNING,
                format!("error dialing DHCP daemon: {e}"),
            )),
        }
    }

    /// The daemon releases the leases of this network whose attachment is
    /// not in `cni.dev/valid-attachments`. A daemon without GC (the
    /// reference's) has nothing to collect.
    fn gc(&self, args: &CmdArgs) -> Outcome {
        match call(args, GC) {
            Ok(_) => Ok(Reply::None),
            Err(Failure::Call(CallError::Server(e)))
                if e == format!("rpc: can't find method {GC}") =>
            {
                Ok(Reply::None)
            }
            Err(f) => Err(f.into_error(GC)),
        }
    }
}

fn allocate(args: &CmdArgs) -> Result<Result1, Error> {
    let reply = call(args, ALLOCATE).map_err(|f| f.into_error(ALLOCATE))?;
    wire::result_from(&reply)
        .map_err(|e| Error::internal(format!("error calling {ALLOCATE}: a reply with {e}")))
}

fn socket_conf(stdin: &[u8]) -> Result<Config, Error> {
    Config::parse(stdin).map_err(|e| {
        Error::internal(format!(
            "error obtaining socketPath: error parsing socket path conf: {e}"
        ))
    })
}

/// How a call went wrong, before it becomes the reference's message.
enum Failure {
    Early(Error),
    /// Dial error text, and whether nobody is there at all.
    Dial(String, bool),
    Call(CallError),
}

impl Failure {
    fn into_error(self, method: &str) -> Error {
        match self {
            Failure::Early(e) => e,
            Failure::Dial(msg, _) => Error::internal(format!("error dialing DHCP daemon: {msg}")),
            Failure::Call(e) => Error::internal(format!("error calling {method}: {e}")),
        }
    }
}

/// One call of `method` with the invocation's arguments, as the
/// reference's `rpcCall`: socket path from the config, dial, the netns
/// path made absolute, call.
fn call(args: &CmdArgs, method: &str) -> Result<Value, Failure> {
    let conf = socket_conf(&args.stdin).map_err(Failure::Early)?;
    let mut client = Client::dial(&conf.socket_path, conf.daemon_timeout).map_err(|e| match e {
        CallError::Dial { msg, absent } => Failure::Dial(msg, absent),
        e => Failure::Call(e),
    })?;
    let netns = absolute(&args.netns_path).map_err(|e| {
        Failure::Early(Error::internal(format!(
            "failed to make {} an absolute path: {e}",
            skel::gojson::quote(&args.netns_path)
        )))
    })?;
    let cmd = wire::CmdArgs {
        container_id: args.container_id.clone(),
        netns,
        ifname: args.ifname.clone(),
        args: args.args.clone(),
        path: args.path.clone(),
        stdin_data: args.stdin.clone(),
    };
    client
        .call(method, wire::CMD_ARGS, &cmd.to_value())
        .map_err(Failure::Call)
}

/// Go's `filepath.Abs`: the path joined to the working directory when
/// relative (so `""`, legal on DEL, is the working directory), cleaned.
pub fn absolute(path: &str) -> Result<String, String> {
    if path.starts_with('/') {
        return Ok(clean(path));
    }
    let cwd = std::env::current_dir().map_err(|e| skel::io_text(&e))?;
    Ok(clean(&format!("{}/{path}", cwd.display())))
}

/// Go's `filepath.Clean` of a path: one slash between elements, no `.`,
/// `..` resolved lexically (and dropped at the root), `.` for nothing.
pub fn clean(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&p) if p != ".." => {
                    parts.pop();
                }
                _ if rooted => {}
                _ => parts.push(".."),
            },
            p => parts.push(p),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_is_gos() {
        for (p, want) in [
            ("/var/run/netns/x", "/var/run/netns/x"),
            ("//a//b/", "/a/b"),
            ("/a/./b/../c", "/a/c"),
            ("/../a", "/a"),
            ("a/../../b", "../b"),
            ("", "."),
            ("/", "/"),
            ("./", "."),
        ] {
            assert_eq!(clean(p), want, "{p:?}");
        }
    }

    #[test]
    fn relative_paths_join_the_working_directory() {
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(absolute("").unwrap(), clean(&cwd.display().to_string()));
        assert_eq!(
            absolute("x/../ns").unwrap(),
            clean(&format!("{}/ns", cwd.display()))
        );
    }
}
