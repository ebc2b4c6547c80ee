#!/usr/bin/env python3
"""bench/collection_memory.py: memory per element of RESP collections, Trove against redis-server.

Issue 16's memory target for collections: per element no worse than Redis's own encodings on the
same data. Each shape is loaded into a fresh server (Trove -t 1 -m 4096, redis-server with its
defaults, so Redis picks listpack, intset, hashtable or skiplist by its own thresholds), and the
growth of the server's VmRSS divided by the number of elements is reported, with OBJECT ENCODING
of one key so the table says which representation each server chose.

Shapes (about one million elements each; names are what the report prints):
  hash10      100,000 hashes of 10 fields  (field "field:NN", 10-byte values)
  hash1000    1,000 hashes of 1,000 fields (same fields and values)
  intset200   5,000 sets of 200 integers   (0 .. 10^9, distinct per set)
  set1000     1,000 sets of 1,000 strings  ("member:NNNNNN")
  zset128     8,000 sorted sets of 128 members (Redis's listpack limit)
  zset1000    1,000 sorted sets of 1,000 members ("member:NNNNNN", double scores)
  list1000    1,000 lists of 1,000 10-byte elements

  bench/collection_memory.py [--shapes hash10,zset1000] [--scale 1.0] [--runs 1]
      [--trove build/release/src/server/trove] [--out bench/results]

Writes bench/results/collection-memory-<stamp>.md (+ .json). --scale shrinks every shape (0.1
loads a tenth; RSS noise grows). Needs python3-redis (Debian) and redis-server on PATH.

At normal priority. With the defaults it plans ~1.4 minutes (the loading is Python work, so a
busy machine stretches it); --time-limit (default 300 s) bounds the run, and every server is
stopped on exit, error, Ctrl-C or SIGTERM (exit 124 past a limit).
"""

import argparse
import json
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_lib as lib  # noqa: E402

try:
    import redis  # python3-redis
except ImportError:  # pragma: no cover - reported below
    redis = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name: (keys, elements per key, loader)
SHAPES = {
    "hash10": (100000, 10, "hash"),
    "hash1000": (1000, 1000, "hash"),
    "intset200": (5000, 200, "intset"),
    "set1000": (1000, 1000, "set"),
    "zset128": (8000, 128, "zset"),
    "zset1000": (1000, 1000, "zset"),
    "list1000": (1000, 1000, "list"),
}


def key_commands(kind, k, n, rng):
    """The commands that build key k of a shape (in batches of at most 100 elements)."""
    key = f"{kind}:{k:07d}"
    out = []
    for start in range(0, n, 100):
        idx = range(start, min(n, start + 100))
        if kind == "hash":
            args = []
            for i in idx:
                args += [f"field:{i:04d}", f"v{i:09d}"]
            out.append(["HSET", key] + args)
        elif kind == "intset":
            out.append(["SADD", key] + [str(rng.randrange(10**9)) for _ in idx])
        elif kind == "set":
            out.append(["SADD", key] + [f"member:{i:06d}" for i in idx])
        elif kind == "zset":
            args = []
            for i in idx:
                args += [repr(rng.random() * 1000), f"member:{i:06d}"]
            out.append(["ZADD", key] + args)
        elif kind == "list":
            out.append(["RPUSH", key] + [f"e{i:09d}" for i in idx])
    return key, out


def load(port, shape, scale):
    keys, per_key, kind = SHAPES[shape]
    keys = max(1, int(keys * scale))
    rng = random.Random(16)
    c = redis.Redis(host="127.0.0.1", port=port, socket_timeout=60)
    pipe = c.pipeline(transaction=False)
    queued = 0
    elements = 0
    first = None
    for k in range(keys):
        key, cmds = key_commands(kind, k, per_key, rng)
        first = first or key
        for cmd in cmds:
            pipe.execute_command(*cmd)
            queued += 1
        if queued >= 500:
            pipe.execute()
            queued = 0
    if queued:
        pipe.execute()
    # Count what the server holds (intset members may repeat within a set).
    card = {"hash": "HLEN", "intset": "SCARD", "set": "SCARD", "zset": "ZCARD", "list": "LLEN"}[kind]
    pipe = c.pipeline(transaction=False)
    for k in range(keys):
        pipe.execute_command(card, f"{kind}:{k:07d}")
    elements = sum(int(x) for x in pipe.execute())
    enc = c.object("encoding", first)
    enc = enc.decode() if isinstance(enc, bytes) else str(enc)
    return keys, elements, enc


def measure(server, shape, scale):
    if not server.start():
        return {"error": f"did not start: {server.last_error}"}
    try:
        port = server.port_for("resp")
        if port is None:
            return {"error": "RESP port is not up"}
        time.sleep(0.3)
        rss0 = server.rss_kib()
        keys, elements, enc = load(port, shape, scale)
        time.sleep(0.5)
        rss1 = server.rss_kib()
        return {"keys": keys, "elements": elements, "encoding": enc,
                "rss_growth_mb": (rss1 - rss0) / 1024,
                "bytes_per_element": (rss1 - rss0) * 1024 / max(1, elements)}
    finally:
        server.stop()


class BigTrove(lib.TroveServer):
    """Trove with room for every shape (-m 4096 instead of the matrix's 1024)."""

    def clone(self):
        return BigTrove(self.binary, self.threads, self.layout)

    def command(self):
        cmd = super().command()
        cmd[cmd.index("-m") + 1] = "4096"
        return cmd


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--trove", default=os.path.join(ROOT, "build/release/src/server/trove"))
    p.add_argument("--out", default=os.path.join(ROOT, "bench/results"))
    p.add_argument("--time-limit", type=float, default=None, metavar="S",
                   help=lib.TIME_LIMIT_HELP.replace("x 1.3 + 60 s", "x 1.3 + 60 s, at least "
                                                    "300 s"))
    a = p.parse_args()
    if redis is None:
        sys.exit("collection_memory.py needs python3-redis (apt-get install python3-redis)")
    shapes = [s for s in a.shapes.split(",") if s]
    for s in shapes:
        if s not in SHAPES:
            sys.exit(f"unknown shape {s!r}; known: {', '.join(SHAPES)}")
    layout = lib.CpuLayout.detect()
    lib.say(layout.describe())
    servers = [BigTrove(a.trove, 1, layout), lib.RedisServer(1, layout)]
    results = {s: {srv.name: [] for srv in servers} for s in shapes}
    # Per shape, run and server: a start, 0.8 s of settling, ~4 s of loading (Python) at scale 1.
    planned = len(shapes) * a.runs * len(servers) * (lib.START_EST_S + 0.8 + 4.0 * a.scale)
    limit = a.time_limit or lib.default_time_limit(planned, floor_s=300.0)
    lib.PROCS.set_time_limit(limit)
    lib.say(f"planned {planned:.0f} s on an idle machine; time limit {limit:.0f} s")
    for shape in shapes:
        for r in range(a.runs):
            for srv in servers:
                doc = measure(srv.clone(), shape, a.scale)
                lib.say(f"{shape} run {r + 1} {srv.name}: {doc}")
                results[shape][srv.name].append(doc)

    lines = ["# Memory per element of RESP collections", "",
             f"Commit {lib.git_commit(ROOT)}; {lib.machine_description()}; "
             f"`bench/collection_memory.py --scale {a.scale} --runs {a.runs}`; "
             "VmRSS growth of a fresh server / elements held, median of runs.", "",
             "| shape | elements | Trove B/element | Trove encoding | redis B/element | "
             "redis encoding | Trove / redis |",
             "|---|--:|--:|---|--:|---|--:|"]
    for shape in shapes:
        row = {}
        for srv in servers:
            docs = [d for d in results[shape][srv.name] if "error" not in d]
            if docs:
                row[srv.name] = (statistics.median(d["bytes_per_element"] for d in docs),
                                 docs[0]["encoding"], docs[0]["elements"])
        t = row.get("trove")
        rd = next((v for k, v in row.items() if k.startswith("redis")), None)
        ratio = f"{t[0] / rd[0]:.2f}" if t and rd and rd[0] > 0 else "-"
        lines.append(f"| {shape} | {(t or rd or (0, '', 0))[2]:,} | "
                     f"{t[0]:.1f} | {t[1]} | " if t else f"| {shape} | - | - | - | ")
        lines[-1] += (f"{rd[0]:.1f} | {rd[1]} | {ratio} |" if rd else "- | - | - |")
    os.makedirs(a.out, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    base = os.path.join(a.out, f"collection-memory-{stamp}")
    with open(base + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(base + ".json", "w") as f:
        json.dump(results, f, indent=1)
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(lib.run_tool("collection_memory", main))
