//! `cni-plugins`: every plugin of the suite in one multi-call executable,
//! installed once and hard-linked under each plugin's name (as k3s ships
//! its plugins). Which plugin runs is the base name of `argv[0]`, so a
//! runtime that execs `/opt/cni/bin/bridge`, or copies that one file
//! elsewhere under the same name, gets the bridge plugin.
//!
//! One file instead of ten: the suite is a fraction of the size of ten
//! statically linked binaries that each carry skel, serde and cni-net,
//! and a page of shared code mapped by one plugin is already in the page
//! cache for the next. IPAM plugins that delegation finds to be this same
//! file run in-process instead of being exec'd ([`skel::invoke::in_process`]).
//!
//! The per-plugin binaries of each crate still exist (tests exec them); the
//! plugin code is in each crate's library.

use std::io::{Read, Write};

use skel::invoke::Entry;

/// The table of plugins: name, then the value implementing `skel::Plugin`.
/// `$ipam` marks the plugins delegation may run in-process (IPAM plugins
/// only: they neither change namespaces nor outlive their call).
macro_rules! plugins {
    ($($name:literal => $plugin:expr, $ipam:literal;)*) => {
        /// Every plugin name this executable answers to.
        pub const NAMES: &[&str] = &[$($name),*];

        /// The whole run of plugin `name` (as [`skel::run`]), `None` for a
        /// name that is not ours.
        pub fn entry(name: &str) -> Option<Entry> {
            match name {
                $($name => Some(|env, stdin, stdout, stderr| skel::run(&$plugin, env, stdin, stdout, stderr)),)*
                _ => None,
            }
        }

        /// The plugins delegation may run in-process.
        pub fn ipam_entry(name: &str) -> Option<Entry> {
            match name {
                $($name if $ipam => entry(name),)*
                _ => None,
            }
        }
    };
}

plugins! {
    "bridge" => bridge::PLUGIN, false;
    "ptp" => ptp::PLUGIN, false;
    "portmap" => portmap::PLUGIN, false;
    "bandwidth" => bandwidth::PLUGIN, false;
    "tuning" => tuning::PLUGIN, false;
    "loopback" => loopback::Loopback, false;
    "host-local" => host_local::HostLocal, true;
    "static" => static_ipam::Static, true;
    "dhcp" => dhcp::Dhcp, true;
    "firewall" => firewall::PLUGIN, false;
    "host-device" => host_device::PLUGIN, false;
    "tap" => tap::PLUGIN, false;
    "sbr" => sbr::PLUGIN, false;
    "vrf" => vrf::PLUGIN, false;
    "macvlan" => macvlan::PLUGIN, false;
    "ipvlan" => ipvlan::PLUGIN, false;
    "vlan" => vlan::PLUGIN, false;
    "dummy" => dummy::PLUGIN, false;
}

/// The plugin named by the last component of `argv0`.
pub fn name_of(argv0: &str) -> &str {
    argv0.rsplit('/').next().unwrap_or(argv0)
}

/// The long-running programs behind a plugin's name, with entry points
/// of their own (not skel's one-shot frame): `dhcp daemon [flags]`.
fn daemon(name: &str, args: &[String]) -> Option<i32> {
    match (name, args.first().map(String::as_str)) {
        ("dhcp", Some("daemon")) => Some(dhcp::daemon::main(&args[1..])),
        _ => None,
    }
}

/// Run as `argv0` names us, with the arguments after it; the exit code.
/// When `argv0` names no plugin (a caller that chose its own `argv[0]`,
/// or none), the name of the file exec'd decides (`/proc/self/exe`: the
/// hard link's own name, a symlink's target). Under another name (the
/// file `cni-plugins` itself) it is the suite's own command ([`own_name`]).
pub fn run(argv0: &str, args: &[String]) -> i32 {
    let name = Some(name_of(argv0))
        .filter(|n| NAMES.contains(n))
        .map(str::to_string)
        .or_else(|| {
            let exe = std::fs::read_link("/proc/self/exe").ok()?;
            Some(name_of(exe.to_str()?).to_string()).filter(|n| NAMES.contains(&n.as_str()))
        });
    let Some(name) = name else {
        return own_name(name_of(argv0), args);
    };
    if let Some(code) = daemon(&name, args) {
        return code;
    }
    let Some(entry) = entry(&name) else {
        return own_name(&name, args);
    };
    skel::invoke::in_process(ipam_entry);
    // None of the three is locked for the whole run: an IPAM plugin run
    // in-process on another thread may use the same streams (eprintln!)
    // while this thread waits for it; each write or read locks on its own.
    entry(
        &|k| std::env::var(k).ok(),
        &mut std::io::stdin() as &mut dyn Read,
        &mut std::io::stdout() as &mut dyn Write,
        &mut std::io::stderr(),
    )
}

/// The name the multi-call binary is installed under.
pub const MULTI: &str = "cni-plugins";

/// The suite's own commands: `--list` prints the plugin names, `--version`
/// the release and the commit it was built from, `install` installs the
/// suite into a plugin directory and `sleep` waits for SIGTERM (the
/// installer image's entrypoint and its DaemonSet's main container, see
/// `cni_install`). Anything else is explained: as a CNI error on stdout
/// when called as a plugin (`CNI_COMMAND` set), on stderr otherwise.
fn own_name(name: &str, args: &[String]) -> i32 {
    match args.first().map(String::as_str) {
        Some("--list") => {
            println!("{}", NAMES.join("\n"));
            return 0;
        }
        Some("--version") => {
            println!("{}", version());
            return 0;
        }
        Some("install") => {
            let suite = cni_install::Suite {
                multi: MULTI,
                plugins: NAMES,
            };
            return cni_install::main(&args[1..], &suite);
        }
        Some("sleep") => return cni_install::sleep(),
        _ => {}
    }
    let what = format!(
        "{name:?} is not a plugin name: this is the multi-call CNI plugin binary, \
         which runs the plugin its file is named after ({})",
        NAMES.join(", ")
    );
    if std::env::var_os("CNI_COMMAND").is_some() {
        // A runtime parses stdout: give it an error it can report.
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(skel::Error::internal(what).to_json().as_bytes());
        let _ = out.flush();
    } else {
        eprintln!(
            "{what}; install it under a plugin's name (or link it there): `{MULTI} install --help`; \
             `--list` prints the names, `--version` the version"
        );
    }
    1
}

/// What `cni-plugins --version` prints: this suite's version, the commit it
/// was built from (`unknown` for a build outside the build scripts) and
/// the reference release the plugins stand in for.
pub fn version() -> String {
    format!(
        "{MULTI} {} (commit {}, reference plugins v{})",
        skel::VERSION,
        skel::COMMIT,
        skel::REFERENCE_VERSION
    )
}
