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

The full ADD floor (FullFloor): the same kernel requests as our bridge ADD
(IPv4, `isGateway`, a default route: the bench's config), issued in-process
by the driver, in the same order: no process, no IPAM, no JSON. The list is
taken from `strace -f -e trace=sendto,sendmsg,openat,write,setsockopt` of our
release build's ADD (installed as a multi-call binary, IPAM in-process):

 1. a NETLINK_ROUTE socket in the container's namespace (setns in, socket,
    setns back); RTM_GETLINK of `eth0` there (it must not exist: ENODEV);
 2. RTM_GETLINK of the bridge by name; `/proc/sys/net/ipv6/conf/<bridge>/
    accept_ra` written "0";
 3. RTM_NEWLINK creating the veth pair: host end up and enslaved, peer `eth0`
    into the container's namespace (the ADD floor's message);
 4. RTM_GETLINK of the host end by name; its `accept_ra` written "0";
 5. RTM_GETLINK of `eth0` in the container; setns into the container,
    `ipv6/conf/eth0/accept_dad` "0" and `ipv4/conf/eth0/arp_notify` "1"
    written, setns back;
 6. one pipelined batch in the container: RTM_NEWADDR (the address, its
    broadcast, IFA_F_NODAD), RTM_SETLINK `eth0` up, RTM_NEWROUTE default via
    the gateway; three acknowledgements read;
 7. NETLINK_GET_STRICT_CHK on the host socket, RTM_GETADDR dump of the
    bridge's IPv4 addresses (filtered by the kernel to that link: the
    gateway check finds the gateway already there);
 8. `/proc/sys/net/ipv4/ip_forward` read (it is 1 already);
 9. RTM_GETLINK of the host end by name until its operational state is up,
    polling on the plugin's schedule (0, 2, 5, 10, 25, ... ms): the kernel's
    carrier and port-state handling of the new port runs in here;
10. RTM_GETLINK of the bridge by index (its MAC for the result).

Every GETLINK and change carries NLM_F_ACK as the plugin's do, so each
answer is read with its acknowledgement. Left out, being no kernel work of
the ADD: the plugin's process start, reading stdin, IPAM's lease files
(another thread of ours), writing the result.
"""

import ctypes
import ipaddress
import os
import socket
import struct
import time

from nlattr import attr as _attr, attrs as _attrs

_libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000
RTM_NEWLINK, RTM_DELLINK, RTM_GETLINK, RTM_SETLINK = 16, 17, 18, 19
RTM_NEWADDR, RTM_GETADDR, RTM_NEWROUTE = 20, 22, 24
NLM_F_REQUEST, NLM_F_ACK, NLM_F_EXCL, NLM_F_CREATE, NLM_F_DUMP = 0x1, 0x4, 0x200, 0x400, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
IFLA_IFNAME, IFLA_MASTER, IFLA_OPERSTATE, IFLA_LINKINFO, IFLA_NET_NS_FD = 3, 10, 16, 18, 28
IFA_ADDRESS, IFA_LOCAL, IFA_BROADCAST, IFA_FLAGS, IFA_F_NODAD = 1, 2, 4, 8, 0x2
RTA_GATEWAY, RTA_OIF, RTA_TABLE, RT_TABLE_MAIN, RTPROT_BOOT, RTN_UNICAST = 5, 4, 15, 254, 3, 1
IF_OPER_UP = 6
SOL_NETLINK, NETLINK_GET_STRICT_CHK = 270, 12
IFLA_INFO_KIND, IFLA_INFO_DATA, VETH_INFO_PEER = 1, 2, 1
IFF_UP = 0x1



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


def _setns(path_or_fd):
    fd = os.open(path_or_fd, os.O_RDONLY) if isinstance(path_or_fd, str) else path_or_fd
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns")
    finally:
        if isinstance(path_or_fd, str):
            os.close(fd)


class _Conn:
    """A NETLINK_ROUTE socket that sends requests (several before reading,
    as a pipelined batch) and reads each one's answers up to its
    acknowledgement, or up to NLMSG_DONE for a dump."""

    def __init__(self, sock):
        self.sock = sock
        self.seq = 0

    def close(self):
        self.sock.close()

    def batch(self, requests, allow=()):
        """requests: (type, flags, body), all sent, then the answers read;
        returns per request the payloads of its answers. An error not in
        `allow` (errnos) raises OSError."""
        out, want = {}, set()
        for kind, flags, body in requests:
            self.seq += 1
            out[self.seq] = []
            want.add(self.seq)
            # One datagram each, as the plugin sends them: the kernel handles
            # each send at once, in the sender's context.
            self.sock.send(struct.pack("IHHII", 16 + len(body), kind, NLM_F_REQUEST | flags, self.seq, 0) + body)
        while want:
            buf = self.sock.recv(1 << 16)
            off = 0
            while off + 16 <= len(buf):
                length, kind, _, seq, _ = struct.unpack_from("IHHII", buf, off)
                payload = buf[off + 16:off + length]
                off += (length + 3) & ~3
                if seq not in want:
                    continue
                if kind == NLMSG_ERROR:
                    err = -struct.unpack_from("i", payload)[0]
                    if err and err not in allow:
                        raise OSError(err, os.strerror(err))
                    want.discard(seq)
                elif kind == NLMSG_DONE:
                    want.discard(seq)
                else:
                    out[seq].append(payload)
        return [out[k] for k in sorted(out)]

    def link(self, name=None, index=0, allow=()):
        """RTM_GETLINK with NLM_F_ACK, as the plugin asks: (index, attrs)."""
        body = _ifinfo(index) + (_attr(IFLA_IFNAME, name.encode() + b"\0") if name else b"")
        (answers,) = self.batch([(RTM_GETLINK, NLM_F_ACK, body)], allow)
        if not answers:
            return None
        return struct.unpack_from("i", answers[0], 4)[0], dict(_attrs(answers[0][16:]))



def _sysctl(path, value=None):
    """Write (or read) a /proc/sys file; /proc/sys/net is the calling thread's
    namespace's."""
    if value is None:
        with open(path) as f:
            return f.read()
    with open(path, "w") as f:
        f.write(value)
    return value


class FullFloor:
    """The full ADD floor (see the module's docstring) on one bridge of the
    driver's namespace, which must have the subnet's first address (the
    gateway) and be up; containers get the subnet's next addresses."""

    PORT_UP_SLEEPS_MS = (0, 2, 5, 10, 25, 50, 100, 300, 1000, 1000)
    PHASES = ("container socket, eth0 check", "bridge lookup", "bridge accept_ra", "veth pair created",
              "port lookup", "port accept_ra", "eth0 lookup", "eth0 accept_dad, arp_notify (setns)",
              "address, link up, route", "gateway check", "ip_forward read", "port oper-up poll",
              "bridge lookup (MAC)")

    def __init__(self, bridge, subnet):
        self.host = None
        self.bridge = bridge
        self.net = ipaddress.ip_network(subnet)
        self.gateway = self.net.network_address + 1
        self.count = 0
        self.phases = []  # per add: ns of each of PHASES
        self.polls = []  # per add: port looks until it was up

    def close(self):
        pass

    def add(self, nspath, ifname="eth0"):
        """Nanoseconds for our bridge ADD's kernel requests into nspath."""
        self.count += 1
        address = self.net.network_address + 1 + (self.count - 1) % (self.net.num_addresses - 3) + 1
        host_name = f"cnirsff{os.getpid() % 1000}x{self.count}"[:15]
        ns = os.open(nspath, os.O_RDONLY)
        me = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        cont = None
        try:
            t0 = time.perf_counter_ns()
            marks = [t0]

            def mark():
                marks.append(time.perf_counter_ns())

            # Each ADD is a new process with new sockets.
            cont = self._container_socket(ns, me)
            cont.link(ifname, allow=(19,))  # ENODEV: no eth0 yet
            mark()
            self.host = _Conn(socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0))
            master, _ = self.host.link(self.bridge)
            mark()
            _sysctl(f"/proc/sys/net/ipv6/conf/{self.bridge}/accept_ra", "0")
            mark()
            self._create_veth(host_name, master, ifname, ns)
            mark()
            self.host.link(host_name)
            mark()
            _sysctl(f"/proc/sys/net/ipv6/conf/{host_name}/accept_ra", "0")
            mark()
            index, _ = cont.link(ifname)
            mark()
            _setns(ns)
            try:
                _sysctl(f"/proc/sys/net/ipv6/conf/{ifname}/accept_dad", "0")
                _sysctl(f"/proc/sys/net/ipv4/conf/{ifname}/arp_notify", "1")
            finally:
                _setns(me)
            mark()
            cont.batch(self._configure(index, address))
            mark()
            self._gateway_check(master)
            mark()
            _sysctl("/proc/sys/net/ipv4/ip_forward")
            mark()
            self.polls.append(self._wait_port_up(host_name))
            mark()
            self.host.link(index=master)
            mark()
            self.phases.append([b - a for a, b in zip(marks, marks[1:])])
            return time.perf_counter_ns() - t0
        finally:
            if cont:
                cont.close()
            if self.host:
                self.host.close()
                self.host = None
            os.close(me)
            os.close(ns)

    @staticmethod
    def _container_socket(ns, me):
        _setns(ns)
        try:
            return _Conn(socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0))
        finally:
            _setns(me)

    def _create_veth(self, host_name, master, ifname, ns):
        peer = _ifinfo() + _attr(IFLA_IFNAME, ifname.encode() + b"\0") + _attr(IFLA_NET_NS_FD, struct.pack("I", ns))
        info = _attr(IFLA_INFO_KIND, b"veth\0") + _attr(IFLA_INFO_DATA, _attr(VETH_INFO_PEER, peer))
        body = (_ifinfo(0, IFF_UP, IFF_UP) + _attr(IFLA_IFNAME, host_name.encode() + b"\0")
                + _attr(IFLA_MASTER, struct.pack("I", master)) + _attr(IFLA_LINKINFO, info))
        self.host.batch([(RTM_NEWLINK, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, body)])

    def _configure(self, index, address):
        """The container's address, link-up and default route, one batch."""
        a, brd, gw = address.packed, self.net.broadcast_address.packed, self.gateway.packed
        addr = (struct.pack("BBBBI", socket.AF_INET, self.net.prefixlen, IFA_F_NODAD, 0, index)
                + _attr(IFA_ADDRESS, a) + _attr(IFA_LOCAL, a) + _attr(IFA_BROADCAST, brd)
                + _attr(IFA_FLAGS, struct.pack("I", IFA_F_NODAD)))
        route = (struct.pack("BBBBBBBBI", socket.AF_INET, 0, 0, 0, RT_TABLE_MAIN, RTPROT_BOOT, 0, RTN_UNICAST, 0)
                 + _attr(RTA_TABLE, struct.pack("I", RT_TABLE_MAIN)) + _attr(RTA_GATEWAY, gw)
                 + _attr(RTA_OIF, struct.pack("I", index)))
        return [(RTM_NEWADDR, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, addr),
                (RTM_SETLINK, NLM_F_ACK, _ifinfo(index, IFF_UP, IFF_UP)),
                (RTM_NEWROUTE, NLM_F_ACK | NLM_F_CREATE, route)]

    def _gateway_check(self, master):
        self.host.sock.setsockopt(SOL_NETLINK, NETLINK_GET_STRICT_CHK, 1)
        body = struct.pack("BBBBI", socket.AF_INET, 0, 0, 0, master)
        (addrs,) = self.host.batch([(RTM_GETADDR, NLM_F_DUMP, body)])
        if not addrs:
            raise OSError(2, f"floor bridge {self.bridge} has no IPv4 address (its gateway)")

    def _wait_port_up(self, name):
        """The number of looks it took."""
        for n, ms in enumerate(self.PORT_UP_SLEEPS_MS, 1):
            if ms:
                time.sleep(ms / 1000)
            _, attrs = self.host.link(name)
            if attrs.get(IFLA_OPERSTATE, b"\0")[0] == IF_OPER_UP:
                return n
        raise OSError(110, f"floor port {name} never came up")
