#!/usr/bin/env python3
"""Side-by-side benchmark of two CNI plugin suites (ours and the reference).

Run by scripts/bench.sh; see `driver.py --help`. Only the standard library is
used, so a fresh machine with python3 is enough.

Every plugin call is its own process, started with posix_spawn and the config
on stdin exactly as a runtime (libcni) does: CNI_* in the environment, the
plugin object with `name`/`cniVersion` injected on stdin, `prevResult` on DEL.
A call is timed from just before posix_spawn to just after wait4 reaps it;
wait4 also gives the peak RSS, which on Linux covers the process and every
descendant it reaped (bridge and its host-local child); taskstats.py gives
each process's own. Processes a call leaves behind are waited for, untimed,
before the next call starts (Settler).

The two suites are measured in one run and alternated call by call (the order
flips every iteration) so machine drift hits both equally. Every object the
run creates carries the run's prefix (`cnirsb<4 hex>`): namespaces, bridges,
network names. Subnets come from one /16 inside 10.240.0.0/12 that no host
route overlaps. Everything is removed in a `finally`, also on failure.
"""

import argparse
import datetime
import ipaddress
import json
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import taskstats
from dhcp import DhcpSteps
from floor import Floor, FullFloor, ipv6_off
from plugins import PluginSteps

IFNAME = "eth0"
ENV_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PLUGINS = ("bridge", "host-local", "loopback", "ptp", "portmap", "bandwidth", "tuning", "static", "firewall", "dhcp",
           "macvlan", "ipvlan", "vlan", "host-device", "tap", "sbr", "vrf")
CNI_VERSION = "1.0.0"
GNU_TIME = "/usr/bin/time"
# Executables a plugin runs that are the system's, not plugin code: their
# names as the kernel keeps them (comm: 15 bytes of the file name).
SYSTEM_TOOLS = ("iptables", "ip6tables", "xtables", "nft")


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- processes


class Call:
    """One finished plugin process."""

    __slots__ = ("code", "stdout", "ns", "rss_kib", "own_kib", "tool_kib")

    def __init__(self, code, stdout, ns, rss_kib):
        self.code = code
        self.stdout = stdout
        self.ns = ns
        self.rss_kib = rss_kib
        self.own_kib = None  # taskstats: the plugin's own processes
        self.tool_kib = None  # taskstats: the largest iptables/nft child

    @property
    def ok(self):
        return self.code == 0

    def json(self):
        try:
            return json.loads(self.stdout) if self.stdout.strip() else None
        except ValueError:
            return None

    def error_text(self):
        doc = self.json()
        if isinstance(doc, dict) and "msg" in doc:
            return f"code {doc.get('code')}: {doc['msg']} {doc.get('details', '')}".strip()
        text = self.stdout.decode(errors="replace").strip()
        return f"exit {self.code}: {text[:300] or '(no output)'}"


class Settler:
    """Waits for the processes a timed call leaves behind.

    Our plugins leave children on purpose: one holding the last reference of
    a netfilter socket, one waiting for a link deletion's RCU barrier. They
    may hold RTNL or the nf_tables commit mutex for 10-25 ms after the
    plugin exits, i.e. during the next timed call, usually the other suite's.
    The driver is a child subreaper (PR_SET_CHILD_SUBREAPER), so such orphans
    become its children; after every timed call has been reaped, settle()
    waits (untimed) for each of them and reaps it, before the next call
    starts. The driver is single-threaded and calls settle() only when none
    of its own processes runs (spawn() and reap() keep the set `own`, and
    subprocess.run waits for its child before returning), so every child
    that waitpid(-1) finds then is such an orphan.

    Our plugins leave children only where they will be reaped
    (`skel::orphans`): where PID 1 reaps, or where the environment says a
    subreaper does (CNI_RS_ORPHANS=reaped). This sandbox's PID 1 does not,
    and a subreaper cannot be seen from outside: so, as the reaping
    subreaper it is, the driver says so to our plugins (REAPED_ENV), unless
    `--no-reaper` asks for the figures of a machine where nobody reaps.
    """

    PR_SET_CHILD_SUBREAPER = 36
    TIMEOUT = 10.0

    def __init__(self):
        self.enabled = False
        self.own = set()

    def enable(self):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(self.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
        self.enabled = True

    def settle(self):
        """(processes reaped, ns it took); (0, 0) when disabled."""
        if not self.enabled:
            return 0, 0
        if self.own:
            raise RuntimeError(f"settle() while the driver's own processes {sorted(self.own)} run")
        t0 = time.perf_counter_ns()
        count = 0

        def expired(_signum, _frame):
            raise TimeoutError("a process left by a plugin call did not exit")

        old = signal.signal(signal.SIGALRM, expired)
        signal.setitimer(signal.ITIMER_REAL, self.TIMEOUT)
        try:
            while True:
                try:
                    os.waitpid(-1, 0)
                except ChildProcessError:
                    break
                count += 1
        except TimeoutError as e:
            # Stop settling rather than stall every later call.
            self.enabled = False
            log(f"{e} within {self.TIMEOUT:.0f} s; settling is off from here on")
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
        return count, time.perf_counter_ns() - t0


SETTLER = Settler()

# What the driver tells our plugins while it is their reaper (see Settler).
REAPED_ENV = {"CNI_RS_ORPHANS": "reaped"}


class Pending:
    __slots__ = ("pid", "out", "t0")

    def __init__(self, pid, out, t0):
        self.pid = pid
        self.out = out
        self.t0 = t0


def spawn(binary, env, stdin, errfd, argv=None):
    """Start one plugin process; stdin is already in its pipe when it starts."""
    if len(stdin) > 60000:
        raise RuntimeError("config larger than a pipe buffer")
    in_r, in_w = os.pipe()
    os.write(in_w, stdin)
    os.close(in_w)
    out_r, out_w = os.pipe()
    actions = [
        (os.POSIX_SPAWN_DUP2, in_r, 0),
        (os.POSIX_SPAWN_DUP2, out_w, 1),
        (os.POSIX_SPAWN_DUP2, errfd, 2),
    ]
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0] if argv else binary, argv or [binary], env, file_actions=actions)
    SETTLER.own.add(pid)
    os.close(in_r)
    os.close(out_w)
    return Pending(pid, out_r, t0)


def reap(p):
    chunks = []
    while True:
        b = os.read(p.out, 65536)
        if not b:
            break
        chunks.append(b)
    os.close(p.out)
    _, status, ru = os.wait4(p.pid, 0)
    t1 = time.perf_counter_ns()
    SETTLER.own.discard(p.pid)
    code = os.waitstatus_to_exitcode(status)
    return Call(code, b"".join(chunks), t1 - p.t0, ru.ru_maxrss)


# ------------------------------------------------------------------- suites


class Suite:
    def __init__(self, key, label, bindir, errfd):
        self.key = key  # "ours" / "ref"
        self.label = label
        self.bindir = bindir
        self.errfd = errfd
        self.exits = None  # a taskstats.Listener, when it works
        self.working = {}  # plugin -> bool
        self.masq_backend = None
        self.calls = 0
        self.left = 0  # processes its calls left behind
        self.settle_ns = []  # time settling took, after calls that left some
        self.reaped = False  # CNI_RS_ORPHANS=reaped in its calls (see Settler)

    def bin(self, plugin):
        return os.path.join(self.bindir, plugin)

    def env(self, command, cid="", netns="", ifname="", args=""):
        env = {
            "CNI_COMMAND": command,
            "CNI_CONTAINERID": cid,
            "CNI_NETNS": netns,
            "CNI_IFNAME": ifname,
            "CNI_ARGS": args,
            "CNI_PATH": self.bindir,
            "PATH": ENV_PATH,
        }
        if self.reaped:
            env.update(REAPED_ENV)
        return env

    def start(self, plugin, command, conf, cid="", netns="", ifname=IFNAME, prev=None, argv=None):
        doc = dict(conf)
        if prev is not None:
            doc["prevResult"] = prev
        args = f"IgnoreUnknown=1;K8S_POD_NAMESPACE=cnirsb;K8S_POD_NAME={cid}" if cid else ""
        env = self.env(command, cid, netns, ifname, args)
        return spawn(self.bin(plugin), env, json.dumps(doc).encode(), self.errfd, argv)

    def settle(self, calls=1):
        """After this suite's calls were reaped: wait for what they left."""
        count, ns = SETTLER.settle()
        self.calls += calls
        if count:
            self.left += count
            self.settle_ns.append(ns)

    def call(self, plugin, command, conf, **kw):
        c = reap(self.start(plugin, command, conf, **kw))
        self.settle()
        return c

    def call_rss(self, plugin, command, conf, tmpdir, **kw):
        """A call run under GNU time, whose %M is max(plugin, reaped children).

        wait4 in this process would count the Python parent's pages: the kernel
        records the pre-exec address space's high-water mark at exec, and
        posix_spawn (vfork) or fork from Python carries ours over. GNU time is
        a small C program, so its share is a few hundred KiB at most.
        """
        out = os.path.join(tmpdir, "rss")
        argv = [GNU_TIME, "-f", "%M", "-o", out, self.bin(plugin)]
        if self.exits:
            self.exits.drain()
            self.exits.lost = False
        p = self.start(plugin, command, conf, argv=argv, **kw)
        c = reap(p)
        self.settle()
        try:
            with open(out) as f:
                c.rss_kib = int(f.read().split()[-1])
        except (OSError, ValueError, IndexError):
            c.rss_kib = None
        if self.exits:
            self.split_rss(c, self.exits.drain(), p.pid)
        return c

    def split_rss(self, c, exits, time_pid):
        """Each process's own peak (taskstats) under GNU time's pid: the
        plugin's processes (itself, its IPAM child, its forks) apart from
        the system's iptables/nft tools it runs. Orphans, reaped by the
        driver after settling, count with the tree they came from."""
        if self.exits.lost:
            return
        own, tool = [], []
        for e in taskstats.tree(exits, time_pid, os.getpid()):
            (tool if e.comm.startswith(SYSTEM_TOOLS) else own).append(e.rss_kib)
        c.own_kib = max(own, default=None)
        c.tool_kib = max(tool, default=None)

    def version(self, plugin):
        env = self.env("VERSION", "", "dummy", "dummy")
        c = reap(spawn(self.bin(plugin), env, b'{"cniVersion":"1.1.0"}', self.errfd))
        self.settle()
        return c

    def probe(self):
        for plugin in PLUGINS:
            path = self.bin(plugin)
            ok = False
            if os.access(path, os.X_OK):
                c = self.version(plugin)
                doc = c.json()
                ok = c.ok and isinstance(doc, dict) and CNI_VERSION in doc.get("supportedVersions", [])
            self.working[plugin] = ok
            if not os.path.exists(path):
                log(f"{self.label}: no {plugin} in {self.bindir}; its rows are skipped")
            elif not ok:
                log(f"{self.label}: {plugin} does not answer VERSION; its rows are skipped")


class FloorRun:
    """A Floor alternated with the suites: one ADD and one DEL per step; and
    the FullFloor's ADD (its DEL untimed), each on a bridge of its own."""

    def __init__(self, floor, path, full, full_path):
        self.floor = floor
        self.path = path
        self.full = full
        self.full_path = full_path
        self.add = []
        self.dele = []
        self.full_add = []

    def step(self):
        self.add.append(self.floor.add(self.path))
        self.dele.append(Floor.delete(self.path))
        self.full_add.append(self.full.add(self.full_path))
        Floor.delete(self.full_path)


def is_ip(name):
    """Lease files are named after the address they hold."""
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False


# --------------------------------------------------------------- statistics


def pct(values, q):
    """Nearest-rank percentile."""
    if not values:
        return None
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(round(q / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


def median(values):
    if not values:
        return None
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


# ------------------------------------------------------------------ results


class Report:
    def __init__(self):
        self.sections = []  # (title, rows); row = (metric, ours, ref, unit, lower_is_better)
        self.notes = []
        self.missing = []

    def section(self, title):
        rows = []
        self.sections.append((title, rows))
        return rows


def fmt_value(v, unit):
    if v is None:
        return "n/a"
    if isinstance(v, str):
        return v
    if unit == "ms":
        if abs(v) >= 1e10:
            return f"{v / 1e9:.2f} s"
        return f"{v / 1e6:.2f} ms" if abs(v) >= 1e5 else f"{v / 1e3:.0f} µs"
    if unit == "KiB":
        return f"{v / 1024:.1f} MiB" if v >= 10240 else f"{v:.0f} KiB"
    if unit == "B":
        return f"{v / 1048576:.2f} MiB"
    return f"{v} {unit}"


def fmt_ratio(ours, ref):
    if not isinstance(ours, (int, float)) or not isinstance(ref, (int, float)) or ref <= 0 or ours < 0:
        return "—"
    return f"{ours / ref:.2f}×"


# Rows of each process's own peak RSS (taskstats), next to GNU time's.
RSS_OWN = "peak RSS of the plugin process alone (with an IPAM child, forks), "
RSS_TOOL = "peak RSS of the largest iptables child (the system's tool), "

# Targets from the issues that asked for this benchmark: (label, metric
# prefix, limit, kind). "ratio": ours/ref of the first matching row at most
# limit; "each": the same for every matching row; "delta": ours at most
# limit (ns) in a row that is already a difference; "info": like "each" but
# not judged while the rows of another target (RSS_OWN) are there, judged
# as "each" when they are not (taskstats unavailable).
TARGETS = [
    ("bridge ADD ≤ 0.3×", "bridge ADD (n=", 0.3, "ratio"),
    ("bridge ADD with ipMasq ≤ 0.25×", "bridge ipMasq (iptables) ADD", 0.25, "ratio"),
    ("bridge ADD with ipMasq ≤ 0.25× (ours nftables)", "bridge ipMasq (ours nftables", 0.25, "ratio"),
    ("bridge DEL ≤ 1.0×", "bridge DEL (n=", 1.0, "ratio"),
    ("bridge DEL within 1 ms of the kernel's floor", "bridge DEL over its floor", 1e6, "delta"),
    ("bridge DEL with 200 live ≤ 1.0×", "DEL median, 200–101 live", 1.0, "ratio"),
    ("bridge + ipMasq DEL ≤ 0.4×", "bridge ipMasq (iptables) DEL", 0.4, "ratio"),
    ("64-way ADD ≤ 0.4×", "64 ADDs started at once", 0.4, "ratio"),
    ("64 parallel DELs ≤ 0.4×", "64 DELs started at once", 0.4, "ratio"),
    ("issue 12, ≤ 0.3×: firewall", "plugin: firewall", 0.3, "each"),
    ("issue 12, ≤ 0.3×: tuning", "plugin: tuning", 0.3, "each"),
    ("issue 12, ≤ 0.3×: bandwidth", "plugin: bandwidth", 0.3, "each"),
    ("issue 26, ≤ 0.3×: sbr", "plugin: sbr", 0.3, "each"),
    ("issue 26, ≤ 0.3×: vrf", "plugin: vrf", 0.3, "each"),
    # "Flat": a slope per 100 live containers within the run-to-run spread
    # of these slopes (±0.4 ms over nine runs, docs/benchmarks.md).
    ("scale, flat (slope per 100 live ≤ 0.5 ms): ADD over the full floor",
     "ADD: the plugin's cost over the full floor", 5e5, "delta"),
    ("scale, flat (slope per 100 live ≤ 0.5 ms): DEL over its floor",
     "DEL: the plugin's own cost", 5e5, "delta"),
    ("no slower than the reference:", "plugin: ", 1.0, "each"),
    ("no slower than the reference:", "chain: ", 1.0, "each"),
    ("peak RSS ≤ 0.5×, plugin process alone:", RSS_OWN, 0.5, "each"),
    ("peak RSS ≤ 0.5×, max over the process tree:", "peak RSS, ", 0.5, "info"),
    ("suite size ≤ 0.2×", "binary size, suite", 0.2, "ratio"),
    ("issue 25, ≤ 0.3×: the dhcp plugin call,", "dhcp plugin call: ", 0.3, "each"),
]


def render_targets(report):
    rows = [r for _, section in report.sections for r in section]
    lines = ["### Targets", "", "| target | ours/ref | met |", "|---|---:|---|"]

    def number(v):
        return isinstance(v, (int, float))

    judged = {prefix for _, prefix, _, kind in TARGETS if kind == "each" and any(r[0].startswith(prefix) for r in rows)}
    for label, prefix, limit, kind in TARGETS:
        found = [r for r in rows if r[0].startswith(prefix) and "p95" not in r[0]]
        if kind == "info" and RSS_OWN not in judged:
            kind = "each"
        if kind not in ("each", "info"):
            found = found[:1]
        for metric, ours, ref, _ in found:
            name = f"{label} {metric.removeprefix(prefix).lstrip()}" if kind in ("each", "info") else label
            if kind == "delta":
                if number(ours):
                    lines.append(f"| {name} | {ours / 1e6:+.2f} ms | {'yes' if ours <= limit else 'no'} |")
                continue
            if not number(ours) or not number(ref) or ref <= 0:
                lines.append(f"| {name} | — | not measured |")
                continue
            ratio = ours / ref
            met = "not judged (see plugin process alone)" if kind == "info" else ("yes" if ratio <= limit else "no")
            lines.append(f"| {name} | {ratio:.2f}× | {met} |")
    return "\n".join(lines) + "\n"


def render(report):
    lines = []
    for title, rows in report.sections:
        if not rows:
            continue
        lines.append(f"### {title}")
        lines.append("")
        lines.append("| metric | ours | reference | ours/ref |")
        lines.append("|---|---:|---:|---:|")
        for metric, ours, ref, unit in rows:
            lines.append(
                f"| {metric} | {fmt_value(ours, unit)} | {fmt_value(ref, unit)} | {fmt_ratio(ours, ref)} |"
            )
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------- the bench


class Bench(PluginSteps, DhcpSteps):
    def __init__(self, opts):
        self.opts = opts
        self.prefix = opts.prefix or "cnirsb" + os.urandom(2).hex()
        self.tmp = tempfile.mkdtemp(prefix=self.prefix + "-")
        self.errlog_path = os.path.join(self.tmp, "plugins-stderr.log")
        self.errfd = os.open(self.errlog_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.netns = []
        self.bridges = []
        self.report = Report()
        self.base = self.pick_base()
        self.nft_tables_before = self.nft_tables()
        self.ours = Suite("ours", "ours", opts.ours, self.errfd)
        self.ours.reaped = not opts.no_reaper and not opts.no_settle
        self.ref = Suite("ref", "reference", opts.ref, self.errfd)
        self.failures = []
        self.settler = SETTLER
        with open("/proc/loadavg") as f:
            self.loadavg = " ".join(f.read().split()[:3])

    # -- environment -------------------------------------------------------

    def pick_base(self):
        """A 10.x.0.0/16 inside 10.240.0.0/12 that no host route overlaps."""
        out = subprocess.run(["ip", "-4", "route", "show", "table", "all"], capture_output=True, text=True).stdout
        used = []
        for line in out.splitlines():
            word = line.split()[0] if line.split() else ""
            if word in ("local", "broadcast", "unreachable", "blackhole", "prohibit"):
                word = line.split()[1]
            try:
                used.append(ipaddress.ip_network(word if word != "default" else "0.0.0.0/0", strict=False))
            except ValueError:
                pass
        candidates = list(range(241, 256))
        start = int.from_bytes(os.urandom(1), "big") % len(candidates)
        for i in range(len(candidates)):
            second = candidates[(start + i) % len(candidates)]
            net = ipaddress.ip_network(f"10.{second}.0.0/16")
            if not any(u.overlaps(net) and u.prefixlen > 0 for u in used):
                return second
        raise RuntimeError("no free /16 inside 10.240.0.0/12")

    def subnet(self, third, plen=24):
        return f"10.{self.base}.{third}.0/{plen}"

    @staticmethod
    def nft_tables():
        r = subprocess.run(["nft", "list", "tables"], capture_output=True, text=True)
        return set(r.stdout.splitlines()) if r.returncode == 0 else set()

    def add_netns(self, names):
        batch = "".join(f"netns add {n}\n" for n in names)
        subprocess.run(["ip", "-batch", "-"], input=batch, text=True, check=True)
        self.netns.extend(names)
        return [f"/run/netns/{n}" for n in names]

    def del_netns(self, names):
        if not names:
            return
        batch = "".join(f"netns delete {n}\n" for n in names)
        subprocess.run(["ip", "-force", "-batch", "-"], input=batch, text=True, capture_output=True)
        gone = set(names)
        self.netns = [n for n in self.netns if n not in gone]

    def bridge_conf(self, suite, tag, third, plen=24, masq=False, backend=None):
        net = f"{self.prefix}-{suite.key}-{tag}"
        # Names are at most 15 bytes: the prefix (10), the suite, the tag's number.
        self.tags = getattr(self, "tags", {})
        br = f"{self.prefix}{suite.key[0]}{self.tags.setdefault(tag, len(self.tags)):x}"
        if br not in self.bridges:
            self.bridges.append(br)
        datadir = os.path.join(self.tmp, suite.key, tag)
        conf = {
            "cniVersion": CNI_VERSION,
            "name": net,
            "type": "bridge",
            "bridge": br,
            "isGateway": True,
            "ipMasq": masq,
            "ipam": {
                "type": "host-local",
                "dataDir": datadir,
                "ranges": [[{"subnet": self.subnet(third, plen)}]],
                "routes": [{"dst": "0.0.0.0/0"}],
            },
        }
        if masq and backend:
            conf["ipMasqBackend"] = backend
        return conf

    def cleanup(self):
        log("cleaning up")
        self.del_netns(list(self.netns))
        for br in self.bridges:
            subprocess.run(["ip", "link", "del", br], capture_output=True)
        self.sweep_masq()
        if getattr(self, "exits", None):
            self.exits.close()
        os.close(self.errfd)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def sweep_masq(self):
        """Remove masquerade rules left by failed DELs (only rules naming our prefix)."""
        for tool in ("iptables", "ip6tables"):
            r = subprocess.run([tool, "-t", "nat", "-S"], capture_output=True, text=True)
            if r.returncode != 0:
                continue
            chains = set()
            for line in r.stdout.splitlines():
                if line.startswith("-A POSTROUTING") and self.prefix in line:
                    words = shlex.split(line)
                    words[0] = "-D"
                    subprocess.run([tool, "-t", "nat", *words], capture_output=True)
                    if "-j" in words:
                        chains.add(words[words.index("-j") + 1])
            for chain in chains:
                if chain.startswith("CNI-"):
                    subprocess.run([tool, "-t", "nat", "-F", chain], capture_output=True)
                    subprocess.run([tool, "-t", "nat", "-X", chain], capture_output=True)
        table = "table inet cni_plugins_masquerade"
        r = subprocess.run(["nft", "-a", "list", "table", "inet", "cni_plugins_masquerade"], capture_output=True, text=True)
        if r.returncode == 0:
            chain = None
            for line in r.stdout.splitlines():
                words = line.split()
                if words[:1] == ["chain"]:
                    chain = words[1]
                elif self.prefix in line and "# handle" in line:
                    handle = words[-1]
                    subprocess.run(["nft", "delete", "rule", "inet", "cni_plugins_masquerade", chain, "handle", handle], capture_output=True)
            rules = [l for l in r.stdout.splitlines() if " masquerade" in l and not l.lstrip().startswith("table")]
            if table not in self.nft_tables_before and not rules:
                subprocess.run(["nft", "delete", "table", "inet", "cni_plugins_masquerade"], capture_output=True)

    # -- helpers -----------------------------------------------------------

    def both(self, *plugins):
        """The suites whose listed plugins work, in alternation order."""
        return [s for s in (self.ours, self.ref) if all(s.working.get(p) for p in plugins)]

    @staticmethod
    def order(suites, i):
        return suites if i % 2 == 0 else list(reversed(suites))

    def fail(self, what, suite, call):
        msg = f"{suite.label} {what} failed: {call.error_text()}"
        log(msg)
        self.failures.append(msg)

    def rows_latency(self, rows, metric, samples):
        """Adds median and p95 rows for {suite_key: [ns]}."""
        o, r = samples.get("ours", []), samples.get("ref", [])
        rows.append((f"{metric} — median", median(o), median(r), "ms"))
        rows.append((f"{metric} — p95", pct(o, 95), pct(r, 95), "ms"))

    # -- benchmarks --------------------------------------------------------

    def bench_version(self):
        rows = self.report.section("Process start")
        n = self.opts.n_version
        suites = self.both("bridge")
        samples = {s.key: [] for s in suites}
        for i in range(n):
            for s in self.order(suites, i):
                c = s.version("bridge")
                if c.ok:
                    samples[s.key].append(c.ns)
        self.rows_latency(rows, f"VERSION, bridge binary (n={n})", samples)
        self.medians["VERSION"] = {k: median(v) for k, v in samples.items()}
        # The floor: the same spawn/reap path around a program that does nothing.
        true = shutil.which("true") or "/bin/true"
        floor = []
        for _ in range(n):
            p = spawn(true, {}, b"", self.errfd)
            floor.append(reap(p).ns)
        self.report.notes.append(
            f"Timing floor on this machine: spawning and reaping `{true}` the same way takes "
            f"{median(floor) / 1e6:.2f} ms (median of {n})."
        )

    def bench_loopback(self):
        rows = self.report.section("loopback")
        suites = self.both("loopback")
        if not suites:
            return
        n = self.opts.n_small
        paths = {s.key: self.add_netns([f"{self.prefix}-{s.key}-lo"])[0] for s in suites}
        conf = {"cniVersion": CNI_VERSION, "name": f"{self.prefix}-lo", "type": "loopback"}
        samples = {s.key: [] for s in suites}
        for i in range(n):
            for s in self.order(suites, i):
                c = s.call("loopback", "ADD", conf, cid=f"{self.prefix}lo{i}", netns=paths[s.key], ifname="lo")
                if not c.ok:
                    self.fail("loopback ADD", s, c)
                    break
                samples[s.key].append(c.ns)
        self.rows_latency(rows, f"loopback ADD (n={n})", samples)
        confs = {s.key: conf for s in suites}
        self.measure_rss("loopback ADD", suites, "loopback", confs, paths, ifname="lo", teardown=False)

    def bench_host_local(self):
        rows = self.report.section("host-local on its own")
        suites = self.both("host-local")
        if not suites:
            return
        n = self.opts.n_small
        ns_path = self.scratch_ns
        confs = {s.key: self.bridge_conf(s, "hl", 16 + (s.key == "ref")) for s in suites}
        add = {s.key: [] for s in suites}
        dele = {s.key: [] for s in suites}
        for i in range(n):
            for s in self.order(suites, i):
                cid = f"{self.prefix}hl{i}"
                c = s.call("host-local", "ADD", confs[s.key], cid=cid, netns=ns_path)
                if not c.ok:
                    self.fail("host-local ADD", s, c)
                    continue
                add[s.key].append(c.ns)
                d = s.call("host-local", "DEL", confs[s.key], cid=cid, netns=ns_path, prev=c.json())
                if not d.ok:
                    self.fail("host-local DEL", s, d)
                    continue
                dele[s.key].append(d.ns)
        self.rows_latency(rows, f"host-local ADD (n={n})", add)
        self.medians["host-local ADD"] = {k: median(v) for k, v in add.items()}
        self.rows_latency(rows, f"host-local DEL (n={n})", dele)
        paths = {s.key: ns_path for s in suites}
        self.measure_rss("host-local ADD", suites, "host-local", confs, paths)

    def masq_backend_for(self, suite):
        """The reference v1.1.1 knows only iptables; give ours the same one."""
        return self.ref_masq_backend

    def bench_bridge_serial(self):
        rows = self.report.section("bridge, one container at a time")
        suites = self.both("bridge", "host-local")
        if not suites:
            self.report.missing.append("bridge rows: no suite has a working bridge + host-local")
            return
        n = self.opts.n_bridge
        variants = [("plain", "bridge", False, {}), ("masq", f"bridge ipMasq ({self.ref_masq_backend})", True, {})]
        if self.ours in suites and self.ref_masq_backend != "nftables":
            variants.append(("nftm", "bridge ipMasq (ours nftables, reference iptables)", True, {"ours": "nftables"}))
        third = 1
        for tag, label, masq, override in variants:
            use = [s for s in suites if not (tag == "nftm" and s is self.ours and not self.ours_has_nft)]
            if tag == "nftm" and self.ours not in use:
                continue
            confs, paths = {}, {}
            for s in use:
                backend = override.get(s.key, self.ref_masq_backend)
                confs[s.key] = self.bridge_conf(s, tag, third, masq=masq, backend=backend)
                third += 1
                paths[s.key] = self.add_netns([f"{self.prefix}-{s.key}-{tag}"])[0]
            # Warm-up: the first ADD creates the bridge, the nat table, ...
            alive = []
            for s in use:
                ok = True
                for w in range(2):
                    cid = f"{self.prefix}w{tag}{w}"
                    c = s.call("bridge", "ADD", confs[s.key], cid=cid, netns=paths[s.key])
                    if not c.ok:
                        self.fail(f"bridge ADD ({label}, warm-up)", s, c)
                        ok = False
                        break
                    d = s.call("bridge", "DEL", confs[s.key], cid=cid, netns=paths[s.key], prev=c.json())
                    if not d.ok:
                        self.fail(f"bridge DEL ({label}, warm-up)", s, d)
                        ok = False
                        break
                if ok:
                    alive.append(s)
            add = {s.key: [] for s in alive}
            dele = {s.key: [] for s in alive}
            floor = self.floor_setup(tag) if tag == "plain" else None
            for i in range(n):
                if floor and i % 2:
                    floor.step()
                results = {}
                for s in self.order(alive, i):
                    cid = f"{self.prefix}{tag}{i}"
                    c = s.call("bridge", "ADD", confs[s.key], cid=cid, netns=paths[s.key])
                    if not c.ok:
                        self.fail(f"bridge ADD ({label})", s, c)
                        continue
                    add[s.key].append(c.ns)
                    results[s.key] = (cid, c.json())
                for s in self.order(alive, i + 1):
                    if s.key not in results:
                        continue
                    cid, prev = results[s.key]
                    d = s.call("bridge", "DEL", confs[s.key], cid=cid, netns=paths[s.key], prev=prev)
                    if not d.ok:
                        self.fail(f"bridge DEL ({label})", s, d)
                        continue
                    dele[s.key].append(d.ns)
                if floor and not i % 2:
                    floor.step()
            self.rows_latency(rows, f"{label} ADD (n={n})", add)
            self.rows_latency(rows, f"{label} DEL (n={n})", dele)
            if floor:
                self.floor_rows(floor, add, dele)
            for s in alive:
                left = self.leftovers(s, confs[s.key], [paths[s.key]])
                if masq:
                    rules = self.masq_rules(confs[s.key]["name"])
                    if rules:
                        left.append(f"{rules} masquerade rules")
                if left:
                    self.failures.append(f"{s.label} {label}: left after DEL: {', '.join(left)}")
            if tag == "plain":
                self.medians["bridge ADD"] = {k: median(v) for k, v in add.items()}
                self.measure_rss("bridge ADD incl. IPAM (ours in-process, the reference's child)", alive, "bridge", confs, paths)
            elif tag == "masq":
                self.measure_rss("bridge ipMasq ADD incl. IPAM and iptables children", alive, "bridge", confs, paths)

    def floor_setup(self, tag, third=20):
        """The kernel's floor for bridge ADD and DEL (see floor.py), alternated
        with the suites' calls on a bridge and namespace of its own."""
        br = f"{self.prefix}f{tag[:3]}"[:15]
        subprocess.run(["ip", "link", "add", br, "type", "bridge"], check=True)
        subprocess.run(["ip", "link", "set", br, "up"], check=True)
        self.bridges.append(br)
        path = self.add_netns([f"{self.prefix}-floor-{tag}"])[0]
        full_path = self.add_netns([f"{self.prefix}-ffloor-{tag}"])[0]
        return FloorRun(Floor(br), path, self.full_floor_setup(tag, third), full_path)

    def full_floor_setup(self, tag, third):
        """The full ADD floor (floor.py's FullFloor) on a bridge of its own,
        which has its gateway address as our bridges have theirs."""
        br = f"{self.prefix}g{tag[:3]}"[:15]
        subnet = self.subnet(third, 22)
        gateway = subnet.replace(".0/", ".1/")
        subprocess.run(["ip", "link", "add", br, "type", "bridge"], check=True)
        self.bridges.append(br)
        subprocess.run(["ip", "addr", "add", gateway, "dev", br], check=True)
        subprocess.run(["ip", "link", "set", br, "up"], check=True)
        return FullFloor(br, subnet)

    def floor_rows(self, floor, add, dele):
        rows = self.report.section("bridge against the kernel's floor")
        fa, fd = median(floor.add), median(floor.dele)
        self.medians["floor"] = (fa, fd)
        rows.append((f"kernel floor of ADD (veth pair into the netns, up; n={len(floor.add)})", fa, None, "ms"))
        rows.append((f"kernel floor of DEL (RTM_DELLINK, waited for; n={len(floor.dele)})", fd, None, "ms"))
        ff = median(floor.full_add)
        rows.append((f"full kernel floor of ADD (our bridge ADD's kernel requests, from the driver; "
                     f"n={len(floor.full_add)})", ff, None, "ms"))

        def over(samples, key, base):
            m = median(samples.get(key, []))
            return None if m is None or base is None else m - base

        rows.append(("bridge ADD over its floor", over(add, "ours", fa), over(add, "ref", fa), "ms"))
        rows.append(("bridge DEL over its floor", over(dele, "ours", fd), over(dele, "ref", fd), "ms"))
        rows.append(("bridge ADD over its full floor", over(add, "ours", ff), over(add, "ref", ff), "ms"))
        floor.floor.close()

    def measure_rss(self, metric, suites, plugin, confs, paths, ifname=IFNAME, teardown=True):
        """Peak RSS over a few ADDs run under GNU time (DEL after each)."""
        vals = {}
        if not os.access(GNU_TIME, os.X_OK):
            self.report.missing.append(f"peak RSS: {GNU_TIME} not found")
            return
        for i in range(self.opts.n_rss):
            for s in self.order(suites, i):
                cid = f"{self.prefix}r{len(self.rss)}x{i}"
                kw = dict(cid=cid, netns=paths[s.key], ifname=ifname)
                c = s.call_rss(plugin, "ADD", confs[s.key], self.tmp, **kw)
                if not c.ok:
                    self.fail(f"{metric} (under GNU time)", s, c)
                    continue
                self.keep_rss(vals, s.key, c)
                if teardown:
                    d = s.call(plugin, "DEL", confs[s.key], prev=c.json(), **kw)
                    if not d.ok:
                        self.fail(f"{plugin} DEL after RSS probe", s, d)
        self.rss[metric] = vals

    @staticmethod
    def keep_rss(vals, key, c):
        """Max over calls of each peak: "tree" (GNU time), "own" and "tool"
        (taskstats, see Suite.split_rss)."""
        for kind, v in (("tree", c.rss_kib), ("own", c.own_kib), ("tool", c.tool_kib)):
            if v:
                per = vals.setdefault(kind, {})
                per[key] = max(per.get(key, 0), v)

    @staticmethod
    def masq_rules(netname):
        """Masquerade rules (iptables or nftables) that still name the network."""
        count = 0
        for cmd in (["iptables", "-t", "nat", "-S"], ["nft", "list", "table", "inet", "cni_plugins_masquerade"]):
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode == 0:
                count += sum(1 for line in r.stdout.splitlines() if netname in line)
        return count

    def leftovers(self, suite, conf, paths):
        """What a full DEL should have removed but did not."""
        left = []
        r = subprocess.run(["ip", "-o", "link", "show", "master", conf["bridge"]], capture_output=True, text=True)
        ports = [l for l in r.stdout.splitlines() if l.strip()]
        if ports:
            left.append(f"{len(ports)} bridge ports")
        netdir = os.path.join(conf["ipam"]["dataDir"], conf["name"])
        if os.path.isdir(netdir):
            leases = [f for f in os.listdir(netdir) if is_ip(f)]
            if leases:
                left.append(f"{len(leases)} leases")
        batch = "".join(f"-n {os.path.basename(p)} link show {IFNAME}\n" for p in paths)
        r = subprocess.run(["ip", "-force", "-o", "-batch", "-"], input=batch, capture_output=True, text=True)
        found = sum(1 for l in r.stdout.splitlines() if f" {IFNAME}@" in l)
        if found:
            left.append(f"{found} container interfaces")
        return left

    def bench_parallel(self):
        rows = self.report.section("64 containers at once")
        suites = self.both("bridge", "host-local")
        if not suites:
            return
        k = 64
        rounds = self.opts.rounds_parallel
        confs, paths = {}, {}
        for idx, s in enumerate(suites):
            confs[s.key] = self.bridge_conf(s, "par", 6 + idx)
            paths[s.key] = self.add_netns([f"{self.prefix}-{s.key}-p{j}" for j in range(k)])
        alive = []
        for s in suites:  # warm-up: bridge exists before the burst
            c = s.call("bridge", "ADD", confs[s.key], cid=f"{self.prefix}pw", netns=paths[s.key][0])
            d = s.call("bridge", "DEL", confs[s.key], cid=f"{self.prefix}pw", netns=paths[s.key][0], prev=c.json())
            if c.ok and d.ok:
                alive.append(s)
            else:
                self.fail("bridge warm-up (parallel)", s, c if not c.ok else d)
        add = {s.key: [] for s in alive}
        dele = {s.key: [] for s in alive}
        checks = {s.key: [] for s in alive}
        for rnd in range(rounds):
            for s in self.order(alive, rnd):
                cids = [f"{self.prefix}p{rnd}x{j}" for j in range(k)]
                t0 = time.perf_counter_ns()
                pend = [s.start("bridge", "ADD", confs[s.key], cid=cids[j], netns=paths[s.key][j]) for j in range(k)]
                calls = [reap(p) for p in pend]
                add[s.key].append(time.perf_counter_ns() - t0)
                s.settle(k)
                bad = [c for c in calls if not c.ok]
                addrs = []
                for c in calls:
                    doc = c.json() or {}
                    addrs += [ip.get("address") for ip in doc.get("ips", [])]
                problems = []
                if bad:
                    problems.append(f"{len(bad)} ADDs failed ({bad[0].error_text()})")
                if len(addrs) != k - len(bad) or len(set(addrs)) != len(addrs):
                    problems.append(f"{len(set(addrs))} distinct addresses for {k - len(bad)} ADDs")
                t0 = time.perf_counter_ns()
                pend = [
                    s.start("bridge", "DEL", confs[s.key], cid=cids[j], netns=paths[s.key][j], prev=calls[j].json())
                    for j in range(k)
                ]
                dcalls = [reap(p) for p in pend]
                dele[s.key].append(time.perf_counter_ns() - t0)
                s.settle(k)
                dbad = [c for c in dcalls if not c.ok]
                if dbad:
                    problems.append(f"{len(dbad)} DELs failed ({dbad[0].error_text()})")
                left = self.leftovers(s, confs[s.key], paths[s.key])
                if left:
                    problems.append("left after DEL: " + ", ".join(left))
                checks[s.key] += problems
                for p in problems:
                    self.failures.append(f"{s.label} parallel round {rnd}: {p}")
        o, r = add.get("ours", []), add.get("ref", [])
        rows.append((f"64 ADDs started at once, wall time (median of {rounds})", median(o), median(r), "ms"))
        o, r = dele.get("ours", []), dele.get("ref", [])
        rows.append((f"64 DELs started at once, wall time (median of {rounds})", median(o), median(r), "ms"))

        def verdict(key):
            if key not in checks:
                return None
            return "ok" if not checks[key] else "FAIL"

        rows.append(("all 64 addresses distinct, nothing left after DEL", verdict("ours"), verdict("ref"), ""))

    def bench_scale(self):
        rows = self.report.section(f"one bridge growing to {self.opts.scale} live containers")
        suites = self.both("bridge", "host-local")
        if not suites:
            return
        total = self.opts.scale
        confs, paths = {}, {}
        for idx, s in enumerate(suites):
            confs[s.key] = self.bridge_conf(s, "big", 8 + 4 * idx, plen=22)
            paths[s.key] = self.add_netns([f"{self.prefix}-{s.key}-b{j}" for j in range(total + 1)])
        alive = []
        for s in suites:
            cid = f"{self.prefix}bw"
            c = s.call("bridge", "ADD", confs[s.key], cid=cid, netns=paths[s.key][total])
            d = s.call("bridge", "DEL", confs[s.key], cid=cid, netns=paths[s.key][total], prev=c.json())
            if c.ok and d.ok:
                alive.append(s)
            else:
                self.fail("bridge warm-up (scale)", s, c if not c.ok else d)
        # The kernel's floor grows a bridge of its own alongside.
        floor = self.floor_setup("big", 24)
        floor_paths = self.add_netns([f"{self.prefix}-floor-b{j}" for j in range(total)])
        full_paths = self.add_netns([f"{self.prefix}-ffloor-b{j}" for j in range(total)])
        if self.opts.no_container_ipv6:
            # The experiment that shows where the slope comes from (see
            # docs/benchmarks.md): every container's eth0 without IPv6.
            rows.append(("containers' eth0 without IPv6 (--no-container-ipv6)", "yes", "yes", ""))
            for p in [p for s in suites for p in paths[s.key]] + floor_paths + full_paths:
                ipv6_off(p)
        lat = {s.key: [] for s in alive}
        live = {s.key: [] for s in alive}
        lat["floor"] = []
        lat["full"] = []
        log(f"growing one bridge per suite (and the floors') to {total} containers")
        for i in range(total):
            for s in self.order(alive, i):
                cid = f"{self.prefix}b{i}"
                c = s.call("bridge", "ADD", confs[s.key], cid=cid, netns=paths[s.key][i])
                if not c.ok:
                    self.fail(f"bridge ADD #{i + 1} (scale)", s, c)
                    lat[s.key].append(None)
                    continue
                lat[s.key].append(c.ns)
                live[s.key].append((cid, paths[s.key][i], c.json()))
            lat["floor"].append(floor.floor.add(floor_paths[i]))
            lat["full"].append(floor.full.add(full_paths[i]))
        step = 100
        bins = [(lo, min(total, lo + step)) for lo in range(0, total, step)]

        def med(samples, key, lo, hi):
            return median([v for v in samples.get(key, [])[lo:hi] if v is not None])

        for lo, hi in bins:
            rows.append((f"ADD median, containers {lo + 1}–{hi}", med(lat, "ours", lo, hi), med(lat, "ref", lo, hi), "ms"))
            log(f"  ADD medians {lo + 1}–{hi}: " + ", ".join(
                f"{k} {med(lat, k, lo, hi) / 1e6:.2f} ms" for k in lat if med(lat, k, lo, hi) is not None))
        self.log_full_floor(floor.full, bins)
        log(f"deleting {total} containers per suite (and the floor's)")
        dele = {s.key: [] for s in alive}
        dele["floor"] = []
        for i in range(total):
            for s in self.order(alive, i):
                if i >= len(live[s.key]):
                    continue
                cid, path, prev = live[s.key][i]
                d = s.call("bridge", "DEL", confs[s.key], cid=cid, netns=path, prev=prev)
                if not d.ok:
                    self.fail("bridge DEL (scale)", s, d)
                    dele[s.key].append(None)
                    continue
                dele[s.key].append(d.ns)
            dele["floor"].append(Floor.delete(floor_paths[i]))
            Floor.delete(full_paths[i])  # the full floor shrinks alongside, untimed
        # DEL number i runs with total - i containers live.
        for lo, hi in bins:
            rows.append((f"DEL median, {total - lo}–{total - hi + 1} live", med(dele, "ours", lo, hi), med(dele, "ref", lo, hi), "ms"))
        everything = {k: [v for v in vals if v is not None] for k, vals in dele.items()}
        self.rows_latency(rows, f"DEL of all {total}", everything)
        o, r = everything.get("ours"), everything.get("ref")
        rows.append((f"DEL of all {total}, total", sum(o) if o else None, sum(r) if r else None, "ms"))
        self.scale_slopes(lat, dele, bins, total)
        left = {s.key: self.leftovers(s, confs[s.key], paths[s.key][:total]) for s in alive}
        for s in alive:
            if left[s.key]:
                self.failures.append(f"{s.label} scale: left after DEL: {', '.join(left[s.key])}")
        rows.append(
            ("nothing left after DEL of all", *(("ok" if not left.get(k) else "FAIL") if k in left else None for k in ("ours", "ref")), "")
        )
        floor.floor.close()
        self.del_netns([os.path.basename(p) for s in alive for p in paths[s.key]]
                       + [os.path.basename(p) for p in floor_paths + full_paths])

    @staticmethod
    def log_full_floor(full, bins):
        """The full floor's phases, median per bin (for the hand-written
        analysis, not the table), and how often the port was not up at once."""
        for j, name in enumerate(FullFloor.PHASES):
            meds = [median([p[j] for p in full.phases[lo:hi]]) for lo, hi in bins]
            log(f"  full floor, {name}: " + " ".join(f"{m / 1e3:.0f}" for m in meds if m is not None) + " µs per bin")
        for lo, hi in bins:
            late = sum(1 for n in full.polls[lo:hi] if n > 1)
            log(f"  full floor, {lo + 1}–{hi}: port not up at the first look {late} times")

    def scale_slopes(self, lat, dele, bins, total):
        """Least-squares slope, per 100 live containers, of each bin's median:
        the kernel's floor, and each suite's cost over it (its own share)."""
        rows = self.report.section(f"cost as the bridge grows to {total}: slope per 100 live containers")

        def slope(points):
            pts = [(x, y) for x, y in points if y is not None]
            if len(pts) < 2:
                return None
            mx = sum(x for x, _ in pts) / len(pts)
            my = sum(y for _, y in pts) / len(pts)
            var = sum((x - mx) ** 2 for x, _ in pts)
            return sum((x - mx) * (y - my) for x, y in pts) / var * 100 if var else None

        def med(samples, key, lo, hi):
            return median([v for v in samples.get(key, [])[lo:hi] if v is not None])

        def own(samples, key, lo, hi, base="floor"):
            m, f = med(samples, key, lo, hi), med(samples, base, lo, hi)
            return None if m is None or f is None else m - f

        for what, samples, live_at in (("ADD", lat, lambda lo, hi: (lo + hi) / 2),
                                       ("DEL", dele, lambda lo, hi: total - (lo + hi) / 2)):
            fl = slope([(live_at(lo, hi), med(samples, "floor", lo, hi)) for lo, hi in bins])
            rows.append((f"{what}: the kernel's floor", fl, fl, "ms"))
            rows.append((f"{what}: the plugin's own cost (median − floor)",
                         slope([(live_at(lo, hi), own(samples, "ours", lo, hi)) for lo, hi in bins]),
                         slope([(live_at(lo, hi), own(samples, "ref", lo, hi)) for lo, hi in bins]), "ms"))
            if "full" not in samples:
                continue
            fl = slope([(live_at(lo, hi), med(samples, "full", lo, hi)) for lo, hi in bins])
            rows.append((f"{what}: the full floor (our ADD's kernel requests, from the driver)", fl, fl, "ms"))
            rows.append((f"{what}: the plugin's cost over the full floor (median − full floor)",
                         slope([(live_at(lo, hi), own(samples, "ours", lo, hi, "full")) for lo, hi in bins]),
                         slope([(live_at(lo, hi), own(samples, "ref", lo, hi, "full")) for lo, hi in bins]), "ms"))

    def fill_leases(self, conf, count, have):
        """Writes lease files so `count` addresses of the range are taken."""
        netdir = os.path.join(conf["ipam"]["dataDir"], conf["name"])
        os.makedirs(netdir, exist_ok=True)
        first = ipaddress.ip_network(conf["ipam"]["ranges"][0][0]["subnet"]).network_address + 2
        for j in range(have, count):
            with open(os.path.join(netdir, str(first + j)), "w") as f:
                f.write(f"{self.prefix}fill{j}\r\n{IFNAME}")
        if count:
            with open(os.path.join(netdir, "last_reserved_ip.0"), "w") as f:
                f.write(str(first + count - 1))

    @staticmethod
    def prefilled(conf, address, count):
        """Whether `address` is one of the lease files fill_leases wrote."""
        first = ipaddress.ip_network(conf["ipam"]["ranges"][0][0]["subnet"]).network_address + 2
        try:
            ip = ipaddress.ip_interface(address).ip
        except ValueError:
            return True
        return first <= ip < first + count

    def bench_leases(self):
        rows = self.report.section("host-local with many leases in one network")
        suites = self.both("host-local")
        if not suites:
            return
        n = self.opts.n_small
        ns_path = self.scratch_ns
        confs = {s.key: self.bridge_conf(s, "lease", 64 + 64 * idx, plen=18) for idx, s in enumerate(suites)}
        have = 0
        for count in self.opts.leases:
            for s in suites:
                self.fill_leases(confs[s.key], count, have)
            have = count
            add = {s.key: [] for s in suites}
            dele = {s.key: [] for s in suites}
            for i in range(n):
                for s in self.order(suites, i):
                    cid = f"{self.prefix}l{count}x{i}"
                    c = s.call("host-local", "ADD", confs[s.key], cid=cid, netns=ns_path)
                    if not c.ok:
                        self.fail(f"host-local ADD with {count} leases", s, c)
                        continue
                    add[s.key].append(c.ns)
                    got = [ip.get("address", "") for ip in (c.json() or {}).get("ips", [])]
                    taken = [a for a in got if self.prefilled(confs[s.key], a, count)]
                    if taken or not got:
                        msg = f"{s.label} host-local ADD with {count} leases returned {got or 'no address'}"
                        self.failures.append(msg + (" (already leased)" if taken else ""))
                    d = s.call("host-local", "DEL", confs[s.key], cid=cid, netns=ns_path, prev=c.json())
                    if not d.ok:
                        self.fail(f"host-local DEL with {count} leases", s, d)
                        continue
                    dele[s.key].append(d.ns)
            o, r = add.get("ours", []), add.get("ref", [])
            rows.append((f"ADD median, {count:,} leases (n={n})", median(o), median(r), "ms"))
            o, r = dele.get("ours", []), dele.get("ref", [])
            rows.append((f"DEL median, {count:,} leases (n={n})", median(o), median(r), "ms"))

    def breakdown(self):
        """Splits bridge ADD into its parts from the medians measured above."""
        rows = self.report.section("Where bridge ADD time goes (derived from the medians above)")
        m = self.medians
        if not all(k in m for k in ("VERSION", "host-local ADD", "bridge ADD")):
            return
        vals = {}
        for key in ("ours", "ref"):
            try:
                start, ipam, total = m["VERSION"][key], m["host-local ADD"][key], m["bridge ADD"][key]
            except KeyError:
                continue
            if None in (start, ipam, total):
                continue
            vals[key] = (start, ipam, total - ipam - start)
        if not vals:
            return

        def get(key, i):
            return vals[key][i] if key in vals else None

        rows.append(("bridge process start (VERSION)", get("ours", 0), get("ref", 0), "ms"))
        rows.append(("IPAM: host-local ADD alone (the reference's child; ours runs in-process)", get("ours", 1), get("ref", 1), "ms"))
        rows.append(("the rest: bridge's own work (netlink, sysctls, netns; IPAM overlapping it)", get("ours", 2), get("ref", 2), "ms"))

    def bench_sizes(self):
        rows = self.report.section("Memory and size")
        for metric, vals in self.rss.items():
            tree, own, tool = (vals.get(k, {}) for k in ("tree", "own", "tool"))
            rows.append((f"peak RSS, {metric} (max over calls)", tree.get("ours"), tree.get("ref"), "KiB"))
            if own:
                rows.append((f"{RSS_OWN}{metric}", own.get("ours"), own.get("ref"), "KiB"))
            if tool:
                rows.append((f"{RSS_TOOL}{metric}", tool.get("ours"), tool.get("ref"), "KiB"))
        both = [p for p in PLUGINS if self.ours.working.get(p) and self.ref.working.get(p)]
        tot = {}
        for s in (self.ours, self.ref):
            files = {}  # (device, inode) -> size: a multi-call binary counts once
            for plugin in both:
                st = os.stat(s.bin(plugin))
                files[(st.st_dev, st.st_ino)] = st.st_size
            tot[s.key] = sum(files.values()) or None
        if both:
            rows.append((f"binary size, suite: the {len(both)} plugins both have ({', '.join(both)})",
                         tot.get("ours"), tot.get("ref"), "B"))
        if "bridge" in both:
            rows.append(("binary size, the file a runtime execs for bridge",
                         os.stat(self.ours.bin("bridge")).st_size, os.stat(self.ref.bin("bridge")).st_size, "B"))

    # -- driver ------------------------------------------------------------

    def start_taskstats(self):
        """Each process's own peak RSS (taskstats.py), if the kernel lets us."""
        self.exits = None
        try:
            listener = taskstats.Listener(self.opts.taskstats_netns)
        except OSError as e:
            self.no_taskstats(e)
            return
        try:
            listener.check()
        except OSError as e:
            listener.close()
            self.no_taskstats(e)
            return
        self.exits = self.ours.exits = self.ref.exits = listener

    def no_taskstats(self, e):
        msg = (f"per-process peak RSS: taskstats unavailable ({e}); only GNU time's max over the "
               "process tree is shown, and judged")
        log(msg)
        self.report.missing.append(msg)

    def settle_note(self):
        if not SETTLER.enabled and not self.opts.no_settle:
            self.report.notes.append("Settling was switched off during the run (a left process did not exit).")
        if self.opts.no_settle:
            self.report.notes.append("`--no-settle`: processes left by a call were not waited for "
                                     "(they run on during the next calls).")
            return
        parts = []
        for s in (self.ours, self.ref):
            if not s.calls:
                continue
            text = f"{s.label} {s.left} after {s.calls} calls"
            if s.settle_ns:
                text += (f" (waiting took median {median(s.settle_ns) / 1e6:.2f} ms, "
                         f"max {max(s.settle_ns) / 1e6:.2f} ms)")
            parts.append(text)
        if parts:
            self.report.notes.append("Processes left behind by plugin calls and waited for before the next "
                                     "call: " + "; ".join(parts) + ".")
            log("left behind: " + "; ".join(parts))

    def detect_backends(self):
        with open(self.ref.bin("bridge"), "rb") as f:
            data = f.read()
        self.ref_masq_backend = "nftables" if b"cni_plugins_masquerade" in data else "iptables"
        self.ours_has_nft = False
        if self.ours.working.get("bridge"):
            with open(self.ours.bin("bridge"), "rb") as f:
                self.ours_has_nft = b"cni_plugins_masquerade" in f.read()
        if self.ref_masq_backend == "iptables":
            self.report.notes.append(
                "The reference bridge (v1.1.1) predates `ipMasqBackend` and always uses iptables "
                "(here iptables-nft); every ipMasq config passes `\"ipMasqBackend\": \"iptables\"` so "
                "ours uses the same backend. The extra row 'ours nftables' shows our native nftables "
                "backend against the reference's iptables."
            )
        else:
            self.report.notes.append("Both suites get `\"ipMasqBackend\": \"nftables\"`.")

    def run(self):
        log(f"run prefix {self.prefix}, subnets 10.{self.base}.0.0/16, temp {self.tmp}")
        self.rss = {}
        self.medians = {}
        # host-local ignores the netns, but CNI_NETNS must name a real one.
        self.scratch_ns = self.add_netns([f"{self.prefix}-scratch"])[0]
        self.ours.probe()
        self.ref.probe()
        self.start_taskstats()
        self.detect_backends()
        steps = [
            ("VERSION", self.bench_version),
            ("loopback", self.bench_loopback),
            ("host-local", self.bench_host_local),
            ("bridge serial", self.bench_bridge_serial),
            ("plugins", self.bench_plugins),
            ("link plugins", self.bench_link_plugins),
            ("chains", self.bench_chains),
            ("64 at once", self.bench_parallel),
            ("growing bridge", self.bench_scale),
            ("host-local leases", self.bench_leases),
            ("dhcp", self.bench_dhcp),
        ]
        for name, fn in steps:
            if self.opts.only and name not in self.opts.only:
                continue
            log(f"measuring: {name}")
            t = time.monotonic()
            fn()
            log(f"  {name} took {time.monotonic() - t:.1f} s")
        self.breakdown()
        self.bench_sizes()
        self.settle_note()
        for s in (self.ours, self.ref):
            absent = [p for p in PLUGINS if not os.path.exists(s.bin(p))]
            broken = [p for p in PLUGINS if not s.working.get(p) and p not in absent]
            if absent:
                self.report.missing.append(f"{s.label}: no {', '.join(absent)} binary; its rows are skipped (n/a)")
            if broken:
                self.report.missing.append(f"{s.label}: {', '.join(broken)} not working (no VERSION answer); rows marked n/a")


def machine():
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kib = int(f.readline().split()[1])
            mem = f"{kib / 1048576:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    distro = ""
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    distro = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} CPUs, {mem}; {distro}; Linux {platform.release()}"


def tool_version(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True).stdout.strip().splitlines()[0]
    except (OSError, IndexError):
        return "unknown"


KEEP_MARKER = "<!-- Everything below this line is hand-written and kept when bench.sh rewrites the page. -->"


def git_describe():
    here = os.path.dirname(os.path.abspath(__file__))
    head = tool_version(["git", "-C", here, "rev-parse", "--short", "HEAD"])
    dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return f"{head} (with uncommitted changes)" if dirty else head


def build_target(ours):
    """The target our binaries were built for, from their directory
    (target/<target>/release), e.g. x86_64-unknown-linux-musl."""
    parts = os.path.abspath(ours).split(os.sep)
    if len(parts) >= 3 and parts[-1] == "release" and parts[-3] == "target":
        return parts[-2]
    return "target not known"


def write_page(path, bench, opts, table):
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    ref_ver = tool_version(["dpkg-query", "-W", "-f", "${Version}", "containernetworking-plugins"])
    lines = [
        "# Benchmarks: this suite vs the reference plugins",
        "",
        "Produced by `scripts/bench.sh`; a rerun rewrites everything above the hand-written notes at the end.",
        "",
        f"- Date: {now}",
        f"- Command: `{opts.command}`",
        f"- Machine: {machine()}",
        f"- Ours: release build of this repository ({tool_version(['rustc', '--version'])}, "
        f"{build_target(opts.ours_build or opts.ours)}), git {git_describe()}",
        f"- Reference: Debian `containernetworking-plugins` {ref_ver} in `{opts.ref}`",
        "",
        "## Method",
        "",
        "- Every plugin call is a separate process started with `posix_spawn` and reaped with `wait4`, "
        "timed from just before the spawn to just after the reap (Python `perf_counter_ns`), with the "
        "config on stdin and `CNI_*` in the environment as libcni sends them "
        "(`CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=…;K8S_POD_NAME=…`, `cniVersion` "
        f"{CNI_VERSION}, DEL with the ADD result as `prevResult`).",
        "- The two suites run in the same process and are alternated call by call, the order flipping "
        "every iteration. Each suite has its own bridge, subnet and host-local `dataDir`.",
        "- bridge configs: `isGateway: true`, IPv4 host-local range (a /24, a /22 for the growing bridge), "
        "a default route; IPv6 is left out so that no DAD settling enters the numbers. Two warm-up "
        "ADD/DEL pairs (which create the bridge) are not counted.",
        ("- Mode: where a reaper exists. This sandbox's PID 1 does not reap orphans; the driver is a "
         "reaping child subreaper (below) and tells our plugins so (`CNI_RS_ORPHANS=reaped`, "
         "`skel::orphans`), so they leave the kernel's slow waits to short-lived children, as under "
         "a reaping PID 1 (systemd, tini). Every figure on this page is taken in this mode."
         if bench.ours.reaped else
         "- Mode: where nobody reaps (`--no-reaper` or `--no-settle`). This sandbox's PID 1 does not "
         "reap orphans, so "
         "our plugins (`skel::orphans`) leave no child and wait for the kernel themselves: the link "
         "deletion's RCU barrier, the netfilter socket's release, `iptables-restore`'s exit. Every "
         "figure on this page is taken in this mode."),
        "- Deferred kernel work is charged to nobody: the driver is a child subreaper "
        "(`PR_SET_CHILD_SUBREAPER`), so processes a plugin leaves behind (ours: a child holding the last "
        "reference of a netfilter socket, a child waiting for a link deletion's RCU barrier) become its "
        "children; after each timed call (or each 64-at-once burst) is reaped, the driver waits, untimed, "
        "until every such process has exited, and only then starts the next call. Only such orphans are "
        "waited for: the driver settles when none of its own processes runs.",
        "- Peak RSS is GNU time's `%M` (`ru_maxrss` from `wait4`), which on Linux is the maximum over "
        "the process and every descendant it reaped, i.e. max(bridge, its host-local child), or an "
        "`iptables-restore` child's; these calls are separate from the timed ones. (Measuring from "
        "the Python driver would count the driver's own pages, which the kernel records at exec.)",
        "- Each process's own peak RSS comes from the kernel's taskstats (generic netlink, one "
        "`struct taskstats` per exiting task, `hiwater_rss`; checked against GNU time on single "
        "processes): the same calls under GNU time give, per process of the call's tree, its own "
        "peak. \"Plugin process alone\" is the maximum over the plugin process, its IPAM child "
        "(the reference's host-local; ours runs IPAM in-process) and its forks; \"the largest "
        "iptables child\" is the system's `iptables`/`iptables-restore` (iptables-nft here, the same "
        "binary for both suites). The ≤ 0.5× target is judged on the plugin process alone; the "
        "max over the tree is printed next to it.",
        "- host-local with N leases: N lease files are written into the network's directory "
        "(`last_reserved_ip.0` points at the last one), then ADD/DEL pairs of new containers are timed.",
        "- Binary size is the size of the installed file (ours: stripped, LTO release build).",
        "- Kernel floors of a bridge ADD, issued by the driver itself over rtnetlink on bridges of their "
        "own, alternated with the suites' calls and, in the scale step, grown alongside to the same number "
        "of containers (scripts/bench/floor.py): the *floor* is the veth pair created into the "
        "container's namespace and its end brought up; the *full floor* is every kernel request our "
        "bridge ADD makes, in its order (taken from `strace` of it): the container's netlink socket and "
        "`eth0` check, the bridge lookup and its `accept_ra`, the veth creation, the port's `accept_ra`, "
        "the container's `accept_dad` and `arp_notify` (setns), the address, link-up and default route "
        "as one pipelined batch, the gateway check (an address dump filtered to the bridge), the "
        "`ip_forward` read, the port's oper-up poll on the plugin's schedule and the bridge lookup for "
        "its MAC; no process, no IPAM, no JSON. A suite's cost over the full floor is what its process, "
        "IPAM and choice of requests add; its slope is how that grows with the bridge.",
        "- An A/A run (the reference in both columns, `driver.py --ours /usr/lib/cni --quick`) gave "
        "ratios of 0.95–1.05× for bridge medians and 0.83–1.09× for p95s, so smaller differences than "
        "that are noise.",
        f"- Load average when the run started: {bench.loadavg} (other work on the machine adds noise "
        "to both columns alike).",
    ]
    for note in bench.report.notes:
        lines.append(f"- {note}")
    lines += ["", "## Results", "", table]
    if bench.report.missing or bench.failures:
        lines += ["## Missing or failed parts", ""]
        lines += [f"- {m}" for m in bench.report.missing]
        lines += [f"- {f}" for f in bench.failures[:30]]
        if len(bench.failures) > 30:
            lines.append(f"- … and {len(bench.failures) - 30} more failures")
        lines.append("")
    kept = ""
    try:
        with open(path) as f:
            old = f.read()
        if KEEP_MARKER in old:
            kept = old[old.index(KEEP_MARKER):]
    except OSError:
        pass
    text = "\n".join(lines).rstrip() + "\n"
    if kept:
        text += "\n" + kept.rstrip() + "\n"
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ours", required=True, help="directory with our plugin binaries (the CNI_PATH used)")
    ap.add_argument("--ours-build", help="the release directory they were installed from (names the target)")
    ap.add_argument("--ref", default="/usr/lib/cni", help="directory with the reference binaries")
    ap.add_argument("--quick", action="store_true", help="fewer iterations (a couple of minutes)")
    ap.add_argument("--out", help="markdown page to write")
    ap.add_argument("--command", default="scripts/bench.sh", help="command line recorded in the page")
    ap.add_argument("--only", action="append", help="run only this step (repeatable)")
    ap.add_argument("--prefix", help="name prefix of everything created (default cnirsb + 4 random hex)")
    ap.add_argument("--no-container-ipv6", action="store_true",
                    help="growing bridge: IPv6 off in every container's namespace (an experiment, see docs/benchmarks.md)")
    ap.add_argument("--taskstats-netns", metavar="PATH",
                    help="network namespace to open the taskstats socket in: the initial one, where the kernel "
                         "sends from (bench.sh passes its own; default: the driver's)")
    ap.add_argument("--no-reaper", action="store_true",
                    help="an experiment: do not tell our plugins that the driver reaps what they leave "
                         "(where PID 1 does not reap, as here, they then wait for the kernel themselves)")
    ap.add_argument("--no-settle", action="store_true",
                    help="do not wait for processes a call leaves behind (the behaviour before; for A/B runs)")
    ap.add_argument("--scale", type=int, metavar="N", dest="scale_n",
                    help="grow the bridge of the 'growing bridge' step to N containers (default 1000, 300 with --quick)")
    opts = ap.parse_args()
    if opts.quick:
        opts.n_version, opts.n_small, opts.n_bridge, opts.rounds_parallel, opts.scale = 100, 40, 30, 2, 300
        opts.n_rss, opts.n_plugin = 5, 20
    else:
        opts.n_version, opts.n_small, opts.n_bridge, opts.rounds_parallel, opts.scale = 500, 200, 150, 5, 1000
        opts.n_rss, opts.n_plugin = 20, 100
    opts.leases = [0, 1000, 10000]
    if opts.scale_n is not None:
        if opts.scale_n < 2 or opts.scale_n > 1000:
            sys.exit("bench: --scale wants 2 to 1000 containers (a /22 per suite)")
        opts.scale = opts.scale_n
    if os.geteuid() != 0:
        sys.exit("bench: must run as root (it creates namespaces and bridges)")
    # A terminated run still cleans up: turn SIGTERM/SIGHUP into an exception.
    def stop(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    if not opts.no_settle:
        SETTLER.enable()
    bench = Bench(opts)
    try:
        bench.run()
    except KeyboardInterrupt:
        bench.report.missing.append("interrupted")
        log("interrupted")
    finally:
        bench.cleanup()
    table = render(bench.report) + "\n" + render_targets(bench.report)
    print()
    print(table)
    if bench.report.missing or bench.failures:
        print("Missing or failed:")
        for m in bench.report.missing + bench.failures:
            print(f"  - {m}")
    if opts.out:
        write_page(opts.out, bench, opts, table)
        log(f"wrote {opts.out}")
    return 1 if bench.failures else 0


if __name__ == "__main__":
    sys.exit(main())
