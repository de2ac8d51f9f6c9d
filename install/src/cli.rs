//! The command line of `cni-plugins install`, the flags of
//! `scripts/install.sh` that concern installing (building is the script's).

use std::path::PathBuf;

use crate::error::{Error, Result};

pub const USAGE: &str = "\
usage: cni-plugins install [--prefix DIR] [--destdir DIR] [--from DIR] [--force] [--dry-run] [--sleep] [NAME...]

Installs this suite into $DESTDIR$PREFIX (default /opt/cni/bin): the
multi-call binary cni-plugins once, with a hard link to it under each
plugin's name (a copy where the directory cannot hold hard links), and each
NAME (another binary of the suite, e.g. noop, cnitool) as a file of its own.

Each name is written to a temporary file and renamed into place, so a
runtime executing a plugin meanwhile keeps running the old one; an
unchanged file is left alone. A file that is not ours (by the manifest
.cni-rs-manifest, the name and SHA-256 of each file installed) is named and
kept in .backup-<UTC timestamp>/ first, unless --force.

  --prefix DIR   plugin directory (default: /opt/cni/bin)
  --destdir DIR  staging root prepended to the prefix
  --from DIR     where the binaries are (default: this executable itself,
                 and the directory it is in for each NAME)
  --force        replace other suites' files without a backup
  --dry-run      say what would be done, change nothing
  --sleep        then sleep until SIGTERM or SIGINT (a DaemonSet's container)
  -h, --help     this text
";

/// What to install, and where.
#[derive(Debug, Default, PartialEq)]
pub struct Options {
    pub prefix: String,
    pub destdir: String,
    pub from: Option<PathBuf>,
    pub force: bool,
    pub dry_run: bool,
    pub sleep: bool,
    pub help: bool,
    /// Binaries installed as files of their own, besides the multi-call one.
    pub extra: Vec<String>,
}

impl Options {
    /// `$DESTDIR$PREFIX`, joined as the shell joins them.
    pub fn dest(&self) -> PathBuf {
        PathBuf::from(format!("{}{}", self.destdir, self.prefix))
    }

    /// Parse the arguments after `install`.
    pub fn parse(args: &[String]) -> Result<Options> {
        let mut o = Options {
            prefix: "/opt/cni/bin".into(),
            ..Options::default()
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let (flag, inline) = match a.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ => (a.as_str(), None),
            };
            let mut value = |name: &str| -> Result<String> {
                match inline.clone().or_else(|| it.next().cloned()) {
                    Some(v) if !v.is_empty() => Ok(v),
                    _ => Err(Error::Usage(format!("{name} needs a directory"))),
                }
            };
            match flag {
                "--prefix" => o.prefix = value(flag)?,
                "--destdir" => o.destdir = value(flag)?,
                "--from" => o.from = Some(value(flag)?.into()),
                "--force" | "--dry-run" | "--sleep" | "-h" | "--help" if inline.is_some() => {
                    return Err(Error::Usage(format!("{flag} takes no value")));
                }
                "--force" => o.force = true,
                "--dry-run" => o.dry_run = true,
                "--sleep" => o.sleep = true,
                "-h" | "--help" => o.help = true,
                _ if a.starts_with('-') => {
                    return Err(Error::Usage(format!("unknown argument: {a}")));
                }
                _ if a.contains('/') || a.starts_with('.') => {
                    return Err(Error::Usage(format!("{a:?} is not a binary's name")));
                }
                _ => o.extra.push(a.clone()),
            }
        }
        if !o.prefix.starts_with('/') {
            return Err(Error::Usage(format!(
                "--prefix {:?} is not an absolute path",
                o.prefix
            )));
        }
        Ok(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options> {
        Options::parse(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn flags_in_both_forms_and_names() {
        let o = parse(&[
            "--prefix=/host/bin",
            "--destdir",
            "/stage",
            "--from",
            "/b",
            "--force",
            "--dry-run",
            "--sleep",
            "noop",
            "cnitool",
        ])
        .unwrap();
        assert_eq!(o.dest(), PathBuf::from("/stage/host/bin"));
        assert_eq!(o.from, Some(PathBuf::from("/b")));
        assert!(o.force && o.dry_run && o.sleep && !o.help);
        assert_eq!(o.extra, ["noop", "cnitool"]);
        let d = parse(&[]).unwrap();
        assert_eq!(d.dest(), PathBuf::from("/opt/cni/bin"));
        assert!(d.from.is_none() && !d.force && !d.dry_run && !d.sleep);
    }

    #[test]
    fn refuses_what_it_cannot_run() {
        for (args, msg) in [
            (&["--prefix"][..], "--prefix needs a directory"),
            (&["--from="], "--from needs a directory"),
            (
                &["--prefix", "rel/bin"],
                "--prefix \"rel/bin\" is not an absolute path",
            ),
            (&["--bogus"], "unknown argument: --bogus"),
            (&["--force=yes"], "--force takes no value"),
            (&["../x"], "\"../x\" is not a binary's name"),
        ] {
            let e = parse(args).unwrap_err();
            assert_eq!(e.to_string(), msg, "{args:?}");
        }
    }
}
