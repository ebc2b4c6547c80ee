#!/usr/bin/env python3
"""bench/datatype_compare.py: the bitmap and HyperLogLog commands side by side (issue 41).

Trove and redis-server (Debian's), one thread each on the server core, serve pipelined
requests from redis-benchmark (redis-tools) on the generator core, in one run. Each workload
is one command shape that redis-benchmark repeats with __rand_int__ (a 12-digit number,
zero-padded, drawn from --keyspace) in the key or the element:

  SETBIT    SETBIT bm:<r> 1000 1        (one-bit updates over many small bitmaps)
  BITCOUNT  BITCOUNT bm:<r>             (after SETBIT filled them)
  BITCOUNT-64K  BITCOUNT big            (a 64 KiB bitmap: the popcount itself)
  PFADD     PFADD hll <r>               (one HLL, sparse then dense)
  PFCOUNT   PFCOUNT hll                 (the cached cardinality, the common case)
  PFCOUNT-3 PFCOUNT hll h2 h3           (a union of three: no cache, a merge per call)

Reported per workload: ops/s and server CPU per operation (utime+stime from /proc over the
measured window), median of --runs, and Trove's CPU/op as a ratio of Redis's. Servers and
generator run at normal priority with wall-clock limits; every process is stopped by this
tool however it ends (compare_lib.PROCS).

  bench/datatype_compare.py --trove build/release/src/server/trove --runs 3 --requests 400000
"""

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_lib as lib  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WORKLOADS = [
    ("SETBIT", ["SETBIT", "bm:__rand_int__", "1000", "1"]),
    ("BITCOUNT", ["BITCOUNT", "bm:__rand_int__"]),
    ("BITCOUNT-64K", ["BITCOUNT", "big"]),
    ("PFADD", ["PFADD", "hll", "__rand_int__"]),
    ("PFCOUNT", ["PFCOUNT", "hll"]),
    ("PFCOUNT-3", ["PFCOUNT", "hll", "h2", "h3"]),
]


def resp(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def send_all(port, commands):
    """Sends the commands pipelined and reads one reply line per command (all the replies
    used here are one line)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"".join(commands))
        buf, seen = b"", 0
        while seen < len(commands):
            chunk = s.recv(1 << 16)
            if not chunk:
                raise RuntimeError("server closed the connection during setup")
            buf += chunk
            seen = buf.count(b"\r\n")
        if b"-ERR" in buf or b"-WRONGTYPE" in buf:
            raise RuntimeError("setup error: " + buf[buf.find(b"-"):][:200].decode(errors="replace"))


def prepare(port, with_hll):
    """The data the workloads read: a 64 KiB bitmap and two more HLLs of 50,000 elements."""
    send_all(port, [resp("FLUSHALL"), resp("SET", "big", os.urandom(65536))])
    for name in ("h2", "h3") if with_hll else ():
        cmds = [resp("PFADD", name, *["%s-%d" % (name, i + j) for j in range(100)])
                for i in range(0, 50000, 100)]
        send_all(port, cmds)


def run_benchmark(layout, port, argv, requests, clients, pipeline, keyspace):
    cmd = layout.prefix(layout.gen_cores) + [
        "redis-benchmark", "-p", str(port), "-P", str(pipeline), "-c", str(clients),
        "-n", str(requests), "-r", str(keyspace), "--csv"] + argv
    proc = lib.PROCS.popen(cmd, name="redis-benchmark", limit=120,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = lib.PROCS.communicate(proc)
    rows = [line for line in out.splitlines() if line and not line.startswith('"test"')]
    if proc.returncode != 0 or not rows:
        raise RuntimeError("redis-benchmark failed: " + (err or out)[-300:])
    return float(rows[-1].split(",")[1].strip('"'))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trove", default=os.path.join(ROOT, "build/release/src/server/trove"))
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--requests", type=int, default=400000)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--pipeline", type=int, default=16)
    p.add_argument("--keyspace", type=int, default=100000)
    p.add_argument("--only", default="", help="comma-separated workload names")
    p.add_argument("--time-limit", type=float, default=None)
    args = p.parse_args()
    if shutil.which("redis-benchmark") is None:
        lib.say("redis-benchmark (Debian's redis-tools) is not installed")
        return 2

    layout = lib.CpuLayout.detect()
    lib.say("cpu layout: " + layout.describe())
    lib.say("load average: %.2f %.2f %.2f" % os.getloadavg())
    workloads = [w for w in WORKLOADS if not args.only or w[0] in args.only.split(",")]
    servers = [lib.TroveServer(args.trove, 1, layout), lib.RedisServer(1, layout)]
    planned = len(servers) * len(workloads) * args.runs * (args.requests / 150000.0 + 1) + 30
    results = {}
    try:
        if not lib.start_servers(servers, planned, args.time_limit):
            return 1
        for srv in servers:
            port = srv.ports["resp"]
            prepare(port, any(w[0].startswith("PF") for w in workloads))
            for name, argv in workloads:
                runs = []
                for _ in range(args.runs):
                    cpu0 = srv.cpu_seconds()
                    rps = run_benchmark(layout, port, argv, args.requests, args.clients,
                                        args.pipeline, args.keyspace)
                    cpu1 = srv.cpu_seconds()
                    runs.append((rps, (cpu1 - cpu0) * 1e6 / args.requests))
                cell = {"ops": statistics.median(r[0] for r in runs),
                        "cpu_us": statistics.median(r[1] for r in runs)}
                results[(srv.name, name)] = cell
                lib.say("%-14s %-13s ops/s %10.0f  server CPU/op %.3f us  (runs: %s)" % (
                    srv.name, name, cell["ops"], cell["cpu_us"],
                    ", ".join("%.3f" % r[1] for r in runs)))
    finally:
        lib.PROCS.stop_all()
    trove, redis = servers[0].name, servers[1].name
    print("| workload | Trove ops/s | %s ops/s | Trove CPU/op (µs) | %s CPU/op (µs) | ratio |"
          % (redis, redis))
    print("|---|---|---|---|---|---|")
    for name, _ in workloads:
        a, b = results.get((trove, name)), results.get((redis, name))
        if a and b:
            print("| %s | %.0f | %.0f | %.3f | %.3f | %.2fx |" % (
                name, a["ops"], b["ops"], a["cpu_us"], b["cpu_us"], a["cpu_us"] / b["cpu_us"]))
    return 0


if __name__ == "__main__":
    sys.exit(lib.run_tool("datatype_compare", main))
