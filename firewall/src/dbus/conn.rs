//! A blocking connection to a bus: address, SASL `EXTERNAL`
//! authentication, `Hello`, and method calls that wait for their reply
//! with a deadline.

use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use nix::sys::socket::UnixAddr;
use nix::sys::time::{TimeVal, TimeValLike};

use super::message::{self, ERROR, METHOD_RETURN, Message};
use super::wire::Value;
use super::{BUS_INTERFACE, BUS_NAME, BUS_PATH, Error};

/// Where the system bus is when `DBUS_SYSTEM_BUS_ADDRESS` is unset.
pub const SYSTEM_BUS_DEFAULT: &str = "unix:path=/run/dbus/system_bus_socket";

/// The longest the bus may answer an authentication line.
const MAX_LINE: usize = 1024;

/// The system bus address: `DBUS_SYSTEM_BUS_ADDRESS`, else the default
/// socket, as libdbus and godbus decide.
pub fn system_bus_address() -> String {
    std::env::var("DBUS_SYSTEM_BUS_ADDRESS")
        .ok()
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| SYSTEM_BUS_DEFAULT.to_string())
}

/// The socket of one address entry: `unix:path=...` or
/// `unix:abstract=...` (values `%`-escaped); other transports are not ours
/// to speak.
pub fn parse_address(entry: &str) -> Result<UnixAddr, String> {
    let Some(params) = entry.strip_prefix("unix:") else {
        return Err(format!("unsupported bus address {entry:?}"));
    };
    for kv in params.split(',') {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        let v = unescape(v).ok_or_else(|| format!("bad escape in bus address {entry:?}"))?;
        let addr = match k {
            "path" => UnixAddr::new(std::ffi::OsStr::from_bytes(&v)),
            "abstract" => UnixAddr::new_abstract(&v),
            _ => continue,
        };
        return addr.map_err(|e| format!("bus address {entry:?}: {}", skel::errno_text(e)));
    }
    Err(format!("bus address {entry:?} has no path"))
}

/// Connect within `timeout`: a bus whose listen queue is full (a stuck
/// daemon) makes a unix connect wait, bounded by the socket's send
/// timeout, which `UnixStream::connect` gives no way to set.
fn connect(addr: &UnixAddr, timeout: Duration) -> nix::Result<UnixStream> {
    use nix::sys::socket::{self, AddressFamily, SockFlag, SockType, sockopt};
    let fd = socket::socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    let micros = i64::try_from(timeout.as_micros()).unwrap_or(i64::MAX);
    socket::setsockopt(&fd, sockopt::SendTimeout, &TimeVal::microseconds(micros))?;
    loop {
        match socket::connect(fd.as_raw_fd(), addr) {
            Err(nix::errno::Errno::EINTR) => {}
            Err(nix::errno::Errno::EAGAIN) => return Err(nix::errno::Errno::ETIMEDOUT),
            other => break other?,
        }
    }
    Ok(UnixStream::from(fd))
}

fn unescape(v: &str) -> Option<Vec<u8>> {
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
}

/// An authenticated connection that has said `Hello`.
pub struct Conn {
    sock: UnixStream,
    rbuf: Vec<u8>,
    serial: u32,
    timeout: Duration,
}

impl Conn {
    /// Connect to `address` (entries separated by `;`, tried in order),
    /// authenticate and say `Hello`, all within `timeout`.
    pub fn open(address: &str, timeout: Duration) -> Result<Conn, Error> {
        let deadline = Instant::now() + timeout;
        let mut why = Vec::new();
        for entry in address.split(';').filter(|e| !e.is_empty()) {
            let left = deadline.saturating_duration_since(Instant::now());
            match parse_address(entry).and_then(|a| {
                connect(&a, left.max(Duration::from_millis(1)))
                    .map_err(|e| format!("connect to {entry}: {}", skel::errno_text(e)))
            }) {
                Ok(sock) => return Conn::start(sock, timeout, deadline),
                Err(e) => why.push(e),
            }
        }
        if why.is_empty() {
            why.push("empty bus address".to_string());
        }
        Err(Error::NoBus(why.join("; ")))
    }

    fn start(sock: UnixStream, timeout: Duration, deadline: Instant) -> Result<Conn, Error> {
        let mut c = Conn {
            sock,
            rbuf: Vec::new(),
            serial: 0,
            timeout,
        };
        c.auth(deadline)?;
        let hello = Message::call(BUS_NAME, BUS_PATH, BUS_INTERFACE, "Hello", vec![]);
        c.call_by(hello, deadline)?;
        Ok(c)
    }

    /// SASL `EXTERNAL` with our effective uid in hex of its decimal text:
    /// the bus compares it with the socket's peer credentials.
    fn auth(&mut self, deadline: Instant) -> Result<(), Error> {
        let uid = nix::unistd::geteuid().as_raw().to_string();
        let hex: String = uid.bytes().map(|b| format!("{b:02x}")).collect();
        self.send(format!("\0AUTH EXTERNAL {hex}\r\n").as_bytes(), deadline)?;
        let line = self.read_line(deadline)?;
        if !line.starts_with("OK ") {
            return Err(Error::NoBus(format!(
                "bus refused authentication as uid {uid}: {line}"
            )));
        }
        self.send(b"BEGIN\r\n", deadline)
    }

    fn read_line(&mut self, deadline: Instant) -> Result<String, Error> {
        loop {
            if let Some(end) = self.rbuf.windows(2).position(|w| w == b"\r\n") {
                let line = String::from_utf8_lossy(&self.rbuf[..end]).into_owned();
                self.rbuf.drain(..end + 2);
                return Ok(line);
            }
            if self.rbuf.len() > MAX_LINE {
                return Err(Error::Failed("bus sent an overlong line".into()));
            }
            self.fill(deadline)?;
        }
    }

    fn send(&mut self, bytes: &[u8], deadline: Instant) -> Result<(), Error> {
        self.sock
            .set_write_timeout(Some(remaining(deadline)?))
            .and_then(|()| self.sock.write_all(bytes))
            .map_err(|e| io_error("write to the bus", e))
    }

    /// Read what the bus has sent, waiting at most until `deadline`.
    fn fill(&mut self, deadline: Instant) -> Result<(), Error> {
        let mut chunk = [0u8; 4096];
        loop {
            self.sock
                .set_read_timeout(Some(remaining(deadline)?))
                .map_err(|e| io_error("read from the bus", e))?;
            match self.sock.read(&mut chunk) {
                Ok(0) => return Err(Error::Failed("the bus closed the connection".into())),
                Ok(n) => {
                    self.rbuf.extend_from_slice(&chunk[..n]);
                    return Ok(());
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(io_error("read from the bus", e)),
            }
        }
    }

    /// The next message no larger than [`message::MAX_MESSAGE`]; larger
    /// ones (none is a reply to our calls) are skipped unread.
    fn read_message(&mut self, deadline: Instant) -> Result<Message, Error> {
        loop {
            while self.rbuf.len() < 16 {
                self.fill(deadline)?;
            }
            let len = message::declared_len(&self.rbuf[..16]).map_err(malformed)?;
            if len > message::MAX_MESSAGE {
                self.discard(len, deadline)?;
                continue;
            }
            while self.rbuf.len() < len {
                self.fill(deadline)?;
            }
            let m = Message::decode(&self.rbuf[..len]).map_err(malformed);
            self.rbuf.drain(..len);
            return m;
        }
    }

    /// Drop the next `n` bytes from the bus, holding at most one read.
    fn discard(&mut self, mut n: usize, deadline: Instant) -> Result<(), Error> {
        loop {
            let k = n.min(self.rbuf.len());
            self.rbuf.drain(..k);
            n -= k;
            if n == 0 {
                return Ok(());
            }
            self.fill(deadline)?;
        }
    }

    /// Send `m` and wait for its reply: the reply's body, or the error it
    /// carries. Anything else the bus sends meanwhile (signals such as
    /// `NameAcquired`) is skipped.
    pub fn call(&mut self, m: Message) -> Result<Vec<Value>, Error> {
        self.call_by(m, Instant::now() + self.timeout)
    }

    fn call_by(&mut self, mut m: Message, deadline: Instant) -> Result<Vec<Value>, Error> {
        self.serial = self.serial.wrapping_add(1).max(1);
        m.serial = self.serial;
        let bytes = m.encode().map_err(|e| Error::Failed(e.to_string()))?;
        self.send(&bytes, deadline)?;
        loop {
            let r = self.read_message(deadline)?;
            if r.reply_serial != Some(m.serial) {
                continue;
            }
            match r.kind {
                METHOD_RETURN => return Ok(r.body),
                ERROR => {
                    let message = match r.body.first() {
                        Some(Value::Str(s)) => s.clone(),
                        _ => String::new(),
                    };
                    let name = r.error_name.unwrap_or_default();
                    return Err(Error::Reply { name, message });
                }
                _ => {}
            }
        }
    }
}

fn remaining(deadline: Instant) -> Result<Duration, Error> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(Error::Timeout);
    }
    Ok(left)
}

fn io_error(what: &str, e: std::io::Error) -> Error {
    match e.kind() {
        ErrorKind::WouldBlock | ErrorKind::TimedOut => Error::Timeout,
        _ => Error::Failed(format!("{what}: {}", skel::io_text(&e))),
    }
}

fn malformed(e: super::wire::WireError) -> Error {
    Error::Failed(format!("malformed message from the bus: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufRead;
    use std::os::unix::net::UnixListener;

    #[test]
    fn addresses() {
        let a = parse_address("unix:path=/run/x%20y/bus,guid=00").unwrap();
        assert_eq!(a.path(), Some(std::path::Path::new("/run/x y/bus")));
        let a = parse_address("unix:guid=1,abstract=/tmp/dbus-X").unwrap();
        assert_eq!(a.as_abstract(), Some(&b"/tmp/dbus-X"[..]));
        for bad in [
            "tcp:host=localhost,port=1",
            "unix:tmpdir=/tmp",
            "unix:path=%zz",
            "x",
        ] {
            assert!(parse_address(bad).is_err(), "{bad}");
        }
    }

    /// A fake bus on a socket in a temp dir, serving one connection with
    /// `serve`; returns the address.
    fn fake_bus(serve: impl FnOnce(UnixStream) + Send + 'static) -> (String, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!(
            "cnirs-fakebus-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bus");
        let _ = std::fs::remove_file(&path);
        let l = UnixListener::bind(&path).unwrap();
        std::thread::spawn(move || {
            if let Ok((s, _)) = l.accept() {
                serve(s);
            }
        });
        (format!("unix:path={}", path.display()), dir)
    }

    /// Read the client's messages one at a time.
    fn next_message(r: &mut std::io::BufReader<UnixStream>) -> Message {
        let mut head = [0u8; 16];
        r.read_exact(&mut head).unwrap();
        let mut all = head.to_vec();
        all.resize(message::frame_len(&head).unwrap(), 0);
        r.read_exact(&mut all[16..]).unwrap();
        Message::decode(&all).unwrap()
    }

    fn reply(kind: u8, to: u32, serial: u32, body: Vec<Value>) -> Vec<u8> {
        let m = Message {
            kind,
            serial,
            reply_serial: Some(to),
            error_name: (kind == message::ERROR).then(|| "a.b.Failed".to_string()),
            body,
            ..Message::default()
        };
        m.encode().unwrap()
    }

    #[test]
    fn a_whole_exchange_with_a_fake_bus() {
        let (addr, dir) = fake_bus(|s| {
            let mut w = s.try_clone().unwrap();
            let mut r = std::io::BufReader::new(s);
            let mut line = Vec::new();
            r.read_until(b'\n', &mut line).unwrap();
            let uid = nix::unistd::geteuid().as_raw().to_string();
            let hex: String = uid.bytes().map(|b| format!("{b:02x}")).collect();
            assert_eq!(line, format!("\0AUTH EXTERNAL {hex}\r\n").as_bytes());
            w.write_all(b"OK 0123\r\n").unwrap();
            line.clear();
            r.read_until(b'\n', &mut line).unwrap();
            assert_eq!(line, b"BEGIN\r\n");
            let hello = next_message(&mut r);
            assert_eq!(hello.member.as_deref(), Some("Hello"));
            // A signal and a stray reply first: the client must skip them.
            let signal = Message {
                kind: message::SIGNAL,
                serial: 1,
                path: Some("/p".into()),
                interface: Some("a.b".into()),
                member: Some("NameAcquired".into()),
                ..Message::default()
            };
            w.write_all(&signal.encode().unwrap()).unwrap();
            // One too large to read (any peer may send us a signal): skipped.
            let huge = Message {
                body: vec![Value::Array(
                    "y".into(),
                    vec![Value::Byte(7); message::MAX_MESSAGE],
                )],
                ..signal.clone()
            };
            w.write_all(&huge.encode().unwrap()).unwrap();
            w.write_all(&reply(METHOD_RETURN, 99, 2, vec![])).unwrap();
            let done = reply(
                METHOD_RETURN,
                hello.serial,
                3,
                vec![Value::Str(":1.1".into())],
            );
            // Split across writes, as a stream may deliver it.
            w.write_all(&done[..5]).unwrap();
            std::thread::sleep(Duration::from_millis(20));
            w.write_all(&done[5..]).unwrap();
            let call = next_message(&mut r);
            assert_eq!(call.body, vec![Value::Str("x".into())]);
            let err = reply(ERROR, call.serial, 4, vec![Value::Str("it failed".into())]);
            w.write_all(&err).unwrap();
            let call = next_message(&mut r);
            w.write_all(&reply(
                METHOD_RETURN,
                call.serial,
                5,
                vec![Value::Bool(true)],
            ))
            .unwrap();
        });
        let mut c = Conn::open(&addr, Duration::from_secs(5)).unwrap();
        let m = |arg: &str| Message::call("d.e", "/p", "i.f", "M", vec![Value::Str(arg.into())]);
        assert_eq!(
            c.call(m("x")),
            Err(Error::Reply {
                name: "a.b.Failed".into(),
                message: "it failed".into()
            })
        );
        assert_eq!(c.call(m("y")), Ok(vec![Value::Bool(true)]));
        let _ = std::fs::remove_dir_all(dir);
    }

    /// Read from `s` until the client goes: a bus that never answers.
    fn until_closed(mut s: UnixStream) {
        let mut b = [0u8; 64];
        while s.read(&mut b).is_ok_and(|n| n > 0) {}
    }

    /// `Conn::open` of `addr` within `timeout`, under a watchdog: the fake
    /// buses below never stop on their own, so only the timeout can end
    /// the call, and no time is asserted (a busy machine stretches any).
    fn open_within(addr: &str, timeout: Duration) -> Option<Error> {
        let addr = addr.to_string();
        testsupport::within_deadline("Conn::open", move || Conn::open(&addr, timeout).err())
    }

    #[test]
    fn a_silent_bus_times_out() {
        let (addr, dir) = fake_bus(until_closed);
        assert_eq!(
            open_within(&addr, Duration::from_millis(200)),
            Some(Error::Timeout)
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A bus that talks without end but never answers: signals without
    /// pause after authentication, or an authentication line trickled a
    /// byte at a time. The deadline still ends the wait (a timeout per
    /// read would wait forever).
    #[test]
    fn a_chattering_bus_times_out() {
        let (addr, dir) = fake_bus(|mut s| {
            let mut b = [0u8; 64];
            let _ = s.read(&mut b);
            let _ = s.write_all(b"OK 0123\r\n");
            let signal = Message {
                kind: message::SIGNAL,
                serial: 1,
                path: Some("/p".into()),
                interface: Some("a.b".into()),
                member: Some("Noise".into()),
                ..Message::default()
            };
            let bytes = signal.encode().unwrap();
            while s.write_all(&bytes).is_ok() {}
        });
        assert_eq!(
            open_within(&addr, Duration::from_millis(200)),
            Some(Error::Timeout)
        );
        let _ = std::fs::remove_dir_all(dir);

        let (addr, dir) = fake_bus(|mut s| {
            let mut b = [0u8; 64];
            let _ = s.read(&mut b);
            while s.write_all(b"O").is_ok() {
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        assert_eq!(
            open_within(&addr, Duration::from_millis(200)),
            Some(Error::Timeout)
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    /// Connecting is one wait, not one per step: `Hello` waits only until
    /// the connection's deadline, not a whole timeout of its own. The bus
    /// authenticates at once and never answers `Hello`; with an hour's
    /// timeout and a deadline two seconds away, only the deadline can end
    /// the call.
    #[test]
    fn connecting_has_one_deadline() {
        let (addr, dir) = fake_bus(|mut s| {
            let mut b = [0u8; 64];
            let _ = s.read(&mut b);
            let _ = s.write_all(b"OK 0123\r\n");
            until_closed(s);
        });
        let path = addr.strip_prefix("unix:path=").unwrap().to_string();
        let e = testsupport::within_deadline("Conn::start", move || {
            let sock = UnixStream::connect(&path).unwrap();
            let deadline = Instant::now() + Duration::from_secs(2);
            Conn::start(sock, Duration::from_secs(3600), deadline).err()
        });
        let _ = std::fs::remove_dir_all(dir);
        assert_eq!(e, Some(Error::Timeout));
    }

    /// A connection the bus never accepts (its queue is full) would block
    /// forever: the timeout ends it.
    #[test]
    fn a_bus_with_a_full_listen_queue_times_out() {
        use nix::sys::socket::{self, AddressFamily, Backlog, SockFlag, SockType};
        let dir = std::env::temp_dir().join(format!("cnirs-fullbus-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bus");
        let _ = std::fs::remove_file(&path);
        let l = socket::socket(
            AddressFamily::Unix,
            SockType::Stream,
            SockFlag::empty(),
            None,
        )
        .unwrap();
        socket::bind(l.as_raw_fd(), &UnixAddr::new(&path).unwrap()).unwrap();
        socket::listen(&l, Backlog::new(0).unwrap()).unwrap();
        // Never accepted: the first connection fills the queue.
        let _first = UnixStream::connect(&path).unwrap();
        let e = open_within(
            &format!("unix:path={}", path.display()),
            Duration::from_millis(200),
        );
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(
            e,
            Some(Error::NoBus(format!(
                "connect to unix:path={}: connection timed out",
                path.display()
            )))
        );
    }

    #[test]
    fn a_refusing_or_vanishing_bus() {
        let (addr, dir) = fake_bus(|mut s| {
            let mut b = [0u8; 64];
            let _ = s.read(&mut b);
            let _ = s.write_all(b"REJECTED EXTERNAL\r\n");
        });
        let e = Conn::open(&addr, Duration::from_secs(5)).err().unwrap();
        let uid = nix::unistd::geteuid();
        assert_eq!(
            e,
            Error::NoBus(format!(
                "bus refused authentication as uid {uid}: REJECTED EXTERNAL"
            ))
        );
        let _ = std::fs::remove_dir_all(&dir);
        let (addr, dir) = fake_bus(drop);
        let e = Conn::open(&addr, Duration::from_secs(5)).err().unwrap();
        assert!(matches!(e, Error::Failed(_)), "{e:?}");
        let _ = std::fs::remove_dir_all(dir);
        // Every entry of a list is tried; the error names each.
        let e = Conn::open(
            "tcp:host=x;unix:path=/nonexistent/cnirs",
            Duration::from_secs(1),
        );
        assert_eq!(
            e.err(),
            Some(Error::NoBus(
                "unsupported bus address \"tcp:host=x\"; connect to unix:path=/nonexistent/cnirs: no such file or directory".into()
            ))
        );
    }
}
