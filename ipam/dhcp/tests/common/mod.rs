//! A LAN with real DHCP servers for the root tests: a namespace holding
//! a bridge, dnsmasq servers each in a namespace of its own on that
//! bridge, containers whose `eth0` is a veth on it, and dhcp daemons
//! (ours or the reference's) with their own socket and state directory.
//! Everything is removed, and every process killed and reaped, when the
//! test ends, also when it fails.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testsupport::{Call, PluginRun, TempDir, TestNetns, unique_name};

/// The reference's binary (Debian's v1.1.1).
pub const GO_DHCP: &str = "/usr/lib/cni/dhcp";
pub const GO_MACVLAN: &str = "/usr/lib/cni/macvlan";

/// Our binary, built by cargo for this package's tests.
pub fn ours() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_dhcp"))
}

/// Wait for `cond` for up to `limit` (generous: the machine is shared);
/// panics naming `what` when it never holds.
pub fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(
            Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A child process killed (SIGTERM, then SIGKILL) and reaped on drop.
pub struct Proc {
    pub child: Child,
    pub name: String,
}

impl Proc {
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// SIGTERM and wait (bounded) for the exit; the exit status.
    pub fn terminate(&mut self) -> Option<std::process::ExitStatus> {
        signal(self.pid(), nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(Some(s)) = self.child.try_wait() {
                return Some(s);
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                return self.child.wait().ok();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL, as a crash, and reap.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn signal(pid: i32, sig: nix::sys::signal::Signal) {
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig);
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.terminate();
        }
    }
}

/// One dnsmasq, in a namespace of its own with one leg on the LAN.
pub struct Server {
    pub proc: Proc,
    pub ns: TestNetns,
    pub addr: String,
    pub lease_file: PathBuf,
    pub log: PathBuf,
}

impl Server {
    /// The lease file: `(ip, client id as text)` for each lease.
    /// dnsmasq rewrites the file in place (truncate, then write), so a
    /// read can land between the two and see no lease or half of them: the
    /// file is read until two readings in a row agree.
    pub fn leases(&self) -> Vec<(String, String)> {
        let read = || std::fs::read_to_string(&self.lease_file).unwrap_or_default();
        let mut text = read();
        for _ in 0..100 {
            let again = read();
            if again == text {
                break;
            }
            text = again;
        }
        text.lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let id: Vec<u8> = f
                    .get(4)?
                    .split(':')
                    .filter_map(|b| u8::from_str_radix(b, 16).ok())
                    .collect();
                let id = String::from_utf8_lossy(id.get(1..).unwrap_or_default()).into_owned();
                Some((f.get(2)?.to_string(), id))
            })
            .collect()
    }

    /// The address leased to `client_id`, if any.
    pub fn lease_of(&self, client_id: &str) -> Option<String> {
        self.leases()
            .into_iter()
            .find(|(_, id)| id == client_id)
            .map(|(ip, _)| ip)
    }

    /// The lines of its log naming `what` (`DHCPRELEASE`).
    pub fn logged(&self, what: &str) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(what))
            .map(str::to_string)
            .collect()
    }
}

/// The LAN: a bridge in a namespace, servers and containers on it.
pub struct Lan {
    pub ns: TestNetns,
    pub dir: TempDir,
    /// `10.<a>.<b>` of the LAN's /24.
    pub prefix: String,
}

impl Lan {
    pub fn new(third: u8) -> Lan {
        let ns = TestNetns::new("lan");
        ns.exec(&["ip", "link", "set", "lo", "up"]);
        ns.exec(&["ip", "link", "add", "br0", "type", "bridge"]);
        ns.exec(&["ip", "link", "set", "br0", "up"]);
        Lan {
            ns,
            dir: TempDir::new("lan"),
            prefix: format!("10.247.{third}"),
        }
    }

    /// A veth whose `inner` end is in `ns` and whose other end is a port
    /// of the bridge.
    pub fn plug(&self, ns: &TestNetns, inner: &str) {
        let port = unique_name("cnirsp");
        self.ns.exec(&[
            "ip",
            "link",
            "add",
            &port,
            "type",
            "veth",
            "peer",
            "name",
            inner,
            "netns",
            ns.name(),
        ]);
        self.ns
            .exec(&["ip", "link", "set", &port, "master", "br0", "up"]);
    }

    /// A dnsmasq at `<prefix>.<host>` handing out `.10`-`.200` for two
    /// minutes (dnsmasq's least), with `extra` options. Renewals come
    /// sooner with `--dhcp-option=option:T1,4s` (dnsmasq sent its default
    /// T1 instead of 2 s, and took 3 s and up).
    pub fn server(&self, host: u8, extra: &[&str]) -> Server {
        let ns = TestNetns::new("srv");
        self.plug(&ns, "lan0");
        let addr = format!("{}.{host}", self.prefix);
        ns.exec(&["ip", "link", "set", "lo", "up"]);
        ns.exec(&["ip", "addr", "add", &format!("{addr}/24"), "dev", "lan0"]);
        ns.exec(&["ip", "link", "set", "lan0", "up"]);
        let tag = format!("srv{host}-{}", unique_name("d"));
        let lease_file = self.dir.join(&format!("{tag}.leases"));
        let log = self.dir.join(&format!("{tag}.log"));
        let pid = self.dir.join(&format!("{tag}.pid"));
        let p = &self.prefix;
        let mut args: Vec<String> = vec![
            "--keep-in-foreground".into(),
            "--conf-file=/dev/null".into(),
            "--port=0".into(),
            "--interface=lan0".into(),
            "--bind-interfaces".into(),
            "--user=root".into(),
            "--group=root".into(),
            "--no-ping".into(),
            "--dhcp-authoritative".into(),
            "--log-dhcp".into(),
            format!("--dhcp-range={p}.10,{p}.200,255.255.255.0,2m"),
            format!("--dhcp-leasefile={}", lease_file.display()),
            format!("--log-facility={}", log.display()),
            format!("--pid-file={}", pid.display()),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let child = Command::new("ip")
            .args(["netns", "exec", ns.name(), "dnsmasq"])
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn dnsmasq (scripts/test.sh installs dnsmasq-base)");
        let server = Server {
            proc: Proc {
                child,
                name: "dnsmasq".into(),
            },
            ns,
            addr,
            lease_file,
            log,
        };
        wait_for("dnsmasq to start", Duration::from_secs(20), || {
            !server.logged("DHCP, IP range").is_empty()
        });
        server
    }

    /// A container with an `eth0` on the LAN (down, as a main plugin
    /// leaves it before IPAM).
    pub fn container(&self) -> TestNetns {
        let c = TestNetns::new("ctr");
        self.plug(&c, "eth0");
        c
    }

    /// A "host" namespace with an uplink `up0` on the LAN, for main
    /// plugins (macvlan) that need a master.
    pub fn host(&self) -> TestNetns {
        let h = TestNetns::new("host");
        self.plug(&h, "up0");
        h.exec(&["ip", "link", "set", "lo", "up"]);
        h.exec(&["ip", "link", "set", "up0", "up"]);
        h
    }
}

/// A dhcp daemon with its own socket and state directory.
pub struct Daemon {
    pub proc: Proc,
    pub dir: TempDir,
    pub socket: PathBuf,
    pub state: PathBuf,
    pub log: PathBuf,
}

impl Daemon {
    /// Ours, in `netns` (any throwaway namespace: it only enters the
    /// containers'), with `extra` flags.
    pub fn ours(netns: &TestNetns, extra: &[&str]) -> Daemon {
        Daemon::start(&ours(), netns, TempDir::new("dhcpd"), extra, true)
    }

    /// Ours again on the socket and state directory of `prev` (after a
    /// crash, say).
    pub fn restart(netns: &TestNetns, prev: Daemon, extra: &[&str]) -> Daemon {
        let mut prev = prev;
        prev.proc.kill();
        let dir = std::mem::replace(&mut prev.dir, TempDir::new("dhcpd-old"));
        drop(prev);
        Daemon::start(&ours(), netns, dir, extra, true)
    }

    /// The reference's, which knows no `-statedir`.
    pub fn go(netns: &TestNetns, extra: &[&str]) -> Daemon {
        Daemon::start(
            Path::new(GO_DHCP),
            netns,
            TempDir::new("godhcpd"),
            extra,
            false,
        )
    }

    /// The reference's on the socket of `dir`.
    pub fn go_in(netns: &TestNetns, dir: TempDir, extra: &[&str]) -> Daemon {
        Daemon::start(Path::new(GO_DHCP), netns, dir, extra, false)
    }

    pub fn start(
        bin: &Path,
        netns: &TestNetns,
        dir: TempDir,
        extra: &[&str],
        state: bool,
    ) -> Daemon {
        Daemon::start_with_env(bin, netns, dir, extra, state, &[])
    }

    /// [`Daemon::start`] with variables added to its environment.
    pub fn start_with_env(
        bin: &Path,
        netns: &TestNetns,
        dir: TempDir,
        extra: &[&str],
        state: bool,
        env: &[(&str, &str)],
    ) -> Daemon {
        let socket = dir.join("dhcp.sock");
        let statedir = dir.join("state");
        let log = dir.join(&format!("daemon-{}.log", unique_name("l")));
        let mut args = vec![
            "netns".to_string(),
            "exec".into(),
            netns.name().into(),
            bin.display().to_string(),
            "daemon".into(),
            format!("-socketpath={}", socket.display()),
        ];
        if state {
            args.push(format!("-statedir={}", statedir.display()));
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        let logf = std::fs::File::create(&log).unwrap();
        let child = Command::new("ip")
            .args(&args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(logf)
            .spawn()
            .unwrap();
        let mut d = Daemon {
            proc: Proc {
                child,
                name: bin.display().to_string(),
            },
            dir,
            socket,
            state: statedir,
            log,
        };
        wait_for("the daemon's socket", Duration::from_secs(20), || {
            if let Ok(Some(s)) = d.proc.child.try_wait() {
                panic!("daemon exited {s}: {}", d.logs());
            }
            std::os::unix::net::UnixStream::connect(&d.socket).is_ok()
        });
        d
    }

    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The lease records of its state directory, parsed.
    pub fn records(&self) -> Vec<Value> {
        let Ok(entries) = std::fs::read_dir(&self.state) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
            .filter_map(|e| serde_json::from_str(&std::fs::read_to_string(e.path()).ok()?).ok())
            .collect()
    }

    /// `ackedAt` of the record of `client_id` (ms since the epoch).
    pub fn acked_at(&self, client_id: &str) -> Option<u64> {
        self.records()
            .into_iter()
            .find(|r| r["clientId"] == client_id)
            .and_then(|r| r["ackedAt"].as_u64())
    }
}

/// A dhcp IPAM config (called as the IPAM plugin itself, as a main
/// plugin hands it its whole config) on the daemon's socket.
pub fn conf(net: &str, socket: &Path, version: &str, ipam_extra: Value) -> Value {
    let mut ipam = json!({"type": "dhcp", "daemonSocketPath": socket.display().to_string()});
    if let (Some(o), Some(extra)) = (ipam.as_object_mut(), ipam_extra.as_object()) {
        for (k, v) in extra {
            o.insert(k.clone(), v.clone());
        }
    }
    json!({"cniVersion": version, "name": net, "type": "macvlan", "ipam": ipam})
}

/// Run the dhcp plugin `bin` for `cmd` on `eth0` of `netns`.
pub fn call(bin: &Path, cmd: &str, conf: &Value, cid: &str, netns: &str) -> PluginRun {
    Call::new(cmd)
        .container_id(cid)
        .netns(netns)
        .ifname("eth0")
        .path("/nonexistent")
        .stdin(conf.to_string())
        .run(bin)
}

/// The address of an ADD result, without prefix.
pub fn addr(result: &Value) -> String {
    testsupport::ip_of(result, false)
}

/// Configure the leased address on the container's `eth0`, as the main
/// plugin would (renewals are answered to it, so it must be there).
pub fn configure(c: &TestNetns, result: &Value) {
    let a = result["ips"][0]["address"].as_str().unwrap();
    c.exec(&["ip", "addr", "add", a, "dev", "eth0"]);
}
