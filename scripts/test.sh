#!/usr/bin/env bash
# Runs every check CI runs: formatting, clippy, then all three test tiers
# (unit, root tests in throwaway namespaces, black-box binary tests), the
# release tier (scripts/release-test.sh), then the kernel-feature tier in a
# VM (scripts/vm-test.sh) and its signal checks (scripts/vm-test-signals.sh).
# The last line counts each tier's results.
# Needs root (the root tiers create network namespaces) and installs the
# system tools the tests use when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

if [ "$(id -u)" != 0 ]; then
    echo "scripts/test.sh: the root test tiers need root; run it as root" >&2
    exit 1
fi

# command -> Debian package; the reference Go plugins are used by the
# interop and differential tests (host-local, static, tuning, bandwidth, dhcp,
# portmap), tc by cni-net's and bandwidth's, conntrack by cni-net's, strace
# by portmap's (calls without mappings start nothing), dbus-daemon and
# firewalld by cni-firewall's firewalld tests (a private bus and firewalld
# in throwaway namespaces), dnsmasq by the dhcp plugin's (a real DHCP server
# on a LAN of namespaces; the -base package has no service to start);
# podman, runc, containerd (ctr) and qemu-user-static by the release tier
# (scripts/release-test.sh: the installer image run and imported, the
# foreign build smoke-tested).
declare -A need=(
    [ip]=iproute2
    [tc]=iproute2
    [ping]=iputils-ping
    [sysctl]=procps
    [nft]=nftables
    [iptables]=iptables
    [conntrack]=conntrack
    [strace]=strace
    [/usr/lib/cni/host-local]=containernetworking-plugins
    [dbus-daemon]=dbus
    [firewalld]=firewalld
    [firewall-cmd]=firewalld
    [podman]=podman
    [runc]=runc
    [containerd]=containerd
    [ctr]=containerd
    [qemu-aarch64-static]=qemu-user-static
    [qemu-x86_64-static]=qemu-user-static
    [dpkg-deb]=dpkg
    [dnsmasq]=dnsmasq-base
    [/usr/lib/cni/dhcp]=containernetworking-plugins
)
missing=()
for cmd in "${!need[@]}"; do
    if [[ $cmd == /* ]]; then [ -x "$cmd" ] || missing+=("${need[$cmd]}")
    else command -v "$cmd" >/dev/null 2>&1 || missing+=("${need[$cmd]}"); fi
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "==> installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # firewalld's package starts and enables the service, which would take
    # over this machine's firewall: the tests only ever run their own
    # firewalld. policy-rc.d forbids starting services during the install
    # (unless the machine has its own), and the unit is disabled after.
    policy=/usr/sbin/policy-rc.d
    own_policy=
    # An interrupted install must not leave it behind: it would forbid
    # every later package's service start on this machine.
    if [ ! -e "$policy" ]; then
        trap 'rm -f "$policy"' EXIT
        trap 'exit 130' INT
        trap 'exit 143' TERM
        printf '#!/bin/sh\nexit 101\n' >"$policy"
        chmod +x "$policy"
        own_policy=1
    fi
    status=0
    apt-get install -y -qq "${missing[@]}" >/dev/null || status=$?
    if [ -n "$own_policy" ]; then
        rm -f "$policy"
        trap - EXIT INT TERM
    fi
    [ "$status" = 0 ] || exit "$status"
    if [[ " ${missing[*]} " == *" firewalld "* ]] && [ -d /run/systemd/system ]; then
        systemctl disable --now firewalld >/dev/null 2>&1 || true
    fi
fi

# Under sudo, cargo is usually not on root's PATH.
cargo=$(find_cargo) || {
    echo "scripts/test.sh: cargo not found; install the Rust toolchain (https://rustup.rs)" >&2
    exit 1
}
# A minimal rustup profile has neither rustfmt nor clippy.
for tool in fmt clippy; do
    if ! "$cargo" "$tool" --version >/dev/null 2>&1; then
        rustup=$(dirname "$cargo")/rustup
        [ -x "$rustup" ] || rustup=rustup
        echo "==> installing the $tool component"
        "$rustup" component add "$([ "$tool" = fmt ] && echo rustfmt || echo clippy)"
    fi
done

echo "==> cargo fmt --check"
"$cargo" fmt --all -- --check
echo "==> cargo clippy"
"$cargo" clippy --workspace --all-targets --quiet -- -D warnings
echo "==> cargo build (the black-box tests run the built binaries)"
"$cargo" build --workspace --quiet
echo "==> cargo test"
mkdir -p target
# Test executables with tests that need root name themselves here
# (testsupport::require_root), for the summary's root tier.
export CNIRS_ROOT_TESTS_LOG=$PWD/target/root-tests.list
rm -f "$CNIRS_ROOT_TESTS_LOG"
set +e
"$cargo" test --workspace --no-fail-fast 2>&1 | tee target/test.log
status=${PIPESTATUS[0]}
set -e
echo "==> the release tier (scripts/release-test.sh): release.sh for this machine and one foreign architecture, its artifacts used"
# What a node gets (the tarball unpacked, the installer image, the .deb):
# the unpacked tarball runs the containerd, kind, k3s, podman, nerdctl and
# minikube network lists, as the debug build just did.
set +e
bash scripts/release-test.sh 2>&1 | tee target/release-test.log
release_status=${PIPESTATUS[0]}
set -e
echo "==> kernel-feature tests in a VM (scripts/vm-test.sh)"
set +e
bash scripts/vm-test.sh 2>&1 | tee target/vm-test.log
vm_status=${PIPESTATUS[0]}
echo "==> the VM tier stopped from outside takes qemu with it (scripts/vm-test-signals.sh)"
bash scripts/vm-test-signals.sh 2>&1 | tee target/vm-signals.log
signals_status=${PIPESTATUS[0]}
set -e
echo "==> summary"
# One count per tier, so a reader sees what ran. A test executable's
# results count for the tier of what it is:
# - root: it has tests that need root, network namespaces above all
#   (testsupport::require_root, which every namespace goes through, notes
#   the executable in $CNIRS_ROOT_TESTS_LOG), whatever kind of target;
# - unit: otherwise, a crate's unit tests (`Running unittests src/...`)
#   or doc-tests;
# - black-box: otherwise, an integration-test target (tests/*.rs), which
#   drives the built binaries or a crate's public interface from outside;
# - release: scripts/release-test.sh's checks of release.sh's artifacts
#   (its closing line; the output of a failed check it prints is not
#   counted again);
# - VM: the kernel-feature tests in the VM (its closing line; a VM that
#   could not run counts as a failure), and the VM tier's signal checks.
# Ignored tests are counted apart: outside doc-tests every one is a
# kernel-features test, which the VM tier runs; in doc-tests, an example
# marked `ignore` (shown, not compiled).
closing() { awk '/^[0-9]+ passed, [0-9]+ failed$/ { p = $1; f = $3 } END { print p + 0, f + 0 }' "$1"; }
read -r vm_passed vm_failed < <(closing target/vm-test.log)
[ "$vm_status" = 0 ] || [ "$vm_failed" != 0 ] || vm_failed=1
read -r sig_passed sig_failed < <(closing target/vm-signals.log)
[ "$signals_status" = 0 ] || [ "$sig_failed" != 0 ] || sig_failed=1
touch "$CNIRS_ROOT_TESTS_LOG"
awk -v vp="$vm_passed" -v vf="$vm_failed" -v sp="$sig_passed" -v sf="$sig_failed" '
    FILENAME == ARGV[1] { root[$0] = 1; next }
    FILENAME ~ /release-test/ && !/^release: [0-9]+ passed, [0-9]+ failed$/ { next }
    /^ *Running / {
        exe = $NF; sub(/^\(/, "", exe); sub(/\)$/, "", exe); sub(/.*\//, "", exe)
        tier = (exe in root) ? "root" : (/Running unittests / ? "unit" : "black-box")
        doc = 0
        next
    }
    /^ *Doc-tests / { tier = "unit"; doc = 1; next }
    /^test result:/ { p[tier] += $4; f[tier] += $6; if (doc) docs += $8; else ignored += $8 }
    /^release: [0-9]+ passed, [0-9]+ failed$/ { p["release"] += $2; f["release"] += $4 }
    END {
        p["VM"] = vp + sp; f["VM"] = vf + sf
        n = split("unit root black-box release VM", order, " ")
        for (i = 1; i <= n; i++) {
            t = order[i]
            printf "%s%s %d passed, %d failed", (i > 1 ? "; " : ""), t, p[t], f[t]
        }
        printf "; %d ignored (kernel-features, run in the VM)", ignored
        printf "%s\n", docs ? sprintf(", %d doc example%s not compiled", docs, docs > 1 ? "s" : "") : ""
    }' "$CNIRS_ROOT_TESTS_LOG" target/test.log target/release-test.log
[ "$status" = 0 ] && [ "$release_status" = 0 ] && [ "$vm_status" = 0 ] && [ "$signals_status" = 0 ]
