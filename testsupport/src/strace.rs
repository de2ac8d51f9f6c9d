//! A plugin run under `strace` inside a test's host namespace, to see
//! which processes or sockets a call makes (portmap without mappings
//! makes none; firewall's DEL starts only what its record needs).

use std::path::{Path, PathBuf};

use crate::TempDir;

/// An executable wrapper named `name` that runs `bin` in `netns` under
/// `strace -f -qq <flags> -e trace=<trace>`, with `env` (`K=V` words)
/// set, and the log strace writes; called like the plugin itself.
pub struct Traced {
    _dir: TempDir,
    pub wrapper: PathBuf,
    pub log: PathBuf,
}

impl Traced {
    pub fn new(
        name: &str,
        netns: &str,
        env: &[&str],
        flags: &str,
        trace: &str,
        bin: &Path,
    ) -> Traced {
        let dir = TempDir::new("strace");
        let (wrapper, log) = (dir.join(name), dir.join("trace"));
        let script = format!(
            "#!/bin/sh\nexec ip netns exec {netns} env {} /usr/bin/strace -f -qq {flags} -o {} -e trace={trace} {}\n",
            env.join(" "),
            log.display(),
            bin.display()
        );
        std::fs::write(&wrapper, script).unwrap();
        let exec = std::os::unix::fs::PermissionsExt::from_mode(0o755);
        std::fs::set_permissions(&wrapper, exec).unwrap();
        Traced {
            _dir: dir,
            wrapper,
            log,
        }
    }

    /// The lines strace wrote so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}
