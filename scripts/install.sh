#!/usr/bin/env bash
# Build the suite and install its binaries into a CNI plugin directory.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: scripts/install.sh [--prefix DIR] [--destdir DIR] [--force] [--no-build | --from DIR] [--dry-run]
                          [--no-systemd]

Builds the release binaries (static; musl where rustup has it) and installs
them into $DESTDIR$PREFIX, by default /opt/cni/bin: the multi-call binary
cni-plugins once, with a hard link to it under each plugin's name (bridge,
ptp, portmap, ..., host-local, static; `cni-plugins --list`), a copy where
the directory cannot hold hard links; and every other binary of the
workspace (noop, cnitool, ...) as a file of its own.

A file that is already there and is not one of ours (another suite, e.g. the
reference plugins) is never overwritten silently: the script names it and
keeps it in $DESTDIR$PREFIX/.backup-<UTC timestamp>/ first. --force replaces
such files without keeping a copy. Re-installing our own build is always fine;
an unchanged binary is left alone. Each file is written to a temporary name
and renamed into place, so a runtime executing a plugin at that moment keeps
running the old one (no "text file busy").

Our binaries are recognised by the manifest .cni-rs-manifest (name and
SHA-256 of each installed file), which is kept in the directory.

The installing is done by the suite's own `cni-plugins install` (the code
the installer image runs; a cross build is installed by this machine's
build, or $CNIRS_INSTALLER); this script builds and passes it the workspace's
binaries.

Where systemd runs the machine (or when staging with --destdir), the dhcp
daemon's units cni-dhcp.socket and cni-dhcp.service (packaging/systemd,
as Debian ships them, ExecStart pointing into the prefix) go to
$DESTDIR$SYSTEMD_UNIT_DIR (default /etc/systemd/system); they are not
enabled: `systemctl enable --now cni-dhcp.socket` starts the daemon at the
first plugin call. Units there that are not ours are backed up first.

  --prefix DIR   plugin directory (default: $PREFIX, else /opt/cni/bin)
  --destdir DIR  staging root prepended to the prefix (default: $DESTDIR)
  --force        replace other suites' binaries without a backup
  --no-build     install the last release build as it is
  --from DIR     install the binaries in DIR (a build made elsewhere), no build
  --dry-run      say what would be done, change nothing
  --no-systemd   do not install the dhcp daemon's systemd units
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
force=0 build=1 dry=0 from= systemd=1
unit_dir=${SYSTEMD_UNIT_DIR:-/etc/systemd/system}
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) [ $# -ge 2 ] || die "--prefix needs a directory"; prefix=$2; shift ;;
        --prefix=*) prefix=${1#*=} ;;
        --destdir) [ $# -ge 2 ] || die "--destdir needs a directory"; destdir=$2; shift ;;
        --destdir=*) destdir=${1#*=} ;;
        --force) force=1 ;;
        --no-build) build=0 ;;
        --from) [ $# -ge 2 ] || die "--from needs a directory"; from=$2; build=0; shift ;;
        --from=*) from=${1#*=}; build=0 ;;
        --dry-run) dry=1 ;;
        --no-systemd) systemd=0 ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
    shift
done

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
    build_release "$repo" "$cargo" || die "release build failed"
fi
rel=${from:-$(release_dir "$repo")}
[ -x "$rel/cni-plugins" ] || die "$rel/cni-plugins is missing$([ -n "$from" ] || echo "; run without --no-build")"

# The installing is the suite's own `cni-plugins install` (the code the
# installer image runs), from the build being installed when it runs here;
# a cross build for another architecture (staged with --destdir) is
# installed by a build of this machine's: $CNIRS_INSTALLER, else the
# tree's release or debug build. Its plugin names are then those of the
# plugins! table it was built from.
installer=${CNIRS_INSTALLER:-}
if [ -z "$installer" ]; then
    for cand in "$rel/cni-plugins" "$(release_dir "$repo")/cni-plugins" \
        "$repo/target/release/cni-plugins" "$repo/target/debug/cni-plugins"; do
        if [ -x "$cand" ] && "$cand" install --help >/dev/null 2>&1; then
            installer=$cand
            break
        fi
    done
fi
[ -n "$installer" ] || die "$rel/cni-plugins does not run here (another architecture?) and this tree has no build of this machine's to install it with: build one (cargo build -p cni-plugins) or set CNIRS_INSTALLER"
[ "$installer" -ef "$rel/cni-plugins" ] || say "installing with $installer"

# A binary the build did not make (a tree that release.sh built only
# cni-plugins in) is named before the installer refuses it.
mapfile -t plugins < <("$installer" --list)
for n in "${names[@]}"; do
    [[ " cni-plugins ${plugins[*]} " == *" $n "* ]] || [ -x "$rel/$n" ] ||
        die "$rel/$n is missing$([ -n "$from" ] || echo "; run without --no-build")"
done

args=(--from "$rel" --prefix "$prefix")
[ -n "$destdir" ] && args+=(--destdir "$destdir")
[ "$force" -eq 1 ] && args+=(--force)
[ "$dry" -eq 1 ] && args+=(--dry-run)
# Every binary of the workspace; the installer makes the plugins' names
# links to cni-plugins and installs the others (noop, cnitool) as files.
"$installer" install "${args[@]}" "${names[@]}"

# The dhcp daemon's units, with ExecStart in the prefix. A unit we wrote
# carries the marker line; any other file there is backed up first. Each
# is written to a temporary name and renamed into place.
marker="# Installed by cni-rs scripts/install.sh; edits are overwritten."
udest=$destdir$unit_dir
install_units() {
    local unit target content written=0 stamp
    stamp=$(date -u +%Y%m%dT%H%M%SZ)
    [ "$dry" -eq 1 ] || mkdir -p "$udest"
    trap 'rm -f "$udest"/cni-dhcp.*.tmp-"$$"' EXIT
    for unit in cni-dhcp.socket cni-dhcp.service; do
        target="$udest/$unit"
        content=$(printf '%s\n' "$marker"; sed "s#^ExecStart=.*#ExecStart=$prefix/dhcp daemon#" "$repo/packaging/systemd/$unit")
        if [ -f "$target" ] && [ "$(cat "$target")" = "$content" ]; then
            say "$unit: up to date"
            continue
        fi
        if [ -e "$target" ] && ! grep -qxF "$marker" "$target"; then
            say "$unit: replacing $target (not ours), backup in $udest/.cni-rs-backup-$stamp/"
            if [ "$dry" -eq 0 ]; then
                mkdir -p "$udest/.cni-rs-backup-$stamp"
                cp -a "$target" "$udest/.cni-rs-backup-$stamp/$unit"
            fi
        else
            say "$unit: installing into $udest"
        fi
        if [ "$dry" -eq 0 ]; then
            printf '%s\n' "$content" >"$target.tmp-$$"
            chmod 0644 "$target.tmp-$$"
            mv -f "$target.tmp-$$" "$target"
        fi
        written=$((written + 1))
    done
    if [ "$written" -gt 0 ] && [ -z "$destdir" ] && [ "$dry" -eq 0 ]; then
        systemctl daemon-reload || say "systemctl daemon-reload failed; run it yourself"
        say "the dhcp daemon is not enabled: systemctl enable --now cni-dhcp.socket"
    fi
}
if [ "$systemd" -eq 1 ] && [[ " ${plugins[*]} " == *" dhcp "* ]] &&
    { [ -n "$destdir" ] || [ -d /run/systemd/system ]; }; then
    install_units
fi
