# Shared helpers of the scripts in this directory; sourced, not run.

# Under sudo, HOME is root's, so a rustup toolchain installed by the invoking
# user is not found by its own cargo proxy unless RUSTUP_HOME points at it.
if [ -n "${SUDO_USER:-}" ] && [ -z "${RUSTUP_HOME:-}" ] && [ ! -d "$HOME/.rustup" ]; then
    sudo_home=$(getent passwd "$SUDO_USER" | cut -d: -f6)
    if [ -n "$sudo_home" ] && [ -d "$sudo_home/.rustup" ]; then
        export RUSTUP_HOME="$sudo_home/.rustup"
    fi
    unset sudo_home
fi

# Print the path of cargo. Under sudo, root's PATH (secure_path) usually
# lacks the invoking user's ~/.cargo/bin, so look there too.
find_cargo() {
    command -v cargo && return
    local home
    for home in "${CARGO_HOME:-}" "$HOME/.cargo" ${SUDO_USER:+"$(getent passwd "$SUDO_USER" | cut -d: -f6)/.cargo"}; do
        [ -n "$home" ] && [ -x "$home/bin/cargo" ] && { echo "$home/bin/cargo"; return; }
    done
    return 1
}

# The target release binaries are built for: on a glibc host, its musl
# twin (x86_64-unknown-linux-gnu -> x86_64-unknown-linux-musl), added with
# rustup when it is missing; else the host itself. musl's static startup
# does not probe the CPU the way glibc's does (each cpuid traps to the
# hypervisor on a VM: 0.2 ms of every plugin call here), and its binaries
# are smaller (1.6 against 2.3 MB) and map fewer pages (about half the
# peak RSS). Prints "<target> <rustflags>".
release_target() {
    local cargo=$1 host musl rustc sysroot
    host=$("$cargo" -vV 2>/dev/null | sed -n 's/^host: //p')
    [ -n "$host" ] || return 1
    case "$host" in
        *-linux-gnu*)
            musl=${host/-linux-gnu*/-linux-musl}
            rustc=$(dirname "$cargo")/rustc
            [ -x "$rustc" ] || rustc=rustc
            sysroot=$("$rustc" --print sysroot 2>/dev/null)
            if [ -d "$sysroot/lib/rustlib/$musl/lib" ] ||
                { command -v rustup >/dev/null 2>&1 &&
                    rustup target add "$musl" >/dev/null 2>&1; }; then
                echo "$musl"
            else
                # Without musl, glibc linked statically: no ld.so, libc.so or
                # libgcc_s to map at each plugin start.
                echo "$host -C target-feature=+crt-static"
            fi
            ;;
        *) echo "$host" ;;
    esac
}

# The directory release binaries are built into (see build_release):
# target/<target>/release of the target build_release last built for;
# else, with cargo found, the host's; else the first target/*-linux-*/release
# whose cni-plugins runs here (a tree that also holds a cross build for
# another architecture must not install that one); else target/release.
release_dir() {
    local repo=$1 d host cargo
    local -a dirs=()
    if [ -s "$repo/target/.release-target" ]; then
        dirs+=("$repo/target/$(cat "$repo/target/.release-target")/release")
    fi
    if cargo=$(find_cargo 2>/dev/null); then
        host=$("$cargo" -vV 2>/dev/null | sed -n 's/^host: //p')
        [ -n "$host" ] && dirs+=("$repo/target/$host/release")
    fi
    dirs+=("$repo"/target/*-linux-*/release)
    for d in "${dirs[@]}"; do
        [ -x "$d/cni-plugins" ] && "$d/cni-plugins" --list >/dev/null 2>&1 && { echo "$d"; return; }
    done
    echo "$repo/target/release"
}

# The commit the tree is at, for CNIRS_COMMIT (`cni-plugins --version`):
# HEAD's hash, with -dirty when tracked files differ from it; nothing
# outside a git checkout (the binaries then say "unknown").
git_commit() {
    local repo=$1 head
    head=$(git -C "$repo" rev-parse HEAD 2>/dev/null) || return 0
    if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
        head+=-dirty
    fi
    echo "$head"
}

# Build for release, for release_target's target: every binary of the
# workspace; or, with more arguments, TARGET, its extra RUSTFLAGS (one
# word, may be empty) and the cargo selection (e.g. -p cni-plugins --bin
# cni-plugins); a linker for it comes from $CARGO_TARGET_<TARGET>_LINKER as
# cargo reads it. An explicit --target keeps the flags off build scripts
# and proc macros (which cannot be static); the binaries land in
# target/<target>/release. The commit goes into the binaries
# (CNIRS_COMMIT), and paths into them as /cni-rs and /cargo, not this
# machine's: the same sources give the same bytes wherever they are built.
build_release() {
    local repo=$1 cargo=$2 target flags record=0 remap=
    shift 2
    if [ $# -ge 2 ]; then
        target=$1 flags=$2
        shift 2
    else
        read -r target flags < <(release_target "$cargo") || return 1
        record=1
    fi
    [ -n "$target" ] || return 1
    local -a what=(--workspace --bins)
    [ $# -gt 0 ] && what=("$@")
    local cargo_home=${CARGO_HOME:-$(dirname "$(dirname "$cargo")")}
    if [[ "$repo$cargo_home" != *[[:space:]]* ]]; then
        remap="--remap-path-prefix=$repo=/cni-rs --remap-path-prefix=$cargo_home=/cargo"
    fi
    (cd "$repo" && CNIRS_COMMIT=${CNIRS_COMMIT:-$(git_commit "$repo")} \
        RUSTFLAGS="${RUSTFLAGS:-} ${flags:-} $remap" \
        "$cargo" build --release "${what[@]}" --target "$target") || return 1
    [ "$record" = 0 ] || echo "$target" >"$repo/target/.release-target"
}
