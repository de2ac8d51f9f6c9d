//! Go's `net/rpc` over HTTP on a unix socket, both ends.
//!
//! The client writes `CONNECT /_goRPC_ HTTP/1.0` and a blank line; the
//! server answers `HTTP/1.0 200 Connected to Go RPC` and a blank line;
//! from then on each direction is one gob stream ([`crate::gob`]) of
//! header + body pairs: `Request` + argument, `Response` + reply. A reply
//! whose header carries an error still has a body (an empty struct),
//! which Go's client reads before it completes the call.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use nix::sys::socket::{self, AddressFamily, SockFlag, SockType, UnixAddr, sockopt};
use nix::sys::time::TimeVal;

use crate::gob::{self, Decoder, Encoder, ReadError, TypeId, Types, Value};
use crate::wire::{self, Request, Response};

/// The path Go's `rpc.DialHTTP` and `rpc.HandleHTTP` use.
pub const RPC_PATH: &str = "/_goRPC_";
const CONNECTED: &str = "200 Connected to Go RPC";
/// The longest HTTP request head the server reads.
const MAX_HEAD: usize = 8192;

/// Why a call failed.
#[derive(Debug)]
pub enum CallError {
    /// Connecting or the HTTP handshake failed; in Go's wording
    /// (`dial unix /run/cni/dhcp.sock: connect: no such file or
    /// directory`). `refused` tells whether nobody is there to answer
    /// (no socket, nobody listening) from a daemon that misbehaved.
    Dial { msg: String, absent: bool },
    /// The server answered the call with an error.
    Server(String),
    /// The connection broke or timed out during the call.
    Transport(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Dial { msg, .. } | CallError::Server(msg) | CallError::Transport(msg) => {
                f.write_str(msg)
            }
        }
    }
}

/// A connection to an RPC server, with its two gob streams.
pub struct Client {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    types: Types,
    enc: Encoder,
    dec: Decoder,
    seq: u64,
    timeout: Duration,
}

/// Connect to the unix socket `path` with the connect itself bounded by
/// `timeout` (a full listen backlog blocks a connect).
fn connect(path: &Path, timeout: Duration) -> io::Result<UnixStream> {
    let fd: OwnedFd = socket::socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    let tv = TimeVal::new(
        timeout.as_secs().min(i64::MAX as u64) as i64,
        timeout.subsec_micros().into(),
    );
    socket::setsockopt(&fd, sockopt::SendTimeout, &tv)?;
    let addr = UnixAddr::new(path)?;
    socket::connect(fd.as_raw_fd(), &addr)?;
    Ok(UnixStream::from(fd))
}

impl Client {
    /// `rpc.DialHTTP("unix", path)`, every wait bounded by `timeout`.
    pub fn dial(path: &Path, timeout: Duration) -> Result<Client, CallError> {
        let shown = path.display();
        let stream = connect(path, timeout).map_err(|e| CallError::Dial {
            msg: format!("dial unix {shown}: connect: {}", skel::io_text(&e)),
            absent: matches!(
                e.raw_os_error().map(nix::errno::Errno::from_raw),
                Some(nix::errno::Errno::ENOENT | nix::errno::Errno::ECONNREFUSED)
            ),
        })?;
        let handshake = |e: String| CallError::Dial {
            msg: format!("dial-http unix {shown}: {e}"),
            absent: false,
        };
        let io = |e: io::Error| handshake(skel::io_text(&e));
        stream.set_read_timeout(Some(timeout)).map_err(io)?;
        stream.set_write_timeout(Some(timeout)).map_err(io)?;
        let mut writer = stream.try_clone().map_err(io)?;
        writer
            .write_all(format!("CONNECT {RPC_PATH} HTTP/1.0\n\n").as_bytes())
            .map_err(io)?;
        let mut reader = BufReader::new(stream);
        let status = read_head(&mut reader).map_err(io)?;
        let status = status
            .first()
            .and_then(|l| l.split_once(' '))
            .map(|(_, s)| s.to_string())
            .unwrap_or_default();
        if status != CONNECTED {
            return Err(handshake(format!("unexpected HTTP response: {status}")));
        }
        Ok(Client {
            reader,
            writer,
            types: wire::client_types(),
            enc: Encoder::new(),
            dec: Decoder::new(),
            seq: 0,
            timeout,
        })
    }

    /// Call `method` with the argument `args` of our type `arg_type`; the
    /// reply value. The whole call is bounded by the dial timeout (a
    /// server that takes longer is reported, not waited for).
    pub fn call(
        &mut self,
        method: &str,
        arg_type: TypeId,
        args: &Value,
    ) -> Result<Value, CallError> {
        let seq = self.seq;
        self.seq += 1;
        let header = Request {
            method: method.to_string(),
            seq,
        };
        let mut out = Vec::new();
        let gob = |e: gob::Error| CallError::Transport(e.to_string());
        self.enc
            .encode(&self.types, wire::HEADER, &header.to_value(), &mut out)
            .map_err(gob)?;
        self.enc
            .encode(&self.types, arg_type, args, &mut out)
            .map_err(gob)?;
        self.writer
            .write_all(&out)
            .map_err(|e| CallError::Transport(skel::io_text(&e)))?;
        let timed_out = |e: ReadError| match e {
            ReadError::Io(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                CallError::Transport(format!(
                    "no answer from the DHCP daemon within {}",
                    crate::duration::format(self.timeout)
                ))
            }
            e => CallError::Transport(e.to_string()),
        };
        let (_, head) = self.dec.read(&mut self.reader).map_err(timed_out)?;
        let response = Response::from_value(&head);
        let (_, body) = self.dec.read(&mut self.reader).map_err(timed_out)?;
        if response.seq != seq {
            return Err(CallError::Transport(format!(
                "reply to call {} received for call {seq}",
                response.seq
            )));
        }
        if !response.error.is_empty() {
            return Err(CallError::Server(response.error));
        }
        Ok(body)
    }
}

/// The lines of an HTTP head up to the blank line (LF or CRLF), bounded.
fn read_head(r: &mut impl BufRead) -> io::Result<Vec<String>> {
    let mut lines = Vec::new();
    let mut total = 0;
    loop {
        let mut line = Vec::new();
        let n = r
            .take((MAX_HEAD - total) as u64 + 1)
            .read_until(b'\n', &mut line)?;
        total += n;
        if n == 0 || !line.ends_with(b"\n") {
            return Err(if total > MAX_HEAD {
                io::Error::new(io::ErrorKind::InvalidData, "HTTP head too long")
            } else {
                io::ErrorKind::UnexpectedEof.into()
            });
        }
        let text = String::from_utf8_lossy(&line)
            .trim_end_matches(['\r', '\n'])
            .to_string();
        if text.is_empty() {
            return Ok(lines);
        }
        lines.push(text);
    }
}

/// What a server's method answers: a reply value of one of the server's
/// types, or an error text for the client.
pub type Reply = Result<(TypeId, Value), String>;

/// The methods a server offers.
pub trait Service: Sync {
    /// Whether `method` (`DHCP.Allocate`) exists.
    fn has(&self, method: &str) -> bool;
    /// Run `method` with its decoded argument.
    fn call(&self, method: &str, args: &Value) -> Reply;
}

/// Serve one connection: the HTTP handshake, then calls until the client
/// closes it, stays idle longer than `idle`, or breaks the stream. The
/// handshake must arrive within `idle` too.
pub fn serve(stream: UnixStream, service: &dyn Service, idle: Duration) -> io::Result<()> {
    stream.set_read_timeout(Some(idle))?;
    stream.set_write_timeout(Some(idle))?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let head = read_head(&mut reader)?;
    let mut parts = head.first().map(|l| l.split(' ')).into_iter().flatten();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if target != RPC_PATH {
        return writer.write_all(&http_error("404 Not Found", "404 page not found\n"));
    }
    if method != "CONNECT" {
        return writer.write_all(&http_error("405 Method Not Allowed", "405 must CONNECT\n"));
    }
    writer.write_all(format!("HTTP/1.0 {CONNECTED}\n\n").as_bytes())?;
    let types = wire::server_types();
    let mut enc = Encoder::new();
    let mut dec = Decoder::new();
    loop {
        let request = match dec.read(&mut reader) {
            Ok((_, v)) => Request::from_value(&v),
            Err(ReadError::Io(e)) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(ReadError::Io(e)) => return Err(e),
            // An unreadable header ends the connection, as in Go.
            Err(ReadError::Gob(e)) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
        };
        let args = dec.read(&mut reader);
        let reply = match (&args, check_method(service, &request.method)) {
            (Err(ReadError::Io(e)), _) => return Err(io::Error::new(e.kind(), e.to_string())),
            (_, Err(e)) => Err(e),
            (Err(ReadError::Gob(e)), Ok(())) => Err(e.to_string()),
            (Ok((_, args)), Ok(())) => service.call(&request.method, args),
        };
        let (error, (body_type, body)) = match reply {
            Ok(body) => (String::new(), body),
            Err(e) => (e, (wire::EMPTY, Value::strukt(vec![]))),
        };
        let response = Response {
            method: request.method,
            seq: request.seq,
            error,
        };
        let mut out = Vec::new();
        let gob = |e: gob::Error| io::Error::new(io::ErrorKind::InvalidData, e);
        enc.encode(&types, wire::HEADER, &response.to_value(), &mut out)
            .map_err(gob)?;
        enc.encode(&types, body_type, &body, &mut out)
            .map_err(gob)?;
        writer.write_all(&out)?;
    }
}

/// Go's `rpc` checks of a method name, with its messages.
fn check_method(service: &dyn Service, method: &str) -> Result<(), String> {
    let Some((svc, name)) = method.rsplit_once('.') else {
        return Err(format!("rpc: service/method request ill-formed: {method}"));
    };
    if svc != "DHCP" {
        return Err(format!("rpc: can't find service {method}"));
    }
    if name.is_empty() || !service.has(method) {
        return Err(format!("rpc: can't find method {method}"));
    }
    Ok(())
}

fn http_error(status: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.0 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         X-Content-Type-Options: nosniff\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests;
