//! The README's "Using the plugins" example, run as written: in throwaway
//! mount and network namespaces (`unshare`), with tmpfs over `/opt`,
//! `/var/lib` and `/run/netns` there, so nothing of the machine's is seen
//! or changed, and the multi-call binary in `/opt/cni/bin` under the
//! plugins' names, as `scripts/install.sh` installs it. Afterwards no link
//! but `lo`, no namespace, no file of host-local's, forwarding as before.

use std::path::Path;
use std::process::Command;

/// The first `sh` block after `heading` in the README.
fn example(heading: &str) -> String {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .unwrap();
    let section = &readme[readme
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading}"))..];
    let start = section.find("```sh\n").expect("no sh block") + "```sh\n".len();
    let len = section[start..].find("\n```").expect("unterminated block");
    section[start..start + len].to_string()
}

#[test]
fn the_readme_example_works_and_leaves_nothing() {
    testsupport::require_root();
    let block = example("## Using the plugins");
    let multi = env!("CARGO_BIN_EXE_cni-plugins");
    let script = format!(
        r#"set -eu
mount -t tmpfs tmpfs /opt
mount -t tmpfs tmpfs /var/lib
mkdir -p /run/netns
mount -t tmpfs tmpfs /run/netns
mkdir -p /opt/cni/bin
cp {multi} /opt/cni/bin/cni-plugins
for p in bridge host-local; do ln /opt/cni/bin/cni-plugins /opt/cni/bin/$p; done
ip link set lo up
before=$(sysctl -n net.ipv4.ip_forward)
set -x
{block}
set +x
echo "links: $(ip -o link show | awk -F': ' '{{print $2}}' | tr '\n' ' ')"
echo "namespaces: $(ip netns list | wc -l)"
echo "files: $(find /var/lib -type f | wc -l)"
[ "$before" = "$(sysctl -n net.ipv4.ip_forward)" ] && echo "forwarding: as before"
"#
    );
    let out = Command::new("unshare")
        .args(["--mount", "--net", "--propagation", "private", "bash", "-c"])
        .arg(&script)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("\"address\": \"10.240.1.2/24\""),
        "{stdout}"
    );
    assert!(stdout.contains("2 received"), "{stdout}");
    for line in [
        "links: lo ",
        "namespaces: 0",
        "files: 0",
        "forwarding: as before",
    ] {
        assert!(
            stdout.lines().any(|l| l == line),
            "{line:?} in {stdout}\n{stderr}"
        );
    }
}
