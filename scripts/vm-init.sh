#!/bb/busybox sh
# /init of the kernel-feature VM (scripts/vm-test.sh): mounts the kernel
# file systems, loads the modules, runs every ignored (kernel-features) test of the
# selected test binaries, then powers off. The host reads the
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

for t in $(cat /etc/vm-tests); do
    echo "vm: running $t"
    "$t" --ignored --test-threads="$(nproc)" || status=1
done
[ "$status" = 0 ] || echo "vm: failed"
echo "vm: done"
sync
poweroff -f
