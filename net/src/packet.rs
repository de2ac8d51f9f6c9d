//! Packet sockets: link-layer datagrams on one interface of a namespace,
//! for protocols that run before the interface has an address (the dhcp
//! daemon's client sends from 0.0.0.0 and hears answers addressed to an
//! address it does not have yet).
//!
//! The socket is created inside the namespace ([`netns::run`]) and stays
//! bound to it; it is `SOCK_DGRAM` (the kernel adds and strips the
//! Ethernet header), bound to one interface and one ethertype, with an
//! optional classic BPF filter attached before the bind so that no frame
//! reaches it unfiltered.
//!
//! Closing a packet socket waits for an RCU grace period (the kernel's
//! `packet_release` calls `synchronize_net`): 5-10 ms on a busy machine,
//! measured in the dhcp daemon's DEL. A dropped socket is therefore
//! closed by a thread of its own, off the path of whoever answers a call.

use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use nix::errno::Errno;
use nix::libc;

use crate::error::{Error, Result};
use crate::netns;

/// One classic BPF instruction (`struct sock_filter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BpfInsn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

/// A frame received: its length in the buffer and who sent it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    pub len: usize,
    /// The sender's link-layer address (the next hop towards it).
    pub src_mac: [u8; 6],
    /// A frame this host sent, seen on its way out.
    pub outgoing: bool,
}

/// A packet socket bound to one interface of one namespace.
#[derive(Debug)]
pub struct PacketSocket {
    /// `None` once handed to the closer.
    fd: Option<OwnedFd>,
    ifindex: u32,
    ethertype: u16,
}

/// The thread that closes dropped packet sockets, started on first use.
fn closer() -> Option<&'static std::sync::Mutex<std::sync::mpsc::Sender<OwnedFd>>> {
    use std::sync::{Mutex, OnceLock, mpsc};
    static CLOSER: OnceLock<Option<Mutex<mpsc::Sender<OwnedFd>>>> = OnceLock::new();
    CLOSER
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<OwnedFd>();
            std::thread::Builder::new()
                .name("packet-close".into())
                .stack_size(64 << 10)
                .spawn(move || rx.into_iter().for_each(drop))
                .ok()?;
            Some(Mutex::new(tx))
        })
        .as_ref()
}

impl Drop for PacketSocket {
    fn drop(&mut self) {
        let Some(fd) = self.fd.take() else {
            return;
        };
        // Closed here only if the closer cannot take it.
        if let Some(tx) = closer()
            && let Ok(tx) = tx.lock()
        {
            let _ = tx.send(fd);
        }
    }
}

fn sockaddr(ifindex: u32, ethertype: u16, mac: Option<&[u8]>) -> libc::sockaddr_ll {
    // SAFETY: sockaddr_ll is plain old data; all-zero is a valid value.
    let mut sa: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sa.sll_family = libc::AF_PACKET as u16;
    sa.sll_protocol = ethertype.to_be();
    sa.sll_ifindex = ifindex as i32;
    if let Some(mac) = mac {
        let n = mac.len().min(sa.sll_addr.len());
        sa.sll_addr[..n].copy_from_slice(&mac[..n]);
        sa.sll_halen = n as u8;
    }
    sa
}

impl PacketSocket {
    /// A socket in `ns` receiving the frames of `ethertype` that arrive
    /// on interface `ifindex` and pass `filter` (all of them when empty).
    pub fn open_in(
        ns: &File,
        ifindex: u32,
        ethertype: u16,
        filter: &[BpfInsn],
    ) -> Result<PacketSocket> {
        let what = format!("open packet socket on interface {ifindex}");
        // Protocol 0: nothing is delivered until the bind below, after
        // the filter is in place.
        let fd = netns::run(ns, || {
            // SAFETY: plain syscall; the descriptor is owned right after.
            let fd =
                unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
            if fd < 0 {
                return Err(Error::errno(&what, Errno::last()));
            }
            // SAFETY: a fresh descriptor nobody else owns.
            Ok(unsafe { OwnedFd::from_raw_fd(fd) })
        })??;
        let sock = PacketSocket {
            fd: Some(fd),
            ifindex,
            ethertype,
        };
        if !filter.is_empty() {
            sock.attach(filter).map_err(|e| e.context(&what))?;
        }
        let sa = sockaddr(ifindex, ethertype, None);
        // SAFETY: sa is a valid sockaddr_ll of the size given.
        let rc = unsafe {
            libc::bind(
                sock.raw(),
                (&sa as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        if rc < 0 {
            return Err(Error::errno(format!("{what}: bind"), Errno::last()));
        }
        Ok(sock)
    }

    fn raw(&self) -> i32 {
        self.fd.as_ref().map_or(-1, |f| f.as_raw_fd())
    }

    fn attach(&self, filter: &[BpfInsn]) -> Result<()> {
        let insns: Vec<libc::sock_filter> = filter
            .iter()
            .map(|i| libc::sock_filter {
                code: i.code,
                jt: i.jt,
                jf: i.jf,
                k: i.k,
            })
            .collect();
        let prog = libc::sock_fprog {
            len: insns.len() as u16,
            filter: insns.as_ptr() as *mut libc::sock_filter,
        };
        // SAFETY: prog points at insns, alive for the call.
        let rc = unsafe {
            libc::setsockopt(
                self.raw(),
                libc::SOL_SOCKET,
                libc::SO_ATTACH_FILTER,
                (&prog as *const libc::sock_fprog).cast(),
                std::mem::size_of::<libc::sock_fprog>() as u32,
            )
        };
        if rc < 0 {
            return Err(Error::errno("attach socket filter", Errno::last()));
        }
        Ok(())
    }

    /// Send `payload` (the network-layer packet) to the link-layer
    /// address `dst_mac` (`ff:ff:ff:ff:ff:ff` to broadcast).
    pub fn send(&self, dst_mac: &[u8; 6], payload: &[u8]) -> Result<()> {
        let sa = sockaddr(self.ifindex, self.ethertype, Some(dst_mac));
        // SAFETY: payload and sa are valid for the lengths given.
        let n = unsafe {
            libc::sendto(
                self.raw(),
                payload.as_ptr().cast(),
                payload.len(),
                0,
                (&sa as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        if n < 0 {
            return Err(Error::errno(
                format!("send on interface {}", self.ifindex),
                Errno::last(),
            ));
        }
        Ok(())
    }

    /// The next frame, waiting at most `timeout`; `None` when none came.
    pub fn recv(&self, buf: &mut [u8], timeout: Duration) -> Result<Option<Received>> {
        let what = || format!("receive on interface {}", self.ifindex);
        let mut pfd = libc::pollfd {
            fd: self.raw(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd.
        let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
        if rc < 0 {
            let e = Errno::last();
            return if e == Errno::EINTR {
                Ok(None)
            } else {
                Err(Error::errno(what(), e))
            };
        }
        if rc == 0 {
            return Ok(None);
        }
        // SAFETY: sockaddr_ll is plain old data; all-zero is a valid value.
        let mut sa: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
        // SAFETY: buf and sa are valid for the lengths given.
        let n = unsafe {
            libc::recvfrom(
                self.raw(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
                (&mut sa as *mut libc::sockaddr_ll).cast(),
                &mut len,
            )
        };
        if n < 0 {
            let e = Errno::last();
            return match e {
                Errno::EAGAIN | Errno::EINTR => Ok(None),
                _ => Err(Error::errno(what(), e)),
            };
        }
        let mut src_mac = [0u8; 6];
        src_mac.copy_from_slice(&sa.sll_addr[..6]);
        Ok(Some(Received {
            len: n as usize,
            src_mac,
            outgoing: sa.sll_pkttype == libc::PACKET_OUTGOING,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two ends of a veth pair in two namespaces: a frame sent on one
    /// arrives on the other, with the sender's MAC; a filter that drops
    /// everything keeps the socket empty.
    #[test]
    fn frames_cross_a_veth_pair_between_namespaces() {
        let a = testsupport::TestNetns::new("pka");
        let b = testsupport::TestNetns::new("pkb");
        a.exec(&[
            "ip",
            "link",
            "add",
            "x0",
            "type",
            "veth",
            "peer",
            "name",
            "y0",
            "netns",
            b.name(),
        ]);
        a.exec(&["ip", "link", "set", "x0", "up"]);
        b.exec(&["ip", "link", "set", "y0", "up"]);
        let index = |ns: &testsupport::TestNetns, dev: &str| -> u32 {
            ns.stdout(&["cat", &format!("/sys/class/net/{dev}/ifindex")])
                .trim()
                .parse()
                .unwrap()
        };
        let mac_a = a.stdout(&["cat", "/sys/class/net/x0/address"]);
        let na = File::open(a.path()).unwrap();
        let nb = File::open(b.path()).unwrap();
        const ETH_P_IP: u16 = 0x0800;
        let tx = PacketSocket::open_in(&na, index(&a, "x0"), ETH_P_IP, &[]).unwrap();
        let rx = PacketSocket::open_in(&nb, index(&b, "y0"), ETH_P_IP, &[]).unwrap();
        // "ret 0": drop every frame.
        let none = [BpfInsn {
            code: 0x06,
            jt: 0,
            jf: 0,
            k: 0,
        }];
        let dropped = PacketSocket::open_in(&nb, index(&b, "y0"), ETH_P_IP, &none).unwrap();
        let payload = b"not really an ip packet, but the kernel does not mind";
        let mut buf = [0u8; 256];
        let mut got = None;
        // Sent again until it arrives: the link may still be coming up.
        for _ in 0..50 {
            tx.send(&[0xff; 6], payload).unwrap();
            if let Some(r) = rx.recv(&mut buf, Duration::from_millis(200)).unwrap() {
                got = Some(r);
                break;
            }
        }
        let r = got.expect("no frame arrived");
        assert_eq!(&buf[..r.len], payload);
        assert!(!r.outgoing);
        assert_eq!(crate::format_mac(&r.src_mac), mac_a.trim());
        assert_eq!(
            dropped.recv(&mut buf, Duration::from_millis(50)).unwrap(),
            None
        );
    }
}
