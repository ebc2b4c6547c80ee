#!/usr/bin/env python3
"""bench/acl_cost.py: what ACL checks cost the server on W5.

W5 (RESP, 50 connections, pipeline 16, set:get 1:10, 32-byte values, 100k keys)
is run as the default user (no check: it may run anything on anything), then
with every connection authenticated as an ACL user that has key patterns,
a channel pattern and a command rule (`~key:* ~other:* %R~ro:* &news.* +@all
-@dangerous`), against Trove (-t 1) and redis-server in the same run, servers
pinned to the server core and the generator to the other, as bench/compare
does. Every command then checks its command bit and matches its key against
the patterns; on Trove the user also has rate limits far above the load
(ratelimit:cps=1e9 ratelimit:bps=1e11), so every command also takes a token
from its connection's lease. Reports medians of --runs paired runs: ops/s, server CPU µs/op
and the acl/default ratio per server.

  bench/acl_cost.py [--runs 3] [--duration 4] [--trove build/release/src/server/trove]

At normal priority, as bench/compare. With the defaults it plans ~1.2 minutes; --time-limit
(default 156 s for those) bounds the run, every process has a wall-clock limit, and all are
stopped on exit, error, Ctrl-C or SIGTERM (exit 124 past a limit).
"""

import argparse
import os
import statistics
import sys

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_lib as lib  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
W5 = ["-P", "resp", "-c", "50", "-d", "16", "--ratio", "1:10", "-v", "32"]
KEYS = 100000
RULES = ["on", ">benchpw", "~key:*", "~other:*", "%R~ro:*", "resetchannels", "&news.*", "+@all",
         "-@dangerous"]
# Trove also gets rate limits far above the load (Redis has none): every
# command then also spends a token of its lease.
TROVE_RULES = RULES + ["ratelimit:cps=1000000000", "ratelimit:bps=100000000000"]


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
            rules = TROVE_RULES if isinstance(s, lib.TroveServer) else RULES
            redis.Redis(port=s.port_for("resp")).execute_command("ACL", "SETUSER", "bench", *rules)
        for run in range(a.runs):
            for s in servers:
                for mode in ("default", "acl"):
                    args = W5 + (["--resp-auth", "bench:benchpw"] if mode == "acl" else [])
                    doc = runner.run(s, s.port_for("resp"), args)
                    if doc["errors"]["total"]:
                        lib.say(f"{s.name} {mode}: errors {doc['errors']}")
                    results.setdefault((s.name, mode), []).append(doc)
                    lib.say(f"run {run + 1} {s.name} {mode}: "
                            f"{doc['total']['ops_per_sec']:,.0f} ops/s, "
                            f"{doc['server_cpu_us_per_op']:.2f} us/op")
    finally:
        for s in servers:
            s.stop()
    print("\n| server | user | ops/s | server CPU µs/op | p99 µs | acl/default ops | acl/default µs/op |")
    print("|---|---|---|---|---|---|---|")
    for s in servers:
        med = {}
        for mode in ("default", "acl"):
            runs = results[(s.name, mode)]
            med[mode] = (statistics.median(r["total"]["ops_per_sec"] for r in runs),
                         statistics.median(r["server_cpu_us_per_op"] for r in runs),
                         statistics.median(r["total"]["latency_us"]["p99"] for r in runs))
        for mode in ("default", "acl"):
            ops, us, p99 = med[mode]
            if mode == "acl" and med["default"][0] and med["default"][1]:
                ratio = f"{ops / med['default'][0]:.3f} | {us / med['default'][1]:.3f}"
            else:
                ratio = "| "
            print(f"| {s.name} | {mode} | {ops:,.0f} | {us:.2f} | {p99:,.0f} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(lib.run_tool("acl_cost", main))
