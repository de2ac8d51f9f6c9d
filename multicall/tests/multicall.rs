//! The multi-call binary as a runtime uses it: bridge and host-local are
//! names of the one file (host-local then runs in-process), and a copy of
//! the file under a plugin's name is that plugin.

use std::path::{Path, PathBuf};

use serde_json::json;
use testsupport::{PluginHost, TempDir, TestNetns, has_link, ip_of, plugin_bin};

fn multi() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_cni-plugins"))
}

/// A directory with `names` linked to the multi-call binary.
fn linked(names: &[&str]) -> (TempDir, Vec<PathBuf>) {
    let dir = TempDir::new("multi");
    let paths = names
        .iter()
        .map(|n| {
            std::os::unix::fs::symlink(multi(), dir.join(n)).unwrap();
            dir.join(n)
        })
        .collect();
    (dir, paths)
}

#[test]
fn bridge_with_host_local_in_process_adds_deletes_and_fails_as_separate_binaries() {
    testsupport::require_root();
    let (_bins, paths) = linked(&["bridge"]);
    let host = PluginHost::new("mc", &paths[0], &[]);
    std::os::unix::fs::symlink(multi(), host.path.join("host-local")).unwrap();
    // One address only: the second ADD fails in host-local.
    let mut conf = host.conf(
        "bridge",
        "1.0.0",
        &["10.240.12.0/30"],
        json!({"bridge": testsupport::unique_name("cnirsmc"), "isGateway": true}),
    );
    conf["ipam"]["ranges"][0][0]["rangeStart"] = json!("10.240.12.2");

    let mut c1 = TestNetns::new("mc1");
    let r = host.add(&conf, "c1", &c1);
    assert_eq!(ip_of(&r, false), "10.240.12.2");
    assert!(
        c1.stdout(&["ip", "-o", "addr", "show", "eth0"])
            .contains("10.240.12.2/30")
    );
    assert_eq!(host.leases(), ["10.240.12.2"]);

    let c2 = TestNetns::new("mc2");
    let ours = host.call("ADD", &conf, "c2", c2.path(), "eth0").err(999);
    assert!(!has_link(&c2, "eth0"), "a failed ADD leaves no interface");
    // The same failure from the separate binaries, host-local exec'd.
    let separate = PluginHost::new("mcs", &plugin_bin("bridge"), &["host-local"]);
    let mut sconf = conf.clone();
    sconf["ipam"]["dataDir"] = json!(host.data.to_str());
    sconf["bridge"] = json!(testsupport::unique_name("cnirsmc"));
    let theirs = separate
        .call("ADD", &sconf, "c2", c2.path(), "eth0")
        .err(999);
    assert_eq!(ours["msg"], theirs["msg"]);
    assert_eq!(
        ours["msg"],
        "failed to allocate for range 0: no IP addresses available in range set: 10.240.12.2-10.240.12.2"
    );

    host.del(&conf, "c1", c1.path());
    assert!(!has_link(&c1, "eth0"));
    assert!(
        host.leases().is_empty(),
        "DEL released the lease in-process"
    );
    // The same container and ifname again, right after DEL.
    let r = host.add(&conf, "c1", &c1);
    assert_eq!(ip_of(&r, false), "10.240.12.2");
    host.del(&conf, "c1", c1.path());
    c1.delete();
}

/// Run `cmd`, again while the fresh copy is "text file busy" (within the
/// tests' deadline): another test thread's fork can hold the copy's write
/// descriptor until its exec, which a busy machine delays.
fn output(cmd: &mut std::process::Command) -> std::process::Output {
    let mut out = None;
    testsupport::retry(|| match cmd.output() {
        Err(e) if e.raw_os_error() == Some(26) => false,
        r => {
            out = Some(r.unwrap());
            true
        }
    });
    out.unwrap_or_else(|| panic!("{cmd:?} stayed busy"))
}

#[test]
fn a_copy_under_a_plugin_name_is_that_plugin_and_its_own_name_lists_them() {
    let dir = TempDir::new("copy");
    let copy = dir.join("loopback");
    std::fs::copy(multi(), &copy).unwrap();
    let out = output(std::process::Command::new(&copy).env("CNI_COMMAND", "VERSION"));
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("supportedVersions"));
    let about = output(std::process::Command::new(&copy).env_remove("CNI_COMMAND"));
    assert!(String::from_utf8_lossy(&about.stderr).starts_with("CNI loopback plugin"));

    let list = std::process::Command::new(multi())
        .arg("--list")
        .output()
        .unwrap();
    let names: Vec<String> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(names, cni_plugins::NAMES);
    let unknown = std::process::Command::new(multi()).output().unwrap();
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("multi-call CNI plugin binary"));
}

/// `dhcp daemon` is the daemon, with its own entry point and flags; any
/// other `dhcp` invocation is the IPAM plugin; `daemon` means nothing to
/// another plugin name.
#[test]
fn dhcp_daemon_is_dispatched_to_the_daemon() {
    let (_bins, paths) = linked(&["dhcp", "bridge"]);
    let out = output(std::process::Command::new(&paths[0]).args(["daemon", "-nope"]));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("flag provided but not defined: -nope\nUsage of daemon:"),
        "{err}"
    );
    let out = output(std::process::Command::new(&paths[0]).env("CNI_COMMAND", "VERSION"));
    assert!(String::from_utf8_lossy(&out.stdout).contains("supportedVersions"));
    let about = output(std::process::Command::new(&paths[0]).env_remove("CNI_COMMAND"));
    assert!(String::from_utf8_lossy(&about.stderr).starts_with("CNI dhcp plugin"));
    let out = output(
        std::process::Command::new(&paths[1])
            .arg("daemon")
            .env("CNI_COMMAND", "VERSION"),
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("supportedVersions"));
}

#[test]
fn ptp_with_static_in_process_adds_checks_and_deletes() {
    testsupport::require_root();
    let (_bins, paths) = linked(&["ptp"]);
    let host = PluginHost::new("mcp", &paths[0], &[]);
    std::os::unix::fs::symlink(multi(), host.path.join("static")).unwrap();
    let ipam = json!({"type": "static", "addresses": [{"address": "10.240.13.5/24", "gateway": "10.240.13.1"}],
                      "routes": [{"dst": "0.0.0.0/0"}]});
    let conf = host.conf("ptp", "1.0.0", &[], json!({ "ipam": ipam }));
    let mut c = TestNetns::new("mcp1");
    let r = host.add(&conf, "c1", &c);
    assert_eq!(ip_of(&r, false), "10.240.13.5");
    assert!(
        c.stdout(&["ip", "-o", "addr", "show", "eth0"])
            .contains("10.240.13.5/24")
    );
    // CHECK delegates to static too.
    host.call(
        "CHECK",
        &testsupport::with_prev(&conf, &r),
        "c1",
        c.path(),
        "eth0",
    )
    .ok();
    host.del(&conf, "c1", c.path());
    assert!(!has_link(&c, "eth0"));
    let r = host.add(&conf, "c1", &c);
    assert_eq!(ip_of(&r, false), "10.240.13.5");
    host.del(&conf, "c1", c.path());
    c.delete();
}

/// Run the multi-call binary as `bin` in namespace `netns` with `env` and
/// `stdin`, killed after the tests' deadline (a hang fails the test
/// instead of blocking it).
fn run_bounded(netns: &str, bin: &Path, env: &[(&str, &str)], stdin: &str) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = std::process::Command::new("ip")
        .args(["netns", "exec", netns])
        .arg(bin)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let pid = child.id();
    let (done, wait) = std::sync::mpsc::channel::<()>();
    let killer = std::thread::spawn(move || {
        if wait.recv_timeout(testsupport::deadline()).is_err() {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
        }
    });
    let out = child.wait_with_output().unwrap();
    let _ = done.send(());
    killer.join().unwrap();
    out
}

/// The in-process IPAM plugin writes to stderr while the calling plugin
/// runs: host-local's GC without valid attachments says so on stderr, and
/// the call returns (the caller held the process's stderr lock for the
/// whole call, so the delegate's first message blocked forever). Without
/// valid attachments bridge's GC touches no firewall rule.
#[test]
fn in_process_ipam_writing_to_stderr_does_not_hang_its_caller() {
    let (dir, paths) = linked(&["bridge", "host-local"]);
    let data = dir.join("data");
    let conf = json!({"cniVersion": "1.1.0", "name": "cnirsmcgc", "type": "bridge",
        "bridge": "cnirsmcgc0",
        "ipam": {"type": "host-local", "dataDir": data.to_str(),
                 "ranges": [[{"subnet": "10.240.14.0/24"}]]}});
    let env = [("CNI_COMMAND", "GC"), ("CNI_PATH", dir.to_str())];
    // In a throwaway namespace, as every plugin call of the tests that
    // could touch "host" state.
    let host = TestNetns::new("mcgc");
    let out = run_bounded(host.name(), &paths[0], &env, &conf.to_string());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert!(out.stdout.is_empty());
    assert!(stderr.contains("bridge: GC of network cnirsmcgc without"));
    assert!(stderr.contains("host-local: GC of network cnirsmcgc without"));
}

/// Under a name that is no plugin's (a renamed link, a name with a suffix
/// or a trailing space), a runtime's call fails with a CNI error on stdout
/// naming the name; a person running it gets the explanation on stderr.
/// A caller that sets its own `argv[0]` (or none) gets the plugin the
/// exec'd file is named after.
#[test]
fn unknown_names_fail_with_a_cni_error_and_odd_argv0_uses_the_file_name() {
    use std::os::unix::process::CommandExt;
    let dir = TempDir::new("names");
    for name in ["bridge.old", "bridge-v2", "bridge ", "loopback"] {
        std::fs::hard_link(multi(), dir.join(name)).unwrap();
    }
    for name in ["bridge.old", "bridge-v2", "bridge "] {
        let out = std::process::Command::new(dir.join(name))
            .env("CNI_COMMAND", "ADD")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let err: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(err["code"], 999);
        let msg = err["msg"].as_str().unwrap();
        assert!(
            msg.starts_with(&format!("{name:?} is not a plugin name: ")),
            "{msg}"
        );
        assert!(msg.contains("bridge, ptp"), "{msg}");
        let person = std::process::Command::new(dir.join(name))
            .env_remove("CNI_COMMAND")
            .output()
            .unwrap();
        assert_eq!(person.status.code(), Some(1));
        assert!(person.stdout.is_empty());
        assert!(String::from_utf8_lossy(&person.stderr).contains("is not a plugin name"));
    }
    // argv[0] chosen by the caller: the file's own name decides.
    for argv0 in ["", "weird", "/x/y/cni"] {
        let out = std::process::Command::new(dir.join("loopback"))
            .arg0(argv0)
            .env("CNI_COMMAND", "VERSION")
            .output()
            .unwrap();
        assert!(out.status.success(), "argv0 {argv0:?}: {out:?}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("supportedVersions"));
    }
    // A symlink under another name to a link named after a plugin: exec
    // follows it, so the file run is that plugin's name.
    std::os::unix::fs::symlink(dir.join("loopback"), dir.join("my-lo")).unwrap();
    let out = std::process::Command::new(dir.join("my-lo"))
        .env("CNI_COMMAND", "VERSION")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // argv[0] naming a plugin wins over the file's name.
    let about = std::process::Command::new(dir.join("loopback"))
        .arg0("tuning")
        .env_remove("CNI_COMMAND")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&about.stderr).starts_with("CNI tuning plugin"));
}

/// Without `close_range`, bridge ADD and DEL with nftables masquerade
/// (whose netfilter socket a child releases) and ptp DEL (whose veth a
/// child deletes) finish and close their stdout: the children close every
/// other descriptor another way (before, they kept the plugin's stdout and
/// the runtime's read never ended).
#[test]
fn without_close_range_plugins_still_finish() {
    use std::io::Write;
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    testsupport::require_root();
    let (_bins, paths) = linked(&["bridge", "ptp"]);
    let host = PluginHost::new("mcold", &paths[0], &[]);
    std::os::unix::fs::symlink(multi(), host.path.join("host-local")).unwrap();
    let bridge = host.conf(
        "bridge",
        "1.0.0",
        &["10.240.15.0/24"],
        json!({"bridge": testsupport::unique_name("cnirsold"), "isGateway": true,
               "ipMasq": true, "ipMasqBackend": "nftables"}),
    );
    let mut ptp = host.conf("ptp", "1.0.0", &["10.240.16.0/24"], json!({}));
    ptp["name"] = json!(format!("{}p", host.net));
    let c = TestNetns::new("mcold1");
    let call = |bin: &Path, cmd: &str, conf: &serde_json::Value, ifname: &str| {
        let mut child = std::process::Command::new("ip");
        child
            .args(["netns", "exec", host.ns.name()])
            .arg(bin)
            .envs([
                ("CNI_COMMAND", cmd),
                ("CNI_CONTAINERID", "c1"),
                ("CNI_NETNS", c.path()),
                ("CNI_IFNAME", ifname),
                ("CNI_PATH", host.path.to_str()),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        // SAFETY: the closure makes only prctl calls.
        unsafe { child.pre_exec(testsupport::seccomp::refuse_close_range) };
        let mut child = child.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(conf.to_string().as_bytes())
            .unwrap();
        let pgid = child.id();
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let killer = std::thread::spawn(move || {
            let late = wait.recv_timeout(testsupport::deadline()).is_err();
            if late {
                let _ = std::process::Command::new("kill")
                    .args(["-9", "--", &format!("-{pgid}")])
                    .status();
            }
            late
        });
        let out = child.wait_with_output().unwrap();
        let _ = done.send(());
        assert!(
            !killer.join().unwrap(),
            "{cmd} {}: stdout still open after {:?}",
            bin.display(),
            testsupport::deadline()
        );
        assert!(out.status.success(), "{cmd}: {out:?}");
    };
    call(&paths[0], "ADD", &bridge, "eth0");
    call(&paths[1], "ADD", &ptp, "eth1");
    call(&paths[1], "DEL", &ptp, "eth1");
    call(&paths[0], "DEL", &bridge, "eth0");
    assert!(!has_link(&c, "eth0") && !has_link(&c, "eth1"));
}
