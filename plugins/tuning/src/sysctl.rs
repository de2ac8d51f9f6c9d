//! Sysctl keys: the reference's key-to-file rule, the `/proc/sys/net`
//! fence, and writing them inside the container's namespace so that a
//! failure part-way can be undone.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;

use cni_net::netns;

use crate::error::Error;

/// The `/proc/sys` file of `key`, as the reference computes it: every `.`
/// becomes `/` (so `..` becomes `//` and cannot climb), then the first
/// `IFNAME` becomes `ifname` (after the dots, so `eth0.100` stays one
/// component), then the path is cleaned like Go's `filepath.Join`, and
/// must lie under `/proc/sys/net/`.
pub fn file_of(key: &str, ifname: &str) -> Result<String, Error> {
    let key = key.replace('.', "/").replacen("IFNAME", ifname, 1);
    let file = clean(&format!("/proc/sys/{key}"));
    if !file.starts_with("/proc/sys/net/") {
        return Err(Error::Config(format!(
            "invalid net sysctl key: {}",
            skel::gojson::quote(&key)
        )));
    }
    Ok(file)
}

/// Go's `path.Clean` of an absolute path: no empty or `.` components, and
/// `..` removes the one before it (never climbing above `/`).
fn clean(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

/// One sysctl about to be written: its file, opened inside the container's
/// namespace (a `/proc/sys/net` file keeps the namespace it was opened in),
/// and the value it had, to undo the write. Write-only keys (`route/flush`)
/// are triggers with no value to put back.
struct Entry {
    path: String,
    value: String,
    file: File,
    old: Option<String>,
}

/// Sysctls opened and read, nothing written yet.
pub struct Prepared {
    entries: Vec<Entry>,
    /// How many have been written (and must be undone on failure).
    written: usize,
}

/// Open every file for writing and read its current value, inside `ns`.
/// A key that does not exist fails here, before anything has changed,
/// with Go's `open <path>: no such file or directory`.
pub fn prepare(ns: &File, sysctls: &[(String, String)]) -> Result<Prepared, Error> {
    let entries = netns::run(ns, || {
        sysctls
            .iter()
            .map(|(path, value)| {
                let io = |op: &str, e: std::io::Error| {
                    Error::Config(format!("{op} {path}: {}", skel::io_text(&e)))
                };
                let (file, old) = open_and_read(path).map_err(|e| io("open", e))?;
                Ok(Entry {
                    path: path.clone(),
                    value: value.clone(),
                    file,
                    old,
                })
            })
            .collect::<Result<Vec<_>, Error>>()
    })??;
    Ok(Prepared {
        entries,
        written: 0,
    })
}

/// `path` opened for writing, and its value when it can be read: one open
/// for both where the file allows it (a `/proc/sys` lookup walks an entry
/// per namespace that ever opened the same name: ~0.1 ms on a node with
/// a thousand pods), else (a write-only trigger such as `route/flush`)
/// write-only, with no value. A file that cannot be written gives the
/// write-only open's error, as the reference's.
fn open_and_read(path: &str) -> std::io::Result<(File, Option<String>)> {
    match OpenOptions::new().read(true).write(true).open(path) {
        Ok(file) => {
            let old = read_at_start(&file).ok();
            Ok((file, old))
        }
        Err(_) => {
            let file = OpenOptions::new().write(true).open(path)?;
            Ok((file, File::open(path).and_then(|f| read_at_start(&f)).ok()))
        }
    }
}

/// The whole content of a `/proc/sys` file, without its newline.
fn read_at_start(file: &File) -> std::io::Result<String> {
    let mut buf = vec![0u8; 4096];
    let mut len = 0;
    loop {
        let n = file.read_at(&mut buf[len..], len as u64)?;
        if n == 0 {
            break;
        }
        len += n;
        if len == buf.len() {
            buf.resize(len * 2, 0);
        }
    }
    buf.truncate(len);
    let text = String::from_utf8_lossy(&buf);
    Ok(text.strip_suffix('\n').unwrap_or(&text).to_string())
}

impl Prepared {
    /// Write every value, in key order, as the reference writes it (the
    /// bytes of the string, no newline).
    pub fn apply(&mut self) -> Result<(), Error> {
        for e in &self.entries[self.written..] {
            e.file.write_all_at(e.value.as_bytes(), 0).map_err(|err| {
                Error::Config(format!("write {}: {}", e.path, skel::io_text(&err)))
            })?;
            self.written += 1;
        }
        Ok(())
    }

    /// Put back the values the written files had, last first. Best effort:
    /// returns what could not be restored.
    pub fn undo(&mut self) -> Vec<String> {
        let mut failed = Vec::new();
        for e in self.entries[..self.written].iter().rev() {
            let Some(old) = &e.old else { continue };
            if let Err(err) = e.file.write_all_at(old.as_bytes(), 0) {
                failed.push(format!("restore {}: {}", e.path, skel::io_text(&err)));
            }
        }
        self.written = 0;
        failed
    }
}

/// The current value of `path` inside `ns`, without its trailing newline
/// (CHECK).
pub fn read_in(ns: &File, path: &str) -> Result<String, Error> {
    netns::run(ns, || {
        let file = File::open(path)
            .map_err(|e| Error::Config(format!("open {path}: {}", skel::io_text(&e))))?;
        read_at_start(&file)
            .map_err(|e| Error::Config(format!("read {path}: {}", skel::io_text(&e))))
    })?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(key: &str, ifname: &str) -> Result<String, String> {
        file_of(key, ifname).map_err(|e| e.to_string())
    }

    #[test]
    fn keys_become_files_as_in_the_reference() {
        let ok = [
            (
                "net.ipv4.ip_forward",
                "eth0",
                "/proc/sys/net/ipv4/ip_forward",
            ),
            (
                "net/ipv4/ip_forward",
                "eth0",
                "/proc/sys/net/ipv4/ip_forward",
            ),
            (
                "net.ipv4.conf.IFNAME.arp_notify",
                "eth0",
                "/proc/sys/net/ipv4/conf/eth0/arp_notify",
            ),
            // Dots of the interface name survive: IFNAME is replaced after
            // the dots (v1.1.1 did it before and broke these).
            (
                "net.ipv6.conf.IFNAME.accept_ra",
                "eth0.100",
                "/proc/sys/net/ipv6/conf/eth0.100/accept_ra",
            ),
            // Only the first IFNAME.
            ("net.IFNAME.IFNAME", "eth0", "/proc/sys/net/eth0/IFNAME"),
            // `..` in dotted form is two empty components.
            ("net...ipv4", "eth0", "/proc/sys/net/ipv4"),
            // So is `..` in slash form: its dots become slashes first.
            (
                "net/ipv4/../core/somaxconn",
                "eth0",
                "/proc/sys/net/ipv4/core/somaxconn",
            ),
            (
                "net/../../../etc/passwd",
                "eth0",
                "/proc/sys/net/etc/passwd",
            ),
            (
                "/net/ipv4/ip_forward",
                "eth0",
                "/proc/sys/net/ipv4/ip_forward",
            ),
        ];
        for (key, ifname, want) in ok {
            assert_eq!(file(key, ifname).unwrap(), want, "{key}");
        }
    }

    #[test]
    fn keys_outside_proc_sys_net_are_refused_with_the_references_words() {
        let cases = [
            (
                "kernel.hostname",
                r#"invalid net sysctl key: "kernel/hostname""#,
            ),
            ("net", r#"invalid net sysctl key: "net""#),
            ("", r#"invalid net sysctl key: """#),
            (
                "/kernel/../net",
                r#"invalid net sysctl key: "/kernel////net""#,
            ),
            ("netfilter.x", r#"invalid net sysctl key: "netfilter/x""#),
        ];
        for (key, want) in cases {
            assert_eq!(file(key, "eth0").unwrap_err(), want, "{key}");
        }
        // The interface name is the only text that keeps its dots. skel
        // refuses `/`, `.` and `..` as names; anything else stays one
        // component under the key.
        assert_eq!(
            file("net.ipv4.conf.IFNAME.x", "...").unwrap(),
            "/proc/sys/net/ipv4/conf/.../x"
        );
        // Even a `..` that got past skel cannot leave /proc/sys/net.
        assert_eq!(
            file("net.IFNAME.kernel.x", "..").unwrap_err(),
            r#"invalid net sysctl key: "net/../kernel/x""#
        );
        assert_eq!(
            file("net.IFNAME", "..").unwrap_err(),
            r#"invalid net sysctl key: "net/..""#
        );
    }
}
