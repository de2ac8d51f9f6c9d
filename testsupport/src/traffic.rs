//! Real traffic for root tests: TCP and UDP servers that answer every
//! request with their tag and the peer address they saw, and clients that
//! ask one, each socket made inside a [`TestNetns`] (sockets keep the
//! namespace they were made in) and served from a thread of the test.
//!
//! A server listens on `[::]:<port>`, which takes IPv4 too; the peer is
//! reported without the `::ffff:` of a mapped IPv4 address, so a test can
//! tell whether it was masqueraded.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::TestNetns;

const WAIT: Duration = Duration::from_millis(1500);
const TICK: Duration = Duration::from_millis(20);

/// What a server answered: its tag and the address it saw the request
/// come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub tag: String,
    pub peer: IpAddr,
}

impl Answer {
    fn parse(text: &str) -> Option<Answer> {
        let (tag, peer) = text.trim().split_once(' ')?;
        Some(Answer {
            tag: tag.to_string(),
            peer: peer.parse().ok()?,
        })
    }
}

/// The address without the `::ffff:` of a mapped IPv4 address.
fn unmapped(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// A TCP and a UDP server on one port, stopped on drop.
pub struct Server {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Server {
    /// Serve TCP and UDP on `[::]:<port>` inside `ns`, answering
    /// `<tag> <peer>`.
    pub fn start(ns: &TestNetns, port: u16, tag: &str) -> Server {
        let addr: SocketAddr = (IpAddr::from([0u16; 8]), port).into();
        let (tcp, udp) = ns.enter(|| {
            let tcp = TcpListener::bind(addr).unwrap_or_else(|e| panic!("bind tcp {addr}: {e}"));
            let udp = UdpSocket::bind(addr).unwrap_or_else(|e| panic!("bind udp {addr}: {e}"));
            (tcp, udp)
        });
        tcp.set_nonblocking(true).expect("nonblocking listener");
        udp.set_read_timeout(Some(TICK)).expect("udp timeout");
        let stop = Arc::new(AtomicBool::new(false));
        let (s1, s2) = (stop.clone(), stop.clone());
        let (t1, t2) = (tag.to_string(), tag.to_string());
        let threads = vec![
            std::thread::spawn(move || serve_tcp(tcp, &t1, &s1)),
            std::thread::spawn(move || serve_udp(udp, &t2, &s2)),
        ];
        Server { stop, threads }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn serve_tcp(l: TcpListener, tag: &str, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        match l.accept() {
            Ok((mut s, peer)) => {
                let _ = s.set_nonblocking(false);
                // Generous: a client writes its request at once, but may
                // be scheduled late.
                let _ = s.set_read_timeout(Some(crate::deadline()));
                let mut buf = [0u8; 64];
                if s.read(&mut buf).is_ok() {
                    let _ = s.write_all(format!("{tag} {}\n", unmapped(peer.ip())).as_bytes());
                }
            }
            Err(_) => std::thread::sleep(TICK),
        }
    }
}

fn serve_udp(u: UdpSocket, tag: &str, stop: &AtomicBool) {
    let mut buf = [0u8; 64];
    while !stop.load(Ordering::Relaxed) {
        if let Ok((_, peer)) = u.recv_from(&mut buf) {
            let _ = u.send_to(format!("{tag} {}\n", unmapped(peer.ip())).as_bytes(), peer);
        }
    }
}

/// Ask over TCP from inside `ns` until a server answers, within
/// [`crate::deadline`]; `None` when none did. For connections that must
/// fail, see [`tcp_ask_once`].
pub fn tcp_ask(ns: &TestNetns, to: SocketAddr) -> Option<Answer> {
    until_answered(|| tcp_ask_once(ns, to))
}

/// Ask over UDP from inside `ns`, from source port `from_port` (any when
/// 0), until a server answers, within [`crate::deadline`]; `None` when
/// none did. For requests that must go unanswered, see [`udp_ask_once`].
pub fn udp_ask(ns: &TestNetns, from_port: u16, to: SocketAddr) -> Option<Answer> {
    until_answered(|| udp_ask_once(ns, from_port, to))
}

/// The first answer of `ask`, asked again until the deadline.
fn until_answered(ask: impl Fn() -> Option<Answer>) -> Option<Answer> {
    let mut answer = None;
    crate::retry(|| {
        answer = ask();
        answer.is_some()
    });
    answer
}

/// Ask over TCP from inside `ns` once, waiting 1.5 s for the connection
/// and the answer; `None` when no answer came. A busy machine makes an
/// answer late, never makes one up: use it to show that traffic is
/// refused, next to a [`tcp_ask`] that shows the path otherwise works.
pub fn tcp_ask_once(ns: &TestNetns, to: SocketAddr) -> Option<Answer> {
    ns.enter(|| {
        let mut s = TcpStream::connect_timeout(&to, WAIT).ok()?;
        s.set_read_timeout(Some(WAIT)).ok()?;
        s.write_all(b"ask\n").ok()?;
        let mut text = String::new();
        s.read_to_string(&mut text).ok()?;
        Answer::parse(&text)
    })
}

/// [`tcp_ask_once`] over UDP, from source port `from_port` (any when 0).
pub fn udp_ask_once(ns: &TestNetns, from_port: u16, to: SocketAddr) -> Option<Answer> {
    ns.enter(|| {
        let local: SocketAddr = match to {
            SocketAddr::V4(_) => (IpAddr::from([0u8; 4]), from_port).into(),
            SocketAddr::V6(_) => (IpAddr::from([0u16; 8]), from_port).into(),
        };
        let u = UdpSocket::bind(local).ok()?;
        u.set_read_timeout(Some(WAIT)).ok()?;
        u.send_to(b"ask\n", to).ok()?;
        let mut buf = [0u8; 128];
        let (n, _) = u.recv_from(&mut buf).ok()?;
        Answer::parse(&String::from_utf8_lossy(&buf[..n]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse_and_mapped_addresses_unmap() {
        let a = Answer::parse("c1 10.240.0.1\n").unwrap();
        assert_eq!(a.tag, "c1");
        assert_eq!(a.peer, "10.240.0.1".parse::<IpAddr>().unwrap());
        assert_eq!(Answer::parse("garbage"), None);
        let m: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(unmapped(m), "10.0.0.1".parse::<IpAddr>().unwrap());
        let v6: IpAddr = "fd40::1".parse().unwrap();
        assert_eq!(unmapped(v6), v6);
    }

    #[test]
    fn a_server_answers_in_its_namespace() {
        let ns = TestNetns::new("trf");
        ns.exec(&["ip", "link", "set", "lo", "up"]);
        let _s = Server::start(&ns, 7000, "here");
        let v4: SocketAddr = "127.0.0.1:7000".parse().unwrap();
        let v6: SocketAddr = "[::1]:7000".parse().unwrap();
        assert_eq!(tcp_ask(&ns, v4).unwrap().tag, "here");
        assert_eq!(udp_ask(&ns, 0, v4).unwrap().peer, v4.ip());
        assert_eq!(tcp_ask(&ns, v6).unwrap().peer, v6.ip());
        assert_eq!(udp_ask(&ns, 40000, v6).unwrap().tag, "here");
        let closed: SocketAddr = "127.0.0.1:7001".parse().unwrap();
        assert_eq!(tcp_ask_once(&ns, closed), None);
    }
}
