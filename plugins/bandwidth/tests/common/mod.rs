//! Shared setup of the bandwidth plugin's root tests: a "host" namespace
//! (the plugin runs inside it through `ip netns exec`) and a container
//! namespace joined by a veth pair with an address at each end, and the
//! `prevResult` a bridge or ptp ADD would have passed on. Also a small TCP
//! transfer tool and readers of what `tc` and `ip` see.

#![allow(dead_code)]

use std::fs::File;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testsupport::{Call, PluginRun, TestNetns, unique_name};

pub const HOST_IP: Ipv4Addr = Ipv4Addr::new(10, 240, 77, 1);
pub const CONT_IP: Ipv4Addr = Ipv4Addr::new(10, 240, 77, 2);

pub fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_bandwidth"))
}

/// Debian's Go plugin, v1.1.1.
pub const REFERENCE: &str = "/usr/lib/cni/bandwidth";

pub fn reference() -> &'static Path {
    let p = Path::new(REFERENCE);
    assert!(
        p.is_file(),
        "{REFERENCE} missing: install Debian's containernetworking-plugins (scripts/test.sh does)"
    );
    p
}

/// A container attached to a host namespace by a veth pair.
pub struct Pod {
    /// Shared by [`Pod::sibling`]s.
    pub host: Rc<TestNetns>,
    pub cont: TestNetns,
    /// The host end of the veth.
    pub veth: String,
    pub net: String,
    pub cid: String,
}

impl Pod {
    pub fn new(tag: &str) -> Pod {
        let pod = Pod::attach(
            Rc::new(TestNetns::new(&format!("{tag}h"))),
            tag,
            unique_name("bwnet"),
        );
        pod.host.exec(&[
            "ip",
            "addr",
            "add",
            &format!("{HOST_IP}/30"),
            "dev",
            &pod.veth,
        ]);
        pod.cont
            .exec(&["ip", "addr", "add", &format!("{CONT_IP}/30"), "dev", "eth0"]);
        pod
    }

    /// Another container on the same host, in network `net`, without
    /// addresses (for tests that need no traffic).
    pub fn sibling(&self, tag: &str, net: &str) -> Pod {
        Pod::attach(self.host.clone(), tag, net.to_string())
    }

    fn attach(host: Rc<TestNetns>, tag: &str, net: String) -> Pod {
        let cont = TestNetns::new(&format!("{tag}c"));
        let veth = unique_name("cnirsbw");
        host.exec(&[
            "ip",
            "link",
            "add",
            &veth,
            "type",
            "veth",
            "peer",
            "name",
            "eth0",
            "netns",
            cont.name(),
        ]);
        host.exec(&["ip", "link", "set", &veth, "up"]);
        cont.exec(&["ip", "link", "set", "eth0", "up"]);
        cont.exec(&["ip", "link", "set", "lo", "up"]);
        Pod {
            host,
            cont,
            veth,
            net,
            cid: unique_name("ctr"),
        }
    }

    /// The IFB device name of this attachment (the reference's formula).
    pub fn ifb(&self) -> String {
        bandwidth::ifb::name(&self.net, &self.cid)
    }

    /// What the main plugin's ADD would have returned, in 1.0.0's shape.
    pub fn prev(&self) -> Value {
        self.prev_in("1.0.0")
    }

    /// [`Pod::prev`] in `version`'s shape (the Go plugin wants the
    /// config's version family).
    pub fn prev_in(&self, version: &str) -> Value {
        let mut ip = json!({"address": format!("{CONT_IP}/30"), "interface": 1});
        let mut prev = json!({
            "cniVersion": version,
            "interfaces": [
                {"name": self.veth, "mac": mac(&self.host, &self.veth)},
                {"name": "eth0", "mac": mac(&self.cont, "eth0"), "sandbox": self.cont.path()},
            ],
        });
        if version.starts_with("0.") {
            ip["version"] = json!("4");
            prev["dns"] = json!({});
        }
        prev["ips"] = json!([ip]);
        prev
    }

    /// A config of `version` with `keys` merged in and this pod's
    /// `prevResult` in that version.
    pub fn conf(&self, version: &str, keys: Value) -> Value {
        let mut c = json!({"cniVersion": version, "name": self.net, "type": "bandwidth"});
        merge(&mut c, &keys);
        c["prevResult"] = self.prev_in(version);
        c
    }

    pub fn request(&self, cmd: &str, conf: &Value) -> Call {
        Call::new(cmd)
            .container_id(&self.cid)
            .netns(self.cont.path())
            .ifname("eth0")
            .path("/nonexistent")
            .stdin(conf.to_string())
    }

    /// Run our plugin with the host namespace as its own.
    pub fn call(&self, cmd: &str, conf: &Value) -> PluginRun {
        self.request(cmd, conf).run_in(self.host.name(), bin())
    }

    /// Run the Go plugin the same way.
    pub fn call_reference(&self, cmd: &str, conf: &Value) -> PluginRun {
        self.request(cmd, conf)
            .run_in(self.host.name(), reference())
    }

    /// `tc ARGS` in the host namespace (`ARGS` split at whitespace);
    /// panics when it fails.
    pub fn tc(&self, args: &str) {
        let mut cmd = vec!["tc"];
        cmd.extend(args.split_whitespace());
        self.host.exec(&cmd);
    }

    /// Remove the host end's root and ingress qdiscs, which the Go
    /// plugin's DEL (and ours without the namespace) leaves for the main
    /// plugin's DEL to delete with the veth.
    pub fn clear_veth(&self) {
        self.tc(&format!("qdisc del dev {} root", self.veth));
        self.tc(&format!("qdisc del dev {} ingress", self.veth));
    }

    /// `tc -j qdisc show dev D` in the host namespace.
    pub fn qdiscs(&self, dev: &str) -> Vec<Value> {
        tc_json(&self.host, &["qdisc", "show", "dev", dev])
    }

    /// `tc -j filter show dev D ingress`.
    pub fn filters(&self, dev: &str) -> Vec<Value> {
        tc_json(&self.host, &["filter", "show", "dev", dev, "ingress"])
    }

    /// Whether a link named `name` exists in the host namespace.
    pub fn has_link(&self, name: &str) -> bool {
        self.host
            .exec_output(&["ip", "link", "show", name])
            .status
            .success()
    }

    /// `ip -j -d link show` of `name` in the host namespace.
    pub fn link(&self, name: &str) -> Value {
        let v: Value =
            serde_json::from_str(&self.host.stdout(&["ip", "-j", "-d", "link", "show", name]))
                .unwrap();
        v[0].clone()
    }

    /// Every link of the host namespace whose name starts with `bwp`.
    pub fn ifbs(&self) -> Vec<String> {
        let v: Value =
            serde_json::from_str(&self.host.stdout(&["ip", "-j", "link", "show"])).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .filter_map(|l| l["ifname"].as_str())
            .filter(|n| n.starts_with("bwp"))
            .map(str::to_string)
            .collect()
    }

    /// Root qdisc kinds, ingress qdiscs and filters of the veth, and this
    /// namespace's IFBs: everything ADD may leave.
    pub fn state(&self) -> Value {
        let qdiscs: Vec<Value> = self
            .qdiscs(&self.veth)
            .into_iter()
            .map(|q| json!([q["kind"], q["handle"]]))
            .collect();
        json!({"qdiscs": qdiscs, "filters": self.filters(&self.veth).len(), "ifbs": self.ifbs()})
    }
}

/// What a veth has before bandwidth touches it.
pub fn pristine() -> Value {
    json!({"qdiscs": [["noqueue", "0:"]], "filters": 0, "ifbs": []})
}

pub fn merge(into: &mut Value, keys: &Value) {
    if let (Some(obj), Some(more)) = (into.as_object_mut(), keys.as_object()) {
        for (k, v) in more {
            obj.insert(k.clone(), v.clone());
        }
    }
}

pub fn mac(ns: &TestNetns, dev: &str) -> String {
    let v: Value = serde_json::from_str(&ns.stdout(&["ip", "-j", "link", "show", dev])).unwrap();
    v[0]["address"].as_str().unwrap().to_string()
}

pub fn tc_json(ns: &TestNetns, args: &[&str]) -> Vec<Value> {
    let mut cmd = vec!["tc", "-j"];
    cmd.extend_from_slice(args);
    let out = ns.exec_output(&cmd);
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || text.trim().is_empty() {
        return Vec::new();
    }
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{cmd:?}: {e}: {text}"))
}

fn open(ns: &TestNetns) -> File {
    File::open(ns.path()).unwrap()
}

/// Send `bytes` over TCP from namespace `from` to `to_ip` in namespace
/// `to`, and return how long it took from before the connection was made
/// to the receiver's end of the data: never less than the wire needed,
/// whenever the receiving thread got to run. Sockets keep the namespace
/// they were made in, so only their creation runs switched. Never hangs:
/// every step has a timeout.
pub fn transfer(from: &TestNetns, to: &TestNetns, to_ip: Ipv4Addr, bytes: usize) -> Duration {
    let listener = cni_net::netns::run(&open(to), || TcpListener::bind((to_ip, 0)))
        .unwrap()
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    let wait = testsupport::deadline();
    let start = Instant::now();
    let receiver = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(wait)).unwrap();
        let mut got = 0;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match s.read(&mut buf).unwrap() {
                0 => break,
                n => got += n,
            }
        }
        (got, start.elapsed())
    });
    let addr = SocketAddr::from((to_ip, port));
    let mut stream = cni_net::netns::run(&open(from), || TcpStream::connect_timeout(&addr, wait))
        .unwrap()
        .unwrap();
    stream.set_write_timeout(Some(wait)).unwrap();
    stream.write_all(&vec![0x5a; bytes]).unwrap();
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    let (got, took) = receiver.join().unwrap();
    assert_eq!(got, bytes);
    took
}

/// The kernel's counters of the tbf qdisc on `dev` in the host namespace:
/// bytes it sent, and how often it held a packet back for want of tokens
/// (`overlimits`).
pub fn tbf_counters(pod: &Pod, dev: &str) -> (u64, u64) {
    let out = tc_json(&pod.host, &["-s", "qdisc", "show", "dev", dev]);
    let tbf = out
        .iter()
        .find(|q| q["kind"] == "tbf")
        .unwrap_or_else(|| panic!("no tbf on {dev}: {out:?}"));
    let n = |k: &str| tbf[k].as_u64().unwrap_or_else(|| panic!("{k} of {tbf}"));
    (n("bytes"), n("overlimits"))
}
