#!/usr/bin/env bash
# Two network namespaces on one bridge network, driven exactly as a container
# runtime drives CNI plugins. Leaves nothing behind.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: sudo scripts/demo.sh [--conflist FILE] [--install] [--no-build]

Builds the suite, then plays container runtime: creates two network
namespaces, attaches both to the network of testdata/demo-bridge.conflist
(bridge + host-local, then loopback), shows the results, pings one container
from the other, DELs both and removes everything it created (namespaces,
bridge, temporary directories), also when a step fails.

Each plugin is called the way libcni calls it: CNI_* variables in the
environment, the plugin's object from the list on stdin with "name" and
"cniVersion" injected, "prevResult" chained from plugin to plugin on ADD, and
DEL run in reverse order with the cached ADD result as "prevResult".
host-local's dataDir is pointed at a temporary directory.

  --conflist FILE  network to use (default: testdata/demo-bridge.conflist)
  --install        install into /opt/cni/bin (scripts/install.sh, which keeps
                   a backup of other suites' binaries) and run from there;
                   by default the plugins run from a temporary directory
  --no-build       use the last release build as it is
  -h, --help       this text

Needs root, the Rust toolchain (cargo) and apt-get for missing tools
(iproute2, iputils-ping, nftables, jq).
EOF
}

step=0 bold="" plain=""
if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; fi
say() { step=$((step + 1)); printf '\n%s==> %d. %s%s\n' "$bold" "$step" "$*" "$plain"; }
info() { printf '    %s\n' "$*"; }
die() { printf '\ndemo.sh: %s\n' "$*" >&2; exit 1; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$repo/scripts/lib.sh"
conffile="$repo/testdata/demo-bridge.conflist"
install=0 build=1
while [ $# -gt 0 ]; do
    case "$1" in
        --conflist) [ $# -ge 2 ] || die "--conflist needs a file"; conffile=$2; shift ;;
        --install) install=1 ;;
        --no-build) build=0 ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
    shift
done
[ "$(id -u)" -eq 0 ] || die "must run as root (it creates namespaces and a bridge); try: sudo $0"
[ -f "$conffile" ] || die "no such network config: $conffile"

# ---------------------------------------------------------------- tools
say "checking tools"
missing=()
command -v ip >/dev/null || missing+=(iproute2)
command -v ping >/dev/null || missing+=(iputils-ping)
command -v nft >/dev/null || missing+=(nftables)
command -v jq >/dev/null || missing+=(jq)
if [ ${#missing[@]} -gt 0 ]; then
    command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get to install them"
    info "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
    info "iproute2, iputils-ping, nftables and jq are present"
fi

# ------------------------------------------------------- what we create
tmp=$(mktemp -d /tmp/cnirs-demo.XXXXXX)
ns_a="cnirsdemo-$$-a" ns_b="cnirsdemo-$$-b"
made_ns=() added=() bridge="" made_bridge=0
# bridge with isGateway turns on forwarding for the whole host; put it back.
ip_forward=$(cat /proc/sys/net/ipv4/ip_forward 2>/dev/null || echo 1)

conflist=$(jq -c --arg d "$tmp/ipam" '.plugins |= map(if .ipam then .ipam.dataDir = $d else . end)' "$conffile")
netname=$(jq -r .name <<<"$conflist")
version=$(jq -r '.cniVersion // "0.1.0"' <<<"$conflist")
nplugins=$(jq '.plugins | length' <<<"$conflist")
bridge=$(jq -r '[.plugins[] | select(.type == "bridge") | .bridge // "cni0"][0] // empty' <<<"$conflist")

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    printf '\n%s==> cleaning up%s\n' "$bold" "$plain"
    local i
    for ((i = ${#added[@]} - 1; i >= 0; i--)); do
        IFS=: read -r cid ns <<<"${added[$i]}"
        del_network "$cid" "/run/netns/$ns" best-effort || info "DEL $cid failed during cleanup"
    done
    for ns in "${made_ns[@]}"; do
        ip netns delete "$ns" 2>/dev/null && info "deleted namespace $ns"
    done
    if [ "$made_bridge" -eq 1 ] && ip link show "$bridge" >/dev/null 2>&1; then
        ip link delete "$bridge" && info "deleted bridge $bridge (bridge DEL leaves it, as the reference does)"
    fi
    if [ "$ip_forward" = 0 ] && [ "$(cat /proc/sys/net/ipv4/ip_forward)" != 0 ]; then
        echo 0 >/proc/sys/net/ipv4/ip_forward && info "net.ipv4.ip_forward back to 0"
    fi
    rm -rf "$tmp" && info "removed $tmp"
    if [ "$rc" -eq 0 ]; then
        printf '\n%sdemo finished: everything it created is gone%s\n' "$bold" "$plain"
    else
        printf '\n%sdemo failed (exit %d); everything it created is gone%s\n' "$bold" "$rc" "$plain"
    fi
    exit "$rc"
}
trap cleanup EXIT
# Progress from inside $(...) goes to fd 3, the terminal, not the captured result.
exec 3>&1
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- build
if [ "$build" -eq 1 ]; then
    say "building release binaries"
    cargo=$(find_cargo) || die "cargo not found: install the Rust toolchain (https://rustup.rs) or use --no-build"
    build_release "$repo" "$cargo" 2>&1 | tail -n 3 | sed 's/^/    /'
fi

say "installing the plugins"
if [ "$install" -eq 1 ]; then
    "$repo/scripts/install.sh" --no-build | sed 's/^/    /'
    plugindir=${DESTDIR:-}${PREFIX:-/opt/cni/bin}
else
    plugindir="$tmp/bin"
    "$repo/scripts/install.sh" --no-build --prefix "$plugindir" >/dev/null ||
        die "installing into $plugindir failed (build failed?)"
    info "installed our plugins into $plugindir (CNI_PATH); /opt/cni/bin is not touched"
fi
for b in bridge host-local loopback; do
    out=$(CNI_COMMAND=VERSION "$plugindir/$b" </dev/null 2>/dev/null || true)
    jq -e '.supportedVersions | index("'"$version"'")' <<<"$out" >/dev/null 2>&1 ||
        die "$plugindir/$b does not support cniVersion $version (VERSION said: ${out:-nothing})"
done
info "all three answer VERSION and support cniVersion $version"

# --------------------------------------------------------- the runtime
# Runs one plugin as libcni does: env + stdin, stdout is the result or error.
cni_exec() {
    local command=$1 cid=$2 netns=$3 conf=$4 type
    type=$(jq -r .type <<<"$conf")
    if [ ! -x "$plugindir/$type" ]; then
        info "failed to find plugin \"$type\" in path [$plugindir]" >&3
        return 1
    fi
    info "\$ CNI_COMMAND=$command CNI_CONTAINERID=$cid CNI_NETNS=$netns CNI_IFNAME=eth0 CNI_PATH=$plugindir $type <<< '$(jq -c 'del(.prevResult) + (if .prevResult then {prevResult: "…"} else {} end)' <<<"$conf")'" >&3
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        CNI_COMMAND="$command" CNI_CONTAINERID="$cid" CNI_NETNS="$netns" CNI_IFNAME=eth0 \
        CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAME=$cid" CNI_PATH="$plugindir" \
        "$plugindir/$type" <<<"$conf"
}

# The plugin object as the runtime sends it: name and cniVersion injected,
# prevResult added when there is one.
plugin_conf() {
    jq -c --argjson i "$1" --arg name "$netname" --arg v "$version" --argjson prev "$2" \
        '.plugins[$i] + {name: $name, cniVersion: $v} + (if $prev == null then {} else {prevResult: $prev} end)' \
        <<<"$conflist"
}

add_network() {
    local cid=$1 netns=$2 prev=null i out
    for ((i = 0; i < nplugins; i++)); do
        if ! out=$(cni_exec ADD "$cid" "$netns" "$(plugin_conf "$i" "$prev")"); then
            info "ADD failed: $(jq -c . <<<"$out" 2>/dev/null || echo "$out")" >&3
            return 1
        fi
        prev=$(jq -c . <<<"$out")
    done
    # libcni caches the final result; DEL hands it back as prevResult.
    mkdir -p "$tmp/cache"
    printf '%s' "$prev" >"$tmp/cache/$netname-$cid-eth0"
    printf '%s' "$prev"
}

# Like libcni, stop at the first failing plugin; with "best-effort" (used by
# the cleanup) go on with the others so nothing is left behind.
del_network() {
    local cid=$1 netns=$2 mode=${3:-} prev=null i out rc=0 cache="$tmp/cache/$netname-$cid-eth0"
    [ -f "$cache" ] && prev=$(cat "$cache")
    for ((i = nplugins - 1; i >= 0; i--)); do
        if ! out=$(cni_exec DEL "$cid" "$netns" "$(plugin_conf "$i" "$prev")"); then
            [ -z "$out" ] || info "DEL failed: $(jq -c . <<<"$out" 2>/dev/null || echo "$out")" >&3
            rc=1
            [ "$mode" = best-effort ] || return 1
        fi
    done
    [ "$rc" -eq 0 ] && rm -f "$cache"
    return "$rc"
}

# ---------------------------------------------------------------- go
say "preparing network \"$netname\" from ${conffile#"$repo"/}"
if [ -n "$bridge" ]; then
    if ip link show "$bridge" >/dev/null 2>&1; then
        die "a link named $bridge already exists; remove it or use another --conflist"
    fi
    made_bridge=1
fi
for subnet in $(jq -r '.. | objects | .subnet? // empty' <<<"$conflist"); do
    used=$(ip route show to root "$subnet" 2>/dev/null | head -n1)
    [ -z "$used" ] || die "subnet $subnet is already in use on this host (route: $used)"
done
info "plugins in order: $(jq -r '[.plugins[].type] | join(" → ")' <<<"$conflist"); cniVersion $version"
info "host-local leases go to $tmp/ipam"

say "creating namespaces $ns_a and $ns_b"
for ns in "$ns_a" "$ns_b"; do
    ip netns add "$ns"
    made_ns+=("$ns")
done

results=()
for ns in "$ns_a" "$ns_b"; do
    cid="demo-$ns"
    say "ADD $cid (netns /run/netns/$ns)"
    added+=("$cid:$ns")
    result=$(add_network "$cid" "/run/netns/$ns") || die "ADD $cid failed"
    results+=("$result")
    info "result:"
    jq . <<<"$result" | sed 's/^/      /'
done

say "what the plugins built"
info "host: bridge $bridge and its ports"
ip -br addr show dev "$bridge" | sed 's/^/      /'
ip -br link show master "$bridge" | sed 's/^/      /'
for ns in "$ns_a" "$ns_b"; do
    info "namespace $ns:"
    ip -n "$ns" -br addr show | sed 's/^/      /'
    ip -n "$ns" route show | sed 's/^/      route: /'
done

ip_b=$(jq -r '[.ips[].address | select(contains("."))][0] | split("/")[0]' <<<"${results[1]}")
say "ping $ip_b (in $ns_b) from $ns_a"
if ! ip netns exec "$ns_a" ping -c 3 -i 0.2 -W 2 "$ip_b" | sed 's/^/    /'; then
    die "ping failed (a host firewall filtering bridged traffic, e.g. br_netfilter with a DROP FORWARD policy, can cause this)"
fi

for ((i = ${#added[@]} - 1; i >= 0; i--)); do
    IFS=: read -r cid ns <<<"${added[$i]}"
    say "DEL $cid (plugins in reverse order, cached result as prevResult)"
    del_network "$cid" "/run/netns/$ns" || die "DEL $cid failed"
    unset 'added[i]'
    if ip -n "$ns" link show eth0 >/dev/null 2>&1; then
        die "eth0 is still in $ns after DEL"
    fi
    info "eth0 is gone from $ns"
done
# Lease files are named after the address they hold.
leases=$(find "$tmp/ipam/$netname" -maxdepth 1 -type f -name '*[.:]*' ! -name 'last_reserved_ip*' -printf '%P ' 2>/dev/null || true)
[ -z "$leases" ] || die "leases left in $tmp/ipam after DEL: $leases"
ports=$(ip -br link show master "$bridge" | wc -l)
[ "$ports" -eq 0 ] || die "$ports ports left on $bridge after DEL"
info "no leases left in $tmp/ipam, no ports left on $bridge"
