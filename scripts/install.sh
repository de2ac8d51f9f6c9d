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
moves it to $DESTDIR$PREFIX/.backup-<timestamp>/ first. --force replaces such
files without keeping a copy. Re-installing our own build is always fine;
an unchanged binary is left alone. Each file is written to a temporary name
and renamed into place, so a runtime executing a plugin at that moment keeps
running the old one (no "text file busy").

Our binaries are recognised by the manifest .cni-rs-manifest (name and
SHA-256 of each installed file), which the script keeps in the directory.

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
    build_release "$repo" "$cargo" || die "release build failed"
fi
rel=${from:-$(release_dir "$repo")}
missing() { die "$rel/$1 is missing$([ -n "$from" ] || echo "; run without --no-build")"; }
# The plugins in the multi-call binary are links to it, not files of their
# own; it is installed first, so that the links can point at it.
multi=cni-plugins
[ -x "$rel/$multi" ] || missing "$multi"
# Its plugin names, from the binary; a binary that cannot run here (a cross
# build for another architecture, staged with --destdir) has the names of
# the plugins! table in multicall/src/lib.rs that it was built from.
if out=$("$rel/$multi" --list 2>/dev/null); then
    mapfile -t linked <<<"$out"
else
    say "$rel/$multi does not run here (another architecture?): plugin names from multicall/src/lib.rs"
    mapfile -t linked < <(sed -n 's/^ *"\([a-z0-9-]*\)" => .*, \(true\|false\);$/\1/p' "$repo/multicall/src/lib.rs")
fi
[ ${#linked[@]} -gt 0 ] && [ -n "${linked[0]}" ] || die "no plugin names: $rel/$multi --list printed none"
is_linked() { local l; for l in "${linked[@]}"; do [ "$l" = "$1" ] && return 0; done; return 1; }
files=("$multi")
for n in "${names[@]}"; do
    [ "$n" = "$multi" ] || is_linked "$n" || files+=("$n")
done
for n in "${files[@]}"; do
    [ -x "$rel/$n" ] || missing "$n"
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
trap 'rm -f "$dest"/.*.tmp-"$$" "$manifest.tmp-$$" "$destdir$unit_dir"/cni-dhcp.*.tmp-"$$"' EXIT
stamp=$(date +%Y%m%d-%H%M%S)
backup="$dest/.backup-$stamp"
declare -A new_manifest=()
for name in "${!ours[@]}"; do new_manifest[$name]=${ours[$name]}; done
changed=0
# Whether $dest/$1 must be (re)written to hold a file of sha256 $2 (and,
# with $3, be that same file); keeps a backup of another suite's file.
must_write() {
    local n=$1 sum=$2 same=${3:-} target="$dest/$1" have
    new_manifest[$n]=$sum
    [ -e "$target" ] || [ -L "$target" ] || { say "$n: installing"; return 0; }
    have=$(sha256sum "$target" 2>/dev/null | cut -d' ' -f1 || true)
    if [ "$have" = "$sum" ] && { [ -z "$same" ] || [ "$target" -ef "$same" ] || ! can_link; }; then
        say "$n: up to date"
        return 1
    elif [ "$have" = "$sum" ] || { [ -n "$have" ] && [ "${ours[$n]:-}" = "$have" ]; }; then
        say "$n: updating our previous build"
    elif [ "$force" -eq 1 ]; then
        say "$n: replacing $target (not ours; --force, no backup)"
    else
        say "$n: replacing $target (not ours), backup in $backup/$n"
        run mkdir -p "$backup"
        run cp -a "$target" "$backup/$n"
    fi
}
# Whether this directory can hold hard links (tried once, on the installed
# multi-call binary); where it cannot, a copy of the same content is as
# good as a link and is left alone.
links_work=
can_link() {
    if [ -z "$links_work" ]; then
        links_work=1
        if [ "$dry" -eq 0 ] && [ -e "$dest/$multi" ]; then
            ln "$dest/$multi" "$dest/.link-probe.tmp-$$" 2>/dev/null || links_work=0
            rm -f "$dest/.link-probe.tmp-$$"
        fi
    fi
    [ "$links_work" = 1 ]
}
for n in "${files[@]}"; do
    src="$rel/$n"
    must_write "$n" "$(sha256sum "$src" | cut -d' ' -f1)" || continue
    run install -m 0755 "$src" "$dest/.$n.tmp-$$"
    run mv -f "$dest/.$n.tmp-$$" "$dest/$n"
    changed=$((changed + 1))
done
# Each plugin name: a hard link to the installed multi-call binary (which
# runs the plugin argv[0] names), renamed into place like a file.
multi_sum=$(sha256sum "$rel/$multi" | cut -d' ' -f1)
for n in "${linked[@]}"; do
    must_write "$n" "$multi_sum" "$dest/$multi" || continue
    tmp="$dest/.$n.tmp-$$"
    if [ "$dry" -eq 1 ]; then
        run ln "$dest/$multi" "$tmp"
    elif ! ln "$dest/$multi" "$tmp" 2>/dev/null; then
        say "$n: no hard link possible here, copying $multi"
        install -m 0755 "$dest/$multi" "$tmp"
    fi
    run mv -f "$tmp" "$dest/$n"
    changed=$((changed + 1))
done

if [ "$dry" -eq 0 ]; then
    tmp="$manifest.tmp-$$"
    for name in "${!new_manifest[@]}"; do
        printf '%s %s\n' "${new_manifest[$name]}" "$name"
    done | sort -k2 >"$tmp"
    mv -f "$tmp" "$manifest"
fi
# The dhcp daemon's units, with ExecStart in the prefix. A unit we wrote
# carries the marker line; any other file there is backed up first.
marker="# Installed by cni-rs scripts/install.sh; edits are overwritten."
install_units() {
    local udest="$destdir$unit_dir" unit target content written=0
    run mkdir -p "$udest"
    for unit in cni-dhcp.socket cni-dhcp.service; do
        target="$udest/$unit"
        content=$(printf '%s\n' "$marker"; sed "s#^ExecStart=.*#ExecStart=$prefix/dhcp daemon#" "$repo/packaging/systemd/$unit")
        if [ -f "$target" ] && [ "$(cat "$target")" = "$content" ]; then
            say "$unit: up to date"
            continue
        fi
        if [ -e "$target" ] && ! grep -qxF "$marker" "$target"; then
            say "$unit: replacing $target (not ours), backup in $udest/.cni-rs-backup-$stamp/"
            run mkdir -p "$udest/.cni-rs-backup-$stamp"
            run cp -a "$target" "$udest/.cni-rs-backup-$stamp/$unit"
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
if [ "$systemd" -eq 1 ] && is_linked dhcp && { [ -n "$destdir" ] || [ -d /run/systemd/system ]; }; then
    install_units
fi

if [ "$dry" -eq 1 ]; then
    say "dry run: $changed of $((${#files[@]} + ${#linked[@]})) names would be written to $dest; nothing changed"
    exit 0
fi
say "done: $changed of $((${#files[@]} + ${#linked[@]})) names written to $dest"
[ -d "$backup" ] && say "previous binaries kept in $backup"
exit 0
