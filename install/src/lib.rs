//! `cni-plugins install`: puts the suite into a CNI plugin directory the way
//! a node must be changed while containers start and stop. The same code
//! serves `scripts/install.sh` (which builds, then runs it), the installer
//! image's entrypoint (a static binary in a scratch image, no shell) and
//! the DaemonSet in `deploy/`.
//!
//! The guarantees, for every name written:
//! - it is a new temporary file (or hard link) renamed over the old name,
//!   so a runtime exec'ing the plugin meanwhile gets the old file or the
//!   new one, and a plugin already running keeps its own;
//! - a name already holding the same content (and, for a plugin name, the
//!   same file as the installed multi-call binary) is left alone, so a
//!   re-install writes nothing;
//! - a file that is not ours (not listed, with its digest, in the
//!   manifest `.cni-rs-manifest`) is kept in `.backup-<stamp>/` first,
//!   unless `--force`;
//! - the manifest is rewritten (renamed into place) after the files.
//!
//! `cni-plugins sleep` (and `install --sleep`) then waits for SIGTERM: the
//! pause-like main container of the DaemonSet.

mod cli;
mod error;
mod files;
mod installer;
mod manifest;
pub mod sha256;
mod sleep;
mod stamp;

pub use cli::{Options, USAGE};
pub use error::Error;
pub use installer::{Report, Suite, install};
pub use manifest::NAME as MANIFEST;

/// `cni-plugins install ARGS...` for `suite`: the exit code.
pub fn main(args: &[String], suite: &Suite) -> i32 {
    let opts = match Options::parse(args) {
        Ok(o) if o.help => {
            print!("{USAGE}");
            return 0;
        }
        Ok(o) => o,
        Err(e) => {
            eprint!("{USAGE}");
            eprintln!("cni-plugins install: {e}");
            return 2;
        }
    };
    if let Err(e) = install(&opts, suite, &mut std::io::stdout()) {
        eprintln!("cni-plugins install: {e}");
        return 1;
    }
    if opts.sleep { sleep() } else { 0 }
}

/// `cni-plugins sleep`: wait for SIGTERM, SIGINT or SIGHUP; the exit code.
pub fn sleep() -> i32 {
    let _ = std::io::Write::flush(&mut std::io::stdout());
    sleep::until_signalled()
}
