#!/usr/bin/env python3
"""bench/tracking_cost.py: what client-side caching costs the server on W5.

W5 (RESP, 50 connections, pipeline 16, set:get 1:10, 32-byte values, 100k keys)
is run with tracking off, then with every one of the 50 connections sending
CLIENT TRACKING on first (trove-bench --resp-tracking), against Trove (-t 1)
and redis-server in the same run, servers pinned to the server core and the
generator to the other, as bench/compare does. Every GET then remembers its
key and every SET of a remembered key invalidates it (a table lookup, a
removal and a message to the reader's worker; RESP2 clients without a
redirect receive nothing, in both servers, so the figure is the server's own
tracking work). Reports medians of --runs paired runs: ops/s, server CPU
µs/op, and the on/off ratio per server.

  bench/tracking_cost.py [--runs 3] [--duration 4] [--trove build/release/src/server/trove]

At normal priority, as bench/compare. With the defaults it plans ~1.2 minutes; --time-limit
(default 156 s for those) bounds the run, every process has a wall-clock limit, and all are
stopped on exit, error, Ctrl-C or SIGTERM (exit 124 past a limit).
"""

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_lib as lib  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
W5 = ["-P", "resp", "-c", "50", "-d", "16", "--ratio", "1:10", "-v", "32"]
KEYS = 100000


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--duration", type=float, default=4.0)
    p.add_argument("--warmup", type=float, default=1.0)
    p.add_argument("--trove", default=os.path.join(ROOT, "build/release/src/server/trove"))
    p.add_argument("--bench", default=os.path.join(ROOT, "build/release/tools/bench/trove-bench"))
    p.add_argument("--rt", type=int, default=0, help=lib.RT_HELP)
    p.add_argument("--time-limit", type=float, default=None, metavar="S",
                   help=lib.TIME_LIMIT_HELP)
    a = p.parse_args()
    layout = lib.CpuLayout.detect()
    layout.rt = a.rt  # 0 (normal scheduling) unless --rt N was given
    lib.say(layout.describe())
    runner = lib.BenchRunner(a.bench, layout, a.duration, a.warmup, KEYS)
    servers = [lib.TroveServer(a.trove, 1, layout), lib.RedisServer(1, layout)]
    # Starts, one prefill each, runs x 2 servers x 2 modes x (warm-up + duration + overhead).
    planned = (len(servers) * (lib.START_EST_S + lib.PREFILL_EST_S) +
               a.runs * len(servers) * 2 * (a.warmup + a.duration + lib.RUN_OVERHEAD_S))
    if not lib.start_servers(servers, planned, a.time_limit):
        return 1
    results = {}
    try:
        for s in servers:
            runner.prefill(s.port_for("resp"), "resp", "key:", 32)
        for run in range(a.runs):
            for s in servers:
                for mode in ("off", "on"):
                    args = W5 + (["--resp-tracking"] if mode == "on" else [])
                    doc = runner.run(s, s.port_for("resp"), args)
                    if doc["errors"]["total"]:
                        lib.say(f"{s.name} tracking {mode}: errors {doc['errors']}")
                    results.setdefault((s.name, mode), []).append(doc)
                    lib.say(f"run {run + 1} {s.name} tracking {mode}: "
                            f"{doc['total']['ops_per_sec']:,.0f} ops/s, "
                            f"{doc['server_cpu_us_per_op']:.2f} us/op")
    finally:
        for s in servers:
            s.stop()
    print("\n| server | tracking | ops/s | server CPU µs/op | p99 µs | on/off ops | on/off µs/op |")
    print("|---|---|---|---|---|---|---|")
    for s in servers:
        med = {}
        for mode in ("off", "on"):
            runs = results[(s.name, mode)]
            med[mode] = (statistics.median(r["total"]["ops_per_sec"] for r in runs),
                         statistics.median(r["server_cpu_us_per_op"] for r in runs),
                         statistics.median(r["total"]["latency_us"]["p99"] for r in runs))
        for mode in ("off", "on"):
            ops, us, p99 = med[mode]
            ratio = ""
            if mode == "on":
                ratio = (f"{ops / med['off'][0]:.3f} | {us / med['off'][1]:.3f}"
                         if med["off"][0] and med["off"][1] else "- | -")
            else:
                ratio = "| "
            print(f"| {s.name} | {mode} | {ops:,.0f} | {us:.2f} | {p99:,.0f} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(lib.run_tool("tracking_cost", main))
