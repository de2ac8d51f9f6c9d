"""The kernel's floor: the link work a bridge ADD or DEL makes the kernel do,
requested by the driver itself over rtnetlink and waited for, with no plugin
process, no IPAM and no user-space work around it.

- ADD floor: one RTM_NEWLINK creating a veth pair whose host end is enslaved
  to the bridge and up and whose peer (`eth0`) is created in the container's
  namespace, as our bridge plugin does in one message; then the peer is
  brought up.
- DEL floor: one RTM_DELLINK of the container's `eth0` (which takes the host
  end with it), answered once the kernel has finished the deletion, RCU
  barrier included, as the reference plugin waits for it.
"""

import ctypes
import os
import socket
import struct
import time

_libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000
RTM_NEWLINK, RTM_DELLINK, RTM_GETLINK = 16, 17, 18
NLM_F_REQUEST, NLM_F_ACK, NLM_F_EXCL, NLM_F_CREATE = 0x1, 0x4, 0x200, 0x400
IFLA_IFNAME, IFLA_MASTER, IFLA_LINKINFO, IFLA_NET_NS_FD = 3, 10, 18, 28
IFLA_INFO_KIND, IFLA_INFO_DATA, VETH_INFO_PEER = 1, 2, 1
IFF_UP = 0x1


def _attr(kind, payload):
    pad = (4 - len(payload) % 4) % 4
    return struct.pack("HH", 4 + len(payload), kind) + payload + b"\0" * pad


def _ifinfo(index=0, flags=0, change=0):
    return struct.pack("BxHiII", 0, 0, index, flags, change)


def _socket_in(nspath):
    """A NETLINK_ROUTE socket bound to the namespace at nspath."""
    me = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    fd = os.open(nspath, os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns")
        return socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    finally:
        _libc.setns(me, CLONE_NEWNET)
        os.close(fd)
        os.close(me)


def ipv6_off(nspath):
    """New links of the namespace at nspath get IPv6 disabled (the
    namespace's net.ipv6.conf.default.disable_ipv6 = 1): no link-local
    address, so no DAD, MLD or router solicitation from its eth0. For the
    scale step's --no-container-ipv6 experiment only."""
    me = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    fd = os.open(nspath, os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns")
        # /proc/sys/net follows the opening thread's namespace.
        with open("/proc/sys/net/ipv6/conf/default/disable_ipv6", "w") as f:
            f.write("1")
    finally:
        _libc.setns(me, CLONE_NEWNET)
        os.close(fd)
        os.close(me)


def _request(sock, kind, flags, body):
    msg = struct.pack("IHHII", 16 + len(body), kind, NLM_F_REQUEST | NLM_F_ACK | flags, 1, 0) + body
    sock.send(msg)
    reply = sock.recv(65536)
    err = struct.unpack("i", reply[16:20])[0]
    if err:
        raise OSError(-err, os.strerror(-err))


def _index(sock, name):
    body = _ifinfo() + _attr(IFLA_IFNAME, name.encode() + b"\0")
    msg = struct.pack("IHHII", 16 + len(body), RTM_GETLINK, NLM_F_REQUEST, 1, 0) + body
    sock.send(msg)
    reply = sock.recv(65536)
    if struct.unpack("H", reply[4:6])[0] == 2:  # NLMSG_ERROR
        raise OSError(-struct.unpack("i", reply[16:20])[0], f"no link {name}")
    return struct.unpack("i", reply[20:24])[0]


class Floor:
    """ADD and DEL floors on one bridge, in the namespace the driver runs in."""

    def __init__(self, bridge):
        self.host = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
        self.bridge = bridge
        self.count = 0

    def close(self):
        self.host.close()

    def add(self, nspath, ifname="eth0"):
        """Nanoseconds to create the veth pair into nspath and bring eth0 up."""
        master = _index(self.host, self.bridge)
        self.count += 1
        host_name = f"cnirsfl{os.getpid() % 1000}x{self.count}"[:15]
        cont = _socket_in(nspath)
        ns = os.open(nspath, os.O_RDONLY)
        try:
            peer = _ifinfo() + _attr(IFLA_IFNAME, ifname.encode() + b"\0") + _attr(IFLA_NET_NS_FD, struct.pack("I", ns))
            info = _attr(IFLA_INFO_KIND, b"veth\0") + _attr(IFLA_INFO_DATA, _attr(VETH_INFO_PEER, peer))
            body = (_ifinfo(0, IFF_UP, IFF_UP) + _attr(IFLA_IFNAME, host_name.encode() + b"\0")
                    + _attr(IFLA_MASTER, struct.pack("I", master)) + _attr(IFLA_LINKINFO, info))
            t0 = time.perf_counter_ns()
            _request(self.host, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, body)
            index = _index(cont, ifname)
            _request(cont, RTM_NEWLINK, 0, _ifinfo(index, IFF_UP, IFF_UP))
            return time.perf_counter_ns() - t0
        finally:
            os.close(ns)
            cont.close()

    @staticmethod
    def delete(nspath, ifname="eth0"):
        """Nanoseconds for the kernel to delete eth0 in nspath, waited for."""
        cont = _socket_in(nspath)
        try:
            body = _ifinfo() + _attr(IFLA_IFNAME, ifname.encode() + b"\0")
            t0 = time.perf_counter_ns()
            _request(cont, RTM_DELLINK, 0, body)
            return time.perf_counter_ns() - t0
        finally:
            cont.close()
