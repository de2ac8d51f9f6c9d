use std::io::Read;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;

use super::*;
use crate::wire::{ALLOCATE, CMD_ARGS, CmdArgs, RELEASE};

/// Answers Allocate with its container ID as the error text (to see the
/// argument arrived), Release with an empty struct.
struct Echo;

impl Service for Echo {
    fn has(&self, method: &str) -> bool {
        method == ALLOCATE || method == RELEASE
    }

    fn call(&self, method: &str, args: &Value) -> Reply {
        let a = CmdArgs::from_value(args);
        if method == ALLOCATE {
            return Err(format!("allocate {}", a.container_id));
        }
        Ok((wire::EMPTY, Value::strukt(vec![])))
    }
}

struct Server {
    path: PathBuf,
    _dir: testsupport::TempDir,
}

/// A server of `Echo` on a fresh socket, serving `conns` connections.
fn server(conns: usize) -> Server {
    let dir = testsupport::TempDir::new("rpc");
    let path = dir.join("s.sock");
    let listener = UnixListener::bind(&path).unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(conns) {
            let _ = serve(stream.unwrap(), &Echo, Duration::from_secs(10));
        }
    });
    Server { path, _dir: dir }
}

const T: Duration = Duration::from_secs(10);

fn args(cid: &str) -> Value {
    CmdArgs {
        container_id: cid.into(),
        ..Default::default()
    }
    .to_value()
}

#[test]
fn calls_on_one_connection_get_their_replies_in_order() {
    let s = server(1);
    let mut c = Client::dial(&s.path, T).unwrap();
    for cid in ["a", "b"] {
        match c.call(ALLOCATE, CMD_ARGS, &args(cid)) {
            Err(CallError::Server(e)) => assert_eq!(e, format!("allocate {cid}")),
            other => panic!("{:?}", other.map(|_| ())),
        }
        assert_eq!(
            c.call(RELEASE, CMD_ARGS, &args(cid)).unwrap(),
            Value::Struct(vec![])
        );
    }
}

#[test]
fn unknown_methods_get_gos_messages_and_the_connection_goes_on() {
    let s = server(1);
    let mut c = Client::dial(&s.path, T).unwrap();
    for (method, want) in [
        ("DHCP.Nope", "rpc: can't find method DHCP.Nope"),
        ("Other.Allocate", "rpc: can't find service Other.Allocate"),
        ("NoDot", "rpc: service/method request ill-formed: NoDot"),
    ] {
        match c.call(method, CMD_ARGS, &args("x")) {
            Err(CallError::Server(e)) => assert_eq!(e, want),
            other => panic!("{method}: {:?}", other.map(|_| ())),
        }
    }
    assert!(c.call(RELEASE, CMD_ARGS, &args("x")).is_ok());
}

fn raw_exchange(path: &std::path::Path, request: &[u8]) -> String {
    let mut s = UnixStream::connect(path).unwrap();
    s.write_all(request).unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn http_that_is_not_a_connect_to_the_rpc_path_is_refused_as_go_does() {
    let s = server(2);
    let get = raw_exchange(&s.path, b"GET /_goRPC_ HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(
        get.starts_with("HTTP/1.0 405 Method Not Allowed\r\n"),
        "{get}"
    );
    assert!(get.ends_with("\r\n\r\n405 must CONNECT\n"), "{get}");
    let other = raw_exchange(&s.path, b"CONNECT /elsewhere HTTP/1.0\n\n");
    assert!(other.starts_with("HTTP/1.0 404 Not Found\r\n"), "{other}");
}

#[test]
fn dial_errors_read_as_gos() {
    let dir = testsupport::TempDir::new("rpc");
    let missing = dir.join("none.sock");
    match Client::dial(&missing, T) {
        Err(CallError::Dial { msg, absent }) => {
            assert_eq!(
                msg,
                format!(
                    "dial unix {}: connect: no such file or directory",
                    missing.display()
                )
            );
            assert!(absent);
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    // A socket file nobody listens on (a daemon killed without cleanup).
    let stale = dir.join("stale.sock");
    drop(UnixListener::bind(&stale).unwrap());
    match Client::dial(&stale, T) {
        Err(CallError::Dial { msg, absent }) => {
            assert!(msg.ends_with("connect: connection refused"), "{msg}");
            assert!(absent);
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    // Something that answers, but not Go RPC.
    let wrong = dir.join("wrong.sock");
    let l = UnixListener::bind(&wrong).unwrap();
    std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut buf = [0u8; 64];
        let _ = s.read(&mut buf);
        let _ = s.write_all(b"HTTP/1.0 404 Not Found\r\n\r\n");
    });
    match Client::dial(&wrong, T) {
        Err(CallError::Dial { msg, absent }) => {
            assert_eq!(
                msg,
                format!(
                    "dial-http unix {}: unexpected HTTP response: 404 Not Found",
                    wrong.display()
                )
            );
            assert!(!absent);
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

#[test]
fn a_silent_server_is_reported_not_waited_for() {
    let dir = testsupport::TempDir::new("rpc");
    let path = dir.join("slow.sock");
    let l = UnixListener::bind(&path).unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut buf = [0u8; 27];
        s.read_exact(&mut buf).unwrap();
        s.write_all(b"HTTP/1.0 200 Connected to Go RPC\n\n")
            .unwrap();
        // Hold the connection open without answering until the test ends.
        let _ = rx.recv();
    });
    let mut c = Client::dial(&path, Duration::from_millis(300)).unwrap();
    match c.call(ALLOCATE, CMD_ARGS, &args("x")) {
        Err(CallError::Transport(e)) => {
            assert_eq!(e, "no answer from the DHCP daemon within 300ms")
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    drop(tx);
}
