#!/usr/bin/env bash
# Build the suite and install its binaries into a CNI plugin directory.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: scripts/install.sh [--prefix DIR] [--destdir DIR] [--force] [--no-build] [--dry-run]

Builds the release binaries (cargo build --release) and installs every binary
of the workspace (bridge, loopback, noop, host-local, and any later one such
as cnitool) into $DESTDIR$PREFIX, by default /opt/cni/bin.

A file that is already there and is not one of ours (another suite, e.g. the
reference plugins) is never overwritten silently: the script names it and
moves it to $DESTDIR$PREFIX/.backup-<timestamp>/ first. --force replaces such
files without keeping a copy. Re-installing our own build is always fine;
an unchanged binary is left alone. Each file is written to a temporary name
and renamed into place, so a runtime executing a plugin at that moment keeps
running the old one (no "text file busy").

Our binaries are recognised by the manifest .cni-rs-manifest (name and
SHA-256 of each installed file), which the script keeps in the directory.

  --prefix DIR   plugin directory (default: $PREFIX, else /opt/cni/bin)
  --destdir DIR  staging root prepended to the prefix (default: $DESTDIR)
  --force        replace other suites' binaries without a backup
  --no-build     install target/release as it is
  --dry-run      say what would be done, change nothing
  -h, --help     this text
EOF
}

say() { printf '==> %s\n' "$*"; }
die() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$repo/scripts/lib.sh"
prefix=${PREFIX:-/opt/cni/bin}
destdir=${DESTDIR:-}
force=0 build=1 dry=0
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) [ $# -ge 2 ] || die "--prefix needs a directory"; prefix=$2; shift ;;
        --prefix=*) prefix=${1#*=} ;;
        --destdir) [ $# -ge 2 ] || die "--destdir needs a directory"; destdir=$2; shift ;;
        --destdir=*) destdir=${1#*=} ;;
        --force) force=1 ;;
        --no-build) build=0 ;;
        --dry-run) dry=1 ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
    shift
done
dest="$destdir$prefix"
manifest="$dest/.cni-rs-manifest"

run() {
    if [ "$dry" -eq 1 ]; then printf '    (dry run) %s\n' "$*"; else "$@"; fi
}

# The binaries are the bin targets of the workspace members (explicit [[bin]]
# names, else the package name when src/main.rs exists), read from the
# manifests so a new binary is installed without touching this script.
members=$(tr '\n' ' ' <"$repo/Cargo.toml" | sed -n 's/.*[^-]members *= *\[\([^]]*\)\].*/\1/p' | tr -d '",')
names=()
for m in $members; do
    toml="$repo/$m/Cargo.toml"
    [ -f "$toml" ] || continue
    bins=$(awk '/^\[\[bin\]\]/{b=1;next} /^\[/{b=0} b && /^name *=/{gsub(/[" ]/,"");sub(/^name=/,"");print}' "$toml")
    if [ -z "$bins" ] && [ -f "$repo/$m/src/main.rs" ]; then
        bins=$(awk '/^\[package\]/{p=1;next} /^\[/{p=0} p && /^name *=/{gsub(/[" ]/,"");sub(/^name=/,"");print;exit}' "$toml")
    fi
    for b in $bins; do names+=("$b"); done
done
[ ${#names[@]} -gt 0 ] || die "no binary targets found in $repo/Cargo.toml's members"

if [ "$build" -eq 1 ]; then
    cargo=$(find_cargo) || die "cargo not found; install the Rust toolchain (rustup) or use --no-build"
    say "building release binaries: ${names[*]}"
    (cd "$repo" && "$cargo" build --release --workspace --bins)
fi
for n in "${names[@]}"; do
    [ -x "$repo/target/release/$n" ] || die "target/release/$n is missing; run without --no-build"
done

say "installing into $dest"
run mkdir -p "$dest"

# name -> sha256 of the file we installed last time
declare -A ours=()
if [ -f "$manifest" ]; then
    while read -r sum name; do
        [ -n "${name:-}" ] && ours[$name]=$sum
    done <"$manifest"
fi

# A run that fails or is interrupted leaves no half-written temporary files.
trap 'rm -f "$dest"/.*.tmp-"$$" "$manifest.tmp-$$"' EXIT
stamp=$(date +%Y%m%d-%H%M%S)
backup="$dest/.backup-$stamp"
declare -A new_manifest=()
for name in "${!ours[@]}"; do new_manifest[$name]=${ours[$name]}; done
changed=0
for n in "${names[@]}"; do
    src="$repo/target/release/$n"
    target="$dest/$n"
    sum=$(sha256sum "$src" | cut -d' ' -f1)
    new_manifest[$n]=$sum
    if [ -e "$target" ] || [ -L "$target" ]; then
        have=$(sha256sum "$target" 2>/dev/null | cut -d' ' -f1 || true)
        if [ "$have" = "$sum" ]; then
            say "$n: up to date"
            continue
        elif [ -n "$have" ] && [ "${ours[$n]:-}" = "$have" ]; then
            say "$n: updating our previous build"
        elif [ "$force" -eq 1 ]; then
            say "$n: replacing $target (not ours; --force, no backup)"
        else
            say "$n: replacing $target (not ours), backup in $backup/$n"
            run mkdir -p "$backup"
            run cp -a "$target" "$backup/$n"
        fi
    else
        say "$n: installing"
    fi
    run install -m 0755 "$src" "$dest/.$n.tmp-$$"
    run mv -f "$dest/.$n.tmp-$$" "$target"
    changed=$((changed + 1))
done

if [ "$dry" -eq 0 ]; then
    tmp="$manifest.tmp-$$"
    for name in "${!new_manifest[@]}"; do
        printf '%s %s\n' "${new_manifest[$name]}" "$name"
    done | sort -k2 >"$tmp"
    mv -f "$tmp" "$manifest"
fi
say "done: $changed of ${#names[@]} binaries written to $dest"
[ -d "$backup" ] && say "previous binaries kept in $backup"
exit 0
