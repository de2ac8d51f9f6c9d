//! `scripts/install.sh` as a packager or an operator runs it, on builds
//! given with `--from` (the built multi-call binary, stand-ins for the
//! other binaries): a fresh install is one file and a hard link per plugin
//! name, a re-install writes nothing, `--dry-run` changes nothing, an
//! install over the previous layout (one file per plugin, ours by the
//! manifest) replaces those files by links without a backup, another
//! suite's files are backed up (not with `--force`), and a plugin running
//! meanwhile is unaffected. The script runs `cni-plugins install` (the
//! installer image's entrypoint too), so these are its tests as well.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use testsupport::TempDir;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/install.sh")
}

/// A build directory: the multi-call binary (with `extra` appended, a
/// "new build") and shell stand-ins for the workspace's other binaries.
fn build(dir: &Path, extra: &[u8]) {
    std::fs::create_dir_all(dir).unwrap();
    let mut multi = std::fs::read(env!("CARGO_BIN_EXE_cni-plugins")).unwrap();
    multi.extend_from_slice(extra);
    write_exe(&dir.join("cni-plugins"), &multi);
    for n in ["noop", "cnitool"] {
        write_exe(&dir.join(n), format!("#!/bin/sh\necho {n}\n").as_bytes());
    }
}

fn write_exe(path: &Path, bytes: &[u8]) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, bytes).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Run install.sh with `args`; its stdout (it must succeed).
fn install(args: &[&str]) -> String {
    let out = Command::new("bash")
        .arg(script())
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "install.sh {args:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

fn plugins() -> &'static [&'static str] {
    cni_plugins::NAMES
}

/// Every name an install writes: the multi-call binary, a link per plugin,
/// the stand-ins for noop and cnitool.
fn all_names() -> usize {
    plugins().len() + 3
}

/// Each name's inode and a hash of its content.
fn snapshot(dir: &Path) -> Vec<(String, u64, u64)> {
    use std::hash::{Hash, Hasher};
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let (p, name) = (e.path(), e.file_name().to_string_lossy().into_owned());
            let mut h = std::collections::hash_map::DefaultHasher::new();
            if p.is_file() {
                std::fs::read(&p).unwrap().hash(&mut h);
            }
            let ino = std::fs::symlink_metadata(&p).unwrap().ino();
            (name, ino, h.finish())
        })
        .collect();
    v.sort();
    v
}

fn assert_linked(bin: &Path) {
    let multi = std::fs::metadata(bin.join("cni-plugins")).unwrap();
    for n in plugins() {
        let m = std::fs::symlink_metadata(bin.join(n)).unwrap();
        assert_eq!(
            (m.dev(), m.ino()),
            (multi.dev(), multi.ino()),
            "{n} is not a link"
        );
    }
    assert_eq!(multi.nlink() as usize, plugins().len() + 1);
    let manifest = std::fs::read_to_string(bin.join(".cni-rs-manifest")).unwrap();
    for n in plugins().iter().chain(&["cni-plugins", "noop", "cnitool"]) {
        assert!(
            manifest.lines().any(|l| l.ends_with(&format!(" {n}"))),
            "{n} missing from the manifest:\n{manifest}"
        );
    }
}

#[test]
fn fresh_install_reinstall_dry_run_and_new_build() {
    let tmp = TempDir::new("install");
    let (old, new, bin) = (tmp.join("old"), tmp.join("new"), tmp.join("bin"));
    build(&old, b"");
    build(&new, b"\n# new build\n");
    let bin_s = bin.to_str().unwrap();
    install(&["--from", old.to_str().unwrap(), "--prefix", bin_s]);
    assert_linked(&bin);
    let first = snapshot(&bin);

    let again = install(&["--from", old.to_str().unwrap(), "--prefix", bin_s]);
    let none = format!("done: 0 of {} names written", all_names());
    assert!(again.contains(&none), "{again}");
    assert_eq!(snapshot(&bin), first, "a re-install changed files");

    let dry = install(&[
        "--from",
        new.to_str().unwrap(),
        "--prefix",
        bin_s,
        "--dry-run",
    ]);
    assert!(dry.contains("updating our previous build"), "{dry}");
    // The multi-call binary and every link to it; not noop and cnitool.
    let would = format!(
        "dry run: {} of {} names would be written",
        plugins().len() + 1,
        all_names()
    );
    assert!(dry.contains(&would), "{dry}");
    assert_eq!(snapshot(&bin), first, "--dry-run changed files");

    // A plugin running during the upgrade (STATUS waits for its config on
    // stdin) keeps its file (no "text file busy") and finishes; afterwards
    // the names are the new build.
    let mut running = Command::new(bin.join("loopback"))
        .env("CNI_COMMAND", "STATUS")
        .env("CNI_PATH", "/nonexistent")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let exe = format!("/proc/{}/exe", running.id());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::fs::read_link(&exe).ok() != Some(bin.join("loopback")) {
        assert!(
            std::time::Instant::now() < deadline,
            "loopback never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    install(&["--from", new.to_str().unwrap(), "--prefix", bin_s]);
    let replaced = std::fs::read_link(&exe).unwrap();
    assert_eq!(
        replaced.to_string_lossy(),
        format!("{} (deleted)", bin.join("loopback").display())
    );
    use std::io::Write;
    let mut stdin = running.stdin.take().unwrap();
    stdin
        .write_all(br#"{"cniVersion":"1.1.0","name":"n","type":"loopback"}"#)
        .unwrap();
    drop(stdin);
    let out = running.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_linked(&bin);
    let now = std::fs::read(bin.join("bridge")).unwrap();
    assert!(now.ends_with(b"# new build\n"));
    assert!(
        !std::fs::read_dir(&bin).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with(".backup")),
        "our own files were backed up"
    );
}

/// The previous layout (a file per plugin, listed in the manifest) is
/// replaced by links without a backup; another suite's files (a file, a
/// symlink) are backed up first, or replaced outright with `--force`.
#[test]
fn upgrade_over_the_previous_layout_and_another_suite() {
    let tmp = TempDir::new("install-up");
    let (from, bin) = (tmp.join("from"), tmp.join("bin"));
    build(&from, b"");
    std::fs::create_dir_all(&bin).unwrap();
    let mut manifest = String::new();
    for n in ["bridge", "ptp", "host-local"] {
        let body = format!("#!/bin/sh\necho old {n}\n");
        write_exe(&bin.join(n), body.as_bytes());
        let sum = Command::new("sha256sum").arg(bin.join(n)).output().unwrap();
        let sum = String::from_utf8_lossy(&sum.stdout);
        manifest += &format!("{} {n}\n", sum.split(' ').next().unwrap());
    }
    std::fs::write(bin.join(".cni-rs-manifest"), manifest).unwrap();
    write_exe(&bin.join("portmap"), b"#!/bin/sh\necho the reference\n");
    std::os::unix::fs::symlink("/bin/true", bin.join("tuning")).unwrap();

    let out = install(&[
        "--from",
        from.to_str().unwrap(),
        "--prefix",
        bin.to_str().unwrap(),
    ]);
    assert_linked(&bin);
    let backups: Vec<PathBuf> = std::fs::read_dir(&bin)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".backup-")
        })
        .collect();
    assert_eq!(backups.len(), 1, "{out}");
    let mut kept: Vec<String> = std::fs::read_dir(&backups[0])
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    kept.sort();
    assert_eq!(kept, ["portmap", "tuning"], "{out}");
    assert_eq!(
        std::fs::read_to_string(backups[0].join("portmap")).unwrap(),
        "#!/bin/sh\necho the reference\n"
    );
    assert_eq!(
        std::fs::read_link(backups[0].join("tuning")).unwrap(),
        Path::new("/bin/true")
    );

    // --force: no backup of another suite's file.
    let forced = tmp.join("forced");
    std::fs::create_dir_all(&forced).unwrap();
    write_exe(&forced.join("bridge"), b"#!/bin/sh\necho the reference\n");
    install(&[
        "--from",
        from.to_str().unwrap(),
        "--prefix",
        forced.to_str().unwrap(),
        "--force",
    ]);
    assert_linked(&forced);
    assert_eq!(
        std::fs::read_dir(&forced).unwrap().count(),
        plugins().len() + 4
    );
}

/// `--destdir` on a tmpfs (another filesystem than the build's).
#[test]
fn destdir_on_another_filesystem() {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        eprintln!("no /dev/shm: skipped");
        return;
    }
    let tmp = TempDir::new("install-fs");
    let from = tmp.join("from");
    build(&from, b"");
    let root = shm.join(format!("cnirs-install-{}", std::process::id()));
    let out = Command::new("bash")
        .arg(script())
        .args(["--from", from.to_str().unwrap(), "--prefix", "/opt/cni/bin"])
        .env("DESTDIR", &root)
        .output()
        .unwrap();
    let ok = out.status.success();
    let bin = root.join("opt/cni/bin");
    let linked = std::panic::catch_unwind(|| assert_linked(&bin));
    let _ = std::fs::remove_dir_all(&root);
    assert!(ok, "{}", String::from_utf8_lossy(&out.stderr));
    linked.unwrap();
}

/// The host triple cargo reports.
fn host() -> String {
    let out = Command::new(env!("CARGO")).arg("-vV").output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .unwrap()
}

/// scripts/lib.sh `release_dir` on `repo`, with cargo on PATH or without it.
fn release_dirs(repo: &Path) -> Vec<String> {
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/lib.sh");
    let cargo_dir = Path::new(env!("CARGO")).parent().unwrap().to_path_buf();
    [
        format!("{}:/usr/bin:/bin", cargo_dir.display()),
        "/usr/bin:/bin".to_string(),
    ]
    .iter()
    .map(|path| {
        let out = Command::new("bash")
            .args(["-c", ". \"$0\"; release_dir \"$1\""])
            .arg(&lib)
            .arg(repo)
            .env("PATH", path)
            .env("HOME", repo)
            .env_remove("CARGO_HOME")
            .env_remove("SUDO_USER")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    })
    .collect()
}

/// The release directory install.sh takes (scripts/lib.sh `release_dir`)
/// is the host's, not another architecture's build in the same tree
/// (`target/aarch64-…` sorts before `target/x86_64-…`), with cargo on
/// PATH or without it.
#[test]
fn release_dir_is_the_hosts_not_a_cross_build() {
    let repo = TempDir::new("reldir");
    let mine = repo.join(&format!("target/{}/release", host()));
    let cross = repo.join("target/aarch64-aaa-linux-gnu/release");
    for d in [&mine, &cross] {
        std::fs::create_dir_all(d).unwrap();
    }
    build(&mine, b"");
    // Not runnable here, as another architecture's binary.
    write_exe(
        &cross.join("cni-plugins"),
        b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x02\0\xb7\0",
    );
    for dir in release_dirs(repo.path()) {
        assert_eq!(dir, mine.to_str().unwrap());
    }
}

/// The target build_release last built for (its musl twin, usually) wins
/// over a host build left in the same tree, even a newer one; without its
/// record, the host's build is taken.
#[test]
fn release_dir_is_the_last_release_targets() {
    let repo = TempDir::new("reldir");
    let musl = repo.join("target/x86_64-unknown-linux-musl/release");
    let host = repo.join(&format!("target/{}/release", host()));
    build(&musl, b"");
    build(&host, b"");
    std::fs::write(
        repo.join("target/.release-target"),
        "x86_64-unknown-linux-musl\n",
    )
    .unwrap();
    for dir in release_dirs(repo.path()) {
        assert_eq!(dir, musl.to_str().unwrap());
    }
    std::fs::remove_file(repo.join("target/.release-target")).unwrap();
    for dir in release_dirs(repo.path()) {
        assert_eq!(dir, host.to_str().unwrap());
    }
}

/// A packager's cross build for another architecture (a binary that cannot
/// run here), staged with `--destdir`: the plugin names come from the
/// source table, and each is a link to the installed binary.
#[test]
fn cross_build_staged_into_destdir() {
    let tmp = TempDir::new("install-cross");
    let from = tmp.join("from");
    build(&from, b"");
    let foreign = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x02\0\xb7\0 aarch64 stand-in";
    write_exe(&from.join("cni-plugins"), foreign);
    let root = tmp.join("root");
    let out = Command::new("bash")
        .arg(script())
        .args([
            "--from",
            from.to_str().unwrap(),
            "--destdir",
            root.to_str().unwrap(),
        ])
        .args(["--prefix", "/usr/lib/cni"])
        .env("CNIRS_INSTALLER", env!("CARGO_BIN_EXE_cni-plugins"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let bin = root.join("usr/lib/cni");
    assert_linked(&bin);
    assert_eq!(std::fs::read(bin.join("host-local")).unwrap(), foreign);
}

/// A directory that cannot hold hard links (here: the debug build's
/// failpoint `install/hard-link` fails every link, as such a filesystem
/// would) gets a copy per plugin name, and a re-install leaves those
/// copies alone.
#[test]
fn without_hard_links_copies_and_a_reinstall_writes_nothing() {
    let tmp = TempDir::new("install-nolink");
    let (from, bin) = (tmp.join("from"), tmp.join("bin"));
    build(&from, b"");
    let run = || {
        let out = Command::new("bash")
            .arg(script())
            .args([
                "--from",
                from.to_str().unwrap(),
                "--prefix",
                bin.to_str().unwrap(),
            ])
            .env("CNI_RS_FAILPOINT", "install/hard-link")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    let first = run();
    assert!(
        first.contains("no hard link possible here, copying"),
        "{first}"
    );
    let multi = std::fs::read(bin.join("cni-plugins")).unwrap();
    for n in plugins() {
        assert_eq!(std::fs::read(bin.join(n)).unwrap(), multi, "{n}");
    }
    let before = snapshot(&bin);
    let again = run();
    let none = format!("done: 0 of {} names written", all_names());
    assert!(again.contains(&none), "{again}");
    assert_eq!(snapshot(&bin), before, "a re-install rewrote the copies");
    assert!(
        !std::fs::read_dir(&bin)
            .unwrap()
            .any(|e| { e.unwrap().file_name().to_string_lossy().contains(".tmp-") })
    );
}

/// An install that fails at a rename (the debug build's failpoint
/// `install/rename`) says what failed, leaves no temporary file and the
/// installed names as they were; the next run completes it.
#[test]
fn a_failed_install_leaves_no_temp_file_and_the_next_completes() {
    let tmp = TempDir::new("install-fail");
    let (old, new, bin) = (tmp.join("old"), tmp.join("new"), tmp.join("bin"));
    build(&old, b"");
    build(&new, b"\n# new build\n");
    let bin_s = bin.to_str().unwrap();
    install(&["--from", old.to_str().unwrap(), "--prefix", bin_s]);
    let before = snapshot(&bin);
    let out = Command::new("bash")
        .arg(script())
        .args(["--from", new.to_str().unwrap(), "--prefix", bin_s])
        .env("CNI_RS_FAILPOINT", "install/rename")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("cni-plugins install: rename ") && err.contains("injected failure"),
        "{err}"
    );
    assert_eq!(snapshot(&bin), before, "a failed install changed files");
    install(&["--from", new.to_str().unwrap(), "--prefix", bin_s]);
    assert_linked(&bin);
    assert!(
        std::fs::read(bin.join("ptp"))
            .unwrap()
            .ends_with(b"# new build\n")
    );
}

/// `cni-plugins sleep` (the DaemonSet's main container) exits 0 on
/// SIGTERM, once it said it sleeps.
#[test]
fn sleep_exits_on_sigterm() {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_cni-plugins"))
        .arg("sleep")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "==> sleeping until SIGTERM");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(lines.next().unwrap().unwrap(), "==> SIGTERM: exiting");
}

/// `--version` names the version and the commit; without the build
/// scripts' variables, the crates' version and `unknown`.
#[test]
fn version_names_the_release_and_the_commit() {
    let out = Command::new(env!("CARGO_BIN_EXE_cni-plugins"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let commit = option_env!("CNIRS_COMMIT").unwrap_or("unknown");
    let version = option_env!("CNIRS_VERSION").unwrap_or(env!("CARGO_PKG_VERSION"));
    assert_eq!(
        text,
        format!("cni-plugins {version} (commit {commit}, reference plugins v1.9.1)\n")
    );
}

fn entries_starting(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect()
}

/// The dhcp daemon's units are staged with `--destdir`, ExecStart in the
/// prefix; a re-install leaves them, another suite's units are backed up,
/// `--no-systemd` installs none.
#[test]
fn dhcp_units_are_staged_with_the_plugins() {
    let tmp = TempDir::new("install-units");
    let from = tmp.join("from");
    build(&from, b"");
    let root = tmp.join("root");
    let staged = |extra: &[&str]| {
        let mut args = vec![
            "--from",
            from.to_str().unwrap(),
            "--destdir",
            root.to_str().unwrap(),
            "--prefix",
            "/usr/lib/cni",
        ];
        args.extend_from_slice(extra);
        install(&args)
    };
    let units = root.join("etc/systemd/system");
    std::fs::create_dir_all(&units).unwrap();
    std::fs::write(
        units.join("cni-dhcp.socket"),
        "[Socket]\nListenStream=/elsewhere\n",
    )
    .unwrap();
    let first = staged(&[]);
    assert!(first.contains("cni-dhcp.socket: replacing"), "{first}");
    let service = std::fs::read_to_string(units.join("cni-dhcp.service")).unwrap();
    assert!(
        service.contains("\nExecStart=/usr/lib/cni/dhcp daemon\n"),
        "{service}"
    );
    let socket = std::fs::read_to_string(units.join("cni-dhcp.socket")).unwrap();
    assert!(
        socket.contains("\nListenStream=/run/cni/dhcp.sock\n"),
        "{socket}"
    );
    let backup = entries_starting(&units, ".cni-rs-backup-");
    assert_eq!(
        std::fs::read_to_string(backup[0].join("cni-dhcp.socket")).unwrap(),
        "[Socket]\nListenStream=/elsewhere\n"
    );
    let again = staged(&[]);
    assert!(again.contains("cni-dhcp.service: up to date"), "{again}");
    let other = tmp.join("other");
    let none = install(&[
        "--from",
        from.to_str().unwrap(),
        "--destdir",
        other.to_str().unwrap(),
        "--no-systemd",
    ]);
    assert!(!none.contains("cni-dhcp"), "{none}");
    assert!(!other.join("etc").exists());
}
