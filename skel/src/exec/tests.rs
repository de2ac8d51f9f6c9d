use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::*;

/// A directory of test programs, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = std::env::temp_dir().join(format!("skel-exec-{tag}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    fn script(&self, name: &str, body: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// How long a test waits for what should happen at once (a watchdog on a
/// call that would otherwise hang); only ever spent when it does not.
const DEADLINE: Duration = Duration::from_secs(60);

/// `f`'s value, or a panic naming `what` when it does not return within
/// [`DEADLINE`] (it is left running, and the test fails).
fn within_deadline<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(DEADLINE)
        .unwrap_or_else(|_| panic!("{what} did not return within {DEADLINE:?}"))
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet), within
/// [`DEADLINE`].
fn gone_within_deadline(pid: i32) -> bool {
    let t0 = Instant::now();
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit_once(") ").and_then(|(_, r)| r.chars().next());
        if matches!(state, None | Some('Z' | 'X')) {
            return true;
        }
        if t0.elapsed() > DEADLINE {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn sh(script: &str) -> Command {
    let mut c = Command::new("/bin/sh");
    c.args(["-c", script]);
    c
}

#[test]
fn passes_args_environment_and_stdin() {
    let out = sh(r#"printf '%s|%s|%s|' "$0" "$V" "${HOME-unset}"; cat"#)
        .env("V", "v1")
        .stdin("in")
        .run()
        .unwrap();
    assert!(out.success());
    let home = std::env::var("HOME").unwrap_or_else(|_| "unset".into());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("/bin/sh|v1|{home}|in")
    );

    let out = sh(r#"printf '%s|%s' "$V" "${HOME-unset}""#)
        .env_clear()
        .envs([("V", "only")])
        .run()
        .unwrap();
    assert_eq!(out.stdout, b"only|unset");
}

#[test]
fn stdin_is_dev_null_unless_given() {
    let out = sh("cat; echo end").run().unwrap();
    assert_eq!(out.stdout, b"end\n");
}

#[test]
fn large_input_and_output_on_both_pipes_do_not_deadlock() {
    // The program writes 1 MiB to stderr before it reads any stdin, then
    // echoes 2 MiB of stdin: every pipe fills up at some point.
    let input: Vec<u8> = (0..2 << 20).map(|i| (i % 251) as u8).collect();
    let out = sh("head -c 1048576 /dev/zero >&2; cat")
        .stdin(input.clone())
        .timeout(Duration::from_secs(30))
        .run()
        .unwrap();
    assert!(out.success());
    assert_eq!(out.stderr.len(), 1 << 20);
    assert!(out.stdout == input, "stdout differs from stdin");
}

#[test]
fn a_program_that_ignores_stdin_is_not_an_error() {
    let out = Command::new("true")
        .stdin(vec![b'x'; 4 << 20])
        .run()
        .unwrap();
    assert!(out.success());
}

#[test]
fn inherited_stderr_is_not_captured() {
    let out = sh("echo to-our-stderr >&2").inherit_stderr().run().unwrap();
    assert!(out.stderr.is_empty());
}

#[test]
fn missing_program_is_not_found_in_go_words() {
    let e = Command::new("/nonexistent/cnirs-tool").run().unwrap_err();
    assert!(matches!(&e, Error::NotFound { program } if program == "/nonexistent/cnirs-tool"));
    assert_eq!(
        e.to_string(),
        "fork/exec /nonexistent/cnirs-tool: no such file or directory"
    );
    let e = Command::new("cnirs-no-such-tool").run().unwrap_err();
    assert!(matches!(e, Error::NotFound { .. }));
    assert_eq!(
        e.to_string(),
        "exec: \"cnirs-no-such-tool\": executable file not found in $PATH"
    );
}

#[test]
fn other_spawn_failures_carry_their_errno() {
    let d = Dir::new("noexec");
    let p = d.script("plain", "exit 0");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = Command::new(&p).run().unwrap_err();
    assert!(
        matches!(
            e,
            Error::Spawn {
                errno: Errno::EACCES,
                attempts: 1,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        format!("fork/exec {}: permission denied", p.display())
    );
}

#[test]
fn text_file_busy_is_retried_with_a_fresh_process() {
    let d = Dir::new("busy");
    let p = d.script("busy", "echo ok");
    // Held open for writing, the binary cannot be executed (ETXTBSY).
    let writer = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    let e = Command::new(&p)
        .retry_busy(2, Duration::from_millis(50))
        .run()
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Spawn {
                errno: Errno::ETXTBSY,
                attempts: 2,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string().ends_with("text file busy (after 2 attempts)"),
        "{e}"
    );
    // Closed a little later: the first attempts meet ETXTBSY (on an idle
    // machine; a busy one may close it first), and the retries last as
    // long as any test waits, so they outlast a late close.
    let closer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(250));
        drop(writer);
    });
    let attempts = (DEADLINE.as_millis() / 50) as u32;
    let out = Command::new(&p)
        .retry_busy(attempts, Duration::from_millis(50))
        .run()
        .unwrap();
    closer.join().unwrap();
    assert_eq!(out.stdout, b"ok\n");
}

/// The timeout kills the program's whole group, also a grandchild that
/// holds the pipes (a call that waited for it would never return), and
/// keeps what was printed before. Nothing here is timed: the program would
/// run for an hour, so returning at all is the timeout's doing. The
/// timeout is long enough for the shell to print first, however busy the
/// machine.
#[test]
fn timeout_kills_the_process_group_and_keeps_what_was_printed() {
    let d = Dir::new("timeout");
    let pidfile = d.0.join("grandchild");
    let script = format!(
        "sleep 3600 & echo $! >{}; echo early; echo warn >&2; exec sleep 3600",
        pidfile.display()
    );
    let e = within_deadline("run with a timeout", move || {
        sh(&script)
            .own_process_group()
            .timeout(Duration::from_secs(5))
            .run()
            .unwrap_err()
    });
    match e {
        Error::TimedOut {
            after,
            stdout,
            stderr,
            ..
        } => {
            assert_eq!(after, Duration::from_secs(5));
            assert_eq!(
                (stdout.as_slice(), stderr.as_slice()),
                (&b"early\n"[..], &b"warn\n"[..])
            );
        }
        other => panic!("{other:?}"),
    }
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        gone_within_deadline(pid),
        "a process of the group survived the timeout"
    );
}

#[test]
fn timeout_applies_to_a_program_that_closes_its_pipes_but_keeps_running() {
    let e = within_deadline("run with a timeout", || {
        sh("exec >/dev/null 2>&1 </dev/null; exec sleep 3600")
            .timeout(Duration::from_millis(200))
            .run()
            .unwrap_err()
    });
    assert!(matches!(e, Error::TimedOut { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "/bin/sh: no answer within 200ms (CNI_RS_TIMEOUT), killed"
    );
}

/// `start` returns while the program runs (it goes on only once the test
/// creates a file after `start` returned), and `wait` waits for its end.
#[test]
fn start_returns_while_the_program_runs() {
    let d = Dir::new("start");
    let go_on = d.0.join("go-on");
    let script = format!(
        "cat; while [ ! -e {} ]; do sleep 0.01; done; echo done",
        go_on.display()
    );
    let running = within_deadline("start", move || sh(&script).stdin("x").start().unwrap());
    assert!(running.id() > 0);
    std::fs::write(&go_on, "").unwrap();
    let out = within_deadline("wait", move || running.wait().unwrap());
    assert_eq!(out.stdout, b"xdone\n");
}

#[test]
fn exit_statuses_read_as_go_prints_them() {
    let text = |script: &str| status_text(sh(script).run().unwrap().status);
    assert_eq!(text("exit 0"), "exit status 0");
    assert_eq!(text("exit 3"), "exit status 3");
    assert_eq!(text("kill -9 $$"), "signal: killed");
    assert_eq!(text("kill -TERM $$"), "signal: terminated");
    assert_eq!(
        text("ulimit -c 0; kill -SEGV $$"),
        "signal: segmentation fault"
    );
    assert_eq!(text("kill -USR1 $$"), "signal: user defined signal 1");
    assert_eq!(text("kill -40 $$"), "signal: signal 40");
}

/// A pipe whose read end plays the caller's watched descriptor.
fn signal_pipe() -> (std::io::PipeReader, std::io::PipeWriter) {
    std::io::pipe().unwrap()
}

#[test]
fn wait_or_leave_stops_when_the_watch_says_done() {
    // The mechanism, whatever this machine's PID 1 makes of orphans.
    assert!(crate::orphans::assume(true));
    let (r, mut w) = signal_pipe();
    let dir = Dir::new("leave");
    let count = dir.0.join("count");
    // The program counts its stdin into a file and stays. The watch says
    // done while most of stdin is still to be written: it is written first.
    let run = sh("wc -c >\"$F\"; exec sleep 3600")
        .env("F", &count)
        .stdin(vec![b'x'; 256 << 10])
        .start()
        .unwrap();
    std::io::Write::write_all(&mut w, b"!").unwrap();
    // Waiting for the exit would take an hour: returning is the proof.
    let (fin, calls) = within_deadline("wait_or_leave", move || {
        let mut calls = 0;
        let fin = run
            .wait_or_leave(r.as_fd(), || {
                calls += 1;
                let _ = std::io::Read::read(&mut &r, &mut [0u8; 8]);
                Watch::Done
            })
            .unwrap();
        (fin, calls)
    });
    assert_eq!(calls, 1);
    let Finish::Left(left) = fin else {
        panic!("not left running: {fin:?}")
    };
    let read = || std::fs::read_to_string(&count).unwrap_or_default();
    let t0 = Instant::now();
    while read().trim().is_empty() && t0.elapsed() < DEADLINE {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(read().trim(), (256 << 10).to_string());
    // Still running: killed and reaped here.
    let pid = nix::unistd::Pid::from_raw(left.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).unwrap();
    assert_eq!(left.wait().unwrap().signal(), Some(9));
}

#[test]
fn wait_or_leave_waits_for_the_exit_otherwise() {
    assert!(crate::orphans::assume(true));
    for answer in [Watch::Waiting, Watch::Broken] {
        let (r, mut w) = signal_pipe();
        std::io::Write::write_all(&mut w, b"!").unwrap();
        let mut calls = 0;
        let fin = sh("cat; echo err >&2; exit 3")
            .stdin("in")
            .start()
            .unwrap()
            .wait_or_leave(r.as_fd(), || {
                calls += 1;
                let _ = std::io::Read::read(&mut &r, &mut [0u8; 8]);
                answer
            })
            .unwrap();
        let Finish::Exited(out) = fin else {
            panic!("left running: {fin:?}")
        };
        assert_eq!(calls, 1, "{answer:?}");
        assert_eq!(
            (out.stdout.as_slice(), out.stderr.as_slice()),
            (&b"in"[..], &b"err\n"[..])
        );
        assert_eq!(status_text(out.status), "exit status 3");
    }
    // Never readable: the same.
    let (r, _w) = signal_pipe();
    let fin = sh("exit 0")
        .start()
        .unwrap()
        .wait_or_leave(r.as_fd(), || Watch::Done);
    assert!(matches!(fin, Ok(Finish::Exited(o)) if o.success()));
}
