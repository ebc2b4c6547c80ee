#!/usr/bin/env python3
"""bench/ab.py: two Trove binaries (or Trove and any server bench/compare knows) side by side.

For a change's cost or gain: runs the given bench/compare workloads against binary A and binary B
(both -t 1 on the server core, trove-bench on the other, at normal priority as bench/compare;
--rt N for SCHED_FIFO is opt-in and not for a shared machine), alternating A and B run by run,
and prints per workload the medians of ops/s, p99 and server CPU µs/op and the paired ratio B/A
(the median of run i of B over run i of A).

  bench/ab.py --a /tmp/trove-before --b build/release/src/server/trove [--workloads W1,W4]
      [--runs 7] [--duration 4] [--memcached-bin PATH]   # --b memcached: a memcached row instead

With the defaults (W1,W4, 7 runs x 4 s) it plans ~3 minutes; --time-limit (default 286 s for
those) bounds the whole run: past it every process is stopped and it exits 124. Every process
it starts has its own wall-clock limit too and is stopped on exit, error, Ctrl-C or SIGTERM.

Needs a release build of trove-bench (build/release/tools/bench/trove-bench).
"""

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_lib as lib  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def load_workloads():
    # bench/compare has no .py suffix: read its WORKLOADS table without running it.
    src = open(os.path.join(ROOT, "bench", "compare")).read()
    start = src.index("WORKLOADS = {")
    end = src.index("\n}\n", start) + 2
    ns = {}
    exec(src[start:end], ns)  # noqa: S102 - our own file
    return ns["WORKLOADS"]


def planned_seconds(a, names, workloads, servers):
    """The run's expected time on an idle machine: starts, prefills, runs x cells x (warm-up +
    duration + overhead)."""
    fams = {workloads[w][0] for w in names}
    cells = sum(1 for w in names for s in servers if workloads[w][0] in s.families)
    prefills = sum(1 for s in servers for fam, _, _ in lib.PREFILLS
                   if fam in s.families and fam in fams)
    return (len(servers) * lib.START_EST_S + prefills * lib.PREFILL_EST_S +
            a.runs * cells * (a.warmup + a.duration + lib.RUN_OVERHEAD_S))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--a", required=True, help="Trove binary A (the baseline)")
    p.add_argument("--b", required=True, help="Trove binary B, or 'memcached' / 'redis'")
    p.add_argument("--memcached-bin", default=os.environ.get("MEMCACHED_BIN", "memcached"))
    p.add_argument("--workloads", default="W1,W4")
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--duration", type=float, default=4.0)
    p.add_argument("--warmup", type=float, default=1.0)
    p.add_argument("--bench", default=os.path.join(ROOT, "build/release/tools/bench/trove-bench"))
    p.add_argument("--rt", type=int, default=0, help=lib.RT_HELP)
    p.add_argument("--time-limit", type=float, default=None, metavar="S",
                   help=lib.TIME_LIMIT_HELP)
    a = p.parse_args()
    workloads = load_workloads()
    names = [w for w in a.workloads.split(",") if w]
    for w in names:
        if w not in workloads:
            sys.exit(f"unknown workload {w}")
    layout = lib.CpuLayout.detect()
    layout.rt = a.rt  # 0 (normal scheduling) unless --rt N was given
    lib.say(layout.describe())
    sa = lib.TroveServer(a.a, 1, layout)
    if a.b == "memcached":
        sb = lib.MemcachedServer(1, layout, a.memcached_bin)
    elif a.b == "redis":
        sb = lib.RedisServer(1, layout)
    else:
        sb = lib.TroveServer(a.b, 1, layout)
    sa.name, sb.name = "A", "B"
    runner = lib.BenchRunner(a.bench, layout, a.duration, a.warmup, 100000)
    planned = planned_seconds(a, names, workloads, (sa, sb))
    limit = a.time_limit or lib.default_time_limit(planned)
    lib.PROCS.set_time_limit(limit)
    lib.say(f"planned {planned:.0f} s on an idle machine; time limit {limit:.0f} s")
    results = {}
    for s in (sa, sb):
        if not s.start():
            sys.exit(f"{s.name} did not start: {s.last_error}")
    try:
        for s in (sa, sb):
            for fam, prefix, size in lib.PREFILLS:
                port = s.port_for(fam)
                if port is not None and any(workloads[w][0] == fam for w in names):
                    runner.prefill(port, fam, prefix, size)
        for run in range(a.runs):
            order = (sa, sb) if run % 2 == 0 else (sb, sa)
            for w in names:
                fam, _, wargs = workloads[w]
                for s in order:
                    port = s.port_for(fam)
                    if port is None:
                        continue
                    r = runner.run(s, port, wargs)
                    results.setdefault((w, s.name), []).append(r)
                    lib.say(f"run {run + 1}/{a.runs} {w} {s.name} "
                            f"{r['total']['ops_per_sec']:>10.0f} ops/s  "
                            f"p99 {r['total']['latency_us']['p99']:8.1f} us  "
                            f"cpu {r['server_cpu_us_per_op']:6.2f} us/op  [{r['saturated']}]")
    finally:
        sa.stop()
        sb.stop()
    print(f"A = {a.a}\nB = {a.b}\n{a.runs} runs x {a.duration} s, alternating\n")
    print("| workload | A ops/s | B ops/s | paired B/A ops | A p99 us | B p99 us | "
          "A cpu us/op | B cpu us/op | paired B/A cpu |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    for w in names:
        ra, rb = results.get((w, "A"), []), results.get((w, "B"), [])
        if not ra or not rb:
            continue
        med = statistics.median
        ops = [y["total"]["ops_per_sec"] / x["total"]["ops_per_sec"] for x, y in zip(ra, rb)
               if x["total"]["ops_per_sec"]]
        cpu = [y["server_cpu_us_per_op"] / x["server_cpu_us_per_op"] for x, y in zip(ra, rb)
               if x["server_cpu_us_per_op"]]
        print(f"| {w} | {med(x['total']['ops_per_sec'] for x in ra):,.0f} | "
              f"{med(x['total']['ops_per_sec'] for x in rb):,.0f} | "
              f"{(f'{med(ops):.3f}' if ops else 'n/a')} | "
              f"{med(x['total']['latency_us']['p99'] for x in ra):,.0f} | "
              f"{med(x['total']['latency_us']['p99'] for x in rb):,.0f} | "
              f"{med(x['server_cpu_us_per_op'] for x in ra):.2f} | "
              f"{med(x['server_cpu_us_per_op'] for x in rb):.2f} | "
              f"{(f'{med(cpu):.3f}' if cpu else 'n/a')} |")


if __name__ == "__main__":
    sys.exit(lib.run_tool("ab", main))
