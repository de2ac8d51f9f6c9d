"""Each exiting process's own peak RSS, from the kernel's taskstats.

GNU time's %M (ru_maxrss from wait4) is the maximum over a process and every
descendant it reaped, so a plugin that runs `iptables-restore` shows the
tool's figure, not its own. The kernel's taskstats interface (generic netlink
family "TASKSTATS") sends a listener that registered a CPU mask one
TASKSTATS_TYPE_AGGR_PID message per exiting task, with a `struct taskstats`
whose `hiwater_rss` is that task's own peak RSS in KiB (the memory map's high
water mark, taken before the map is released, and the map after exec: the
pages of the process that forked it are not counted), and whose
`ac_pid`/`ac_ppid`/`ac_comm` say which task it was.

The family is only visible from the initial network namespace (it is not
`netnsok`), so the socket is opened in the namespace bench.sh runs in (its
/proc/<pid>/ns/net, passed as `nspath`): the driver itself runs in a
namespace of its own. Offsets are those of <linux/taskstats.h> (version 13
and later only append fields); `python3 taskstats.py` checks them against
GNU time on two single processes.
"""

import ctypes
import os
import socket
import struct
import subprocess

from nlattr import attr as _attr, attrs as _attrs

_libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000
NETLINK_GENERIC = 16
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY, CTRL_ATTR_FAMILY_ID, CTRL_ATTR_FAMILY_NAME = 3, 1, 2
TASKSTATS_CMD_GET, TASKSTATS_CMD_NEW = 1, 2
TASKSTATS_CMD_ATTR_REGISTER_CPUMASK = 3
TASKSTATS_TYPE_PID, TASKSTATS_TYPE_STATS, TASKSTATS_TYPE_AGGR_PID = 1, 3, 4
NLM_F_REQUEST, NLM_F_ACK = 0x1, 0x4
NLMSG_ERROR = 2
# struct taskstats (linux/taskstats.h; offsets checked with offsetof)
OFF_COMM, OFF_PID, OFF_PPID, OFF_HIWATER_RSS = 80, 128, 132, 200
TS_COMM_LEN = 32


class Exit:
    """One exited task: pid (the thread's id), ppid (its parent's tgid when
    it exited), comm and its own peak RSS in KiB."""

    __slots__ = ("pid", "ppid", "comm", "rss_kib")

    def __init__(self, pid, ppid, comm, rss_kib):
        self.pid, self.ppid, self.comm, self.rss_kib = pid, ppid, comm, rss_kib

    def __repr__(self):
        return f"Exit({self.pid}, ppid {self.ppid}, {self.comm!r}, {self.rss_kib} KiB)"




def _messages(buf):
    """(type, payload after the netlink header) of each message in buf."""
    off = 0
    while off + 16 <= len(buf):
        length, kind = struct.unpack_from("IH", buf, off)
        if length < 16:
            break
        yield kind, buf[off + 16:off + length]
        off += (length + 3) & ~3


def _socket_in(nspath):
    """A NETLINK_GENERIC socket of the network namespace at nspath (None:
    the calling thread's)."""
    if nspath is None:
        return socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
    me = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    fd = os.open(nspath, os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns into {nspath}")
        return socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
    finally:
        if _libc.setns(me, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns back into the driver's network namespace")
        os.close(fd)
        os.close(me)


class Listener:
    """Receives the taskstats of every task exiting on the machine from
    open to close. Raises OSError when the kernel refuses (no taskstats,
    no CAP_NET_ADMIN)."""

    def __init__(self, nspath=None, rcvbuf=16 << 20):
        self.sock = _socket_in(nspath)
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, 33, rcvbuf)  # SO_RCVBUFFORCE
        except OSError:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.bind((0, 0))
        self.seq = 0
        self.lost = False
        self.family = self._family("TASKSTATS")
        ncpu = os.sysconf("SC_NPROCESSORS_CONF")
        mask = f"0-{ncpu - 1}".encode() + b"\0"
        self._request(self.family, TASKSTATS_CMD_GET, _attr(TASKSTATS_CMD_ATTR_REGISTER_CPUMASK, mask))
        self.sock.setblocking(False)

    def check(self):
        """Raises OSError unless the exit of a process started now arrives
        (it does not from a socket of another namespace than the kernel's
        initial one: the kernel sends from there)."""
        self.drain()
        p = subprocess.Popen(["/bin/true"])
        p.wait()
        if not any(e.pid == p.pid for e in self.drain()):
            raise OSError(61, "taskstats: no exit message received (socket not in the initial network namespace?)")

    def close(self):
        # Closing the socket deregisters it from every CPU's listener list.
        self.sock.close()

    def _request(self, family, cmd, attrs):
        self.seq += 1
        body = struct.pack("BBH", cmd, 1, 0) + attrs
        self.sock.send(struct.pack("IHHII", 16 + len(body), family, NLM_F_REQUEST | NLM_F_ACK, self.seq, 0) + body)
        answer = None
        while True:
            for kind, payload in _messages(self.sock.recv(65536)):
                if kind == NLMSG_ERROR:
                    err = struct.unpack_from("i", payload)[0]
                    if err:
                        raise OSError(-err, f"taskstats request {cmd}: {os.strerror(-err)}")
                    return answer
                if kind == family or family == GENL_ID_CTRL:
                    answer = payload[4:]

    def _family(self, name):
        answer = self._request(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, _attr(CTRL_ATTR_FAMILY_NAME, name.encode() + b"\0"))
        for kind, payload in _attrs(answer or b""):
            if kind == CTRL_ATTR_FAMILY_ID:
                return struct.unpack("H", payload[:2])[0]
        raise OSError(2, f"no generic netlink family {name}")

    def drain(self):
        """Every exit received so far (all of the machine's). The kernel
        queues a task's message before the task can be reaped, so after a
        wait4 the reaped process's exit is already here."""
        exits = []
        while True:
            try:
                buf = self.sock.recv(1 << 20)
            except BlockingIOError:
                return exits
            except OSError as e:
                if e.errno == 105:  # ENOBUFS: messages were dropped
                    self.lost = True
                    continue
                raise
            for kind, payload in _messages(buf):
                if kind != self.family:
                    continue
                for t, aggr in _attrs(payload[4:]):
                    if t != TASKSTATS_TYPE_AGGR_PID:
                        continue
                    for t2, stats in _attrs(aggr):
                        if t2 == TASKSTATS_TYPE_STATS and len(stats) >= OFF_HIWATER_RSS + 8:
                            exits.append(_parse(stats))
        return exits


def _parse(stats):
    comm = stats[OFF_COMM:OFF_COMM + TS_COMM_LEN].split(b"\0", 1)[0].decode(errors="replace")
    pid, ppid = struct.unpack_from("II", stats, OFF_PID)
    (rss,) = struct.unpack_from("Q", stats, OFF_HIWATER_RSS)
    return Exit(pid, ppid, comm, rss)


def tree(exits, root, adopter):
    """The exits of root's descendants (root excluded): tasks whose parent
    chain leads to root, or to `adopter` (the subreaper that inherits the
    orphans of a tree exiting after their parent), in the order received."""
    parent = {e.pid: e.ppid for e in exits}
    out = []
    for e in exits:
        if e.pid == root:
            continue
        p, seen = e.ppid, 0
        while p not in (root, adopter) and p in parent and seen < 64:
            p, seen = parent[p], seen + 1
        if p in (root, adopter):
            out.append(e)
    return out


def _check():
    """Compares hiwater_rss with GNU time's %M on single processes."""
    import tempfile

    listener = Listener()
    try:
        for argv in (["/usr/bin/true"], ["python3", "-c", "b = bytearray(50 << 20); b[::4096] = b'x' * len(b[::4096])"]):
            with tempfile.NamedTemporaryFile("r") as out:
                p = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", out.name, *argv])
                p.wait()
                gnu = int(out.read().split()[-1])
            mine = [e for e in tree(listener.drain(), p.pid, os.getpid())]
            print(f"{' '.join(argv)[:40]:40}  GNU time %M {gnu} KiB; taskstats {mine}")
    finally:
        listener.close()


if __name__ == "__main__":
    _check()
