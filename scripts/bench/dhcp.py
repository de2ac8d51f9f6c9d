"""The dhcp step, a mixin of driver.Bench: both suites' dhcp plugin and
daemon against one dnsmasq, on a bridge in the driver's ("host")
namespace, the server in a namespace of its own.

Rows:
- ADD of a new lease and its DEL, each suite with its own daemon: the
  plugin call plus the daemon's DHCP exchange (DISCOVER to ACK; the
  release on DEL is sent without waiting for an answer). Informative:
  the exchange is mostly the server's and the link's time.
- The plugin call alone, without a DHCP exchange, both plugins against
  the same daemon (ours): ADD of a lease the daemon already holds (the
  reference's v1.1.1 daemon has no such path: every ADD is a new
  exchange) and DEL of a lease it does not hold. The daemon's share is a
  table lookup, the same for both; what differs is the plugin process:
  start, config, socket, gob, result. This is what the ≤ 0.3× target is
  about.

The daemons and dnsmasq are children of the driver, which waits for
every child when it settles after a call; settling is off during this
step (neither dhcp plugin leaves processes behind).
"""

import os
import socket
import subprocess
import time

from plugins import CNI_VERSION


class DhcpSteps:
    def dhcp_conf(self, socket_path):
        return {
            "cniVersion": CNI_VERSION,
            "name": f"{self.prefix}-dhcp",
            "type": "dhcp",
            "ipam": {"type": "dhcp", "daemonSocketPath": socket_path},
        }

    @staticmethod
    def wait_socket(path, proc, what):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"{what} exited with {proc.returncode}")
            try:
                s = socket.socket(socket.AF_UNIX)
                s.connect(path)
                s.close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"{what}: no socket at {path} after 30 s")

    def dhcp_lan(self, suites):
        """Bridge, server namespace with dnsmasq, a container per suite."""
        br = f"{self.prefix}dh"
        subprocess.run(["ip", "link", "add", br, "type", "bridge"], check=True)
        self.bridges.append(br)
        subprocess.run(["ip", "link", "set", br, "up"], check=True)
        srv_name = f"{self.prefix}-dhsrv"
        names = [srv_name] + [f"{self.prefix}-dh{s.key}" for s in suites]
        paths = self.add_netns(names)
        net = self.subnet(250).rsplit(".", 1)[0]
        for i, name in enumerate(names):
            inner = "lan0" if i == 0 else "eth0"
            port = f"{self.prefix}dh{i}"
            subprocess.run(["ip", "link", "add", port, "type", "veth", "peer", "name", inner, "netns", name], check=True)
            subprocess.run(["ip", "link", "set", port, "master", br, "up"], check=True)
        ex = ["ip", "netns", "exec", srv_name]
        subprocess.run(ex + ["ip", "link", "set", "lo", "up"], check=True)
        subprocess.run(ex + ["ip", "addr", "add", f"{net}.1/24", "dev", "lan0"], check=True)
        subprocess.run(ex + ["ip", "link", "set", "lan0", "up"], check=True)
        leases = os.path.join(self.tmp, "dnsmasq.leases")
        dnsmasq = subprocess.Popen(
            ex + ["dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null", "--port=0", "--interface=lan0",
                  "--bind-interfaces", "--user=root", "--group=root", "--no-ping", "--dhcp-authoritative",
                  f"--dhcp-range={net}.10,{net}.250,255.255.255.0,1h", f"--dhcp-leasefile={leases}",
                  f"--pid-file={os.path.join(self.tmp, 'dnsmasq.pid')}", "--log-facility=/dev/null"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.errfd)
        return dnsmasq, {s.key: p for s, p in zip(suites, paths[1:])}

    def dhcp_daemon(self, suite):
        sock = os.path.join(self.tmp, f"{suite.key}-dhcp.sock")
        argv = [suite.bin("dhcp"), "daemon", f"-socketpath={sock}"]
        if suite is self.ours:
            argv.append(f"-statedir={os.path.join(self.tmp, 'ours-dhcp-state')}")
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.errfd)
        self.wait_socket(sock, proc, f"{suite.label} dhcp daemon")
        return proc, sock

    def bench_dhcp(self):
        rows = self.report.section("dhcp (one dnsmasq; ADD/DEL each with its own daemon, the plugin call against ours)")
        suites = self.both("dhcp")
        if len(suites) < 2:
            self.report.missing.append(f"dhcp: missing in {self.missing_in('dhcp')}; skipped")
            return
        if subprocess.run(["sh", "-c", "command -v dnsmasq"], capture_output=True).returncode != 0:
            self.report.missing.append("dhcp: no dnsmasq (apt-get install dnsmasq-base); skipped")
            return
        settler = self.settler
        settling, settler.enabled = settler.enabled, False
        procs = []
        try:
            dnsmasq, netns = self.dhcp_lan(suites)
            procs.append(dnsmasq)
            socks = {}
            for s in suites:
                proc, socks[s.key] = self.dhcp_daemon(s)
                procs.append(proc)
            self.dhcp_rows(rows, suites, netns, socks)
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            settler.enabled = settling

    def dhcp_rows(self, rows, suites, netns, socks):
        n = self.opts.n_plugin
        own = {s.key: self.dhcp_conf(socks[s.key]) for s in suites}
        shared = self.dhcp_conf(socks["ours"])
        # The first ADD sets the container's link up (the reference's
        # daemon then retries for a few seconds); not measured.
        for s in suites:
            c = s.call("dhcp", "ADD", own[s.key], cid=f"{self.prefix}dhw", netns=netns[s.key])
            if not c.ok:
                self.fail("dhcp ADD (warm-up)", s, c)
                return
            s.call("dhcp", "DEL", own[s.key], cid=f"{self.prefix}dhw", netns=netns[s.key])
        add, dele = {s.key: [] for s in suites}, {s.key: [] for s in suites}
        for i in range(n):
            for s in self.order(suites, i):
                cid = f"{self.prefix}dh{i}"
                c = s.call("dhcp", "ADD", own[s.key], cid=cid, netns=netns[s.key])
                if not c.ok:
                    self.fail("dhcp ADD", s, c)
                    continue
                add[s.key].append(c.ns)
                d = s.call("dhcp", "DEL", own[s.key], cid=cid, netns=netns[s.key])
                if not d.ok:
                    self.fail("dhcp DEL", s, d)
                    continue
                dele[s.key].append(d.ns)
        self.rows_latency(rows, f"dhcp ADD, a new lease: plugin + daemon's DHCP exchange (n={n})", add)
        self.rows_latency(rows, f"dhcp DEL, a release: plugin + daemon (n={n})", dele)
        # The plugin call alone: both plugins against our daemon.
        held = f"{self.prefix}dhheld"
        c = self.ours.call("dhcp", "ADD", shared, cid=held, netns=netns["ours"])
        if not c.ok:
            self.fail("dhcp ADD (the held lease)", self.ours, c)
            return
        add, dele = {s.key: [] for s in suites}, {s.key: [] for s in suites}
        for i in range(n):
            for s in self.order(suites, i):
                c = s.call("dhcp", "ADD", shared, cid=held, netns=netns["ours"])
                if c.ok:
                    add[s.key].append(c.ns)
                else:
                    self.fail("dhcp ADD (held lease)", s, c)
                d = s.call("dhcp", "DEL", shared, cid=f"{self.prefix}dhx{i}", netns=netns["ours"])
                if d.ok:
                    dele[s.key].append(d.ns)
                else:
                    self.fail("dhcp DEL (unknown lease)", s, d)
        self.ours.call("dhcp", "DEL", shared, cid=held, netns=netns["ours"])
        self.rows_latency(rows, f"dhcp plugin call: ADD of a lease the daemon holds (n={n})", add)
        self.rows_latency(rows, f"dhcp plugin call: DEL of a lease the daemon does not hold (n={n})", dele)
