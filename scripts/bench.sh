#!/usr/bin/env bash
# Side-by-side benchmark of this suite against the reference Go plugins
# (Debian's containernetworking-plugins), both measured in one run.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: scripts/bench.sh [--quick] [--out FILE | --no-write] [--no-build] [--only STEP]...
                        [--scale N] [--no-container-ipv6] [--no-settle] [--no-reaper]

Builds the release binaries, installs Debian's containernetworking-plugins if
they are missing (the reference, in /usr/lib/cni), installs ours with
scripts/install.sh into a temporary CNI_PATH (the multi-call binary and a
hard link per plugin name, as users get them), and measures both suites,
alternating them call by call. Prints a table and writes it, with machine,
date and command, to docs/benchmarks.md. Must run as root: it creates network
namespaces and bridges (all named cnirsb<hex>..., subnets inside
10.240.0.0/12) and removes them again, also when it fails.

  --quick        fewer iterations, a 300-container bridge; a couple of minutes
  --out FILE     write the page to FILE instead of docs/benchmarks.md
  --no-write     print the table only
  --no-build     use the last release build as it is
  --only STEP    run one step (repeatable): VERSION, loopback, host-local,
                 "bridge serial", plugins, "link plugins" (macvlan,
                 ipvlan, vlan), chains, "64 at once",
                 "growing bridge", "host-local leases", dhcp
  --scale N      grow the bridge of "growing bridge" to N containers
                 (2-1000; default 1000, 300 with --quick; slopes need more
                 than 100). With --only "growing bridge" --no-write, the
                 scale step alone.
  --no-container-ipv6
                 an experiment: in "growing bridge", IPv6 off in every
                 container's namespace (no link-local address on eth0), to
                 see how much of the growth its DAD/MLD/RS traffic causes
  --no-reaper    an experiment: do not tell our plugins that the driver (a
                 reaping subreaper) reaps what they leave; where PID 1 does
                 not reap either, they then wait for the kernel themselves
                 (skel::orphans). The page says which mode it was taken in.
  --no-settle    an experiment: do not wait for the processes a plugin call
                 leaves behind before the next call (the driver's behaviour
                 before; their kernel work then lands on the next call)
  -h, --help     this text

Our binaries are taken from the release build (CNI_PATH is a temporary
directory holding only them); the reference from /usr/lib/cni. A plugin
missing from either suite is skipped with a note on the page.
EOF
}

say() { printf '==> %s\n' "$*"; }
die() { printf 'bench.sh: %s\n' "$*" >&2; exit 1; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$repo/scripts/lib.sh"
quick=0 build=1 out="$repo/docs/benchmarks.md"
only=()
extra=()
command_line="scripts/bench.sh${*:+ $*}"
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1 ;;
        --out) [ $# -ge 2 ] || die "--out needs a file"; out=$2; shift ;;
        --no-write) out= ;;
        --no-build) build=0 ;;
        --only) [ $# -ge 2 ] || die "--only needs a step"; only+=(--only "$2"); shift ;;
        --scale) [ $# -ge 2 ] || die "--scale needs a number"; extra+=(--scale "$2"); shift ;;
        --no-container-ipv6) extra+=(--no-container-ipv6) ;;
        --no-settle) extra+=(--no-settle) ;;
        --no-reaper) extra+=(--no-reaper) ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
    shift
done

[ "$(id -u)" -eq 0 ] || die "must run as root (it creates namespaces and bridges); try: sudo $0"

# --- packages: only what is missing, apt-get update only if something is
apt_missing=()
need() { command -v "$1" >/dev/null 2>&1 || apt_missing+=("$2"); }
need ip iproute2
need nft nftables
need iptables iptables
need python3 python3
need dnsmasq dnsmasq-base
[ -x /usr/bin/time ] || apt_missing+=(time)
[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] && [ -x /usr/lib/cni/loopback ] ||
    apt_missing+=(containernetworking-plugins)
if [ ${#apt_missing[@]} -gt 0 ]; then
    command -v apt-get >/dev/null || die "missing ${apt_missing[*]} and no apt-get to install them"
    say "installing ${apt_missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${apt_missing[@]}"
fi

# --- build
if [ "$build" -eq 1 ]; then
    cargo=$(find_cargo) || die "cargo not found; install the Rust toolchain (rustup) or use --no-build"
    say "building release binaries (static musl, else static glibc; see scripts/lib.sh)"
    build_release "$repo" "$cargo" || die "release build failed"
fi
rel=$(release_dir "$repo")

# --- our CNI_PATH: only our binaries, so delegation finds our host-local
prefix="cnirsb$(od -An -N2 -tx1 /dev/urandom | tr -d ' \n')"
ours=$(mktemp -d "/tmp/$prefix-bin.XXXXXX")
cleanup() {
    local ns link
    rm -rf "$ours"
    # The driver removes what it made; this catches a driver that was killed.
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$prefix-" || true); do
        ip netns delete "$ns" 2>/dev/null || true
    done
    for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep "^$prefix" || true); do
        ip link delete "$link" 2>/dev/null || true
    done
}
trap cleanup EXIT
"$repo/scripts/install.sh" --no-build --force --prefix "$ours" >/dev/null ||
    die "installing our binaries into $ours failed"

# taskstats (per-process peak RSS) answers only in the kernel's initial
# network namespace: the driver opens that socket in this script's.
args=(--ours "$ours" --ours-build "$rel" --ref /usr/lib/cni --prefix "$prefix" --command "$command_line"
    --taskstats-netns "/proc/$$/ns/net" "${only[@]}" "${extra[@]}")
[ "$quick" -eq 1 ] && args+=(--quick)
[ -n "$out" ] && args+=(--out "$out")
# Both suites run inside a throwaway "host" namespace: their bridges,
# masquerade rules and forwarding sysctls never touch the machine's own.
ip netns add "$prefix-host"
ip netns exec "$prefix-host" ip link set lo up
say "measuring ours ($rel) against the reference (/usr/lib/cni) in netns $prefix-host"
ip netns exec "$prefix-host" python3 "$repo/scripts/bench/driver.py" "${args[@]}"
