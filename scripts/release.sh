#!/usr/bin/env bash
# Release artifacts: per-architecture tarballs in the reference's layout,
# their checksums, a multi-architecture installer image and .deb packages.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: scripts/release.sh [--arch LIST] [--out DIR] [--image-name NAME] [--no-image] [--no-deb] VERSION

Builds the suite for release VERSION (e.g. 0.2.0, 0.3.0-rc.1) into DIR
(default dist/, emptied first):

  cni-plugins-linux-<arch>-v<VERSION>.tgz       the reference's layout: one file
      (+ .sha256, .sha512)                       per plugin name (hard links to the
                                                 one static multi-call binary), README.md,
                                                 LICENSE
  cni-plugins-image-v<VERSION>.oci.tar          installer image, every architecture
                                                 under one index (ctr images import,
                                                 podman load)
  cni-plugins-daemonset-v<VERSION>.yaml         deploy/daemonset.yaml for this image
  kubespray-cni-rs-v<VERSION>.yml               kubespray's variables for the tarballs
  cni-rs-plugins_<VERSION>_<debarch>.deb        installs into /usr/lib/cni, replaces
                                                 Debian's containernetworking-plugins
  SHA256SUMS, BUILD-INFO                        every file's digest; how each
                                                 architecture was built

Architectures (LIST, comma-separated; default all): amd64 arm64 arm ppc64le
s390x riscv64, or "host". Each is built with a rustup target: static musl
linked by rust-lld where rustup has the target's rust-std (nothing else to
install), else static glibc linked by Debian's cross gcc (installed with
apt-get when missing and run as root). Every foreign binary is run under
qemu-user-static before it is packed: --version, --list, each plugin's
about text and VERSION, and an ADD with a config that is no JSON. An
architecture that cannot be built is named with the reason, and the script
exits 1 after building the rest.

The outputs are reproducible: the same commit and VERSION give the same
bytes (mtimes from the commit's date or $SOURCE_DATE_EPOCH, owner 0:0,
sorted entries, gzip -n, paths remapped out of the binaries).

  --image-name NAME   the image's name (default localhost/cni-rs/cni-plugins)
EOF
}

say() { printf '==> %s\n' "$*"; }
die() { printf 'release.sh: %s\n' "$*" >&2; exit 1; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$repo/scripts/lib.sh"

all_arches=(amd64 arm64 arm ppc64le s390x riscv64)
out=$repo/dist image=1 deb=1 version= image_name=localhost/cni-rs/cni-plugins
arch_list=
while [ $# -gt 0 ]; do
    case "$1" in
        --arch) [ $# -ge 2 ] || die "--arch needs a list"; arch_list+=${arch_list:+,}$2; shift ;;
        --arch=*) arch_list+=${arch_list:+,}${1#*=} ;;
        --out) [ $# -ge 2 ] || die "--out needs a directory"; out=$2; shift ;;
        --out=*) out=${1#*=} ;;
        --image-name) [ $# -ge 2 ] || die "--image-name needs a name"; image_name=$2; shift ;;
        --image-name=*) image_name=${1#*=} ;;
        --no-image) image=0 ;;
        --no-deb) deb=0 ;;
        -h | --help) usage; exit 0 ;;
        -*) usage >&2; die "unknown argument: $1" ;;
        *) [ -z "$version" ] || die "one VERSION only"; version=$1 ;;
    esac
    shift
done
[ -n "$version" ] || { usage >&2; die "no VERSION given"; }
# Semver: it is the build metadata of every plugin's version
# (v1.9.1+cni-rs.VERSION), where only [0-9A-Za-z.-] may stand.
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
    die "VERSION $version is not MAJOR.MINOR.PATCH[-PRERELEASE]"

# The Kubernetes name of this machine's architecture.
host_arch() {
    case "$(uname -m)" in
        x86_64) echo amd64 ;; aarch64) echo arm64 ;; armv7l) echo arm ;;
        ppc64le) echo ppc64le ;; s390x) echo s390x ;; riscv64) echo riscv64 ;;
        *) uname -m ;;
    esac
}
host=$(host_arch)

# Per architecture: the musl target ("-": rustup has none), the glibc
# target, Debian's cross-toolchain prefix, Debian's architecture, qemu's,
# and the OCI platform's architecture and variant ("-": none).
arch_info() {
    case "$1" in
        amd64) echo "x86_64-unknown-linux-musl x86_64-unknown-linux-gnu x86_64-linux-gnu amd64 x86_64 amd64 -" ;;
        arm64) echo "aarch64-unknown-linux-musl aarch64-unknown-linux-gnu aarch64-linux-gnu arm64 aarch64 arm64 v8" ;;
        arm) echo "armv7-unknown-linux-musleabihf armv7-unknown-linux-gnueabihf arm-linux-gnueabihf armhf arm arm v7" ;;
        ppc64le) echo "powerpc64le-unknown-linux-musl powerpc64le-unknown-linux-gnu powerpc64le-linux-gnu ppc64el ppc64le ppc64le -" ;;
        # s390x-unknown-linux-musl is a tier 3 target: rustup ships no
        # rust-std for it.
        s390x) echo "- s390x-unknown-linux-gnu s390x-linux-gnu s390x s390x s390x -" ;;
        riscv64) echo "riscv64gc-unknown-linux-musl riscv64gc-unknown-linux-gnu riscv64-linux-gnu riscv64 riscv64 riscv64 -" ;;
        *) return 1 ;;
    esac
}

arches=()
IFS=, read -r -a wanted <<<"${arch_list:-$(IFS=,; echo "${all_arches[*]}")}"
for a in "${wanted[@]}"; do
    [ "$a" = host ] && a=$host
    arch_info "$a" >/dev/null || die "unknown architecture $a (one of: ${all_arches[*]} host)"
    [[ " ${arches[*]} " == *" $a "* ]] || arches+=("$a")
done

cargo=$(find_cargo) || die "cargo not found; install the Rust toolchain (rustup)"
rustc=$(dirname "$cargo")/rustc
[ -x "$rustc" ] || rustc=rustc
sysroot=$("$rustc" --print sysroot)
commit=$(git_commit "$repo")
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct 2>/dev/null || echo 0)}
export SOURCE_DATE_EPOCH=$epoch
target_dir=${CARGO_TARGET_DIR:-$repo/target}
work=$target_dir/release-work
# dist/ is emptied first; a directory that is not an earlier output is
# never removed.
if [ -d "$out" ] && [ -n "$(ls -A "$out")" ] && [ ! -e "$out/BUILD-INFO" ]; then
    die "$out is not empty and holds no earlier release (BUILD-INFO): give another --out"
fi
rm -rf "$out" "$work"
mkdir -p "$out" "$work"
out=$(cd "$out" && pwd)
started=$SECONDS

# Debian packages, installed when missing and we may (root with apt-get).
apt_install() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        say "installing ${missing[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null ||
            { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -qq &&
                DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null; }
    else
        return 1
    fi
}

# Whether rustc has the standard library of target $1, added with rustup.
have_target() {
    [ -d "$sysroot/lib/rustlib/$1/lib" ] && return 0
    command -v rustup >/dev/null && rustup target add "$1" >/dev/null 2>&1
}

# Sets target, flags, linker and how for architecture $1; or says why
# it cannot be built here (return 1, the reason in $why).
choose_target() {
    local a=$1 musl gnu prefix debarch rest
    read -r musl gnu prefix debarch rest < <(arch_info "$a")
    linker= flags= opt=
    if [ "$a" = "$host" ]; then
        read -r target flags < <(release_target "$cargo")
        how="this machine's own toolchain"
        [[ $target == *musl* ]] && how="static musl, $how" || how="static glibc, $how"
        return 0
    fi
    local no_musl="rustup has no $musl rust-std to install"
    [ "$musl" = - ] && no_musl="rustup has no musl target for $a (tier 3, no rust-std)"
    if [ "$musl" != - ] && have_target "$musl"; then
        # musl's rust-std is self-contained (crt objects, libc.a,
        # libunwind.a), so rust-lld, shipped with every toolchain, links
        # it: nothing to install.
        target=$musl linker=rust-lld
        how="static musl, linked by rust-lld"
        return 0
    fi
    if ! have_target "$gnu"; then
        why="$no_musl, and rustup cannot add $gnu either"
        return 1
    fi
    # glibc's static libc.a and crt objects come with Debian's cross
    # libc, and its cross gcc knows where they are.
    if ! command -v "$prefix-gcc" >/dev/null || [ ! -e "/usr/$prefix/lib/libc.a" ]; then
        apt_install "gcc-${prefix//_/-}" "libc6-dev-$debarch-cross" || {
            why="$no_musl; static glibc needs Debian's gcc-${prefix//_/-} and libc6-dev-$debarch-cross (apt-get install, as root)"
            return 1
        }
    fi
    target=$gnu flags="-C target-feature=+crt-static" linker=$prefix-gcc
    how="static glibc ($no_musl), linked by $prefix-gcc (Debian's gcc-${prefix//_/-})"
    if [ "$a" = riscv64 ]; then
        # At opt-level "z" (the workspace's) this binary dies of SIGSEGV in
        # every plugin's VERSION under qemu-riscv64 7.2, static or dynamic,
        # and runs at "s" and 2: a miscompile or an emulator bug, not told
        # apart without riscv hardware; a binary that fails its smoke test
        # is not shipped, so riscv64 is built at "s".
        opt=s
        how+=", opt-level s (z crashes under qemu-riscv64)"
    fi
}

# How to run a binary of architecture $1 here: nothing for the host's, else
# qemu-user-static's emulator.
runner_for() {
    local a=$1 musl gnu prefix debarch qemu rest
    read -r musl gnu prefix debarch qemu rest < <(arch_info "$a")
    if [ "$a" = "$host" ]; then
        runner=()
        return 0
    fi
    command -v "qemu-$qemu-static" >/dev/null || apt_install qemu-user-static || {
        why="cannot run its binaries for the smoke test: qemu-user-static is missing (apt-get install qemu-user-static, as root)"
        return 1
    }
    runner=("qemu-$qemu-static")
}

# The smoke test of staged tree $1 (runner in ${runner[@]}): --version,
# --list, and for every plugin name its about text, VERSION, and an ADD
# whose config is no JSON (code 6, exit 1, as the reference). Says what
# failed on stderr.
smoke() {
    local dir=$1 n got
    got=$("${runner[@]}" "$dir/cni-plugins" --version) || { echo "--version failed" >&2; return 1; }
    [[ "$got" == "cni-plugins $version (commit ${commit:-unknown}, reference plugins v"* ]] ||
        { echo "--version printed: $got" >&2; return 1; }
    for n in "${names[@]}"; do
        got=$(env -u CNI_COMMAND "${runner[@]}" "$dir/$n" 2>&1) || true
        got=${got%%$'\n'*}
        [[ "$got" == "CNI $n plugin v"*"+cni-rs.$version" ]] || { echo "$n: about text: $got" >&2; return 1; }
        # Here-strings, not pipes: a plugin need not read all of stdin, and
        # a writer's SIGPIPE would fail the pipeline (pipefail).
        got=$(CNI_COMMAND=VERSION "${runner[@]}" "$dir/$n" <<<'{"cniVersion":"1.0.0"}') ||
            { echo "$n: VERSION failed: $got" >&2; return 1; }
        [[ "$got" == *'"supportedVersions"'*'"1.0.0"'* ]] || { echo "$n: VERSION printed: $got" >&2; return 1; }
        local rc=0
        got=$(CNI_COMMAND=ADD CNI_CONTAINERID=smoke CNI_NETNS=/nonexistent CNI_IFNAME=eth0 \
            CNI_PATH=/nonexistent "${runner[@]}" "$dir/$n" <<<'{bad') || rc=$?
        [ "$rc" = 1 ] && [[ "$got" == *'"code": 6'*'"msg": "error unmarshall network config'* ]] ||
            { echo "$n: ADD of a bad config: exit $rc, $got" >&2; return 1; }
    done
}

# Reproducible archives: sorted entries, the epoch's mtime, owner 0:0.
repro_tar() {
    tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner --format=gnu "$@"
}

# The flat tree of the reference's tarball in $1: cni-plugins and a hard
# link to it per plugin name, README.md, LICENSE.
stage_flat() {
    local dir=$1 n
    mkdir -p "$dir"
    install -m 0755 "$bin" "$dir/cni-plugins"
    for n in "${names[@]}"; do ln "$dir/cni-plugins" "$dir/$n"; done
    install -m 0644 "$repo/README.md" "$repo/LICENSE" "$dir/"
}

# shellcheck source=scripts/release-pack.sh
. "$repo/scripts/release-pack.sh"

# Build, smoke-test and pack architecture $1; or the reason it is not
# shipped in $why (return 1).
release_arch() {
    local a=$1 log linker_var list stage tgz
    choose_target "$a" && runner_for "$a" || return 1
    say "$a: building $target ($how)"
    log=$work/build-$a.log
    linker_var=CARGO_TARGET_$(echo "$target" | tr 'a-z-' 'A-Z_')_LINKER
    if ! (
        [ -z "$linker" ] || export "$linker_var=$linker"
        [ -z "$opt" ] || export CARGO_PROFILE_RELEASE_OPT_LEVEL=$opt
        export CNIRS_VERSION=$version CNIRS_COMMIT=$commit
        build_release "$repo" "$cargo" "$target" "$flags" -p cni-plugins --bin cni-plugins
    ) >"$log" 2>&1; then
        tail -n 20 "$log" >&2
        why="the build for $target failed (log: $log)"
        return 1
    fi
    bin=$target_dir/$target/release/cni-plugins
    if ! list=$("${runner[@]}" "$bin" --list) || [ -z "$list" ]; then
        why="the built $target binary does not run (cni-plugins --list failed)"
        return 1
    fi
    mapfile -t names <<<"$list"
    stage=$work/$a/flat
    stage_flat "$stage"
    smoke "$stage" 2>"$work/smoke-$a.log" || { why="smoke test failed: $(cat "$work/smoke-$a.log")"; return 1; }
    tgz=cni-plugins-linux-$a-v$version.tgz
    repro_tar -C "$stage" -cf - . | gzip -9 -n >"$out/$tgz"
    (cd "$out" && sha256sum "$tgz" >"$tgz.sha256" && sha512sum "$tgz" >"$tgz.sha512")
    [ "$deb" = 0 ] || pack_deb "$a" "$stage"
    echo "$a: $target, $how; ${#names[@]} plugins: ${names[*]}" >>"$info"
    say "$a: $tgz ($(stat -c %s "$out/$tgz") bytes), smoke-tested$([ ${#runner[@]} -eq 0 ] || echo " under ${runner[0]}")"
}

declare -A failed=()
built=()
info="$out/BUILD-INFO"
{
    echo "cni-rs $version, commit ${commit:-unknown}, SOURCE_DATE_EPOCH=$epoch"
    echo "$("$rustc" -V)"
} >"$info"
for a in "${arches[@]}"; do
    t0=$SECONDS
    if release_arch "$a"; then
        built+=("$a")
        say "$a: done in $((SECONDS - t0)) s"
    else
        failed[$a]=$why
        say "$a: NOT SHIPPED: $why"
    fi
done
if [ "$image" = 1 ] && [ ${#built[@]} -gt 0 ]; then
    pack_image
fi
for a in "${arches[@]}"; do [ -z "${failed[$a]:-}" ] || echo "$a: NOT SHIPPED: ${failed[$a]}" >>"$info"; done
sed "s|@IMAGE@|$image_name:v$version|" "$repo/deploy/daemonset.yaml" >"$out/cni-plugins-daemonset-v$version.yaml"
# kubespray's variables for these tarballs (its download role fetches
# cni_download_url for the node's image_arch and checks the sha256 from
# cni_binary_checksums[image_arch][cni_version]).
{
    echo "# kubespray group_vars (e.g. inventory/<cluster>/group_vars/all/cni-rs.yml) for cni-rs $version:"
    echo "# serve the tarballs under {{ files_repo }}/cni-rs/v$version/ (or change the URL)."
    echo "cni_version: \"$version\""
    echo "cni_download_url: \"{{ files_repo }}/cni-rs/v{{ cni_version }}/cni-plugins-linux-{{ image_arch }}-v{{ cni_version }}.tgz\""
    echo "cni_binary_checksums:"
    for a in "${built[@]}"; do
        echo "  $a:"
        echo "    \"$version\": $(cut -d' ' -f1 "$out/cni-plugins-linux-$a-v$version.tgz.sha256")"
    done
} >"$out/kubespray-cni-rs-v$version.yml"
(cd "$out" && find . -maxdepth 1 -type f ! -name SHA256SUMS ! -name '*.sha256' ! -name '*.sha512' -printf '%f\n' |
    LC_ALL=C sort | xargs sha256sum >SHA256SUMS)
say "done in $((SECONDS - started)) s: $out"
(cd "$out" && ls -l --time-style=+ | sed 1d | awk '{ printf "    %10d  %s\n", $5, $NF }')
if [ ${#failed[@]} -gt 0 ]; then
    for a in "${arches[@]}"; do [ -z "${failed[$a]:-}" ] || say "$a: NOT SHIPPED: ${failed[$a]}"; done
    exit 1
fi
