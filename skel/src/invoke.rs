//! Delegation: running another plugin (an IPAM plugin) found on `CNI_PATH`
//! with our environment, `CNI_COMMAND` overridden and our full stdin.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::{Error, code};
use crate::types::CniResult;

/// Find `name` in the `:`-separated `path`, as the reference's `FindInPath`:
/// any regular file of that name counts; names with `/` are refused.
pub fn find_in_path(name: &str, path: &str) -> Result<PathBuf, Error> {
    if name.is_empty() {
        return Err(Error::internal("no plugin name provided"));
    }
    if name.contains('/') || name == "." || name == ".." {
        return Err(Error::internal(format!("invalid plugin name: {name}")));
    }
    let dirs: Vec<&str> = path.split(':').filter(|d| !d.is_empty()).collect();
    if dirs.is_empty() {
        return Err(Error::internal("no paths provided"));
    }
    for dir in &dirs {
        let candidate = Path::new(dir).join(name);
        if candidate.metadata().map(|m| m.is_file()).unwrap_or(false) {
            return Ok(candidate);
        }
    }
    Err(Error::internal(format!(
        "failed to find plugin {name:?} in path [{}]",
        dirs.join(" ")
    )))
}

/// Run `plugin` with `CNI_COMMAND=command`, `stdin` and the rest of our
/// environment; its stderr goes to ours. Returns its stdout on success and
/// its decoded error otherwise.
pub fn exec(plugin: &str, command: &str, cni_path: &str, stdin: &[u8]) -> Result<Vec<u8>, Error> {
    start(plugin, command, cni_path, stdin)?.wait()
}

/// A delegated plugin started by [`start`], with its stdin already written.
#[derive(Debug)]
pub struct Running {
    bin: PathBuf,
    child: std::process::Child,
}

/// The first half of [`exec`]: find and start `plugin` and hand it `stdin`,
/// without waiting for it, so the caller can work while it runs. Finish
/// with [`Running::wait`] (also on the caller's error paths, before any
/// cleanup that must follow the plugin's own work).
pub fn start(plugin: &str, command: &str, cni_path: &str, stdin: &[u8]) -> Result<Running, Error> {
    let bin = find_in_path(plugin, cni_path)?;
    // A plugin binary being replaced can briefly fail with ETXTBSY; retry
    // with a fresh process each time (the reference reuses a spent one).
    let mut attempt = 0;
    let child = loop {
        let spawned = Command::new(&bin)
            .env("CNI_COMMAND", command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn();
        match spawned {
            Err(e)
                if e.raw_os_error() == Some(nix::errno::Errno::ETXTBSY as i32) && attempt < 5 =>
            {
                attempt += 1;
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            Err(e) => {
                return Err(Error::internal(format!(
                    "failed to run plugin {}: {}",
                    bin.display(),
                    crate::io_text(&e)
                )));
            }
            Ok(c) => break c,
        }
    };
    let mut child = child;
    if let Some(mut input) = child.stdin.take() {
        // A plugin that exits without reading stdin is not our error; its
        // exit status tells what happened. Dropping `input` closes the pipe.
        let _ = input.write_all(stdin);
    }
    Ok(Running { bin, child })
}

impl Running {
    /// Wait for the plugin: its stdout on success, its decoded error
    /// otherwise.
    pub fn wait(self) -> Result<Vec<u8>, Error> {
        let bin = self.bin;
        let out = self.child.wait_with_output().map_err(|e| {
            Error::internal(format!(
                "failed to wait for plugin {}: {}",
                bin.display(),
                crate::io_text(&e)
            ))
        })?;
        if out.status.success() {
            return Ok(out.stdout);
        }
        if out.stdout.iter().all(u8::is_ascii_whitespace) {
            return Err(Error::internal(format!(
                "netplugin failed with no error message: {}",
                exit_text(out.status)
            )));
        }
        match Error::from_json(&out.stdout) {
            Ok(e) => Err(e),
            Err(_) => Err(Error::internal(format!(
                "netplugin failed but error parsing its diagnostic message {:?}",
                String::from_utf8_lossy(&out.stdout)
            ))),
        }
    }
}

fn exit_text(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(s)) => format!("signal: {s}"),
        _ => "unknown exit status".to_string(),
    }
}

/// Delegate ADD and parse the result. A result without `cniVersion` is
/// taken to be in `cni_version` (the config's).
pub fn delegate_add(
    plugin: &str,
    cni_path: &str,
    stdin: &[u8],
    cni_version: &str,
) -> Result<CniResult, Error> {
    parse_add(plugin, exec(plugin, "ADD", cni_path, stdin)?, cni_version)
}

/// The result of an ADD started with [`start`], as [`delegate_add`] reads it.
pub fn wait_add(running: Running, plugin: &str, cni_version: &str) -> Result<CniResult, Error> {
    parse_add(plugin, running.wait()?, cni_version)
}

fn parse_add(plugin: &str, out: Vec<u8>, cni_version: &str) -> Result<CniResult, Error> {
    if out.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::new(
            code::DECODING_FAILURE,
            format!("plugin {plugin} returned no result"),
        ));
    }
    CniResult::parse_bytes(&out, cni_version)
}

/// Delegate DEL, CHECK, STATUS or GC, where success prints nothing.
pub fn delegate(plugin: &str, command: &str, cni_path: &str, stdin: &[u8]) -> Result<(), Error> {
    exec(plugin, command, cni_path, stdin).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_names_with_separators_are_refused() {
        assert_eq!(
            find_in_path("", "/bin").unwrap_err().msg,
            "no plugin name provided"
        );
        assert_eq!(
            find_in_path("../sh", "/bin").unwrap_err().msg,
            "invalid plugin name: ../sh"
        );
        assert_eq!(
            find_in_path("a/b", "/bin").unwrap_err().msg,
            "invalid plugin name: a/b"
        );
    }

    #[test]
    fn finds_regular_files_only() {
        assert_eq!(
            find_in_path("sh", "/nonexistent:/bin").unwrap(),
            PathBuf::from("/bin/sh")
        );
        assert_eq!(
            find_in_path("nope-cni", "/a:/b").unwrap_err().msg,
            "failed to find plugin \"nope-cni\" in path [/a /b]"
        );
        assert!(find_in_path("sh", "").is_err());
    }

    #[test]
    fn decodes_child_errors() {
        let dir = std::env::temp_dir().join(format!("skel-invoke-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("fails");
        std::fs::write(
            &script,
            "#!/bin/sh\ncat >/dev/null\necho '{\"code\":7,\"msg\":\"bad\"}'\nexit 1\n",
        )
        .unwrap();
        let silent = dir.join("silent");
        std::fs::write(&silent, "#!/bin/sh\nexit 3\n").unwrap();
        let ok = dir.join("ok");
        std::fs::write(
            &ok,
            "#!/bin/sh\ncat >/dev/null\necho '{\"ips\":[{\"address\":\"10.240.0.9/24\"}]}'\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        for f in [&script, &silent, &ok] {
            std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let path = dir.to_str().unwrap();
        assert_eq!(
            exec("fails", "ADD", path, b"{}").unwrap_err(),
            Error::new(7, "bad")
        );
        assert_eq!(
            exec("silent", "DEL", path, b"{}").unwrap_err().msg,
            "netplugin failed with no error message: exit status 3"
        );
        let r = delegate_add("ok", path, b"{}", "1.0.0").unwrap();
        assert_eq!(r.version(), "1.0.0");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
