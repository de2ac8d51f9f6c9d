//! One install run: which names must be written, and writing them so that
//! nobody ever sees a part of a file.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::cli::Options;
use crate::error::{Error, Result};
use crate::{files, manifest, stamp};

/// The suite to install: the multi-call binary's name and the plugin
/// names it answers to (each becomes a link to it).
pub struct Suite<'a> {
    pub multi: &'a str,
    pub plugins: &'a [&'a str],
}

/// How many names a run wrote, of how many.
#[derive(Debug, PartialEq)]
pub struct Report {
    pub written: usize,
    pub total: usize,
}

/// Install `suite` as `opts` says, saying what it does on `out`.
pub fn install(opts: &Options, suite: &Suite, out: &mut dyn Write) -> Result<Report> {
    let sources = Sources::find(opts, suite)?;
    let dest = opts.dest();
    let mut run = Run {
        opts,
        ours: BTreeMap::new(),
        manifest: BTreeMap::new(),
        backup: None,
        links_work: None,
        tag: tag(),
        multi: suite.multi,
        out,
        dest,
    };
    run.say(format!("installing into {}", run.dest.display()));
    if opts.dry_run {
        run.dry(format!("mkdir -p {}", run.dest.display()));
    } else {
        std::fs::create_dir_all(&run.dest).map_err(Error::io("create", &run.dest))?;
    }
    run.ours = manifest::read(&run.dest)?;
    run.manifest = run.ours.clone();
    let mut written = 0;
    for (name, src) in &sources.files {
        written += usize::from(run.place_file(name, src)?);
    }
    let multi_sum = files::digest(&sources.files[0].1)?;
    for name in suite.plugins {
        written += usize::from(run.place_link(name, suite.multi, &multi_sum)?);
    }
    let total = sources.files.len() + suite.plugins.len();
    if opts.dry_run {
        run.say(format!(
            "dry run: {written} of {total} names would be written to {}; nothing changed",
            run.dest.display()
        ));
        return Ok(Report { written, total });
    }
    manifest::write(&run.dest, &run.manifest, &run.tag)?;
    // The renames themselves on disk, before saying done.
    if let Ok(d) = std::fs::File::open(&run.dest) {
        let _ = d.sync_all();
    }
    run.say(format!(
        "done: {written} of {total} names written to {}",
        run.dest.display()
    ));
    if let Some(b) = &run.backup {
        run.say(format!("previous binaries kept in {}", b.display()));
    }
    Ok(Report { written, total })
}

/// The temporary names' suffix: the pid, and the time, because installers
/// in containers are all PID 1 and two may share a host directory.
fn tag() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{}-{nanos}", std::process::id())
}

/// The files to install, each from where: the multi-call binary first.
struct Sources {
    files: Vec<(String, PathBuf)>,
}

impl Sources {
    /// Every source, checked before anything is changed.
    fn find(opts: &Options, suite: &Suite) -> Result<Sources> {
        let multi = match &opts.from {
            Some(dir) => dir.join(suite.multi),
            None => {
                std::env::current_exe().map_err(Error::io("find", Path::new("/proc/self/exe")))?
            }
        };
        let dir = match &opts.from {
            Some(d) => d.clone(),
            None => multi.parent().map(Path::to_path_buf).unwrap_or_default(),
        };
        let mut files = vec![(suite.multi.to_string(), multi)];
        for name in &opts.extra {
            // The plugins are links to the multi-call binary, whatever
            // per-plugin binaries the source directory also holds.
            if name != suite.multi
                && !suite.plugins.contains(&name.as_str())
                && !files.iter().any(|(n, _)| n == name)
            {
                files.push((name.clone(), dir.join(name)));
            }
        }
        for (_, path) in &files {
            if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
                return Err(Error::Missing(path.clone()));
            }
        }
        Ok(Sources { files })
    }
}

struct Run<'a> {
    opts: &'a Options,
    dest: PathBuf,
    /// The previous manifest: name → digest of the file we installed.
    ours: BTreeMap<String, String>,
    /// The manifest being made: the previous one, updated.
    manifest: BTreeMap<String, String>,
    /// The backup directory, once made.
    backup: Option<PathBuf>,
    links_work: Option<bool>,
    tag: String,
    multi: &'a str,
    out: &'a mut dyn Write,
}

impl Run<'_> {
    fn say(&mut self, what: String) {
        let _ = writeln!(self.out, "==> {what}");
    }

    fn dry(&mut self, what: String) {
        let _ = writeln!(self.out, "    (dry run) {what}");
    }

    /// Install `src` as `name`, a file of its own; whether it was written.
    fn place_file(&mut self, name: &str, src: &Path) -> Result<bool> {
        let sum = files::digest(src)?;
        if !self.must_write(name, &sum, None)? {
            return Ok(false);
        }
        let target = self.dest.join(name);
        if self.opts.dry_run {
            self.dry(format!(
                "install -m 0755 {} {}",
                src.display(),
                target.display()
            ));
            return Ok(true);
        }
        let tmp = files::Temp::create(&self.dest, name, &self.tag, 0o755, |f, p| {
            files::copy_into(src, f, p)
        })?;
        tmp.rename_to(&target)?;
        Ok(true)
    }

    /// Make `name` a hard link to the installed `multi` (a copy where the
    /// directory cannot hold links); whether it was written.
    fn place_link(&mut self, name: &str, multi: &str, sum: &str) -> Result<bool> {
        let (target, multi) = (self.dest.join(name), self.dest.join(multi));
        if !self.must_write(name, sum, Some(&multi))? {
            return Ok(false);
        }
        if self.opts.dry_run {
            self.dry(format!("ln {} {}", multi.display(), target.display()));
            return Ok(true);
        }
        let tmp = match files::Temp::link(&self.dest, name, &self.tag, &multi)? {
            Some(t) => t,
            None => {
                self.say(format!(
                    "{name}: no hard link possible here, copying {}",
                    multi.display()
                ));
                files::Temp::create(&self.dest, name, &self.tag, 0o755, |f, p| {
                    files::copy_into(&multi, f, p)
                })?
            }
        };
        tmp.rename_to(&target)?;
        Ok(true)
    }

    /// Whether `name` must be (re)written to hold content `sum` (and, with
    /// `same`, be that very file); keeps another suite's file first.
    fn must_write(&mut self, name: &str, sum: &str, same: Option<&Path>) -> Result<bool> {
        self.manifest.insert(name.to_string(), sum.to_string());
        let target = self.dest.join(name);
        let meta = match std::fs::symlink_metadata(&target) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.say(format!("{name}: installing"));
                return Ok(true);
            }
            r => r.map_err(Error::io("stat", &target))?,
        };
        if meta.is_dir() {
            return Err(Error::NotAFile(target));
        }
        // A dangling symlink or an unreadable file has no content to match.
        let have = files::digest(&target).ok();
        let same_content = have.as_deref() == Some(sum);
        if same_content && same.is_none_or(|s| files::same_file(&target, s) || !self.can_link()) {
            self.say(format!("{name}: up to date"));
            return Ok(false);
        }
        if same_content || (have.is_some() && self.ours.get(name) == have.as_ref()) {
            self.say(format!("{name}: updating our previous build"));
        } else if self.opts.force {
            self.say(format!(
                "{name}: replacing {} (not ours; --force, no backup)",
                target.display()
            ));
        } else {
            let dir = self.backup_dir()?;
            self.say(format!(
                "{name}: replacing {} (not ours), backup in {}",
                target.display(),
                dir.join(name).display()
            ));
            if self.opts.dry_run {
                self.dry(format!(
                    "cp -a {} {}",
                    target.display(),
                    dir.join(name).display()
                ));
            } else {
                files::back_up(&target, &dir.join(name))?;
            }
        }
        Ok(true)
    }

    /// The run's backup directory, made on first use: `.backup-<stamp>`,
    /// with a counter when an earlier run made that one in the same second.
    fn backup_dir(&mut self) -> Result<PathBuf> {
        if let Some(b) = &self.backup {
            return Ok(b.clone());
        }
        let base = format!(".backup-{}", stamp::now());
        let mut n = 1;
        let dir = loop {
            let dir = match n {
                1 => self.dest.join(&base),
                _ => self.dest.join(format!("{base}-{n}")),
            };
            if self.opts.dry_run {
                break dir;
            }
            match std::fs::create_dir(&dir) {
                Ok(()) => break dir,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 1000 => n += 1,
                Err(e) => return Err(Error::io("create", &dir)(e)),
            }
        };
        self.backup = Some(dir.clone());
        Ok(dir)
    }

    /// Whether the directory can hold hard links (tried once, on the
    /// installed multi-call binary); where it cannot, a copy of the same
    /// content is as good as a link and is left alone.
    fn can_link(&mut self) -> bool {
        if let Some(w) = self.links_work {
            return w;
        }
        let multi = self.dest.join(self.multi);
        let works = self.opts.dry_run
            || !multi.exists()
            || files::Temp::link(&self.dest, "link-probe", &self.tag, &multi)
                .ok()
                .flatten()
                .is_some();
        self.links_work = Some(works);
        works
    }
}
