"""Helpers for bench/compare: servers, CPU pinning, generator runs, the report.

Kept apart from bench/compare so the driver reads as the steps of issue 4.
Every server process is started here and stopped here; nothing else is killed.
"""

import json
import os
import platform
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
SATURATED = 0.85  # a side whose CPU use is above this share of its cores is the bottleneck


def say(msg):
    sys.stderr.write(f"[compare] {msg}\n")
    sys.stderr.flush()


def git_commit(root):
    r = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                       capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return (r.stdout.strip() or "unknown") + ("+dirty" if dirty else "")


def machine_description():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"{model}, {os.cpu_count()} logical CPUs, {mem_gb:.0f} GiB RAM, "
            f"Linux {platform.release()}")


class CpuLayout:
    """Which cores the servers and the generator get."""

    def __init__(self, cpus, server_cores, gen_cores, pinned, reason):
        self.nice = 0  # niceness for servers and generator alike (negative: ahead of other work)
        self.rt = 0  # > 0: SCHED_FIFO priority for servers and generator alike (chrt -f)
        self.cpus = cpus
        self.server_cores = server_cores
        self.gen_cores = gen_cores
        self.pinned = pinned
        self.reason = reason

    @staticmethod
    def detect():
        try:
            cpus = sorted(os.sched_getaffinity(0))
        except AttributeError:
            cpus = list(range(os.cpu_count() or 1))
        if shutil.which("taskset") is None:
            return CpuLayout(cpus, cpus, cpus, False, "taskset is not installed")
        if len(cpus) < 2:
            return CpuLayout(cpus, cpus, cpus, False, "only one CPU is available")
        # Half the cores each, the server first; on 2 cores: server 0, generator 1.
        half = len(cpus) // 2
        return CpuLayout(cpus, cpus[:half], cpus[half:], True, "")

    def describe(self):
        nice = f"; servers and generator run at nice {self.nice}" if self.nice else ""
        if self.rt:
            nice = f"; servers and generator run as SCHED_FIFO priority {self.rt} (chrt -f)"
        if not self.pinned:
            return (f"NOT pinned ({self.reason}): servers and generator share CPUs "
                    f"{self.cpus}, so figures mix both sides' load{nice}")
        return (f"pinned with taskset: servers on CPU {','.join(map(str, self.server_cores))}, "
                f"generator on CPU {','.join(map(str, self.gen_cores))}{nice}")

    def prefix(self, cores):
        cmd = ["nice", "-n", str(self.nice)] if self.nice else []
        if self.rt:
            cmd += ["chrt", "-f", str(self.rt)]
        if self.pinned:
            cmd += ["taskset", "-c", ",".join(map(str, cores))]
        return cmd


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def probe(port, payload, want, timeout=1.0):
    """Sends payload to 127.0.0.1:port and returns True if the reply starts with want."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(payload)
            got = b""
            while len(got) < len(want):
                chunk = s.recv(256)
                if not chunk:
                    break
                got += chunk
            return got.startswith(want)
    except OSError:
        return False


class Server:
    name = "?"
    families = ()  # the protocol families ("mc", "resp") this server speaks

    def __init__(self, threads, layout):
        self.threads = threads
        self.layout = layout
        self.proc = None
        self.log = None
        self.last_error = ""
        self.ports = {}

    def clone(self):
        return type(self)(self.threads, self.layout)

    def command(self):
        raise NotImplementedError

    def probes(self):
        """(family, payload, expected reply prefix) checks that say a port is up."""
        raise NotImplementedError

    def version(self):
        return ""

    def start(self, timeout=10.0):
        self.ports = {"mc": free_port(), "resp": free_port()}
        cmd = self.layout.prefix(self.layout.server_cores) + self.command()
        tag = re.sub(r"[^\w.-]+", "-", self.name)
        self.log = open(f"/tmp/compare-{tag}-{os.getpid()}.log", "w+")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        self.up = {}
        deadline = time.time() + timeout
        checks = self.probes()
        while time.time() < deadline:
            if self.proc.poll() is not None:
                break
            for fam, payload, want in checks:
                if fam not in self.up and probe(self.ports[fam], payload, want):
                    self.up[fam] = True
            if len(self.up) == len(checks):
                return True
            time.sleep(0.1)
        if self.up and self.proc.poll() is None:
            return True  # partly up (e.g. Trove without its RESP port yet)
        self.log.seek(0)
        self.last_error = (self.log.read()[-500:].strip() or
                           f"exit status {self.proc.poll()}" or "no port answered")
        self.stop()
        return False

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def port_for(self, fam):
        return self.ports.get(fam) if self.running() and self.up.get(fam) else None

    def why_no_port(self, fam):
        return f"{'RESP' if fam == 'resp' else 'memcached'} port is not up"

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if self.log:
            self.log.close()
            self.log = None

    def _stat(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            # Fields after the ")" of the command name; utime and stime are 14 and 15.
            rest = f.read().rsplit(")", 1)[1].split()
        return rest

    def cpu_seconds(self):
        rest = self._stat()
        return (int(rest[11]) + int(rest[12])) / CLK_TCK

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0


def memcached_version(binary):
    """The first line of `binary -V` ("memcached 1.6.45"), or "" if it does not run."""
    try:
        r = subprocess.run([binary, "-V"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    line = (r.stdout or r.stderr).strip().splitlines()
    return line[0].strip() if r.returncode == 0 and line else ""


class MemcachedServer(Server):
    """One memcached binary. Its name is its version ("memcached 1.6.45"), so every row and
    ratio says which memcached it is; `label` overrides it when two binaries share a version."""
    families = ("mc",)

    def __init__(self, threads, layout, binary="memcached", label=None):
        super().__init__(threads, layout)
        self.binary = binary
        self.full_version = memcached_version(binary)
        self.name = label or self.full_version or f"memcached ({binary})"

    def clone(self):
        return MemcachedServer(self.threads, self.layout, self.binary, self.name)

    def command(self):
        cmd = [self.binary, "-p", str(self.ports["mc"]), "-l", "127.0.0.1", "-U", "0",
               "-t", str(self.threads), "-m", "1024", "-c", "4096"]
        if os.geteuid() == 0:
            cmd += ["-u", "root"]  # memcached refuses to run as root without -u
        return cmd

    def probes(self):
        return [("mc", b"version\r\n", b"VERSION")]

    def version(self):
        return f"{self.full_version or 'version unknown'} ({self.binary})"


class RedisServer(Server):
    families = ("resp",)

    def __init__(self, threads, layout):
        super().__init__(threads, layout)
        m = re.search(r"v=(\S+)", self.version())
        self.name = f"redis {m.group(1)}" if m else "redis"

    def command(self):
        cmd = ["redis-server", "--port", str(self.ports["resp"]), "--bind", "127.0.0.1",
               "--save", "", "--appendonly", "no", "--protected-mode", "no"]
        if self.threads > 1:
            cmd += ["--io-threads", str(self.threads), "--io-threads-do-reads", "yes"]
        return cmd

    def probes(self):
        return [("resp", b"PING\r\n", b"+PONG")]

    def version(self):
        try:
            r = subprocess.run(["redis-server", "--version"], capture_output=True, text=True)
        except OSError:
            return ""
        return r.stdout.strip()


class TroveServer(Server):
    name = "trove"
    families = ("mc", "resp")

    def __init__(self, binary, threads, layout):
        super().__init__(threads, layout)
        self.binary = binary

    def clone(self):
        return TroveServer(self.binary, self.threads, self.layout)

    def command(self):
        cmd = [self.binary, "-p", str(self.ports["mc"]), "--resp-port", str(self.ports["resp"]),
               "-t", str(self.threads), "-U", "0", "-m", "1024", "-c", "4096"]
        if os.geteuid() == 0:
            cmd += ["-u", "root"]  # like memcached, Trove refuses root without -u
        return cmd

    def probes(self):
        return [("mc", b"version\r\n", b"VERSION"), ("resp", b"PING\r\n", b"+PONG")]

    def why_no_port(self, fam):
        if fam == "resp":
            return "Trove's RESP port is not up yet"
        return "Trove's memcached port is not up"

    def version(self):
        r = subprocess.run([self.binary, "-V"], capture_output=True, text=True)
        return (r.stdout or r.stderr).strip()[:80]


class BenchRunner:
    def __init__(self, binary, layout, duration, warmup, keys):
        self.binary = binary
        self.layout = layout
        self.duration = duration
        self.warmup = warmup
        self.keys = keys
        self.gen_threads = len(layout.gen_cores) if layout.pinned else 1

    def _exec(self, args):
        """Runs trove-bench pinned; returns (json or None, children's rusage, wall s, stderr, rc)."""
        cmd = self.layout.prefix(self.layout.gen_cores) + [self.binary] + args + [
            "--json", "--no-progress"]
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = p.communicate()
        wall = time.monotonic() - t0
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            doc = json.loads(out) if p.returncode in (0, 3) else None
        except json.JSONDecodeError:
            doc = None
        return doc, usage, wall, err, p.returncode

    def _conn_args(self, wargs):
        # The workloads say 50 connections in total; split them over the generator threads.
        out = list(wargs)
        i = out.index("-c")
        total = int(out[i + 1])
        out[i + 1] = str(max(1, total // self.gen_threads))
        return out + ["-t", str(self.gen_threads)]

    def prefill(self, port, fam, prefix, size):
        args = ["-p", str(port), "-P", "resp" if fam == "resp" else "text", "--ratio", "1:0",
                "--pattern", "sequential", "--requests", str(self.keys), "-n", str(self.keys),
                "-v", str(size), "--key-prefix", prefix, "-c", "50", "-d", "16",
                "-t", str(self.gen_threads)]
        doc, _, _, err, rc = self._exec(args)
        if doc is None:
            say(f"prefill failed (rc {rc}): {err.strip()[-300:]}")
            return {"completed": 0, "errors": {"total": -1}}
        return doc

    def run(self, server, port, wargs):
        args = ["-p", str(port), "-n", str(self.keys), "-D", str(self.duration),
                "-w", str(self.warmup)] + self._conn_args(wargs)
        load1 = os.getloadavg()[0]
        before_children = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu0 = server.cpu_seconds()
        doc, after_children, wall, err, rc = self._exec(args)
        cpu1 = server.cpu_seconds() if server.running() else cpu0
        gen_cpu = ((after_children.ru_utime - before_children.ru_utime) +
                   (after_children.ru_stime - before_children.ru_stime))
        if doc is None:
            doc = {"total": {"ops_per_sec": 0.0, "ops": 0,
                             "latency_us": {"p50": 0, "p90": 0, "p99": 0, "p99_9": 0, "max": 0}},
                   "completed": 0,
                   "errors": {"total": 1, "first": f"trove-bench rc {rc}: {err.strip()[-300:]}"}}
        server_cpu = cpu1 - cpu0
        completed = doc.get("completed", 0)
        server_cores = min(server.threads, len(self.layout.server_cores)) or 1
        doc["server_cpu_s"] = server_cpu
        doc["server_cpu_us_per_op"] = server_cpu * 1e6 / completed if completed else 0.0
        doc["server_util"] = server_cpu / wall / server_cores
        doc["gen_util"] = gen_cpu / wall / max(1, len(self.layout.gen_cores))
        doc["wall_s"] = wall
        doc["loadavg_1m_before"] = load1
        s_sat = doc["server_util"] >= SATURATED
        g_sat = doc["gen_util"] >= SATURATED
        doc["saturated"] = ("both" if s_sat and g_sat else "server" if s_sat else
                            "generator" if g_sat else "neither")
        return doc

    def memory(self, server, n):
        """RSS per item after loading n keys of 100-byte values into a fresh server."""
        if not server.start():
            return {"error": f"did not start: {server.last_error}"}
        try:
            fam = "mc" if server.port_for("mc") else "resp"
            port = server.port_for(fam)
            if port is None:
                return {"error": "no port up"}
            time.sleep(0.3)
            rss0 = server.rss_kib()
            args = ["-p", str(port), "-P", "resp" if fam == "resp" else "text", "--ratio", "1:0",
                    "--pattern", "sequential", "--requests", str(n), "-n", str(n), "-v", "100",
                    "--key-prefix", "mem:", "-c", "50", "-d", "16", "-t", str(self.gen_threads)]
            doc, _, _, err, rc = self._exec(args)
            time.sleep(0.3)
            rss1 = server.rss_kib()
            if doc is None:
                return {"error": f"load failed (rc {rc}): {err.strip()[-200:]}"}
            return {"items": n, "protocol": fam, "rss_before_mb": rss0 / 1024,
                    "rss_after_mb": rss1 / 1024,
                    "bytes_per_item": (rss1 - rss0) * 1024 / n,
                    "errors": doc["errors"]["total"]}
        finally:
            server.stop()


def _median(runs, path):
    vals = []
    for r in runs:
        v = r
        for k in path:
            v = v[k]
        vals.append(v)
    return statistics.median(vals) if vals else 0.0


def summarize(runs):
    return {
        "ops": _median(runs, ["total", "ops_per_sec"]),
        "p50": _median(runs, ["total", "latency_us", "p50"]),
        "p99": _median(runs, ["total", "latency_us", "p99"]),
        "p999": _median(runs, ["total", "latency_us", "p99_9"]),
        "cpu": _median(runs, ["server_cpu_us_per_op"]),
        "sutil": _median(runs, ["server_util"]),
        "gutil": _median(runs, ["gen_util"]),
        "errors": sum(r["errors"]["total"] for r in runs),
        "saturated": statistics.mode([r["saturated"] for r in runs]),
        "n": len(runs),
        "load": _median(runs, ["loadavg_1m_before"]),
        "first_error": next((r["errors"].get("first", "") for r in runs
                             if r["errors"]["total"]), ""),
    }


PEER = {"mc": "memcached", "resp": "redis"}  # the kind of server each family compares against
TARGET = {"W2": 4.0, "W5": 1.3}  # issue 4: Trove/peer ops/s the same run must reach


def kind(server_name):
    """The kind of a row: "memcached 1.6.45" is a memcached. Rows carry the version; ratios
    pick their peers by kind, one ratio row per peer."""
    return server_name.split(" ", 1)[0]


def paired_ratios(trove_runs, peer_runs):
    """Median over run i of trove/peer ops/s and CPU us/op, as text ("n/a" if none pair)."""
    pairs = [(t, p) for t, p in zip(trove_runs, peer_runs)
             if p["total"]["ops_per_sec"] > 0 and p["server_cpu_us_per_op"] > 0]
    if not pairs:
        return "n/a", "n/a"
    ops = statistics.median(t["total"]["ops_per_sec"] / p["total"]["ops_per_sec"] for t, p in pairs)
    cpu = statistics.median(t["server_cpu_us_per_op"] / p["server_cpu_us_per_op"] for t, p in pairs)
    return f"{ops:.2f}x", f"{cpu:.2f}"


def render_markdown(meta, workloads, order, servers, results, skipped, memory):
    L = []
    peers = [s for s in servers if kind(s) != "trove"]
    L.append(f"# Trove vs {' and '.join(peers) or 'no peer'}: {meta['date_utc']} UTC")
    L.append("")
    L.append(f"- Command: `{meta['command']}` (commit {meta['commit']})")
    L.append(f"- Machine: {meta['machine']}")
    L.append(f"- CPU layout: {meta['layout']}")
    L.append(f"- Server threads: {meta['server_threads']} each; {meta['runs']} run(s) per cell of "
             f"{meta['duration_s']} s after {meta['warmup_s']} s warm-up; medians shown")
    for k, v in meta["versions"].items():
        L.append(f"- {k}: {v}")
    for n in meta["notes"]:
        L.append(f"- NOTE: {n}")
    L.append("")
    L.append("Latencies are microseconds, measured by trove-bench from send to complete reply. "
             "Server CPU is utime+stime from /proc/PID/stat over the whole run (warm-up "
             "included) divided by every request completed in it. `saturated` names the side "
             f"whose CPU use was at least {int(SATURATED * 100)}% of its cores. `load avg` is the "
             "1-minute load average before the run: above the core count, other work shared "
             "the machine and the figures are noisier.")
    L.append("")
    L.append("| Workload | Server | ops/s | p50 | p99 | p99.9 | server CPU us/op | server CPU | "
             "generator CPU | saturated | errors | load avg |")
    L.append("|---|---|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|")
    sums = {}
    for w in order:
        for s in servers:
            runs = results.get((w, s))
            if not runs:
                why = skipped.get((w, s))
                if why is None:
                    continue  # this server doesn't speak the workload's protocol
                L.append(f"| {w} | {s} | skipped: {why} | | | | | | | | | |")
                continue
            m = summarize(runs)
            sums[(w, s)] = m
            L.append(f"| {w} | {s} | {m['ops']:,.0f} | {m['p50']:.1f} | {m['p99']:.1f} | "
                     f"{m['p999']:.1f} | {m['cpu']:.2f} | {m['sutil'] * 100:.0f}% | "
                     f"{m['gutil'] * 100:.0f}% | {m['saturated']} | {m['errors']} | "
                     f"{m['load']:.1f} |")
    L.append("")
    L.append("## Trove / peer (medians)")
    L.append("")
    L.append("Ratios of the medians above, and (paired) the median of the per-run ratios: run i "
             "of Trove and run i of the peer ran back to back, so a load swing between runs "
             "cancels out of the paired figure.")
    L.append("")
    L.append("| Workload | peer | ops/s ratio | paired | server CPU us/op ratio (lower is better "
             "for Trove) | paired | issue 4 target |")
    L.append("|---|---|--:|--:|--:|--:|---|")
    for w in order:
        t = sums.get((w, "trove"))
        for peer in [s for s in servers if kind(s) == PEER[workloads[w][0]]]:
            p = sums.get((w, peer))
            target = f">= {TARGET[w]}x ops/s" if w in TARGET else ""
            if t and p and p["ops"] > 0:
                cpu = f"{t['cpu'] / p['cpu']:.2f}" if p["cpu"] > 0 else "n/a"
                ratio = t["ops"] / p["ops"]
                pr_ops, pr_cpu = paired_ratios(results[(w, "trove")], results[(w, peer)])
                if w in TARGET:
                    target += " (met)" if ratio >= TARGET[w] else " (NOT met)"
                L.append(f"| {w} | {peer} | {ratio:.2f}x | {pr_ops} | {cpu} | {pr_cpu} | "
                         f"{target} |")
            else:
                who = "Trove" if not t else peer
                L.append(f"| {w} | {peer} | n/a ({who} skipped) | | n/a | | {target} |")
    L.append("")
    errs = [(k, m) for k, m in sums.items() if m["errors"]]
    if errs:
        L.append("## Reply errors")
        L.append("")
        for (w, s), m in errs:
            L.append(f"- {w} {s}: {m['errors']} errors; first: {m['first_error']}")
        L.append("")
    L.append("## Workloads")
    L.append("")
    for w in order:
        L.append(f"- {w}: {workloads[w][1]}; trove-bench `{' '.join(workloads[w][2])}`")
    L.append("")
    if memory:
        L.append("## Memory: resident size per item")
        L.append("")
        L.append("| Server | items (100 B values) | loaded over | RSS before MiB | RSS after MiB | "
                 "bytes/item |")
        L.append("|---|--:|---|--:|--:|--:|")
        for s, m in memory.items():
            if "error" in m:
                L.append(f"| {s} | skipped: {m['error']} | | | | |")
            else:
                L.append(f"| {s} | {m['items']:,} | {m['protocol']} | {m['rss_before_mb']:.1f} | "
                         f"{m['rss_after_mb']:.1f} | {m['bytes_per_item']:.1f} |")
        L.append("")
    L.append(f"Elapsed before the report: {meta['elapsed_s']} s.")
    L.append("")
    return "\n".join(L)


def draw_chart(base, order, servers, results):
    """A PNG with p50, p99 and p99.9 per workload, one bar per server (log scale)."""
    if shutil.which("gnuplot") is None:
        return None
    dat = base + "-latency.dat"
    with open(dat, "w") as f:
        f.write("# workload " + " ".join(f"{s}_p50 {s}_p99 {s}_p999" for s in servers) + "\n")
        for w in order:
            row = [w]
            for s in servers:
                runs = results.get((w, s))
                if runs:
                    m = summarize(runs)
                    row += [f"{max(m['p50'], 0.1):.2f}", f"{max(m['p99'], 0.1):.2f}",
                            f"{max(m['p999'], 0.1):.2f}"]
                else:
                    row += ["?", "?", "?"]
            f.write(" ".join(row) + "\n")
    png = base + "-latency.png"
    plots = []
    for i, (label, off) in enumerate((("p50", 0), ("p99", 1), ("p99.9", 2))):
        series = ", ".join(
            f"'{dat}' using {2 + 3 * j + off}:xtic(1) title '{s}'" for j, s in enumerate(servers))
        plots.append(f"set title 'latency {label} (us)'\nplot {series}")
    script = f"""set terminal pngcairo size 1500,500 noenhanced
set output '{png}'
set datafile missing '?'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set grid ytics
set key outside bottom center horizontal
set multiplot layout 1,3
{chr(10).join(plots)}
unset multiplot
"""
    r = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
    if r.returncode != 0:
        # pngcairo may be missing from gnuplot-nox builds; the plain png terminal is not.
        r = subprocess.run(["gnuplot"], input=script.replace("pngcairo", "png"), text=True,
                           capture_output=True)
    if r.returncode != 0:
        say("gnuplot failed: " + r.stderr.strip()[-300:])
        return None
    return png
