#!/usr/bin/env bash
# Checks that the kernel-feature tier (scripts/vm-test.sh) takes qemu with
# it when it is stopped from outside: SIGTERM, SIGINT (what Ctrl-C sends),
# an outer `timeout`, and SIGKILL (which no trap sees: the kernel's
# parent-death signal must do it). Each way boots the image the last run
# packed (it is packed first when there is none), waits for its qemu, stops
# the script, and looks for that qemu by pid. Prints one line per way and
# `N passed, M failed`; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

vm=target/vm
# Seconds to wait for what should happen at once (qemu to start, to go);
# only ever spent when it does not.
deadline=${VM_TEST_SIGNALS_DEADLINE:-60}

[ -s "$vm/packed" ] || bash scripts/vm-test.sh --prepare >/dev/null

# Whether process $1 runs (a zombie does not).
alive() {
    [ -r "/proc/$1/stat" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2>/dev/null
}

# The qemu started by process $1 (its child), once there is one.
qemu_of() {
    local i pid
    for ((i = 0; i < deadline * 10; i++)); do
        pid=$(pgrep -P "$1" -f qemu-system 2>/dev/null | head -1 || true)
        [ -n "$pid" ] && { echo "$pid"; return; }
        alive "$1" || return 1
        sleep 0.1
    done
    return 1
}

# Whether process $1 is gone within the deadline.
gone() {
    local i
    for ((i = 0; i < deadline * 10; i++)); do
        alive "$1" || return 0
        sleep 0.1
    done
    return 1
}

passed=0
failed=0
verdict() {
    if [ "$2" = ok ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
    fi
    echo "vm-test.sh stopped by $1: $2"
}

# One way of stopping the tier: $1 names it, $2 is the signal sent to the
# script, or "timeout" for an outer `timeout` that sends SIGTERM.
check() {
    local way=$1 sig=$2 script qemu out
    out=$(mktemp)
    if [ "$sig" = timeout ]; then
        # Long enough for the boot to start, however busy the machine:
        # qemu is looked for while the timeout runs.
        timeout 20 bash scripts/vm-test.sh --boot-only >"$out" 2>&1 &
        script=$!
        local inner i
        for ((i = 0; i < deadline * 10; i++)); do
            inner=$(pgrep -P "$script" -f vm-test.sh | head -1 || true)
            [ -n "$inner" ] && break
            sleep 0.1
        done
        qemu=$( [ -n "$inner" ] && qemu_of "$inner") || qemu=
    else
        # A background job of a script starts with SIGINT ignored, which
        # its traps could not undo; a terminal's Ctrl-C finds it default.
        env --default-signal=INT bash scripts/vm-test.sh --boot-only >"$out" 2>&1 &
        script=$!
        qemu=$(qemu_of "$script") || qemu=
        [ -n "$qemu" ] && kill -"$sig" "$script"
    fi
    if [ -z "$qemu" ]; then
        kill -9 "$script" 2>/dev/null || true
        verdict "$way" "FAILED (qemu never started: $(tail -3 "$out" | tr '\n' ' '))"
    elif ! gone "$qemu"; then
        kill -9 "$qemu" 2>/dev/null || true
        verdict "$way" "FAILED (qemu $qemu still running)"
    else
        verdict "$way" ok
    fi
    wait "$script" 2>/dev/null || true
    rm -f "$out"
}

# (stderr: bash's notice of a job killed by a signal, which is the point.)
check SIGTERM TERM 2>/dev/null
check SIGINT INT 2>/dev/null
check "an outer timeout" timeout 2>/dev/null
check SIGKILL KILL 2>/dev/null
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
