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
