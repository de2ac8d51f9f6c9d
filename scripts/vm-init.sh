#!/bb/busybox sh
# /init of the kernel-feature VM (scripts/vm-test.sh): mounts the kernel
# file systems, loads the modules, runs every ignored (kernel-features) test of the
# selected test binaries, one at a time, then powers off. The host reads the
# serial console: libtest's lines, then `vm: done`.
/bb/busybox --install -s /bb
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:/bb
export RUST_BACKTRACE=0

# Nothing is mounted over /tmp or /run: the initramfs itself is writable,
# and the test binaries may live there (a clone under /tmp).
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
# The kernel loads further modules on demand (nft expressions) through
# busybox modprobe.
echo /usr/sbin/modprobe >/proc/sys/kernel/modprobe
ip link set lo up

status=0
for m in $(cat /etc/vm-modules); do
    modprobe "$m" || { echo "vm: failed to load module $m"; status=1; }
done
echo "vm: kernel $(uname -r), $(nproc) cpus, modules loaded at $(cut -d' ' -f1 /proc/uptime)s"

# Progress for the host's watchdog, which stops the VM only when its
# console stays silent: every 20 s, a line when the guest started a
# process since the last one. A test that works runs plugins and tools; a
# hung one starts nothing. Read with builtins only (no fork of its own but
# the sleep, hence "more than one").
processes() {
    while read -r key value rest; do
        [ "$key" = processes ] && { n=$value; return; }
    done </proc/stat
}
(
    processes
    last=$n
    while sleep 20; do
        processes
        [ $((n - last)) -gt 1 ] && echo "vm: progress: $((n - last)) processes started in 20s"
        last=$n
    done
) &

# One test at a time, each announced, so that a hang names its test.
for t in $(cat /etc/vm-tests); do
    names=$("$t" --list --ignored --format terse) || { echo "vm: failed to list $t"; status=1; }
    for name in $(echo "$names" | sed -n 's/: test$//p'); do
        echo "vm: running $t $name"
        "$t" --ignored --exact "$name" --test-threads=1 || status=1
    done
done
[ "$status" = 0 ] || echo "vm: failed"
echo "vm: done"
sync
poweroff -f
