//! In-process delegation against exec: the IPAM plugins of the multi-call
//! binary give the same stdout, or the same error, whether delegation runs
//! them on a thread (the file on `CNI_PATH` is this very executable) or
//! execs them (another file, the built `cni-plugins`, under the same
//! name), over generated configs and command sequences.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use skel::invoke;

/// The in-process IPAM plugins (dhcp: an RPC client of its daemon).
const IPAM: [&str; 3] = ["host-local", "static", "dhcp"];

/// Two `CNI_PATH` directories: `same` holds hard links to this test
/// executable (in-process), `other` to the built multi-call binary (exec).
struct Dirs {
    base: PathBuf,
    same: PathBuf,
    other: PathBuf,
}

impl Dirs {
    fn new() -> Dirs {
        let base =
            Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("inproc-{}", std::process::id()));
        let (same, other) = (base.join("same"), base.join("other"));
        for d in [&same, &other] {
            std::fs::create_dir_all(d).unwrap();
        }
        let me = std::env::current_exe().unwrap();
        for name in IPAM {
            std::fs::hard_link(&me, same.join(name)).unwrap();
            std::fs::copy(env!("CARGO_BIN_EXE_cni-plugins"), other.join(name)).unwrap();
        }
        Dirs { base, same, other }
    }
}

impl Drop for Dirs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// What a delegation gave, with the run's own directory names replaced.
fn outcome(r: Result<Vec<u8>, skel::Error>, dir: &Path) -> String {
    let text = match r {
        Ok(out) => format!("ok {}", String::from_utf8_lossy(&out)),
        Err(e) => format!("error {} {:?} {:?}", e.code, e.msg, e.details),
    };
    text.replace(dir.to_str().unwrap(), "DIR")
}

/// A host-local config: ranges (sometimes invalid), routes, a version.
fn host_local_conf() -> impl Strategy<Value = (String, String)> {
    (
        prop::sample::select(vec!["1.0.0", "0.4.0", "0.3.1", "0.2.0", "9.9.9"]),
        0u8..16,
        24u8..=31,
        prop::option::of((2u8..12, 0u8..20)),
        any::<bool>(),
        prop::sample::select(vec!["", "0.0.0.0/0", "10.250.0.0/16", "not-a-route"]),
        any::<bool>(),
    )
        .prop_map(|(ver, net, plen, bounds, v6, route, garbage)| {
            let subnet = if garbage {
                "10.240.300.0/24".to_string()
            } else {
                format!("10.24{}.{}.0/{plen}", net % 10, net)
            };
            let mut range = format!("{{\"subnet\":\"{subnet}\"");
            if let Some((start, len)) = bounds {
                let base = format!("10.24{}.{}", net % 10, net);
                range += &format!(
                    ",\"rangeStart\":\"{base}.{start}\",\"rangeEnd\":\"{base}.{}\"",
                    start + len
                );
            }
            range += "}";
            let mut ranges = format!("[[{range}]");
            if v6 {
                ranges += &format!(",[{{\"subnet\":\"fd40:{net:x}::/120\"}}]");
            }
            ranges += "]";
            let routes = if route.is_empty() {
                String::new()
            } else {
                format!(",\"routes\":[{{\"dst\":\"{route}\"}}]")
            };
            let ipam = format!(
                "{{\"type\":\"host-local\",\"dataDir\":\"DATA\",\"ranges\":{ranges}{routes}}}"
            );
            (ver.to_string(), ipam)
        })
}

/// A static config: addresses (some invalid), routes, DNS.
fn static_conf() -> impl Strategy<Value = (String, String)> {
    (
        prop::sample::select(vec!["1.0.0", "0.4.0", "0.3.1"]),
        prop::collection::vec(
            (0u8..16, 1u8..250, prop::sample::select(vec![24u8, 32, 33])),
            0..3,
        ),
        any::<bool>(),
    )
        .prop_map(|(ver, addrs, dns)| {
            let addresses: Vec<String> = addrs
                .iter()
                .map(|(n, h, p)| format!("{{\"address\":\"10.24{}.{n}.{h}/{p}\"}}", n % 10))
                .collect();
            let dns = if dns {
                ",\"dns\":{\"nameservers\":[\"10.240.0.53\"]}"
            } else {
                ""
            };
            let ipam = format!(
                "{{\"type\":\"static\",\"addresses\":[{}]{dns}}}",
                addresses.join(",")
            );
            (ver.to_string(), ipam)
        })
}

fn conf(ver: &str, ipam: &str, data: &Path) -> String {
    let ipam = ipam.replace("DATA", data.to_str().unwrap());
    format!(
        "{{\"cniVersion\":\"{ver}\",\"name\":\"cnirs-inproc\",\"type\":\"bridge\",\"ipam\":{ipam}}}"
    )
}

/// Run `steps` (command, container id) through `dir`, each run with its
/// own data directory; the outcomes.
fn run(
    dirs: &Dirs,
    dir: &Path,
    plugin: &str,
    ver: &str,
    ipam: &str,
    steps: &[(&str, &str)],
) -> Vec<String> {
    let data = dirs.base.join(format!(
        "data-{}",
        dir.file_name().unwrap().to_str().unwrap()
    ));
    let _ = std::fs::remove_dir_all(&data);
    let stdin = conf(ver, ipam, &data);
    let path = dir.to_str().unwrap();
    steps
        .iter()
        .map(|(cmd, cid)| {
            // SAFETY: this file's only test sets the environment, before
            // each delegation, and nothing else runs meanwhile.
            unsafe { std::env::set_var("CNI_CONTAINERID", cid) };
            outcome(invoke::exec(plugin, cmd, path, stdin.as_bytes()), &data)
        })
        .collect()
}

const STEPS: [(&str, &str); 6] = [
    ("ADD", "c1"),
    ("ADD", "c2"),
    ("ADD", "c1"),
    ("DEL", "c1"),
    ("DEL", "c1"),
    ("GC", ""),
];

#[test]
fn in_process_and_exec_give_the_same_results_and_errors() {
    invoke::in_process(cni_plugins::ipam_entry);
    let dirs = Dirs::new();
    // SAFETY: see `run`; set before anything else runs.
    unsafe {
        std::env::set_var("CNI_NETNS", "/run/netns/cnirs-inproc-none");
        std::env::set_var("CNI_IFNAME", "eth0");
        std::env::set_var("CNI_ARGS", "");
        std::env::set_var("CNI_PATH", dirs.same.to_str().unwrap());
    }
    let succeeded = std::cell::Cell::new(0);
    let failed = std::cell::Cell::new(0);
    let check = |plugin: &str, ver: &str, ipam: &str| {
        let a = run(&dirs, &dirs.same, plugin, ver, ipam, &STEPS);
        let b = run(&dirs, &dirs.other, plugin, ver, ipam, &STEPS);
        succeeded.set(succeeded.get() + a.iter().filter(|o| o.starts_with("ok {")).count());
        failed.set(failed.get() + a.iter().filter(|o| o.starts_with("error")).count());
        assert_eq!(a, b, "{plugin} with {ipam}");
    };
    // Known-good configs first, so that successes are compared whatever
    // the generators draw (most generated configs are refused).
    check(
        "host-local",
        "1.0.0",
        r#"{"type":"host-local","dataDir":"DATA","ranges":[[{"subnet":"10.240.7.0/24"}],[{"subnet":"fd40:7::/120"}]]}"#,
    );
    check(
        "static",
        "1.0.0",
        r#"{"type":"static","addresses":[{"address":"10.240.8.5/24"}]}"#,
    );
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 24,
        ..ProptestConfig::default()
    });
    runner
        .run(&host_local_conf(), |(ver, ipam)| {
            check("host-local", &ver, &ipam);
            Ok(())
        })
        .unwrap();
    runner
        .run(&static_conf(), |(ver, ipam)| {
            check("static", &ver, &ipam);
            Ok(())
        })
        .unwrap();
    // Both kinds of outcome were compared, not only one.
    let (succeeded, failed) = (succeeded.get(), failed.get());
    assert!(
        succeeded >= 6 && failed > 10,
        "{succeeded} results, {failed} errors"
    );
}

#[test]
fn names_the_table_does_not_run_in_process_are_not_ipam() {
    for name in cni_plugins::NAMES {
        assert_eq!(
            cni_plugins::ipam_entry(name).is_some(),
            IPAM.contains(name),
            "{name}"
        );
    }
    assert!(cni_plugins::entry("cni-plugins").is_none());
    assert_eq!(
        cni_plugins::name_of("/opt/cni/bin/host-local"),
        "host-local"
    );
    assert_eq!(cni_plugins::name_of("bridge"), "bridge");
}
