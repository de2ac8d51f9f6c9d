//! `skel`: the CNI plugin framework shared by every binary in this suite.
//!
//! A plugin implements [`Plugin`] and calls [`main`]. skel reads the
//! `CNI_*` environment and stdin, validates them exactly as the reference
//! Go skel does (same order, codes and messages), checks versions, vets
//! `CNI_NETNS` *before* the plugin runs, dispatches ADD/DEL/CHECK/STATUS/GC/
//! VERSION, converts an ADD result to the config's version and prints one
//! JSON document (result or error) on stdout.
//!
//! Modules: [`types`] (results of every version and their conversions),
//! [`conf`] (shared config keys, `prevResult`), [`args`] (CNI_ARGS),
//! [`version`], [`exec`] (running a program), [`invoke`] (delegation to
//! IPAM plugins through it), [`netns`] (the `CNI_NETNS` check), [`error`],
//! [`failpoint`] (failure and kill injection for tests, debug builds
//! only), the process-wide policies [`orphans`] (whether a child may be
//! left for another to reap) and [`deadline`] (how long any wait lasts),
//! [`statefile`] (state files written, locked and read safely),
//! [`gojson`] (Go's JSON decoding and encoding rules, for every config read
//! and every document printed), and two encodings the reference's on-disk
//! and on-wire names depend on: [`sha512`] and [`base64`].

pub mod args;
pub mod base64;
pub mod conf;
pub mod deadline;
pub mod error;
pub mod exec;
pub mod failpoint;
pub mod gojson;
pub mod invoke;
pub mod netns;
pub mod orphans;
pub mod sha512;
pub mod statefile;
pub mod types;
pub mod version;

use std::io::{Read, Write};

pub use error::{Error, code};
pub use netns::Netns;
pub use types::{CniResult, Result1};

/// What a command hands back to skel. One per process, so the size
/// difference between variants does not matter.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Reply {
    /// Print nothing (DEL, CHECK, STATUS and GC on success).
    None,
    /// A result; skel converts it to the config's `cniVersion` and prints it.
    Result(CniResult),
    /// Text printed verbatim (the noop test plugin's canned output).
    Text(String),
}

pub type Outcome = Result<Reply, Error>;

/// The arguments of one invocation.
#[derive(Debug, Default)]
pub struct CmdArgs {
    pub container_id: String,
    /// `CNI_NETNS` as given.
    pub netns_path: String,
    pub ifname: String,
    /// Raw `CNI_ARGS`; parse with [`args::Args::parse`].
    pub args: String,
    pub path: String,
    pub netns_override: String,
    pub stdin: Vec<u8>,
    /// The config's `cniVersion` (`""` when absent).
    pub cni_version: String,
    /// `CNI_NETNS`, opened and vetted, for plugins that declare
    /// [`Plugin::USES_NETNS`] (ADD, DEL, CHECK); otherwise `Unset`.
    pub netns: Netns,
}

/// A CNI plugin. Commands not overridden succeed without output, like a nil
/// function in the reference skel.
pub trait Plugin {
    /// Whether skel must open and vet `CNI_NETNS` before ADD/DEL/CHECK and
    /// hand it over in [`CmdArgs::netns`]. Either way, skel refuses a
    /// `CNI_NETNS` naming the plugin's own namespace before ADD and DEL.
    const USES_NETNS: bool = false;

    /// Whether DEL takes a `CNI_NETNS` that exists but is no namespace (a
    /// netns bind mount unmounted, its file left behind) for a gone
    /// namespace, as a missing path. For plugins whose Go DEL succeeds
    /// there (tuning, bandwidth), and those whose cleanup needs no
    /// namespace (bridge, ptp: addresses, firewall rules); the others
    /// answer code 8, as the reference's fail.
    const DEL_TAKES_NON_NAMESPACE_AS_GONE: bool = false;

    /// `CNI <name> plugin <version>`, printed when `CNI_COMMAND` is unset.
    fn about(&self) -> String;

    /// Versions accepted in configs and reported by VERSION.
    fn versions(&self) -> Vec<String> {
        version::ALL.iter().map(|s| s.to_string()).collect()
    }

    fn add(&self, _args: &CmdArgs) -> Outcome {
        Ok(Reply::None)
    }
    fn del(&self, _args: &CmdArgs) -> Outcome {
        Ok(Reply::None)
    }
    fn check(&self, _args: &CmdArgs) -> Outcome {
        Ok(Reply::None)
    }
    fn status(&self, _args: &CmdArgs) -> Outcome {
        Ok(Reply::None)
    }
    fn gc(&self, _args: &CmdArgs) -> Outcome {
        Ok(Reply::None)
    }
}

/// Run `plugin` against the process environment, stdin and stdout, then exit.
pub fn main<P: Plugin>(plugin: &P) -> ! {
    let stdin = std::io::stdin();
    let code = run(
        plugin,
        &|k| std::env::var(k).ok(),
        &mut stdin.lock(),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
    std::process::exit(code)
}

/// Defines the C `main` of a plugin binary built with `#![no_main]`,
/// which runs [`main`] with `plugin`. Every call is a fresh process, and
/// std's own startup, skipped this way, reads and parses
/// `/proc/self/maps` to find the main thread's stack guard: 0.14 ms of a
/// 2.7 ms ptp ADD. What of it matters, SIGPIPE ignored (a delegated plugin
/// that exits before reading its stdin must not kill us), [`no_std_startup`]
/// does.
///
/// ```ignore
/// #![no_main]
/// skel::plugin_main!(ptp::PLUGIN);
/// ```
#[macro_export]
macro_rules! plugin_main {
    ($plugin:expr) => {
        #[unsafe(no_mangle)]
        extern "C" fn main(
            _argc: ::std::ffi::c_int,
            _argv: *const *const ::std::ffi::c_char,
        ) -> ::std::ffi::c_int {
            $crate::no_std_startup();
            $crate::main(&$plugin)
        }
    };
}

/// What [`plugin_main`] keeps of std's startup: SIGPIPE ignored, so that
/// writing to a closed pipe is an `EPIPE` error instead of death.
pub fn no_std_startup() {
    use nix::sys::signal::{SigHandler, Signal, signal};
    // SAFETY: called first thing in `main`, before any other thread exists;
    // SIG_IGN installs no handler code.
    let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigIgn) };
}

/// Like [`main`], with a stdin the caller already read (the noop plugin
/// reads it before skel, as the reference noop does).
pub fn main_with_stdin<P: Plugin>(plugin: &P, stdin: &[u8]) -> ! {
    let code = run(
        plugin,
        &|k| std::env::var(k).ok(),
        &mut &stdin[..],
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
    std::process::exit(code)
}

/// The maximum config we read; larger input is an I/O error, not an OOM.
const MAX_STDIN: u64 = 64 << 20;

/// Everything [`main`] does, with injectable I/O. Returns the exit code.
pub fn run<P: Plugin>(
    plugin: &P,
    env: &dyn Fn(&str) -> Option<String>,
    stdin: &mut dyn Read,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> i32 {
    match dispatch(plugin, env, stdin) {
        Ok(Exit::Print(text)) => {
            if stdout
                .write_all(text.as_bytes())
                .and_then(|_| stdout.flush())
                .is_err()
            {
                return 1;
            }
            0
        }
        Ok(Exit::About) => {
            let versions = plugin.versions().join(", ");
            let _ = writeln!(
                stderr,
                "{}\nCNI protocol versions supported: {versions}",
                plugin.about()
            );
            0
        }
        Err(e) => {
            let _ = stdout.write_all(e.to_json().as_bytes());
            let _ = stdout.flush();
            1
        }
    }
}

enum Exit {
    Print(String),
    About,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Cmd {
    Add,
    Del,
    Check,
    Status,
    Gc,
    Version,
    Other,
}

impl Cmd {
    fn parse(s: &str) -> Cmd {
        match s {
            "ADD" => Cmd::Add,
            "DEL" => Cmd::Del,
            "CHECK" => Cmd::Check,
            "STATUS" => Cmd::Status,
            "GC" => Cmd::Gc,
            "VERSION" => Cmd::Version,
            _ => Cmd::Other,
        }
    }

    fn requires(self, var: &str) -> bool {
        use Cmd::*;
        match var {
            "CNI_CONTAINERID" | "CNI_IFNAME" => matches!(self, Add | Del | Check),
            "CNI_NETNS" => matches!(self, Add | Check),
            "CNI_PATH" => matches!(self, Add | Del | Check | Status | Gc),
            _ => false,
        }
    }
}

const ENV_ORDER: [&str; 7] = [
    "CNI_COMMAND",
    "CNI_CONTAINERID",
    "CNI_NETNS",
    "CNI_IFNAME",
    "CNI_ARGS",
    "CNI_PATH",
    "CNI_NETNS_OVERRIDE",
];

fn dispatch<P: Plugin>(
    plugin: &P,
    env: &dyn Fn(&str) -> Option<String>,
    stdin: &mut dyn Read,
) -> Result<Exit, Error> {
    let get = |k: &str| env(k).unwrap_or_default();
    let command = get("CNI_COMMAND");
    let cmd = Cmd::parse(&command);

    let mut missing = Vec::new();
    for var in ENV_ORDER {
        let value = get(var);
        let required = var == "CNI_COMMAND" || cmd.requires(var);
        if value.is_empty() {
            if required {
                missing.push(var);
            }
            continue;
        }
        if required {
            match var {
                "CNI_CONTAINERID" => validate_container_id(&value)?,
                "CNI_IFNAME" => validate_ifname(&value)?,
                _ => {}
            }
        }
    }
    if !missing.is_empty() {
        if command.is_empty() && !plugin.about().is_empty() {
            return Ok(Exit::About);
        }
        return Err(Error::new(
            code::INVALID_ENVIRONMENT,
            format!("required env variables [{}] missing", missing.join(",")),
        ));
    }

    if cmd == Cmd::Version {
        // `json.NewEncoder(w).Encode`: compact, one newline.
        let body = serde_json::json!({
            "cniVersion": version::CURRENT,
            "supportedVersions": plugin.versions(),
        });
        return Ok(Exit::Print(format!("{}\n", gojson::marshal(&body))));
    }

    let mut data = Vec::new();
    if let Err(e) = stdin.take(MAX_STDIN + 1).read_to_end(&mut data) {
        return Err(Error::new(
            code::IO_FAILURE,
            format!("error reading from stdin: {}", io_text(&e)),
        ));
    }
    if data.len() as u64 > MAX_STDIN {
        return Err(Error::new(
            code::IO_FAILURE,
            format!("error reading from stdin: config is larger than {MAX_STDIN} bytes"),
        ));
    }
    let config = validate_config(&data)?;
    let cni_version = match decode_version(&config) {
        Ok(v) => v,
        // The reference reports an unknown command before it decodes the
        // version; keep that order.
        Err(_) if cmd == Cmd::Other => String::new(),
        Err(e) => return Err(e),
    };

    let mut args = CmdArgs {
        container_id: get("CNI_CONTAINERID"),
        netns_path: get("CNI_NETNS"),
        ifname: get("CNI_IFNAME"),
        args: get("CNI_ARGS"),
        path: get("CNI_PATH"),
        netns_override: get("CNI_NETNS_OVERRIDE"),
        stdin: data,
        cni_version,
        netns: Netns::Unset,
    };

    let versions = plugin.versions();
    let outcome = match cmd {
        Cmd::Add | Cmd::Del => {
            check_supported(&args.cni_version, &versions)?;
            vet_netns::<P>(cmd, &mut args)?;
            if cmd == Cmd::Add {
                plugin.add(&args)
            } else {
                plugin.del(&args)
            }
        }
        Cmd::Check | Cmd::Status | Cmd::Gc => {
            let (min, name) = match cmd {
                Cmd::Check => ("0.4.0", "CHECK"),
                Cmd::Status => ("1.1.0", "STATUS"),
                _ => ("1.1.0", "GC"),
            };
            let decoding = |e: String| Error::new(code::DECODING_FAILURE, e);
            if !version::greater_or_equal(&args.cni_version, min).map_err(decoding)? {
                return Err(Error::new(
                    code::INCOMPATIBLE_VERSION,
                    format!("config version does not allow {name}"),
                ));
            }
            let mut allowed = false;
            for v in &versions {
                if version::greater_or_equal(v, &args.cni_version).map_err(decoding)? {
                    allowed = true;
                    break;
                }
            }
            if !allowed {
                return Err(Error::new(
                    code::INCOMPATIBLE_VERSION,
                    format!("plugin version does not allow {name}"),
                ));
            }
            check_supported(&args.cni_version, &versions)?;
            match cmd {
                Cmd::Check => {
                    vet_netns::<P>(cmd, &mut args)?;
                    plugin.check(&args)
                }
                Cmd::Status => plugin.status(&args),
                _ => plugin.gc(&args),
            }
        }
        Cmd::Version | Cmd::Other => {
            return Err(Error::new(
                code::INVALID_ENVIRONMENT,
                format!("unknown CNI_COMMAND: {command}"),
            ));
        }
    }?;

    Ok(Exit::Print(match outcome {
        Reply::None => String::new(),
        Reply::Text(t) => t,
        Reply::Result(r) => r.convert(&args.cni_version)?.to_json_pretty(),
    }))
}

/// `CNI_NETNS` before the plugin runs: opened and vetted for plugins that
/// use it (ADD, DEL, CHECK); for the others, the reference skel's refusal
/// of the plugin's own namespace on ADD and DEL. `CNI_NETNS_OVERRIDE`
/// (`true` in any case, or `1`) lets the own namespace through.
fn vet_netns<P: Plugin>(cmd: Cmd, args: &mut CmdArgs) -> Result<(), Error> {
    let allow_own = args.netns_override.eq_ignore_ascii_case("true") || args.netns_override == "1";
    if P::USES_NETNS {
        args.netns = match netns::open(&args.netns_path, allow_own) {
            // A path that is there but reaches no namespace: gone.
            Err(_)
                if P::DEL_TAKES_NON_NAMESPACE_AS_GONE
                    && matches!(cmd, Cmd::Del)
                    && netns::is_other_fs(&args.netns_path) =>
            {
                Netns::Missing(args.netns_path.clone())
            }
            other => other?,
        };
    } else if !allow_own && matches!(cmd, Cmd::Add | Cmd::Del) {
        netns::refuse_own(&args.netns_path)?;
    }
    Ok(())
}

fn check_supported(cni_version: &str, versions: &[String]) -> Result<(), Error> {
    let cfg = if cni_version.is_empty() {
        "0.1.0"
    } else {
        cni_version
    };
    if versions.iter().any(|v| v == cfg) {
        return Ok(());
    }
    Err(Error::with_details(
        code::INCOMPATIBLE_VERSION,
        "incompatible CNI versions",
        format!(
            "config is {cfg:?}, plugin supports {}",
            version::quote_list(versions)
        ),
    ))
}

/// The reference's `validateConfig`: stdin must decode into a struct with
/// a `name` string (matched as Go matches keys), which must be a valid
/// network name. Returns the parsed document.
fn validate_config(data: &[u8]) -> Result<serde_json::Value, Error> {
    let unmarshal = |e: gojson::DecodeError| {
        Error::new(
            code::DECODING_FAILURE,
            format!("error unmarshall network config: {e}"),
        )
    };
    let doc = gojson::parse(data).map_err(unmarshal)?;
    let conf = gojson::Object::new(&doc, r#"struct { Name string "json:\"name\"" }"#)
        .map_err(unmarshal)?;
    validate_network_name(&conf.field::<String>("name").map_err(unmarshal)?)?;
    Ok(doc)
}

/// `cniVersion` from the config, as the reference's `ConfigDecoder`
/// decodes it; absent or `""` is returned as `""` and treated as 0.1.0 by
/// the version checks.
fn decode_version(doc: &serde_json::Value) -> Result<String, Error> {
    let decoding = |e: gojson::DecodeError| {
        Error::new(
            code::DECODING_FAILURE,
            format!("decoding version from network config: {e}"),
        )
    };
    gojson::Object::new(doc, r#"struct { CNIVersion string "json:\"cniVersion\"" }"#)
        .and_then(|conf| conf.field("cniVersion"))
        .map_err(decoding)
}

fn valid_name_chars(s: &str) -> bool {
    let mut bytes = s.bytes();
    match bytes.next() {
        Some(b) if b.is_ascii_alphanumeric() => {}
        _ => return false,
    }
    bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// Container IDs: `^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$`.
pub fn validate_container_id(id: &str) -> Result<(), Error> {
    if id.is_empty() {
        return Err(Error::new(code::UNKNOWN_CONTAINER, "missing containerID"));
    }
    if !valid_name_chars(id) {
        return Err(Error::with_details(
            code::INVALID_ENVIRONMENT,
            "invalid characters in containerID",
            id,
        ));
    }
    Ok(())
}

/// Network names: same characters as container IDs, so a name can never
/// be a path.
pub fn validate_network_name(name: &str) -> Result<(), Error> {
    if name.is_empty() {
        return Err(Error::new(
            code::INVALID_NETWORK_CONFIG,
            "missing network name",
        ));
    }
    if !valid_name_chars(name) {
        return Err(Error::with_details(
            code::INVALID_NETWORK_CONFIG,
            "invalid characters found in network name",
            name,
        ));
    }
    Ok(())
}

/// Interface names: 1 to 15 bytes, not `.`/`..`, no `/`, `:` or whitespace.
pub fn validate_ifname(name: &str) -> Result<(), Error> {
    let env = code::INVALID_ENVIRONMENT;
    if name.is_empty() {
        return Err(Error::new(env, "interface name is empty"));
    }
    if name.len() > 15 {
        return Err(Error::with_details(
            env,
            "interface name is too long",
            "interface name should be less than 16 characters",
        ));
    }
    if name == "." || name == ".." {
        return Err(Error::new(env, "interface name is . or .."));
    }
    if name
        .chars()
        .any(|c| c == '/' || c == ':' || c.is_whitespace())
    {
        return Err(Error::new(
            env,
            "interface name contains / or : or whitespace characters",
        ));
    }
    Ok(())
}

/// The release of the reference plugins whose behaviour this suite
/// matches. It leads every plugin's version: tools decide what a plugin
/// can do from it (nerdctl enables the firewall plugin's `isolated`
/// ingress policy only for `v1.7.1` or later).
pub const REFERENCE_VERSION: &str = "1.9.1";

/// This suite's own version: the release's, which `scripts/release.sh`
/// passes to the build in `CNIRS_VERSION`, else the crates' version (a
/// build from a checkout).
pub const VERSION: &str = match option_env!("CNIRS_VERSION") {
    Some(v) if !v.is_empty() => v,
    _ => env!("CARGO_PKG_VERSION"),
};

/// The git commit the binaries were built from (`CNIRS_COMMIT`, which the
/// build scripts set; `-dirty` when the tree had changes), else `unknown`.
pub const COMMIT: &str = match option_env!("CNIRS_COMMIT") {
    Some(c) if !c.is_empty() => c,
    _ => "unknown",
};

/// A plugin's about text, `CNI <name> plugin v<reference>+cni-rs.<ours>`:
/// the reference release it stands in for, with this suite's own version
/// ([`VERSION`]) as semver build metadata, which orders like the bare
/// reference version.
pub fn about(name: &str) -> String {
    format!("CNI {name} plugin v{REFERENCE_VERSION}+cni-rs.{VERSION}")
}

/// Go's lowercase errno wording (`no such file or directory`).
pub fn errno_text(e: nix::errno::Errno) -> String {
    match e {
        // nix words errno 95 after the BSD socket meaning; Linux (and Go)
        // say "operation not supported".
        nix::errno::Errno::EOPNOTSUPP => "operation not supported".to_string(),
        _ => lower_first(e.desc()),
    }
}

/// An `io::Error` in Go's wording, without Rust's `(os error N)` suffix.
pub fn io_text(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => errno_text(nix::errno::Errno::from_raw(n)),
        None => e.to_string(),
    }
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests;
