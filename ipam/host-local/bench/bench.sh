#!/usr/bin/env bash
# Time ADD and DEL of host-local with 0, 1,000 and 10,000 live leases in one
# network, for our binary and the reference Go binary. A benchmark, not a
# test: it prints milliseconds per call (mean over $CALLS calls), and for
# "ours-mixed" the cost of our ADD right after a reference ADD into the
# same network (mean over $MIXED calls).
#
#   ipam/host-local/bench/bench.sh [ours-binary] [reference-binary]
set -euo pipefail

OURS=${1:-$(dirname "$0")/../../../target/release/host-local}
REF=${2:-/usr/lib/cni/host-local}
CALLS=${CALLS:-100}
MIXED=${MIXED:-5}
SIZES=${SIZES:-"0 1000 10000"}
WORK=$(mktemp -d /tmp/cnirs-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

conf() {
    printf '{"cniVersion":"1.0.0","name":"bench","type":"x","ipam":{"type":"host-local","dataDir":"%s","ranges":[[{"subnet":"10.240.0.0/16"}]]}}' "$1"
}

# Leases in the reference's format, written directly (fast).
populate() {
    local dir=$1/bench n=$2 i
    mkdir -p "$dir"
    for ((i = 0; i < n; i++)); do
        printf 'pre%d\r\neth0' "$i" >"$dir/10.240.$(((i + 2) / 256)).$(((i + 2) % 256))"
    done
}

call() { # bin cmd id conf
    CNI_COMMAND=$2 CNI_CONTAINERID=$3 CNI_NETNS=/run/netns/cnirs-hl-unused CNI_IFNAME=eth0 \
        CNI_PATH=/nonexistent "$1" <<<"$4" >/dev/null
}

ms_since() { echo $((($(date +%s%N) - $1) / 1000)); }

printf '%-10s %8s %10s %10s\n' plugin leases "ADD ms" "DEL ms"
for n in $SIZES; do
    for which in ours reference; do
        bin=$OURS
        [[ $which == reference ]] && bin=$REF
        dir=$WORK/$which-$n
        populate "$dir" "$n"
        c=$(conf "$dir")
        # Warm up (page cache, and our first call indexes the leases).
        call "$bin" ADD warm "$c"
        t=$(date +%s%N)
        for ((i = 0; i < CALLS; i++)); do call "$bin" ADD "b$i" "$c"; done
        add=$(ms_since "$t")
        t=$(date +%s%N)
        for ((i = 0; i < CALLS; i++)); do call "$bin" DEL "b$i" "$c"; done
        del=$(ms_since "$t")
        printf '%-10s %8d %10.2f %10.2f\n' "$which" "$n" \
            "$(echo "$add / $CALLS / 1000" | bc -l)" "$(echo "$del / $CALLS / 1000" | bc -l)"
        rm -rf "$dir"
    done
    # Shared dataDir: each of our calls right after a reference ADD finds
    # the directory changed under it and re-indexes (O(leases)).
    dir=$WORK/mixed-$n
    populate "$dir" "$n"
    c=$(conf "$dir")
    call "$OURS" ADD warm "$c"
    total=0
    for ((i = 0; i < MIXED; i++)); do
        call "$REF" ADD "g$i" "$c"
        t=$(date +%s%N)
        call "$OURS" ADD "m$i" "$c"
        total=$((total + ($(date +%s%N) - t) / 1000))
    done
    printf '%-10s %8d %10.2f %10s\n' "ours-mixed" "$n" "$(echo "$total / $MIXED / 1000" | bc -l)" "-"
    rm -rf "$dir"
done
