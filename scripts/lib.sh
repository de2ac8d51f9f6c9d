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

# The directory release binaries are built into (see build_release):
# target/<host>/release when build_release made it, else target/release.
# The host is cargo's when cargo is found; without it, the first
# target/*-linux-*/release whose cni-plugins runs here (a tree that also
# holds a cross build for another architecture must not install that one).
release_dir() {
    local repo=$1 d host cargo
    if cargo=$(find_cargo 2>/dev/null); then
        host=$("$cargo" -vV 2>/dev/null | sed -n 's/^host: //p')
        d="$repo/target/$host/release"
        [ -n "$host" ] && [ -x "$d/cni-plugins" ] && { echo "$d"; return; }
    fi
    for d in "$repo"/target/*-linux-*/release; do
        [ -x "$d/cni-plugins" ] && "$d/cni-plugins" --list >/dev/null 2>&1 && { echo "$d"; return; }
    done
    echo "$repo/target/release"
}

# Build every binary of the workspace for release, statically linked on
# glibc hosts (+crt-static): no ld.so, libc.so or libgcc_s to map at each
# plugin start, which is half a plugin's start time and most of its peak
# RSS. An explicit --target keeps the flag off build scripts and proc
# macros (which cannot be static); the binaries land in target/<host>/release.
build_release() {
    local repo=$1 cargo=$2 host flags=${RUSTFLAGS:-}
    host=$("$cargo" -vV | sed -n 's/^host: //p')
    [ -n "$host" ] || return 1
    case "$host" in
        *-linux-gnu*) flags="$flags -C target-feature=+crt-static" ;;
    esac
    (cd "$repo" && RUSTFLAGS="$flags" "$cargo" build --release --workspace --bins --target "$host")
}
