#!/usr/bin/env bash
# The release tier of scripts/test.sh: scripts/release.sh for this machine's
# architecture and one foreign one, then what an operator does with each
# artifact:
# - the tarballs: checksums verified with sha256sum -c and sha512sum -c,
#   the host's unpacked into a fresh directory (one file, a hard link per
#   plugin name), and the runtimes' network lists (containerd, kind, k3s,
#   podman, nerdctl, minikube) run through that directory;
# - the same commit and VERSION built again: every artifact byte for byte
#   the same (digests included);
# - the installer image, loaded with podman and run against temporary host
#   directories: a fresh install, a re-install that writes nothing, an
#   upgrade while a plugin runs, another suite's binaries backed up (and
#   not with --force), the DaemonSet's sleeping container stopped by
#   SIGTERM; imported by ctr into a private containerd (every platform);
# - the .deb, installed into a throwaway root with dpkg --root: its files
#   listed, swapped with a containernetworking-plugins package.
# Needs root, podman, runc, containerd, qemu-user-static (scripts/test.sh
# installs them). Prints "release: N passed, N failed" last.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

cargo=$(find_cargo)
passed=0 failed=0
ok() { passed=$((passed + 1)); printf 'ok   %s\n' "$*"; }
fail() { failed=$((failed + 1)); printf 'FAIL %s\n' "$*"; }
# until COMMAND...: polls the command every 0.1 s until it succeeds, for at
# most $CNIRS_TEST_DEADLINE seconds (default 60, the tests' shared
# deadline: generous, so a busy machine does not fail it); false after.
export CNIRS_TEST_DEADLINE=${CNIRS_TEST_DEADLINE:-60}
until_ok() {
    local end=$((SECONDS + CNIRS_TEST_DEADLINE))
    until "$@"; do
        [ "$SECONDS" -lt "$end" ] || { echo "gave up after ${CNIRS_TEST_DEADLINE}s: $*" >&2; return 1; }
        sleep 0.1
    done
}
export -f until_ok
# check NAME COMMAND...: runs the command, counts it.
check() {
    local name=$1 out
    shift
    if out=$("$@" 2>&1); then ok "$name"; else fail "$name"; printf '%s\n' "$out" | tail -n 30 | sed 's/^/    /'; fi
}

case "$(uname -m)" in
    aarch64) host=arm64 foreign=amd64 ;;
    *) host=amd64 foreign=arm64 ;;
esac
version=0.0.0-test
tmp=$(mktemp -d /tmp/cnirs-release.XXXXXX)
ctrd_pid=
cleanup() {
    [ -z "$ctrd_pid" ] || { kill "$ctrd_pid" 2>/dev/null; wait "$ctrd_pid" 2>/dev/null || true; }
    grep -o " $tmp/[^ ]*" /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
    podman rmi -f "$image" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
image=localhost/cnirs-test/cni-plugins:v$version
trap cleanup EXIT

dist=$tmp/dist
t0=$SECONDS
check "release.sh --arch $host,$foreign" bash scripts/release.sh --arch "$host,$foreign" \
    --image-name "${image%:*}" --out "$dist" "$version"
echo "    release.sh took $((SECONDS - t0)) s"
t0=$SECONDS
check "release.sh again: same bytes" bash -c '
    bash scripts/release.sh --arch "$1,$2" --image-name "$3" --out "$4/dist2" "$5" >/dev/null 2>&1 || exit 1
    cd "$4/dist" && for f in *; do cmp "$f" "../dist2/$f" || exit 1; done
    [ "$(ls | wc -l)" = "$(ls ../dist2 | wc -l)" ]' _ "$host" "$foreign" "${image%:*}" "$tmp" "$version"
echo "    the second release.sh took $((SECONDS - t0)) s"

# --- tarballs
tgz=cni-plugins-linux-$host-v$version.tgz
check "checksum files verify" bash -c "cd '$dist' && sha256sum -c --strict *.tgz.sha256 && sha512sum -c --strict *.tgz.sha512 && sha256sum -c --strict SHA256SUMS"
flat=$tmp/flat
mkdir "$flat"
tar -C "$flat" -xzf "$dist/$tgz"
mapfile -t names < <("$flat/cni-plugins" --list)
check "tarball: every plugin a hard link to cni-plugins, README.md, LICENSE" bash -c '
    flat=$1; shift
    [ -f "$flat/README.md" ] && [ -f "$flat/LICENSE" ] || exit 1
    for n in "$@"; do [ "$flat/$n" -ef "$flat/cni-plugins" ] || { echo "$n"; exit 1; }; done
    [ "$(stat -c %h "$flat/cni-plugins")" = $(($# + 1)) ]
    [ "$(ls -A "$flat" | wc -l)" = $(($# + 3)) ]' _ "$flat" "${names[@]}"
check "tarball: --version and the about text carry the release" bash -c '
    "$1/cni-plugins" --version | grep -q "^cni-plugins $2 (commit [0-9a-f]" &&
    "$1/bridge" 2>&1 | grep -q "^CNI bridge plugin v1.9.1+cni-rs.$2$"' _ "$flat" "$version"
# The runtime (our cnitool, which the tests drive) beside the plugins, as
# the tests find both in CNIRS_BIN_DIR.
[ -x target/debug/cnitool ] || "$cargo" build -q -p cnitool
cp target/debug/cnitool "$flat/"
t0=$SECONDS
set +e
CNIRS_BIN_DIR=$flat "$cargo" test -q --no-fail-fast -p portmap --test containerd --test kind --test k3s \
    -p firewall --test podman --test nerdctl --test minikube >"$tmp/lists.log" 2>&1
lists=$?
set -e
ran=$(awk '/^test result:/ { p += $4 } END { print p + 0 }' "$tmp/lists.log")
if [ "$lists" = 0 ] && [ "$ran" -ge 6 ]; then
    ok "the runtimes' network lists through the unpacked tarball ($ran tests, $((SECONDS - t0)) s)"
else
    fail "the runtimes' network lists through the unpacked tarball"
    tail -n 40 "$tmp/lists.log" | sed 's/^/    /'
fi

# --- the installer image
podman_run() {
    # This kernel's hybrid cgroup layout is one crun refuses, and the
    # default ulimits are above what the sandbox lets a container raise.
    # --keep: the container is not removed when it exits.
    local rm=--rm
    [ "$1" != --keep ] || { rm=; shift; }
    podman --runtime runc --cgroup-manager cgroupfs run $rm --pull=never \
        --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 "$@"
}
export -f podman_run
check "podman load" podman load -q -i "$dist/cni-plugins-image-v$version.oci.tar"
# name -> inode, mtime and digest of every entry of directory $1
snapshot() { (cd "$1" && find . -maxdepth 1 ! -name . -printf '%f %i %T@\n' | sort && sha256sum -- * | sort); }
h=$tmp/host1
mkdir "$h"
check "image: fresh install" bash -c '
    h=$1 image=$2 flat=$3; shift 3
    out=$(podman_run -v "$h:/host/opt/cni/bin" "$image") || { echo "$out"; exit 1; }
    echo "$out" | grep -q "done: $(($# + 1)) of $(($# + 1)) names written" || { echo "$out"; exit 1; }
    cmp "$h/cni-plugins" "$flat/cni-plugins" || exit 1
    for n in "$@"; do [ "$h/$n" -ef "$h/cni-plugins" ] || { echo "$n not linked"; exit 1; }; done
    [ "$(wc -l <"$h/.cni-rs-manifest")" = $(($# + 1)) ]' _ "$h" "$image" "$flat" "${names[@]}"
before=$(snapshot "$h")
out=$(podman_run -v "$h:/host/opt/cni/bin" "$image" 2>&1 || true)
if [[ "$out" == *"done: 0 of"* ]] && [ "$(snapshot "$h")" = "$before" ]; then
    ok "image: a re-install writes nothing"
else
    fail "image: a re-install writes nothing"
    echo "$out" | sed 's/^/    /'
fi
# An upgrade over our previous build (another file, in the manifest)
# while one of its plugins runs: it keeps running and finishes; then every
# name is the image's.
h=$tmp/host2
mkdir -p "$h" "$tmp/old"
cp "$flat/cni-plugins" "$tmp/old/cni-plugins"
printf '\n# previous build\n' >>"$tmp/old/cni-plugins"
"$flat/cni-plugins" install --from "$tmp/old" --prefix "$h" >/dev/null
# STATUS reads its config from stdin to EOF: the plugin runs (the old
# file) until the config is written after the upgrade.
mkfifo "$tmp/stdin"
CNI_COMMAND=STATUS CNI_PATH=/nonexistent "$h/loopback" <"$tmp/stdin" >"$tmp/running.out" 2>&1 &
running=$!
exec {hold}>"$tmp/stdin"
runs_old() { [ "$(readlink "/proc/$running/exe")" = "$h/loopback" ]; }
until_ok runs_old || true
was=$(readlink "/proc/$running/exe")
out=$(podman_run -v "$h:/host/opt/cni/bin" "$image" 2>&1 || true)
gone=$(readlink "/proc/$running/exe")
echo '{"cniVersion":"1.1.0","name":"n","type":"loopback"}' >&"$hold"
exec {hold}>&-
status=0
wait "$running" || status=$?
if [ "$was" = "$h/loopback" ] && [ "$gone" = "$h/loopback (deleted)" ] && [ "$status" = 0 ] &&
    [[ "$out" == *"updating our previous build"* ]] && cmp -s "$h/loopback" "$flat/cni-plugins" &&
    ! ls -A "$h" | grep -q '^\.backup-'; then
    ok "image: an upgrade while a plugin runs"
else
    fail "image: an upgrade while a plugin runs"
    echo "ran $was, then $gone; exit $status: $(cat "$tmp/running.out")" | sed 's/^/    /'
    echo "$out" | sed 's/^/    /'
fi
# Another suite's binaries (the reference's, from Debian) are backed up;
# with --force they are replaced without a copy.
check "image: another suite's binaries backed up, not with --force" bash -c '
    tmp=$1 image=$2
    for d in host3 host4; do
        mkdir "$tmp/$d"
        cp -a /usr/lib/cni/bridge /usr/lib/cni/portmap "$tmp/$d/"
        ln -s /usr/lib/cni/ptp "$tmp/$d/ptp"
    done
    out=$(podman_run -v "$tmp/host3:/host/opt/cni/bin" "$image") || { echo "$out"; exit 1; }
    b=$(ls -d "$tmp"/host3/.backup-*) || { echo "$out"; exit 1; }
    cmp "$b/bridge" /usr/lib/cni/bridge && cmp "$b/portmap" /usr/lib/cni/portmap &&
        [ "$(readlink "$b/ptp")" = /usr/lib/cni/ptp ] && [ "$(ls -A "$b" | wc -l)" = 3 ] || exit 1
    [ "$tmp/host3/bridge" -ef "$tmp/host3/cni-plugins" ] || exit 1
    out=$(podman_run -v "$tmp/host4:/mnt" "$image" --prefix /mnt --force) || { echo "$out"; exit 1; }
    ! ls -A "$tmp/host4" | grep -q "^\.backup-" && [ "$tmp/host4/portmap" -ef "$tmp/host4/cni-plugins" ]
    ' _ "$tmp" "$image"
# The DaemonSet's main container: PID 1 of its container, it must exit on
# SIGTERM (a signal with the default action would be dropped for PID 1).
check "image: the sleeping container exits 0 on SIGTERM" bash -c '
    id=$(podman_run --keep -d --entrypoint /opt/cni/bin/cni-plugins "$1" sleep) || exit 1
    says_it_sleeps() { podman logs "$1" 2>&1 | grep -q "sleeping until SIGTERM"; }
    until_ok says_it_sleeps "$id" || true
    podman stop -t 120 "$id" >/dev/null
    code=$(podman inspect --format "{{.State.ExitCode}}" "$id")
    podman logs "$id"; podman rm -f "$id" >/dev/null
    [ "$code" = 0 ]' _ "$image"
# ctr: the multi-architecture index into a private containerd.
ctrd=$tmp/containerd
mkdir -p "$ctrd"
printf 'version = 2\nroot = "%s/root"\nstate = "%s/state"\n[grpc]\n  address = "%s/sock"\n' \
    "$ctrd" "$ctrd" "$ctrd" >"$ctrd/config.toml"
containerd --config "$ctrd/config.toml" >"$ctrd/log" 2>&1 &
ctrd_pid=$!
check "ctr images import: the index, every platform" bash -c '
    answers() { [ -S "$1/sock" ] && ctr -a "$1/sock" version >/dev/null 2>&1; }
    until_ok answers "$1" || exit 1
    ctr -a "$1/sock" -n k8s.io images import --all-platforms "$2" || exit 1
    ls=$(ctr -a "$1/sock" -n k8s.io images ls) || exit 1
    echo "$ls"
    echo "$ls" | grep "^$3 " | grep -q "linux/$4" && echo "$ls" | grep "^$3 " | grep -q "linux/$5"
    ' _ "$ctrd" "$dist/cni-plugins-image-v$version.oci.tar" "$image" "$host" "$foreign"

# --- the .deb, in a throwaway root
root=$tmp/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
touch "$root/var/lib/dpkg/status"
deb=$(ls "$dist"/cni-rs-plugins_*_"$host".deb)
# A stand-in for Debian's containernetworking-plugins (no maintainer
# scripts, which dpkg --root would run in a root that has no shell).
fake=$tmp/fake
mkdir -p "$fake/DEBIAN" "$fake/usr/lib/cni"
printf 'Package: containernetworking-plugins\nVersion: 1.1.1+ds1-3\nArchitecture: %s\nMaintainer: test <t@localhost>\nDescription: stand-in\n' \
    "$(dpkg --print-architecture)" >"$fake/DEBIAN/control"
printf '#!/bin/sh\necho reference\n' >"$fake/usr/lib/cni/bridge"
# Debian's package also holds the dhcp daemon's units, which ours replaces.
mkdir -p "$fake/lib/systemd/system"
printf '[Service]\nExecStart=/usr/lib/cni/dhcp daemon\n' >"$fake/lib/systemd/system/cni-dhcp.service"
chmod 0755 "$fake/usr/lib/cni/bridge"
dpkg-deb --root-owner-group --build "$fake" "$tmp/fake.deb" >/dev/null
check ".deb: swaps containernetworking-plugins in a throwaway root, files listed" bash -c '
    root=$1 deb=$2 fake=$3; shift 3
    dpkg --root="$root" -i "$fake" >/dev/null || exit 1
    dpkg --root="$root" -i "$deb" || exit 1
    dpkg --root="$root" -L cni-rs-plugins
    ! dpkg --root="$root" -s containernetworking-plugins 2>/dev/null | grep -q "Status: install ok installed" || exit 1
    [ "$(dpkg --root="$root" -S /usr/lib/cni/bridge)" = "cni-rs-plugins: /usr/lib/cni/bridge" ] || exit 1
    [ "$(dpkg --root="$root" -S /lib/systemd/system/cni-dhcp.service)" = "cni-rs-plugins: /lib/systemd/system/cni-dhcp.service" ] || exit 1
    grep -qx "ExecStart=/usr/lib/cni/dhcp daemon" "$root/lib/systemd/system/cni-dhcp.service" || exit 1
    grep -qx "ListenStream=/run/cni/dhcp.sock" "$root/lib/systemd/system/cni-dhcp.socket" || exit 1
    for n in "$@"; do [ "$root/usr/lib/cni/$n" -ef "$root/usr/lib/cni/cni-plugins" ] || { echo "$n"; exit 1; }; done
    "$root/usr/lib/cni/bridge" 2>&1 | grep -q "^CNI bridge plugin v1.9.1+cni-rs." || exit 1
    dpkg-deb -f "$deb" Provides Conflicts Replaces
    dpkg --root="$root" -r cni-rs-plugins >/dev/null && dpkg --root="$root" -i "$fake" >/dev/null &&
        [ "$("$root/usr/lib/cni/bridge")" = reference ]
    ' _ "$root" "$deb" "$tmp/fake.deb" "${names[@]}"

echo "release: $passed passed, $failed failed"
[ "$failed" = 0 ]
