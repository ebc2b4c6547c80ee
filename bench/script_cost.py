#!/usr/bin/env python3
"""bench/script_cost.py: a rate-limiter script through EVALSHA, Trove against redis-server.

The script is the fixed-window limiter many applications ship (INCR the caller's counter, EXPIRE
it on the first hit, compare with the limit):

    local n = redis.call('INCR', KEYS[1])
    if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
    if n > tonumber(ARGV[1]) then return 0 end
    return 1

Both servers (Trove -t 1, redis-server) run pinned to the server core, redis-benchmark (Debian's
redis-tools) on the other, at normal priority as bench/compare; 50 connections, 10,000 counters
(rl:__rand_int__), pipeline 1 and 16. Reports medians of --runs alternating runs: requests/s,
server CPU µs per EVALSHA, and the Trove/Redis ratios.

  bench/script_cost.py [--runs 3] [--requests 200000] [--trove build/release/src/server/trove]

Every process has a wall-clock limit and all are stopped on exit, error, Ctrl-C or SIGTERM;
--time-limit (default from the plan) bounds the whole run (exit 124 past it).
"""

import argparse
import os
import re
import statistics
import sys
import time

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_lib as lib  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = ("local n = redis.call('INCR', KEYS[1])\n"
          "if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[2]) end\n"
          "if n > tonumber(ARGV[1]) then return 0 end\n"
          "return 1\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--requests", type=int, default=200000)
    p.add_argument("--trove", default=os.path.join(ROOT, "build/release/src/server/trove"))
    p.add_argument("--rt", type=int, default=0, help=lib.RT_HELP)
    p.add_argument("--time-limit", type=float, default=None, metavar="S",
                   help=lib.TIME_LIMIT_HELP)
    a = p.parse_args()
    layout = lib.CpuLayout.detect()
    layout.rt = a.rt
    lib.say(layout.describe())
    servers = [lib.TroveServer(a.trove, 1, layout), lib.RedisServer(1, layout)]
    pipelines = (1, 16)
    per_run_s = 30.0  # an upper estimate for one redis-benchmark run at pipeline 1
    planned = len(servers) * lib.START_EST_S + a.runs * len(servers) * len(pipelines) * 8.0
    if not lib.start_servers(servers, planned, a.time_limit):
        return 1
    results = {}
    try:
        shas = {}
        for s in servers:
            shas[s.name] = redis.Redis(port=s.port_for("resp")).script_load(SCRIPT)
        for run in range(a.runs):
            for pipe in pipelines:
                for s in servers:
                    port = s.port_for("resp")
                    cmd = layout.prefix(layout.gen_cores) + [
                        "redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-c", "50",
                        "-n", str(a.requests), "-P", str(pipe), "-r", "10000", "-q",
                        "evalsha", shas[s.name], "1", "rl:__rand_int__", "1000000", "60"]
                    cpu0 = s.cpu_seconds()
                    t0 = time.monotonic()
                    done = lib.PROCS.run(cmd, limit=per_run_s * 4, name="redis-benchmark",
                                         capture_output=True)
                    wall = time.monotonic() - t0
                    cpu = s.cpu_seconds() - cpu0
                    text = (done.stdout or b"").decode(errors="replace")
                    m = re.findall(r"([\d.]+) requests per second", text.replace("\r", "\n"))
                    if done.returncode != 0 or not m:
                        lib.say(f"{s.name} P{pipe}: redis-benchmark failed: {text[-300:]!r}")
                        return 1
                    rps = float(m[-1])
                    us = cpu * 1e6 / a.requests
                    results.setdefault((s.name, pipe), []).append((rps, us))
                    lib.say(f"run {run + 1} {s.name} P{pipe}: {rps:,.0f} req/s, {us:.2f} us/op "
                            f"({wall:.1f} s)")
    finally:
        for s in servers:
            s.stop()
    print("\n| pipeline | server | EVALSHA/s | server CPU µs/op | Trove/Redis req/s | "
          "Trove/Redis µs/op |")
    print("|---|---|---|---|---|---|")
    for pipe in pipelines:
        med = {}
        for s in servers:
            runs = results[(s.name, pipe)]
            med[s.name] = (statistics.median(r[0] for r in runs),
                           statistics.median(r[1] for r in runs))
        names = [s.name for s in servers]
        t, r = med[names[0]], med[names[1]]
        for name in names:
            rps, us = med[name]
            ratio = (f"{t[0] / r[0]:.2f} | {t[1] / r[1]:.2f}" if name == names[0] and r[0] and r[1]
                     else " | ")
            print(f"| {pipe} | {name} | {rps:,.0f} | {us:.2f} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(lib.run_tool("script_cost", main))
