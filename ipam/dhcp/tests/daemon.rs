//! The daemon as systemd and a node run it: a socket passed by systemd
//! (kept across service restarts), a host prefix (the daemon in a
//! container with the host's root mounted), CHECK against `prevResult`,
//! and a DEL that arrives while its ADD is still looking for a server.

mod common;

use std::os::fd::AsRawFd;
use std::os::unix::net::UnixListener;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Daemon, Lan, Proc, addr, call, conf, ours, wait_for};
use serde_json::json;
use testsupport::{TempDir, with_prev};

const LONG: Duration = Duration::from_secs(90);

/// Our daemon started as systemd starts a socket-activated service: the
/// listening socket as descriptor 3, `LISTEN_FDS=1`, `LISTEN_PID` its pid.
fn activated(listener: &UnixListener, state: &std::path::Path, log: &std::path::Path) -> Proc {
    let fd = listener.as_raw_fd();
    let mut cmd = Command::new("sh");
    cmd.args([
        "-c",
        "LISTEN_PID=$$ LISTEN_FDS=1 exec \"$0\" daemon \"$1\" -socketpath=/nonexistent/ignored.sock",
    ])
    .arg(ours())
    .arg(format!("-statedir={}", state.display()))
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(std::fs::File::create(log).unwrap());
    // SAFETY: only async-signal-safe calls (dup2, fcntl) between fork and
    // exec, on descriptor numbers.
    unsafe {
        cmd.pre_exec(move || {
            if fd == 3 {
                nix::fcntl::fcntl(
                    std::os::fd::BorrowedFd::borrow_raw(3),
                    nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()),
                )?;
            } else {
                // Kept open for the daemon: not dropped (which would close it).
                let three = nix::unistd::dup2_raw(std::os::fd::BorrowedFd::borrow_raw(fd), 3)?;
                let _ = std::os::fd::IntoRawFd::into_raw_fd(three);
            }
            Ok(())
        });
    }
    Proc {
        child: cmd.spawn().unwrap(),
        name: "activated dhcp daemon".into(),
    }
}

#[test]
fn a_socket_from_systemd_is_used_and_outlives_the_service() {
    let dir = TempDir::new("activation");
    let socket = dir.join("dhcp.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    let conf = conf("dnet", &socket, "1.1.0", json!({}));
    let log = dir.join("daemon.log");
    let mut first = activated(&listener, &dir.join("state"), &log);
    // Connections wait in the socket's queue until the daemon accepts.
    let status = call(&ours(), "STATUS", &conf, "", "");
    assert_eq!(
        status.code,
        0,
        "{status:?}: {}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    assert_eq!(first.terminate().and_then(|s| s.code()), Some(0));
    // `systemctl restart cni-dhcp.service`: the socket unit keeps the
    // socket, which the daemon must not have removed.
    assert!(socket.exists());
    let _second = activated(&listener, &dir.join("state"), &log);
    call(&ours(), "STATUS", &conf, "", "").ok();
}

#[test]
fn the_host_prefix_applies_to_socket_state_and_namespaces() {
    let lan = Lan::new(31);
    let srv = lan.server(1, &[]);
    let c = lan.container();
    // The host's root as a container sees it: only the namespace path.
    let dir = TempDir::new("hostroot");
    std::fs::create_dir_all(dir.join("run/netns")).unwrap();
    let name = c.path().rsplit('/').next().unwrap();
    std::os::unix::fs::symlink(c.path(), dir.join(&format!("run/netns/{name}"))).unwrap();
    let prefix = format!("-hostprefix={}", dir.to_str());
    let d = Daemon::start(
        &ours(),
        &lan.ns,
        dir,
        &[
            &prefix,
            "-socketpath=/dhcp.sock",
            "-statedir=/state",
            "-timeout=5s",
        ],
        true,
    );
    let conf = conf("dnet", &d.socket, "1.0.0", json!({}));
    let r = call(&ours(), "ADD", &conf, "ctrp", &format!("/run/netns/{name}")).ok();
    assert_eq!(srv.lease_of("ctrp/dnet/eth0"), Some(addr(&r)));
    assert_eq!(d.records().len(), 1);
}

#[test]
fn check_compares_the_lease_with_prev_result() {
    let lan = Lan::new(32);
    let _srv = lan.server(1, &[]);
    let c = lan.container();
    let d = Daemon::ours(&lan.ns, &["-timeout=5s"]);
    let conf = conf("dnet", &d.socket, "1.0.0", json!({}));
    let r = call(&ours(), "ADD", &conf, "ctrc", c.path()).ok();
    call(&ours(), "CHECK", &with_prev(&conf, &r), "ctrc", c.path()).ok();
    let mut other = r.clone();
    other["ips"][0]["address"] = json!("10.247.32.250/24");
    let e = call(
        &ours(),
        "CHECK",
        &with_prev(&conf, &other),
        "ctrc",
        c.path(),
    )
    .err(999);
    assert_eq!(
        e["msg"],
        format!(
            "dhcp: lease address {} of eth0 is not in prevResult",
            r["ips"][0]["address"].as_str().unwrap()
        )
    );
}

#[test]
fn a_del_during_its_add_ends_the_add() {
    let lan = Lan::new(33);
    let c = lan.container();
    let d = Daemon::ours(&lan.ns, &["-timeout=2s", "-resendtimeout=10m"]);
    let conf = conf("dnet", &d.socket, "1.0.0", json!({}));
    std::thread::scope(|s| {
        let add = s.spawn(|| call(&ours(), "ADD", &conf, "ctrd", c.path()));
        wait_for("the ADD to start", LONG, || {
            d.logs().contains("ctrd/dnet/eth0: acquiring lease")
        });
        call(&ours(), "DEL", &conf, "ctrd", c.path()).ok();
        let e = add.join().unwrap().err(999);
        assert_eq!(
            e["msg"],
            "error calling DHCP.Allocate: lease released during the exchange"
        );
    });
    assert!(d.records().is_empty());
}

/// Each step of an ADD failed in turn (skel's failpoints, read by the
/// daemon from its environment): the ADD fails with the step's error and
/// leaves nothing: no record, no lease at the server, and the next ADD
/// works.
#[test]
fn each_failed_step_of_an_add_leaves_nothing() {
    use skel::failpoint::{FAIL_VAR, LOG_VAR};
    let lan = Lan::new(34);
    let srv = lan.server(1, &[]);
    let log_dir = TempDir::new("failpoints");
    let log = log_dir.join("log");
    let c = lan.container();
    let daemon = |var: &str, value: &str| {
        let env = [(var, value)];
        Daemon::start_with_env(
            &ours(),
            &lan.ns,
            TempDir::new("dhcpd"),
            &["-timeout=5s"],
            true,
            &env,
        )
    };
    let d = daemon(LOG_VAR, log.to_str().unwrap());
    call(&ours(), "ADD", &conf_of(&d), "clean", c.path()).ok();
    let points: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    // The record goes through skel::statefile, whose point can be killed
    // at but not failed at (the kill tests' business).
    assert_eq!(
        points,
        [
            "dhcp/link-up",
            "dhcp/acked",
            "statefile/temp-written",
            "dhcp/stored"
        ]
    );
    drop(d);
    let failable = points.iter().filter(|p| p.starts_with("dhcp/"));
    for (i, point) in failable.enumerate() {
        // A fresh container each time: its link starts down.
        let c = lan.container();
        let d = daemon(FAIL_VAR, point);
        let cid = format!("fail{i}");
        let e = call(&ours(), "ADD", &conf_of(&d), &cid, c.path()).err(999);
        assert_eq!(
            e["msg"],
            format!("error calling DHCP.Allocate: injected failure at {point}")
        );
        assert!(d.records().is_empty(), "{point}: {:?}", d.records());
        let client_id = format!("{cid}/dnet/eth0");
        wait_for("the lease to be given back", LONG, || {
            srv.lease_of(&client_id).is_none()
        });
        drop(d);
        let d = Daemon::ours(&lan.ns, &["-timeout=5s"]);
        call(&ours(), "ADD", &conf_of(&d), &cid, c.path()).ok();
    }
}

fn conf_of(d: &Daemon) -> serde_json::Value {
    conf("dnet", &d.socket, "1.0.0", json!({}))
}
