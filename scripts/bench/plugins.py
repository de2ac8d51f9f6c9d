"""The steps for every other plugin of the suite and for the runtimes'
default chains, as mixins of driver.Bench (they use its helpers: suites,
namespaces, configs, alternation, rows)."""

import os
import subprocess

CNI_VERSION = "1.0.0"
IFNAME = "eth0"


def median(values):
    if not values:
        return None
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


class PluginSteps:
    # -- configs -----------------------------------------------------------

    def chained_conf(self, suite, plugin, tag, mappings=0, port_base=20000, ours_backend=None):
        """The plugin object of a chained plugin as libcni hands it over
        (name and cniVersion of the list; runtimeConfig for capabilities)."""
        net = f"{self.prefix}-{suite.key}-{tag}"
        conf = {"cniVersion": CNI_VERSION, "name": net, "type": plugin}
        if plugin == "portmap":
            conf["capabilities"] = {"portMappings": True}
            if suite is self.ours:  # the reference (v1.1.1) has iptables only
                conf["backend"] = ours_backend or self.ref_masq_backend
            if mappings:
                base = port_base + (0 if suite is self.ours else 1000)
                conf["runtimeConfig"] = {"portMappings": [
                    {"hostPort": base + j, "containerPort": 80 + j, "protocol": ("tcp", "udp")[j % 2]}
                    for j in range(mappings)
                ]}
        elif plugin == "tuning":
            conf["sysctl"] = {f"net.ipv4.conf.{IFNAME}.accept_redirects": "0"}
            conf["mtu"] = 1400
        elif plugin == "bandwidth":
            conf.update({"ingressRate": 8000000, "ingressBurst": 80000, "egressRate": 8000000, "egressBurst": 80000})
        elif plugin == "firewall":
            conf["backend"] = "iptables"
        elif plugin == "vrf":
            conf["vrfname"] = "cnirsvrf"
        if plugin in ("portmap", "tuning", "firewall"):
            # State of the run's own, not the machine's /run/cni (the
            # reference's portmap and firewall v1.1.1 ignore the key).
            conf["dataDir"] = os.path.join(self.tmp, suite.key, f"{plugin}-data")
        return conf

    def ptp_conf(self, suite, tag, third):
        net = f"{self.prefix}-{suite.key}-{tag}"
        return {
            "cniVersion": CNI_VERSION, "name": net, "type": "ptp", "ipMasq": False,
            "ipam": {"type": "host-local", "dataDir": os.path.join(self.tmp, suite.key, tag),
                     "ranges": [[{"subnet": self.subnet(third)}]], "routes": [{"dst": "0.0.0.0/0"}]},
        }

    # -- chains as libcni runs them ---------------------------------------

    def run_chain(self, suite, confs, cid, netns):
        """ADD through the chain (each plugin gets the previous result);
        returns (ns per plugin, final result) or None after a failure."""
        prev, times = None, []
        for conf in confs:
            c = suite.call(conf["type"], "ADD", conf, cid=cid, netns=netns, prev=prev)
            if not c.ok:
                self.fail(f"{conf['type']} ADD (chain {'+'.join(x['type'] for x in confs)})", suite, c)
                self.del_chain(suite, confs, cid, netns, prev)
                return None
            prev = c.json()
            times.append(c.ns)
        return times, prev

    def del_chain(self, suite, confs, cid, netns, prev):
        """DEL in reverse order, each with the final result; ns per plugin."""
        times = []
        for conf in reversed(confs):
            d = suite.call(conf["type"], "DEL", conf, cid=cid, netns=netns, prev=prev)
            if not d.ok:
                self.fail(f"{conf['type']} DEL (chain)", suite, d)
            times.append(d.ns)
        return times

    def chain_figures(self, suites, chains, n, tag):
        """Alternate suites over n ADD/DEL cycles of their chain; per suite
        the ADD and DEL time of each position and of the whole chain."""
        paths = {s.key: self.add_netns([f"{self.prefix}-{s.key}-{tag}"])[0] for s in suites}
        alive = []
        for s in suites:
            r = self.run_chain(s, chains[s.key], f"{self.prefix}{tag}w", paths[s.key])
            if r:
                self.del_chain(s, chains[s.key], f"{self.prefix}{tag}w", paths[s.key], r[1])
                alive.append(s)
        add = {s.key: [] for s in alive}
        dele = {s.key: [] for s in alive}
        for i in range(n):
            for s in self.order(alive, i):
                cid = f"{self.prefix}{tag}{i}"
                r = self.run_chain(s, chains[s.key], cid, paths[s.key])
                if not r:
                    continue
                d = self.del_chain(s, chains[s.key], cid, paths[s.key], r[1])
                add[s.key].append(r[0])
                dele[s.key].append(list(reversed(d)))
        return add, dele, paths

    @staticmethod
    def position(samples, key, j):
        return median([t[j] for t in samples.get(key, [])])

    @staticmethod
    def whole(samples, key):
        return median([sum(t) for t in samples.get(key, [])])

    # -- steps -------------------------------------------------------------

    def bench_plugins(self):
        """Each plugin's own ADD and DEL: chained plugins behind a bridge
        (only their call is timed), ptp and static on their own."""
        rows = self.report.section("every plugin of the suite")
        n = self.opts.n_plugin
        third = 128
        cases = [("portmap", "portmap, no mappings", 0, None), ("portmap", "portmap, 2 mappings", 2, None),
                 ("tuning", "tuning (a sysctl, mtu)", 0, None), ("bandwidth", "bandwidth (ingress and egress)", 0, None),
                 ("firewall", "firewall (iptables)", 0, None),
                 ("sbr", "sbr (one table per address)", 0, None), ("vrf", "vrf (a new VRF each time)", 0, None)]
        if self.ref_masq_backend == "iptables":
            cases.insert(2, ("portmap", "portmap, 2 mappings (ours nftables, reference iptables)", 2, "nftables"))
        for plugin, label, mappings, backend in cases:
            if plugin == "vrf" and not self.kernel_has_vrf():
                self.report.missing.append(f"{label}: this kernel makes no VRF devices; skipped")
                continue
            suites = self.both("bridge", "host-local", plugin)
            if not suites:
                self.report.missing.append(f"{label}: no {plugin} binary in {self.missing_in(plugin)}; skipped")
                continue
            tag = f"{plugin[:4]}{mappings}{backend or ''}"
            chains = {}
            for s in suites:
                chains[s.key] = [self.bridge_conf(s, tag, third),
                                 self.chained_conf(s, plugin, tag, mappings, 20000 + 100 * third, backend)]
                third += 1
            add, dele, paths = self.chain_figures(suites, chains, n, tag)
            rows.append((f"plugin: {label} ADD (n={n}) — median", self.position(add, "ours", 1), self.position(add, "ref", 1), "ms"))
            rows.append((f"plugin: {label} DEL (n={n}) — median", self.position(dele, "ours", 1), self.position(dele, "ref", 1), "ms"))
            self.plugin_rss(plugin, label, suites, chains, paths)
        # ptp on its own (with host-local), and static IPAM on its own.
        suites = self.both("ptp", "host-local")
        if suites:
            chains = {}
            for s in suites:
                chains[s.key] = [self.ptp_conf(s, "ptp", third)]
                third += 1
            add, dele, paths = self.chain_figures(suites, chains, n, "ptp")
            rows.append((f"plugin: ptp ADD (n={n}) — median", self.whole(add, "ours"), self.whole(add, "ref"), "ms"))
            rows.append((f"plugin: ptp DEL (n={n}) — median", self.whole(dele, "ours"), self.whole(dele, "ref"), "ms"))
            self.plugin_rss("ptp", "ptp, incl. host-local", suites, chains, paths)
        else:
            self.report.missing.append(f"ptp: missing in {self.missing_in('ptp')}; skipped")
        suites = self.both("static")
        if suites:
            # The IPAM plugin called directly, as host-local on its own: the
            # top-level type names the binary, `ipam` is what it reads.
            address = self.subnet(200).replace(".0/24", ".9/24")
            conf = {"cniVersion": CNI_VERSION, "name": f"{self.prefix}-static", "type": "static",
                    "ipam": {"type": "static", "addresses": [{"address": address}], "routes": [{"dst": "0.0.0.0/0"}]}}
            chains = {s.key: [conf] for s in suites}
            add, dele, paths = self.chain_figures(suites, chains, n, "stat")
            rows.append((f"plugin: static ADD (n={n}) — median", self.whole(add, "ours"), self.whole(add, "ref"), "ms"))
            rows.append((f"plugin: static DEL (n={n}) — median", self.whole(dele, "ours"), self.whole(dele, "ref"), "ms"))
            self.plugin_rss("static", "static", suites, chains, paths)
        self.bench_devices(rows, n)

    def bench_devices(self, rows, n):
        """host-device (a veth end of the run's own per suite, moved into the
        container and back; no IPAM) against the reference; tap (made in the
        container, no IPAM), which the reference v1.1.1 lacks: ours only."""
        suites = self.both("host-device")
        if suites:
            chains = {}
            for s in suites:
                dev = f"{self.prefix}{s.key[0]}d"
                subprocess.run(["ip", "link", "add", dev, "type", "veth", "peer", "name", f"{dev}p"], check=True)
                self.bridges.append(dev)
                chains[s.key] = [{"cniVersion": CNI_VERSION, "name": f"{self.prefix}-{s.key}-hd",
                                  "type": "host-device", "device": dev}]
            add, dele, paths = self.chain_figures(suites, chains, n, "hdev")
            rows.append((f"plugin: host-device ADD (n={n}) — median", self.whole(add, "ours"), self.whole(add, "ref"), "ms"))
            rows.append((f"plugin: host-device DEL (n={n}) — median", self.whole(dele, "ours"), self.whole(dele, "ref"), "ms"))
            self.plugin_rss("host-device", "host-device", suites, chains, paths)
        else:
            self.report.missing.append(f"host-device: missing in {self.missing_in('host-device')}; skipped")
        suites = [s for s in (self.ours,) if s.working.get("tap")]
        if suites:
            chains = {"ours": [{"cniVersion": CNI_VERSION, "name": f"{self.prefix}-tap", "type": "tap",
                                "mtu": 1400, "multiQueue": True}]}
            add, dele, paths = self.chain_figures(suites, chains, n, "tap")
            rows.append((f"plugin: tap ADD (n={n}; not in the reference v1.1.1) — median", self.whole(add, "ours"), None, "ms"))
            rows.append((f"plugin: tap DEL (n={n}; not in the reference v1.1.1) — median", self.whole(dele, "ours"), None, "ms"))
            self.plugin_rss("tap", "tap", suites, chains, paths)
        else:
            self.report.missing.append("tap: missing in ours; skipped")

    def kernel_has_vrf(self):
        """Whether a VRF device can be made (in a throwaway namespace)."""
        import subprocess
        ns = f"{self.prefix}-vrfprobe"
        subprocess.run(["ip", "netns", "add", ns], capture_output=True)
        ok = subprocess.run(["ip", "-n", ns, "link", "add", "v", "type", "vrf", "table", "9"],
                            capture_output=True).returncode == 0
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        return ok

    def onelink_master(self):
        """A veth pair in the host (`<prefix>v`, peer `<prefix>w`), both up:
        the parent of the macvlan, ipvlan and vlan links; removed with the
        bridges on cleanup."""
        master, peer = f"{self.prefix}v", f"{self.prefix}w"
        if master not in self.bridges:
            subprocess.run(["ip", "link", "add", master, "type", "veth", "peer", "name", peer], check=True)
            subprocess.run(["ip", "link", "set", master, "up"], check=True)
            subprocess.run(["ip", "link", "set", peer, "up"], check=True)
            self.bridges.append(master)
        return master

    def kernel_has(self, master, kind):
        """Whether this kernel makes a link of `kind` on `master`."""
        probe = f"{self.prefix}t"
        extra = ["id", "9"] if kind == "vlan" else []
        r = subprocess.run(["ip", "link", "add", "link", master, "name", probe, "type", kind, *extra],
                           capture_output=True)
        subprocess.run(["ip", "link", "del", probe], capture_output=True)
        return r.returncode == 0

    def bench_link_plugins(self):
        """macvlan, ipvlan and vlan on their own (with host-local) on one
        master; a kind the kernel lacks is skipped."""
        rows = self.report.section("plugins making one link on a master")
        n = self.opts.n_plugin
        third = 150
        master = self.onelink_master()
        for plugin, keys in (("macvlan", {"mode": "bridge"}), ("ipvlan", {"mode": "l2"}), ("vlan", {"vlanId": 42})):
            suites = self.both(plugin, "host-local")
            if not suites:
                self.report.missing.append(f"{plugin}: missing in {self.missing_in(plugin)}; skipped")
                continue
            if not self.kernel_has(master, plugin):
                self.report.missing.append(f"{plugin}: this kernel makes no {plugin} links; skipped")
                continue
            chains = {}
            for s in suites:
                conf = {"cniVersion": CNI_VERSION, "name": f"{self.prefix}-{s.key}-{plugin}", "type": plugin,
                        "master": master,
                        "ipam": {"type": "host-local", "dataDir": os.path.join(self.tmp, s.key, plugin),
                                 "ranges": [[{"subnet": self.subnet(third)}]]}}
                conf.update(keys)
                chains[s.key] = [conf]
                third += 1
            add, dele, paths = self.chain_figures(suites, chains, n, plugin[:4])
            rows.append((f"plugin: {plugin} ADD (n={n}) — median", self.whole(add, "ours"), self.whole(add, "ref"), "ms"))
            rows.append((f"plugin: {plugin} DEL (n={n}) — median", self.whole(dele, "ours"), self.whole(dele, "ref"), "ms"))
            self.plugin_rss(plugin, f"{plugin}, incl. host-local", suites, chains, paths)

    def missing_in(self, plugin):
        return " and ".join(s.label for s in (self.ours, self.ref) if not s.working.get(plugin)) or "neither"

    def plugin_rss(self, plugin, label, suites, chains, paths):
        """Peak RSS of the plugin's ADD (under GNU time: the plugin and the
        children it reaped, e.g. iptables-restore; with taskstats also each
        process's own), after the chain before it; everything deleted again."""
        vals = {}
        for i in range(self.opts.n_rss):
            for s in self.order(suites, i):
                confs = chains[s.key]
                cid = f"{self.prefix}r{plugin[:4]}{i}"
                r = self.run_chain(s, confs[:-1], cid, paths[s.key]) if len(confs) > 1 else ([], None)
                if r is None:
                    continue
                c = s.call_rss(plugin, "ADD", confs[-1], self.tmp, cid=cid, netns=paths[s.key], prev=r[1])
                if not c.ok:
                    self.fail(f"{plugin} ADD (under GNU time)", s, c)
                    self.del_chain(s, confs[:-1], cid, paths[s.key], r[1])
                    continue
                self.keep_rss(vals, s.key, c)
                self.del_chain(s, confs, cid, paths[s.key], c.json())
        self.rss[f"{label} ADD"] = vals

    def bench_chains(self):
        """The default chains of three runtimes, ADD and DEL of the whole
        chain as libcni runs it, against the same chain of reference plugins."""
        rows = self.report.section("runtimes' default chains (whole chain, as libcni runs it)")
        n = self.opts.n_plugin
        third = 160
        specs = [
            ("containerd (bridge + portmap)", ("bridge", "portmap"), False),
            ("podman (bridge + portmap + firewall + tuning)", ("bridge", "portmap", "firewall", "tuning"), True),
            ("kind (ptp + host-local + portmap)", ("ptp", "portmap"), False),
        ]
        for label, plugins, masq in specs:
            suites = self.both("host-local", *plugins)
            if not suites:
                missing = [p for p in plugins if not all(s.working.get(p) for s in (self.ours, self.ref))]
                self.report.missing.append(f"chain {label}: {', '.join(missing)} missing; skipped")
                continue
            tag = "ch" + "".join(p[0] for p in plugins)
            chains = {}
            for s in suites:
                if plugins[0] == "bridge":
                    first = self.bridge_conf(s, tag, third, masq=masq, backend=self.ref_masq_backend if masq else None)
                    if masq:
                        first["hairpinMode"] = True
                else:
                    first = self.ptp_conf(s, tag, third)
                third += 1
                chains[s.key] = [first] + [self.chained_conf(s, p, tag) for p in plugins[1:]]
            add, dele, _ = self.chain_figures(suites, chains, n, tag)
            rows.append((f"chain: {label} ADD (n={n}) — median", self.whole(add, "ours"), self.whole(add, "ref"), "ms"))
            rows.append((f"chain: {label} DEL (n={n}) — median", self.whole(dele, "ours"), self.whole(dele, "ref"), "ms"))
