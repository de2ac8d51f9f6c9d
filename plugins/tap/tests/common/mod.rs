//! Shared setup of tap's root tests: a [`PluginHost`] with our IPAM
//! plugins, and a VM's side of a tap: its queue opened through
//! `/dev/net/tun` inside the container ([`Queue`]), frames read and
//! written there.

#![allow(dead_code)]

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::libc;
use serde_json::Value;
use testsupport::TestNetns;
#[allow(unused_imports)]
pub use testsupport::{PluginHost, links, unique_name, with_prev};

pub fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_tap"))
}

pub fn host(tag: &str) -> PluginHost {
    PluginHost::new(tag, bin(), &["host-local", "static"])
}

/// A tap config with host-local on `subnets` (no IPAM when empty);
/// `extra` keys merged on top.
pub fn conf(h: &PluginHost, subnets: &[&str], extra: Value) -> Value {
    let mut c = h.conf("tap", "1.0.0", subnets, extra);
    if subnets.is_empty() {
        c.as_object_mut().unwrap().remove("ipam");
    }
    c
}

/// `ip -j -d link show <name>` in `ns`, `None` when there is no such link.
pub fn link(ns: &TestNetns, name: &str) -> Option<Value> {
    ns.link_json(name)
}

pub fn is_empty(c: &TestNetns) -> bool {
    links(c).iter().all(|(name, _)| name == "lo")
}

const TUNSETIFF: libc::Ioctl = 0x4004_54ca as libc::Ioctl;
const IFF_TAP: u16 = 0x2;
const IFF_NO_PI: u16 = 0x1000;
const IFF_MULTI_QUEUE: u16 = 0x100;

/// A queue of a tap, as a VM holds it.
pub struct Queue(File);

impl Queue {
    /// Attach to the tap `name` of `c` (`TUNSETIFF` inside the namespace),
    /// non-blocking.
    pub fn open(c: &TestNetns, name: &str, multi_queue: bool) -> std::io::Result<Queue> {
        c.enter(|| {
            let f = OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/net/tun")?;
            let mut req = [0u8; 40];
            req[..name.len()].copy_from_slice(name.as_bytes());
            let mut flags = IFF_TAP | IFF_NO_PI;
            if multi_queue {
                flags |= IFF_MULTI_QUEUE;
            }
            req[16..18].copy_from_slice(&flags.to_ne_bytes());
            // SAFETY: TUNSETIFF reads and writes a 40-byte `struct ifreq`.
            let r = unsafe { libc::ioctl(f.as_raw_fd(), TUNSETIFF, req.as_mut_ptr()) };
            if r < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // SAFETY: plain fcntl on an fd we own.
            unsafe {
                let fl = libc::fcntl(f.as_raw_fd(), libc::F_GETFL);
                libc::fcntl(f.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK);
            }
            Ok(Queue(f))
        })
    }

    pub fn send(&mut self, frame: &[u8]) {
        self.0.write_all(frame).expect("write a frame to the tap");
    }

    /// The first frame read that `want` accepts, within the tests'
    /// deadline.
    pub fn recv(&mut self, want: impl Fn(&[u8]) -> bool) -> Option<Vec<u8>> {
        self.recv_for(testsupport::deadline(), want)
    }

    /// `frame` sent again each second until a frame `want` accepts comes
    /// back, within the tests' deadline: the first ones may be lost while
    /// the kernel activates the tap's queue discipline after its carrier
    /// came on (its link watch runs late on a busy machine).
    pub fn ask(&mut self, frame: &[u8], want: impl Fn(&[u8]) -> bool) -> Option<Vec<u8>> {
        let end = Instant::now() + testsupport::deadline();
        while Instant::now() < end {
            self.send(frame);
            if let Some(reply) = self.recv_for(Duration::from_secs(1), &want) {
                return Some(reply);
            }
        }
        None
    }

    /// [`Queue::recv`] within `limit`.
    pub fn recv_for(&mut self, limit: Duration, want: impl Fn(&[u8]) -> bool) -> Option<Vec<u8>> {
        let end = Instant::now() + limit;
        let mut buf = vec![0u8; 65536];
        while Instant::now() < end {
            let mut pfd = libc::pollfd {
                fd: self.0.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one pollfd, waited for at most 200 ms.
            unsafe { libc::poll(&mut pfd, 1, 200) };
            match self.0.read(&mut buf) {
                Ok(n) if want(&buf[..n]) => return Some(buf[..n].to_vec()),
                _ => {}
            }
        }
        None
    }
}

/// An ARP request from `mac`/`ip` for `target`, broadcast.
pub fn arp_request(mac: [u8; 6], ip: [u8; 4], target: [u8; 4]) -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend(mac);
    f.extend([0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
    f.extend(mac);
    f.extend(ip);
    f.extend([0; 6]);
    f.extend(target);
    f
}

/// Whether `f` is an ARP reply saying `ip` is at some MAC, to `to`.
pub fn is_arp_reply(f: &[u8], ip: [u8; 4], to: [u8; 6]) -> bool {
    f.len() >= 42 && f[..6] == to && f[12..14] == [8, 6] && f[20..22] == [0, 2] && f[28..32] == ip
}

/// Whether `f` is an ARP request for `target`.
pub fn is_arp_request(f: &[u8], target: [u8; 4]) -> bool {
    f.len() >= 42 && f[12..14] == [8, 6] && f[20..22] == [0, 1] && f[38..42] == target
}
