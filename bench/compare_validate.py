#!/usr/bin/env python3
"""Cross-checks trove-bench against redis-benchmark and memcslap (issue 4).

Runs the same workload with both tools against the same server, pinned the way
bench/compare pins (server on the first half of the CPUs, generator on the
rest), alternating the tools --runs times, and prints the median throughput of
each and their ratio. Writes bench/results/validate-<stamp>.md.

  bench/compare_validate.py [--runs 3] [--bench build/release/tools/bench/trove-bench]

Servers and tools run at normal priority (--rt N, SCHED_FIFO, is opt-in and not for a shared
machine). With the defaults it plans ~4 minutes; --time-limit (default 371 s for those) bounds
the run, every process has its own wall-clock limit, and all are stopped on exit, error,
Ctrl-C or SIGTERM (exit 124 past a limit).
"""

import argparse
import datetime
import json
import os
import re
import resource
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_lib as lib  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# Wall-clock limits of the other tools' runs (seconds): memcslap runs a fixed number of
# requests, redis-benchmark about as long as the trove-bench run before it.
MEMCSLAP_LIMIT_S = 180.0


def redis_benchmark_limit(duration):
    return 60.0 + 10.0 * duration


def timed(cmd, limit, name):
    """Runs cmd through lib.PROCS with a wall-clock limit; returns (CompletedProcess, CPU
    seconds it used)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = lib.PROCS.run(cmd, limit, name=name, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return r, cpu


def run_trove_bench(layout, bench, args):
    cmd = layout.prefix(layout.gen_cores) + [bench] + args + ["--json", "--no-progress"]
    if "-D" in args:  # timed: -w + -D and a margin
        warm = float(args[args.index("-w") + 1]) if "-w" in args else 1.0
        limit = warm + float(args[args.index("-D") + 1]) + lib.GEN_MARGIN_S
    else:  # --requests N
        limit = lib.PREFILL_LIMIT_S
    r, cpu = timed(cmd, limit, "trove-bench")
    if r.returncode not in (0, 3):
        sys.exit(f"trove-bench failed: {' '.join(cmd)}\n{r.stderr}")
    doc = json.loads(r.stdout)
    if doc["errors"]["total"]:
        lib.say(f"trove-bench saw {doc['errors']['total']} errors: {doc['errors']['first']}")
    doc["cpu_us_per_req"] = cpu * 1e6 / max(1, doc["completed"])
    return doc["total"]["ops_per_sec"], doc


def run_redis_benchmark(layout, port, test, args, duration):
    requests = int(args[args.index("-n") + 1])
    cmd = layout.prefix(layout.gen_cores) + ["redis-benchmark", "-p", str(port), "-t", test,
                                             "--csv"] + args
    r, cpu = timed(cmd, redis_benchmark_limit(duration), "redis-benchmark")
    # CSV: "test","rps",... one row per test after a header row.
    for line in r.stdout.splitlines():
        cells = [c.strip('"') for c in line.split(",")]
        if cells and cells[0].lower() == test.lower():
            return float(cells[1]), cpu * 1e6 / requests
    sys.exit(f"redis-benchmark printed no {test} row:\n{r.stdout}\n{r.stderr}")


def run_memcslap(layout, port, test, conc, execute):
    cmd = layout.prefix(layout.gen_cores) + ["memcslap", f"--servers=127.0.0.1:{port}",
                                             f"--concurrency={conc}",
                                             f"--execute-number={execute}", f"--test={test}",
                                             "--tcp-nodelay"]
    r, cpu = timed(cmd, MEMCSLAP_LIMIT_S, "memcslap")
    out = r.stdout + r.stderr
    m = re.search(r"Time to (?:set|get)\s+(\d+) keys by\s+\d+ threads:\s+([\d.]+) seconds", out)
    if not m:
        sys.exit(f"memcslap output not understood:\n{out}")
    return int(m.group(1)) / float(m.group(2)), cpu * 1e6 / int(m.group(1))


def server_counter(port, fam):
    """Commands the server has processed so far (its own count)."""
    import socket
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"INFO stats\r\n" if fam == "resp" else b"stats\r\n")
        data = b""
        end = b"\r\n\r\n" if fam == "resp" else b"END\r\n"
        while not data.endswith(end):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    text = data.decode()
    if fam == "resp":
        return int(re.search(r"total_commands_processed:(\d+)", text).group(1))
    get = int(re.search(r"STAT cmd_get (\d+)", text).group(1))
    sets = int(re.search(r"STAT cmd_set (\d+)", text).group(1))
    return get + sets


class Cell:
    def __init__(self, name, tool, other_cmd, ours_cmd):
        self.name, self.tool, self.other_cmd, self.ours_cmd = name, tool, other_cmd, ours_cmd
        self.other, self.ours, self.other_cpu, self.ours_cpu = [], [], [], []
        self.count_gap = 0  # largest |trove-bench count - server count| seen


def measure_ours(cell, layout, bench, port, fam, args, prefilled=0):
    before = server_counter(port, fam)
    ops, doc = run_trove_bench(layout, bench, args)
    after = server_counter(port, fam)
    # The server counts our requests plus the one stats/INFO call above.
    server = after - before - (1 if fam == "resp" else 0) - prefilled
    cell.count_gap = max(cell.count_gap, abs(server - doc["completed"]))
    cell.ours.append(ops)
    cell.ours_cpu.append(doc["cpu_us_per_req"])
    return ops


def planned_seconds(a):
    """Expected time on an idle machine: redis (start, prefill, 6 cells x runs x (trove-bench
    0.5 + D + 0.5 s, redis-benchmark ~1.5 D + 0.5 s)) and memcached (4 cells x runs; memcslap and
    trove-bench each ~3.5 s per 1-connection cell of 20,000 requests, ~2 s per 50-connection
    cell of 100,000)."""
    redis_part = 2 * lib.START_EST_S + lib.PREFILL_EST_S + 6 * a.runs * (
        (1.0 + a.duration) + (1.5 * a.duration + 0.5))
    mc_part = lib.START_EST_S + a.runs * (2 * 2 * 3.5 + 2 * 2 * 2.0)
    return redis_part + mc_part + 5.0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--bench", default=os.path.join(ROOT, "build", "release", "tools", "bench",
                                                   "trove-bench"))
    p.add_argument("--duration", type=float, default=3.0, help="seconds per run")
    p.add_argument("--rt", type=int, default=0, help=lib.RT_HELP)
    p.add_argument("--time-limit", type=float, default=None, metavar="S",
                   help=lib.TIME_LIMIT_HELP)
    p.add_argument("--memcached-bin", default=os.environ.get("MEMCACHED_BIN") or "memcached",
                   metavar="PATH", help="memcached for the memcslap cells ($MEMCACHED_BIN, else "
                                        "memcached on PATH)")
    a = p.parse_args()
    layout = lib.CpuLayout.detect()
    layout.rt = a.rt  # 0 (normal scheduling) unless --rt N was given
    lib.say(layout.describe())
    cells = []
    d = a.duration
    planned = planned_seconds(a)
    limit = a.time_limit or lib.default_time_limit(planned)
    lib.PROCS.set_time_limit(limit)
    lib.say(f"planned {planned:.0f} s on an idle machine; time limit {limit:.0f} s")

    redis = lib.RedisServer(1, layout)
    if not redis.start():
        sys.exit("redis-server did not start: " + redis.last_error)
    rport = redis.ports["resp"]
    n = 100000
    try:
        run_trove_bench(layout, a.bench, ["-P", "resp", "-p", str(rport), "--prefill", "-n",
                                          str(n), "--requests", "1", "-v", "32"])
        for conns, pipe in ((1, 1), (50, 1), (50, 16)):
            for test, ratio in (("set", "1:0"), ("get", "0:1")):
                cell = Cell(f"redis {test.upper()}, {conns} conns, pipeline {pipe}, 32 B values, "
                            f"{n} random keys", "redis-benchmark",
                            f"redis-benchmark -c {conns} -n N -t {test} -d 32 -r {n} -P {pipe}",
                            f"trove-bench -P resp -c {conns} -d {pipe} --ratio {ratio} -v 32 "
                            f"-n {n} -D {d} -w 0.5")
                for _ in range(a.runs):
                    ops = measure_ours(cell, layout, a.bench, rport, "resp", [
                        "-P", "resp", "-p", str(rport), "-c", str(conns), "-d", str(pipe),
                        "--ratio", ratio, "-v", "32", "-n", str(n), "-D", str(d), "-w", "0.5"])
                    # Size redis-benchmark's run to about the same time.
                    reqs = int(min(5e6, max(2000, ops * d)))
                    o, cpu = run_redis_benchmark(layout, rport, test, [
                        "-c", str(conns), "-n", str(reqs), "-d", "32", "-r", str(n),
                        "-P", str(pipe)], d)
                    cell.other.append(o)
                    cell.other_cpu.append(cpu)
                cells.append(cell)
                lib.say(f"{cell.name}: redis-benchmark {statistics.median(cell.other):.0f} "
                        f"trove-bench {statistics.median(cell.ours):.0f}")
    finally:
        redis.stop()

    mc = lib.MemcachedServer(1, layout, a.memcached_bin)
    lib.say(f"memcached: {mc.version()}")
    if not mc.start():
        sys.exit("memcached did not start: " + mc.last_error)
    mport = mc.ports["mc"]
    try:
        # memcslap 1.1.4 writes keys of 20-59 random bytes (mean ~41) and values of
        # ~50-4,900 random bytes; a 36-byte prefix plus the key number and a
        # uniform 50-4900 value range is the nearest trove-bench workload. Each
        # memcslap thread owns one blocking connection (pipeline 1); a get test
        # reads back the keys it loaded, once per thread.
        prefix = "memcslap-equivalent-key-prefix-0000:"
        for conc, execute in ((1, 20000), (50, 2000)):
            for test, ratio, keys in (("set", "1:0", conc * execute), ("get", "0:1", execute)):
                total = conc * execute
                cell = Cell(f"memcached {test}, {conc} conns, pipeline 1, 50-4900 B values",
                            "memcslap",
                            f"memcslap --concurrency={conc} --execute-number={execute} "
                            f"--test={test} --tcp-nodelay",
                            f"trove-bench -P text -c {conc} -d 1 --ratio {ratio} -v 50-4900 "
                            f"--key-prefix <36 B> -n {keys} --requests {total}")
                for _ in range(a.runs):
                    o, cpu = run_memcslap(layout, mport, test, conc, execute)
                    cell.other.append(o)
                    cell.other_cpu.append(cpu)
                    extra = ["--prefill"] if test == "get" else []
                    measure_ours(cell, layout, a.bench, mport, "mc", [
                        "-P", "text", "-p", str(mport), "-c", str(conc), "-d", "1",
                        "--ratio", ratio, "-v", "50-4900", "--key-prefix", prefix,
                        "-n", str(keys), "--requests", str(total)] + extra,
                        prefilled=keys if extra else 0)
                cells.append(cell)
                lib.say(f"{cell.name}: memcslap {statistics.median(cell.other):.0f} "
                        f"trove-bench {statistics.median(cell.ours):.0f}")
    finally:
        mc.stop()

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    out = [f"# trove-bench cross-check, {stamp} UTC", "",
           f"- {layout.describe()}", f"- {lib.machine_description()}",
           f"- {mc.version()}; {redis.version()}",
           f"- commit {lib.git_commit(ROOT)}; medians of {a.runs} alternating runs; "
           f"load average {os.getloadavg()[0]:.1f} at the end", "",
           "| Workload | other tool | other ops/s | trove-bench ops/s | trove-bench / other | "
           "other CPU us/req | trove-bench CPU us/req | count gap |",
           "|---|---|--:|--:|--:|--:|--:|--:|"]
    for cl in cells:
        mo, mt = statistics.median(cl.other), statistics.median(cl.ours)
        out.append(f"| {cl.name} | {cl.tool} | {mo:,.0f} | {mt:,.0f} | {mt / mo:.2f} | "
                   f"{statistics.median(cl.other_cpu):.2f} | "
                   f"{statistics.median(cl.ours_cpu):.2f} | {cl.count_gap} |")
    out += ["", "CPU us/req is the generator's own user+system CPU per request (rusage). "
            "`count gap` is the largest difference, over the runs, between the requests "
            "trove-bench counted and the server's own counters (INFO "
            "total_commands_processed, stats cmd_get+cmd_set) over the same run.", "",
            "Commands:", ""]
    for cl in cells:
        out.append(f"- {cl.name}: `{cl.other_cmd}` vs `{cl.ours_cmd}`; runs "
                   f"{[round(x) for x in cl.other]} vs {[round(x) for x in cl.ours]}")
    out.append("")
    md = "\n".join(out)
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    path = os.path.join(ROOT, "bench", "results", f"validate-{stamp}.md")
    with open(path, "w") as f:
        f.write(md)
    print(md)
    lib.say(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(lib.run_tool("compare_validate", main))
