//! Property: any range sets, filled until they fail, behave as the
//! reference says they must. Random sets of one to four ranges (IPv4 /30
//! to /27, IPv6 /126 to /123), gateways inside, outside and in another
//! family, `rangeStart`/`rangeEnd`, preseeded `last_reserved_ip.N` files
//! (any address, with a newline, garbage) and leases of other containers,
//! with DELs and re-ADDs along the way.
//!
//! What must hold, checked against a model computed here from the generated
//! numbers (not by the plugin's code):
//! - every call returns within the tests' deadline (a hang fails the
//!   test; [`testsupport::deadline`]);
//! - an ADD succeeds exactly while every set has a free address, with one
//!   free address of each set, inside its range, never its gateway, never
//!   the network or IPv4 broadcast address unless a bound names it;
//! - so the addresses handed out from a set when it fails number exactly
//!   its capacity (minus foreign leases), all distinct;
//! - the failing ADD names the first exhausted set and prints it as the
//!   reference does (`failed to allocate for range 1: no IP addresses
//!   available in range set: 10.241.4.1-10.241.4.2,...`) and leaves no
//!   lease behind, also when earlier sets had succeeded;
//! - released addresses come back.
//!
//! The same cases run through the library (many) and through the built
//! binary with a hard per-call timeout (a few).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::sync::mpsc;
use std::thread;

use host_local::HostLocal;
use proptest::collection::vec;
use proptest::prelude::*;
use skel::types::CniResult;
use skel::{CmdArgs, Plugin, Reply};
use testsupport::TempDir;

// ------------------------------------------------------------ generation

#[derive(Debug, Clone)]
enum Gw {
    Default,
    /// Network + offset (mod the subnet's size): may be the network or
    /// broadcast address, outside the bounds, or the default one.
    InSubnet(u8),
    /// Any address of the /24 (or /120) the subnet sits in: possibly
    /// inside another range of the set.
    Nearby(u8),
    OtherFamily,
}

#[derive(Debug, Clone)]
struct RangeSpec {
    prefix: u8,
    slot: u8,
    start: Option<u8>,
    end: Option<u8>,
    gw: Gw,
}

#[derive(Debug, Clone, Copy)]
enum Pick {
    Start,
    End,
    Gateway,
    Network,
    Last,
    Offset(u8),
    OtherFamily,
}

#[derive(Debug, Clone)]
enum Seed {
    None,
    Text(&'static str),
    Addr {
        range: usize,
        pick: Pick,
        newline: bool,
    },
}

#[derive(Debug, Clone)]
struct SetSpec {
    v6: bool,
    ranges: Vec<RangeSpec>,
    seed: Seed,
    /// Leases of another container: (range, offset in its subnet).
    foreign: Vec<(usize, u8)>,
}

#[derive(Debug, Clone)]
struct Case {
    sets: Vec<SetSpec>,
    /// Drives when to DEL and whom.
    schedule: Vec<u8>,
}

const GARBAGE: &[&str] = &[
    "",
    "garbage",
    "\n",
    "10.241.0.",
    "fd40::1%eth0",
    "10.241.0.1 ",
    "::ffff:10.241.0.1\n",
];

fn gw() -> impl Strategy<Value = Gw> {
    prop_oneof![
        3 => Just(Gw::Default),
        2 => any::<u8>().prop_map(Gw::InSubnet),
        1 => any::<u8>().prop_map(Gw::Nearby),
        1 => Just(Gw::OtherFamily),
    ]
}

fn range_spec(v6: bool, small: bool) -> impl Strategy<Value = RangeSpec> {
    // Mostly small subnets, so that filling them stays quick.
    let prefixes: &[u8] = if small {
        &[30, 30, 29]
    } else {
        &[30, 30, 30, 29, 29, 28, 27]
    };
    (
        proptest::sample::select(prefixes),
        any::<u8>(),
        proptest::option::weighted(0.3, any::<u8>()),
        proptest::option::weighted(0.3, any::<u8>()),
        gw(),
    )
        .prop_map(move |(p, slot, start, end, gw)| RangeSpec {
            prefix: if v6 { p + 96 } else { p },
            slot,
            start,
            end,
            gw,
        })
}

fn seed() -> impl Strategy<Value = Seed> {
    // The end of a range most often: that is where a turn crosses into
    // the next range.
    let pick = prop_oneof![
        1 => Just(Pick::Start),
        3 => Just(Pick::End),
        1 => Just(Pick::Gateway),
        1 => Just(Pick::Network),
        1 => Just(Pick::Last),
        1 => any::<u8>().prop_map(Pick::Offset),
        1 => Just(Pick::OtherFamily),
    ];
    prop_oneof![
        2 => Just(Seed::None),
        1 => proptest::sample::select(GARBAGE).prop_map(Seed::Text),
        4 => (0usize..4, pick, proptest::bool::weighted(0.25))
            .prop_map(|(range, pick, newline)| Seed::Addr { range, pick, newline }),
    ]
}

fn set_spec(max_ranges: usize, small: bool) -> impl Strategy<Value = SetSpec> {
    any::<bool>()
        .prop_flat_map(move |v6| {
            (
                Just(v6),
                vec(range_spec(v6, small), 1..=max_ranges),
                seed(),
                vec((0usize..4, any::<u8>()), 0..5),
            )
        })
        .prop_map(|(v6, ranges, seed, foreign)| SetSpec {
            v6,
            ranges,
            seed,
            foreign,
        })
}

fn case(max_sets: usize, max_ranges: usize, small: bool) -> impl Strategy<Value = Case> {
    (
        vec(set_spec(max_ranges, small), 1..=max_sets),
        vec(any::<u8>(), 1..24),
    )
        .prop_map(|(sets, schedule)| Case { sets, schedule })
}

// ------------------------------------------------------------------ model

fn addr(v6: bool, v: u128) -> IpAddr {
    if v6 {
        IpAddr::V6(Ipv6Addr::from(v))
    } else {
        IpAddr::V4(Ipv4Addr::from(v as u32))
    }
}

fn other_family(v6: bool) -> IpAddr {
    if v6 {
        "10.241.255.1".parse().unwrap()
    } else {
        "fd40:0:0:ff::1".parse().unwrap()
    }
}

/// One range with every bound worked out.
#[derive(Debug, Clone)]
struct Model {
    v6: bool,
    prefix: u8,
    network: u128,
    size: u128,
    start: u128,
    end: u128,
    explicit_start: bool,
    explicit_end: bool,
    gw: IpAddr,
    spec_gw: Gw,
}

impl Model {
    /// Range `ri` of set `si`. Every (set, range) pair has its own /24 or
    /// /120, so no two ranges overlap.
    fn new(si: usize, ri: usize, v6: bool, r: &RangeSpec) -> Model {
        let slot = (si * 4 + ri) as u128;
        let slot_base = if v6 {
            u128::from("fd40::".parse::<Ipv6Addr>().unwrap()) | (slot << 64)
        } else {
            u128::from(u32::from(Ipv4Addr::new(10, 241, slot as u8, 0)))
        };
        let size = 1u128 << ((if v6 { 128 } else { 32 }) - r.prefix);
        let network = slot_base + (r.slot as u128 % (256 / size)) * size;
        let default_end = network + size - if v6 { 1 } else { 2 };
        let mut m = Model {
            v6,
            prefix: r.prefix,
            network,
            size,
            start: r.start.map_or(network + 1, |o| network + o as u128 % size),
            end: r.end.map_or(default_end, |o| network + o as u128 % size),
            explicit_start: r.start.is_some(),
            explicit_end: r.end.is_some(),
            gw: addr(v6, network + 1),
            spec_gw: r.gw.clone(),
        };
        if m.end < m.start {
            // Such bounds are refused by the config; keep the defaults.
            (m.start, m.end, m.explicit_start, m.explicit_end) =
                (network + 1, default_end, false, false);
        }
        m.gw = match r.gw {
            Gw::Default => addr(v6, network + 1),
            Gw::InSubnet(o) => addr(v6, network + o as u128 % size),
            Gw::Nearby(o) => addr(v6, slot_base + o as u128),
            Gw::OtherFamily => other_family(v6),
        };
        m
    }

    fn at(&self, off: u8) -> IpAddr {
        addr(self.v6, self.network + off as u128 % self.size)
    }

    /// What the range hands out: start to end, minus its own gateway.
    fn allowed(&self) -> BTreeSet<IpAddr> {
        (self.start..=self.end)
            .map(|v| addr(self.v6, v))
            .filter(|a| *a != self.gw)
            .collect()
    }

    fn json(&self) -> String {
        let mut out = format!(
            r#"{{"subnet":"{}/{}""#,
            addr(self.v6, self.network),
            self.prefix
        );
        if self.explicit_start {
            out += &format!(r#","rangeStart":"{}""#, addr(self.v6, self.start));
        }
        if self.explicit_end {
            out += &format!(r#","rangeEnd":"{}""#, addr(self.v6, self.end));
        }
        if !matches!(self.spec_gw, Gw::Default) {
            out += &format!(r#","gateway":"{}""#, self.gw);
        }
        out + "}"
    }
}

/// A set as the test sees it.
struct SetModel {
    ranges: Vec<Model>,
    seed: Option<Vec<u8>>,
    foreign: BTreeSet<IpAddr>,
}

impl SetModel {
    fn new(si: usize, s: &SetSpec) -> SetModel {
        let ranges: Vec<Model> = s
            .ranges
            .iter()
            .enumerate()
            .map(|(ri, r)| Model::new(si, ri, s.v6, r))
            .collect();
        let seed = match &s.seed {
            Seed::None => None,
            Seed::Text(t) => Some(t.as_bytes().to_vec()),
            Seed::Addr {
                range,
                pick,
                newline,
            } => {
                let r = &ranges[range % ranges.len()];
                let a = match pick {
                    Pick::Start => addr(r.v6, r.start),
                    Pick::End => addr(r.v6, r.end),
                    Pick::Gateway => r.gw,
                    Pick::Network => addr(r.v6, r.network),
                    Pick::Last => addr(r.v6, r.network + r.size - 1),
                    Pick::Offset(o) => r.at(*o),
                    Pick::OtherFamily => other_family(r.v6),
                };
                let nl = if *newline { "\n" } else { "" };
                Some(format!("{a}{nl}").into_bytes())
            }
        };
        let foreign = s
            .foreign
            .iter()
            .map(|(ri, off)| ranges[ri % ranges.len()].at(*off))
            .collect();
        SetModel {
            ranges,
            seed,
            foreign,
        }
    }

    fn allowed(&self) -> BTreeSet<IpAddr> {
        self.ranges.iter().flat_map(Model::allowed).collect()
    }

    fn range_of(&self, a: IpAddr) -> Option<&Model> {
        self.ranges
            .iter()
            .find(|r| r.v6 == a.is_ipv6() && (r.start..=r.end).contains(&to_u128(a)))
    }

    /// The reference's `RangeSet.String()`.
    fn text(&self) -> String {
        let parts: Vec<String> = self
            .ranges
            .iter()
            .map(|r| format!("{}-{}", addr(r.v6, r.start), addr(r.v6, r.end)))
            .collect();
        parts.join(",")
    }
}

fn to_u128(a: IpAddr) -> u128 {
    match a {
        IpAddr::V4(v4) => u32::from(v4) as u128,
        IpAddr::V6(v6) => u128::from(v6),
    }
}

// ---------------------------------------------------------------- drivers

/// One address of an ADD result: address, prefix length, gateway.
type Got = (IpAddr, u8, Option<IpAddr>);

trait Driver {
    fn call(&self, cmd: &str, id: &str, stdin: &str) -> Result<Vec<Got>, String>;
}

/// Calls the library on a thread, so that a hang fails the test.
struct Library;

impl Driver for Library {
    fn call(&self, cmd: &str, id: &str, stdin: &str) -> Result<Vec<Got>, String> {
        let (tx, rx) = mpsc::channel();
        let (cmd, id, stdin) = (cmd.to_string(), id.to_string(), stdin.to_string());
        let what = format!("{cmd} {id}");
        thread::spawn(move || {
            let args = CmdArgs {
                container_id: id,
                ifname: "eth0".into(),
                stdin: stdin.into_bytes(),
                cni_version: "1.0.0".into(),
                ..Default::default()
            };
            let out = match cmd.as_str() {
                "ADD" => HostLocal.add(&args),
                _ => HostLocal.del(&args),
            };
            let _ = tx.send(out);
        });
        let bound = testsupport::deadline();
        let out = rx
            .recv_timeout(bound)
            .unwrap_or_else(|_| panic!("{what} did not return within {bound:?}"));
        match out {
            Ok(Reply::Result(CniResult::V1(r))) => Ok(r
                .ips
                .iter()
                .map(|i| (i.address.0.ip(), i.address.0.prefix(), i.gateway))
                .collect()),
            Ok(Reply::None) => Ok(Vec::new()),
            Ok(other) => panic!("unexpected reply {other:?}"),
            Err(e) => Err(e.msg),
        }
    }
}

/// Runs the built binary as a runtime does, killed after the tests'
/// deadline.
struct Binary;

impl Driver for Binary {
    fn call(&self, cmd: &str, id: &str, stdin: &str) -> Result<Vec<Got>, String> {
        let out = common::run_bounded(&common::ours(), cmd, id, stdin);
        if out.code != 0 {
            return Err(out.err(999)["msg"].as_str().unwrap().to_string());
        }
        let v = out.ok();
        if v.is_null() {
            return Ok(Vec::new());
        }
        Ok(v["ips"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                let (a, p) = i["address"].as_str().unwrap().split_once('/').unwrap();
                let gw = i["gateway"].as_str().map(|g| g.parse().unwrap());
                (a.parse().unwrap(), p.parse().unwrap(), gw)
            })
            .collect())
    }
}

// ------------------------------------------------------------------- run

/// One network being filled.
struct Fill<'a> {
    driver: &'a dyn Driver,
    dir: &'a Path,
    name: String,
    sets: &'a [SetModel],
    conf: String,
    live: BTreeMap<String, Vec<IpAddr>>,
    next_id: usize,
}

impl<'a> Fill<'a> {
    fn new(driver: &'a dyn Driver, dir: &'a Path, name: &str, sets: &'a [SetModel]) -> Self {
        let ranges: Vec<String> = sets
            .iter()
            .map(|s| {
                let rs: Vec<String> = s.ranges.iter().map(Model::json).collect();
                format!("[{}]", rs.join(","))
            })
            .collect();
        let conf = format!(
            r#"{{"cniVersion":"1.0.0","name":"{name}","ipam":{{"type":"host-local","dataDir":"{}","ranges":[{}]}}}}"#,
            dir.display(),
            ranges.join(",")
        );
        let net = dir.join(name);
        fs::create_dir_all(&net).unwrap();
        for (i, s) in sets.iter().enumerate() {
            if let Some(seed) = &s.seed {
                fs::write(net.join(format!("last_reserved_ip.{i}")), seed).unwrap();
            }
            for a in &s.foreign {
                fs::write(net.join(a.to_string()), "foreign\r\neth0").unwrap();
            }
        }
        Fill {
            driver,
            dir,
            name: name.to_string(),
            sets,
            conf,
            live: BTreeMap::new(),
            next_id: 0,
        }
    }

    fn free(&self, i: usize) -> BTreeSet<IpAddr> {
        let s = &self.sets[i];
        let used: BTreeSet<IpAddr> = self.live.values().map(|a| a[i]).collect();
        s.allowed()
            .into_iter()
            .filter(|a| !used.contains(a) && !s.foreign.contains(a))
            .collect()
    }

    fn exhausted(&self) -> Option<usize> {
        (0..self.sets.len()).find(|i| self.free(*i).is_empty())
    }

    /// ADD a new container; `Err(set)` when it failed (as it had to).
    fn add(&mut self) -> Result<Vec<IpAddr>, usize> {
        let id = format!("c{}", self.next_id);
        self.next_id += 1;
        let want = self.exhausted();
        match self.driver.call("ADD", &id, &self.conf) {
            Ok(got) => {
                assert_eq!(
                    want, None,
                    "ADD {id} succeeded, set {want:?} is full: {got:?}"
                );
                assert_eq!(got.len(), self.sets.len(), "{got:?}");
                let mut addrs = Vec::new();
                for (i, (a, prefix, gw)) in got.into_iter().enumerate() {
                    self.check_address(i, a, prefix, gw);
                    addrs.push(a);
                }
                self.live.insert(id, addrs.clone());
                Ok(addrs)
            }
            Err(msg) => {
                let Some(i) = want else {
                    panic!("ADD {id} failed with free addresses left: {msg}");
                };
                assert_eq!(
                    msg,
                    format!(
                        "failed to allocate for range {i}: no IP addresses available in range set: {}",
                        self.sets[i].text()
                    )
                );
                self.check_disk();
                Err(i)
            }
        }
    }

    fn check_address(&self, i: usize, a: IpAddr, prefix: u8, gw: Option<IpAddr>) {
        assert!(self.free(i).contains(&a), "set {i}: {a} was not free");
        let r = self.sets[i].range_of(a).expect("inside a range");
        assert_eq!((prefix, gw), (r.prefix, Some(r.gw)), "{a}");
        assert_ne!(a, r.gw, "the gateway");
        let v = to_u128(a);
        if !r.explicit_start {
            assert_ne!(v, r.network, "the network address");
        }
        if !r.v6 && !r.explicit_end {
            assert_ne!(v, r.network + r.size - 1, "the broadcast address");
        }
    }

    fn del(&mut self, id: &str) -> Vec<IpAddr> {
        self.driver.call("DEL", id, &self.conf).unwrap();
        self.live.remove(id).unwrap()
    }

    /// The lease files are exactly the live leases and the foreign ones.
    fn check_disk(&self) {
        let mut want: Vec<(String, String)> = self
            .live
            .iter()
            .flat_map(|(id, addrs)| {
                addrs
                    .iter()
                    .map(move |a| (a.to_string(), format!("{id}\r\neth0")))
            })
            .chain(
                self.sets
                    .iter()
                    .flat_map(|s| s.foreign.iter())
                    .map(|a| (a.to_string(), "foreign\r\neth0".to_string())),
            )
            .collect();
        want.sort();
        want.dedup();
        assert_eq!(testsupport::lease_files(&self.dir.join(&self.name)), want);
    }

    /// Fill until an ADD fails, with DELs on the way; then give a few
    /// back, take them again, and fail again.
    fn run(&mut self, schedule: &[u8]) {
        let total: usize = self.sets.iter().map(|s| s.allowed().len()).sum();
        let mut dels = 0;
        let full = 'fill: {
            for step in 0..=2 * total + 16 {
                let b = schedule[step % schedule.len()];
                if b < 40 && dels < 6 && !self.live.is_empty() {
                    let id = self
                        .live
                        .keys()
                        .nth(b as usize % self.live.len())
                        .unwrap()
                        .clone();
                    self.del(&id);
                    dels += 1;
                    continue;
                }
                if let Err(i) = self.add() {
                    break 'fill i;
                }
            }
            panic!("never filled up");
        };
        // Everything the full set can give is handed out, once each.
        let s = &self.sets[full];
        let handed: BTreeSet<IpAddr> = self.live.values().map(|a| a[full]).collect();
        assert_eq!(handed.len(), self.live.len(), "distinct addresses");
        let capacity = s.allowed().difference(&s.foreign).count();
        assert_eq!(handed.len(), capacity, "set {full} handed out its capacity");

        let n = self.live.len().min(1 + schedule[0] as usize % 3);
        let ids: Vec<String> = self.live.keys().take(n).cloned().collect();
        let freed: BTreeSet<IpAddr> = ids.iter().map(|id| self.del(id)[full]).collect();
        self.check_disk();
        let back: BTreeSet<IpAddr> = (0..n).map(|_| self.add().unwrap()[full]).collect();
        assert_eq!(back, freed, "released addresses come back");
        assert_eq!(self.add(), Err(full));
    }
}

fn run_case(driver: &dyn Driver, c: &Case) {
    let d = TempDir::new("hl-exhaust");
    let sets: Vec<SetModel> = c
        .sets
        .iter()
        .enumerate()
        .map(|(i, s)| SetModel::new(i, s))
        .collect();
    // All sets in one network: it fails when the first of them is full.
    Fill::new(driver, d.path(), "all", &sets).run(&c.schedule);
    // Each set alone, so every set is filled to its capacity.
    for (i, s) in c.sets.iter().enumerate() {
        let solo = [SetModel::new(i, s)];
        Fill::new(driver, d.path(), &format!("solo{i}"), &solo).run(&c.schedule);
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        max_shrink_iters: 32,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn full_range_sets_fail_at_once_through_the_library(c in case(4, 4, false)) {
        run_case(&Library, &c);
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 6,
        max_shrink_iters: 8,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn full_range_sets_fail_at_once_through_the_binary(c in case(2, 3, true)) {
        run_case(&Binary, &c);
    }
}

/// The issue's two cases, through the binary.
#[test]
fn the_reported_hangs_fail_at_once() {
    let d = TempDir::new("hl-exhaust");
    let two = r#"[{"subnet":"10.240.10.0/30"},{"subnet":"10.240.11.0/30"}]"#;
    for (ranges, want) in [
        (
            format!("[{two}]"),
            "failed to allocate for range 0: no IP addresses available in range set: 10.240.10.1-10.240.10.2,10.240.11.1-10.240.11.2",
        ),
        (
            format!(r#"[[{{"subnet":"fd40::/64"}}],{two}]"#),
            "failed to allocate for range 1: no IP addresses available in range set: 10.240.10.1-10.240.10.2,10.240.11.1-10.240.11.2",
        ),
    ] {
        let dir = d.join(&format!("{}", ranges.len()));
        let conf = format!(
            r#"{{"cniVersion":"1.0.0","name":"net1","ipam":{{"type":"host-local","dataDir":"{}","ranges":{ranges}}}}}"#,
            dir.display()
        );
        for id in ["c1", "c2"] {
            Binary.call("ADD", id, &conf).unwrap();
        }
        let before = common::leases(&dir);
        assert_eq!(Binary.call("ADD", "c3", &conf).unwrap_err(), want);
        assert_eq!(common::leases(&dir), before, "the failed ADD left nothing");
        // The lock was released: the network still works.
        Binary.call("DEL", "c1", &conf).unwrap();
        Binary.call("ADD", "c3", &conf).unwrap();
    }
}
