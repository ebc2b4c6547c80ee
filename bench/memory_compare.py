#!/usr/bin/env python3
"""bench/memory_compare.py: resident memory (VmRSS) of Trove, memcached 1.6.45 and redis-server.

Issue 42. Two parts (--parts conns,items; default both), each on a fresh server per figure:

conns  Memory per TCP connection. Each server (Trove with -t 2 once on its memcached port and
       once on its RESP port, memcached -t 2, redis-server with its defaults) gets -c N+100
       (redis --maxclients N+100). RSS is read, N idle connections are opened from this process
       (plain sockets, 20,000 per loopback source address, the addresses 127.0.0.2, .3, ...
       never reused within a run, so no earlier run's TIME_WAIT ports are in the way); once the
       server counts them all (stats curr_connections / INFO clients connected_clients) RSS is
       read again: idle B/conn = growth / N. Then every connection makes one request (a set and
       a get of its own 10-byte key, or SET and GET) in batches of 1000 sockets: after-request
       B/conn = growth since the start / N, which includes the N keys themselves (~200 B each).
       --hold N: Trove only, on both its ports: can N connections be opened and each served one
       request (counts and RSS).
items  Memory per item. For each value size, Trove -t 1 (memcached port), memcached -t 1 (both
       -m 1024) and redis-server (--maxmemory 1024mb, allkeys-lru) load N items with 15-byte keys
       (key:%011d) through a pipelined socket loader (trove-bench cannot: its keys are prefix +
       unpadded index, so their length varies). N = min(--items, 700 MiB / (15 + value size)),
       so the largest sizes fit in 1 GiB. Each server must hold N items with no eviction, or the
       row fails. B/item = RSS growth / N; overhead = B/item - 15 - value size, drawn as an SVG
       curve against value size (log x) in bench/results/memory-curve-<stamp>.svg.

  bench/memory_compare.py [--parts conns,items] [--trove build/release/src/server/trove]
      [--memcached /work/scratch/memcached-1.6.45/memcached] [--no-redis] [--conns 10000]
      [--hold 0] [--sizes 10,50,...] [--items 1000000] [--time-limit S] [--out bench/results]
      [--svg-out docs/img/memory-curve.svg]

Writes bench/results/memory-compare-<stamp>.md (+ .json). A missing binary skips that server.
The fd limit of this process (inherited by the servers) is raised to what N needs: the soft limit
to the hard one, and as root the hard one up to /proc/sys/fs/nr_open. At normal priority; every
wait is bounded, --time-limit bounds the whole run, and every server is stopped on exit, error,
Ctrl-C or SIGTERM (exit 124 past a limit).
"""

import argparse
import json
import math
import os
import resource
import shutil
import socket
import sys
import time
from xml.sax.saxutils import escape

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_lib as lib  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEY_LEN = 15  # b"key:%011d"
ITEM_BUDGET = 700 * 2**20  # bytes of keys + values per size, to fit -m 1024
BATCH = 1000  # requests per pipelined send, sockets per request round
SYNC_EVERY = 100  # memcached noreply batches between two mn round trips
PER_ADDR = 20000  # client sockets per loopback source address
IO_TIMEOUT_S = 10.0  # any one connect, send or reply
VALUE10 = b"0123456789"


def items_for(size, max_items, budget=ITEM_BUDGET):
    """Items loaded for one value size: at most budget bytes of keys and values."""
    return max(1, min(max_items, budget // (KEY_LEN + size)))


def bytes_per(rss0_kib, rss1_kib, n):
    """RSS growth in bytes per connection or item."""
    return (rss1_kib - rss0_kib) * 1024.0 / max(1, n)


def overhead(per_item, size):
    """What an item costs beyond its 15-byte key and its value."""
    return per_item - KEY_LEN - size


def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "-"


# -- servers --

class _MaxConns:
    """A compare_lib server with -c maxconns instead of 4096 (redis: --maxclients, and a 1 GiB
    LRU cap like the others' -m 1024, so all three evict rather than refuse)."""
    maxconns = 4096

    def command(self):
        cmd = super().command()
        if "-c" not in cmd:
            return cmd + ["--maxclients", str(self.maxconns), "--maxmemory", "1024mb",
                          "--maxmemory-policy", "allkeys-lru"]
        cmd[cmd.index("-c") + 1] = str(self.maxconns)
        return cmd


class Trove(_MaxConns, lib.TroveServer):
    pass


class Memcached(_MaxConns, lib.MemcachedServer):
    pass


class Redis(_MaxConns, lib.RedisServer):
    pass


def sized(server, maxconns):
    server.maxconns = maxconns
    return server


def raise_nofile(need):
    """Raises RLIMIT_NOFILE toward need (servers started later inherit it); returns the soft."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if os.geteuid() == 0 and hard != resource.RLIM_INFINITY and hard < need:
        try:
            with open("/proc/sys/fs/nr_open") as f:
                hard = max(hard, min(need, int(f.read())))
        except (OSError, ValueError):
            pass
    want = hard if hard == resource.RLIM_INFINITY else max(soft, min(need, hard))
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (ValueError, OSError) as e:
        lib.say(f"could not raise the fd limit to {want}: {e}")
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# -- sockets --

def recv_until(sock, done, buf=b""):
    while not done(buf):
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed by the server after {buf[-80:]!r}")
        buf += chunk
    return buf


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def mc_stats(sock):
    sock.sendall(b"stats\r\n")
    buf = recv_until(sock, lambda b: b.endswith(b"END\r\n"))
    return dict(line.split()[1:3] for line in buf.decode().splitlines()
                if line.startswith("STAT ") and len(line.split()) >= 3)


def resp_info(sock, section):
    sock.sendall(resp("INFO", section))
    buf = recv_until(sock, lambda b: b"\r\n" in b)
    head, _, rest = buf.partition(b"\r\n")
    if not head.startswith(b"$"):
        raise ConnectionError(f"INFO replied {head!r}")
    n = int(head[1:])
    rest = recv_until(sock, lambda b: len(b) >= n + 2, rest)
    return dict(line.split(":", 1) for line in rest[:n].decode().splitlines() if ":" in line)


def connected(sock, fam):
    """The connections the server counts on this port (ours included)."""
    if fam == "mc":
        return int(mc_stats(sock)["curr_connections"])
    return int(resp_info(sock, "clients")["connected_clients"])


_next_addr = [2]


def source_addrs(n):
    """Fresh loopback source addresses for n sockets (127.0.0.2, .3, ...; never reused)."""
    out = []
    for _ in range((n + PER_ADDR - 1) // PER_ADDR):
        k = _next_addr[0]
        _next_addr[0] += 1
        out.append(f"127.{k // 65536}.{k // 256 % 256}.{k % 256}")
    return out


def open_conns(port, n, socks):
    """Appends up to n connected sockets to socks (gives up after 100 failures); returns how
    many it opened and the first failure."""
    addrs, failed, first, start = source_addrs(n), 0, "", len(socks)
    for i in range(n):
        s = socket.socket()
        try:
            s.settimeout(IO_TIMEOUT_S)
            s.bind((addrs[i // PER_ADDR], 0))
            s.connect(("127.0.0.1", port))
            socks.append(s)
        except OSError as e:
            s.close()
            failed += 1
            first = first or f"connection {i}: {e}"
            if failed >= 100:
                break
    return len(socks) - start, first


def request(fam, i):
    if fam == "mc":
        return b"set k%d 0 0 10\r\n%s\r\nget k%d\r\n" % (i, VALUE10, i)
    return resp("SET", b"k%d" % i, VALUE10) + resp("GET", b"k%d" % i)


def reply(fam, i):
    if fam == "mc":
        return b"STORED\r\nVALUE k%d 0 10\r\n%s\r\nEND\r\n" % (i, VALUE10)
    return b"+OK\r\n$10\r\n%s\r\n" % VALUE10


def serve_each(socks, fam):
    """One request on every socket, BATCH sockets at a time: (served, failed, first failure)."""
    ok, bad, first = 0, 0, ""
    for start in range(0, len(socks), BATCH):
        sent = []
        for i in range(start, min(len(socks), start + BATCH)):
            try:
                socks[i].sendall(request(fam, i))
                sent.append(i)
            except OSError as e:
                bad, first = bad + 1, first or f"send on {i}: {e}"
        for i in sent:
            want = reply(fam, i)
            try:
                got = recv_until(socks[i], lambda b: len(b) >= len(want) or (
                    b.endswith(b"\r\n") and not want.startswith(b)))
            except OSError as e:
                got = repr(e).encode()
            if got == want:
                ok += 1
            else:
                bad, first = bad + 1, first or f"reply on {i}: {got[:80]!r}"
    return ok, bad, first


def conn_run(server, fam, n):
    """A fresh server; n idle connections, then one request on each; RSS at the three points."""
    doc = {"server": server.name, "protocol": fam, "conns": n}
    if not server.start():
        return dict(doc, error=f"did not start: {server.last_error}")
    socks = []
    try:
        port = server.port_for(fam)
        if port is None:
            return dict(doc, error=server.why_no_port(fam))
        time.sleep(0.3)
        ctl = socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT_S)
        socks.append(ctl)
        base = connected(ctl, fam)
        rss0 = server.rss_kib()
        t0 = time.monotonic()
        opened, why = open_conns(port, n, socks)
        t1 = time.monotonic()
        clients = socks[1:]
        deadline = t1 + 30.0 + n / 5000.0
        while (seen := connected(ctl, fam) - base) < opened and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
        rss1 = server.rss_kib()
        ok, bad, first = serve_each(clients, fam)
        time.sleep(0.5)
        rss2 = server.rss_kib()
        doc.update(opened=opened, accepted=seen, served=ok, failed=n - ok,
                   connect_s=round(t1 - t0, 2), rss0_kib=rss0, rss_idle_kib=rss1,
                   rss_after_kib=rss2, idle_b_per_conn=bytes_per(rss0, rss1, opened),
                   after_b_per_conn=bytes_per(rss0, rss2, opened))
        problems = [p for p, bad_ in (
            (f"opened {opened}/{n} ({why})", opened < n),
            (f"server counted {seen}/{opened}", seen < opened),
            (f"{bad} requests failed ({first})", bad > 0)) if bad_]
        if problems:
            doc["error"] = "; ".join(problems)
        return doc
    except (OSError, ValueError, KeyError) as e:  # a bad reply or a dead server: this row only
        return dict(doc, error=f"{type(e).__name__}: {e}")
    finally:
        for s in socks:
            s.close()
        server.stop()


# -- items --

def template(fam, size):
    """One set of key:%011d (15 bytes) to a value of size bytes, to fill in with % i."""
    if fam == "mc":
        return b"set key:%%011d 0 0 %d noreply\r\n%s\r\n" % (size, b"v" * size)
    return b"*3\r\n$3\r\nSET\r\n$15\r\nkey:%%011d\r\n$%d\r\n%s\r\n" % (size, b"v" * size)


def mc_sync(sock):
    sock.sendall(b"mn\r\n")
    return recv_until(sock, lambda b: b.endswith(b"MN\r\n"))[:-4]


def recv_lines(sock, count):
    chunks, seen = [], 0
    while seen < count:
        c = sock.recv(65536)
        if not c:
            raise ConnectionError("closed by the server")
        chunks.append(c)
        seen += c.count(b"\n")
    return b"".join(chunks)


def load(sock, fam, size, n):
    """Pipelined sets of n items; returns (error replies, the first one)."""
    tmpl = template(fam, size)
    junk = []
    for b, start in enumerate(range(0, n, BATCH)):
        idx = range(start, min(n, start + BATCH))
        sock.sendall(b"".join([tmpl % i for i in idx]))
        if fam == "mc":
            if (b + 1) % SYNC_EVERY == 0:
                junk += mc_sync(sock).splitlines()
        else:
            junk += [x for x in recv_lines(sock, len(idx)).splitlines() if x != b"+OK"]
    if fam == "mc":
        junk += mc_sync(sock).splitlines()
    return len(junk), (junk[0][:80].decode(errors="replace") if junk else "")


def item_run(server, fam, size, n):
    doc = {"server": server.name, "value_size": size, "items": n}
    if not server.start():
        return dict(doc, error=f"did not start: {server.last_error}")
    try:
        port = server.port_for(fam)
        if port is None:
            return dict(doc, error=server.why_no_port(fam))
        time.sleep(0.3)
        rss0 = server.rss_kib()
        with socket.create_connection(("127.0.0.1", port), timeout=60.0) as s:
            errors, first = load(s, fam, size, n)
            if fam == "mc":
                st = mc_stats(s)
                held, evicted = int(st["curr_items"]), int(st.get("evictions", 0))
            else:
                s.sendall(resp("DBSIZE"))
                held = int(recv_until(s, lambda b: b.endswith(b"\r\n")).lstrip(b":"))
                evicted = int(resp_info(s, "stats").get("evicted_keys", 0))
        time.sleep(0.5)
        rss1 = server.rss_kib()
        per = bytes_per(rss0, rss1, n)
        doc.update(held=held, evictions=evicted, errors=errors, rss0_kib=rss0, rss1_kib=rss1,
                   bytes_per_item=per, overhead=overhead(per, size))
        problems = [p for p, bad in ((f"holds {held}/{n}", held != n),
                                     (f"{evicted} evictions", evicted),
                                     (f"{errors} errors ({first})", errors)) if bad]
        if problems:
            doc["error"] = "; ".join(problems)
        return doc
    except (OSError, ValueError, KeyError) as e:
        return dict(doc, error=f"{type(e).__name__}: {e}")
    finally:
        server.stop()


# -- chart --

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")


def nice_step(raw):
    mag = 10 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)


def svg_chart(series, title, xlabel, ylabel, width=760, height=440):
    """SVG text of a line chart: one polyline per {name: [(x, y), ...]}, x on a log scale."""
    pts = [p for v in series.values() for p in v]
    if not pts:
        raise ValueError("no points to draw")
    L, R, T, B = 70, 180, 40, 60
    pw, ph = width - L - R, height - T - B
    xs = sorted({x for x, _ in pts})
    lx0, lx1 = math.log10(xs[0]), math.log10(xs[-1])
    lx1 = lx1 if lx1 > lx0 else lx0 + 1
    ylo, yhi = min(0.0, min(y for _, y in pts)), max(y for _, y in pts)
    step = nice_step((yhi - ylo) / 5 or 1.0)
    y0, y1 = math.floor(ylo / step) * step, math.ceil(yhi / step) * step
    y1 = y1 if y1 > y0 else y0 + step

    def X(x):
        return L + (math.log10(x) - lx0) / (lx1 - lx0) * pw

    def Y(y):
        return T + ph - (y - y0) / (y1 - y0) * ph

    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
         f'font-family="sans-serif" font-size="12">',
         f'<rect width="{width}" height="{height}" fill="white"/>',
         f'<text x="{L + pw / 2:.1f}" y="22" text-anchor="middle" font-size="15">'
         f'{escape(title)}</text>']
    k = 0
    while y0 + k * step <= y1 + step / 1e6:
        y = y0 + k * step
        o.append(f'<line x1="{L}" y1="{Y(y):.1f}" x2="{L + pw}" y2="{Y(y):.1f}" stroke="#ddd"/>'
                 f'<text x="{L - 6}" y="{Y(y) + 4:.1f}" text-anchor="end">{y:g}</text>')
        k += 1
    for x in xs:
        o.append(f'<line x1="{X(x):.1f}" y1="{T}" x2="{X(x):.1f}" y2="{T + ph}" stroke="#eee"/>'
                 f'<text x="{X(x):.1f}" y="{T + ph + 18}" text-anchor="middle">{x:g}</text>')
    o.append(f'<line x1="{L}" y1="{T + ph}" x2="{L + pw}" y2="{T + ph}" stroke="black"/>'
             f'<line x1="{L}" y1="{T}" x2="{L}" y2="{T + ph}" stroke="black"/>')
    o.append(f'<text x="{L + pw / 2:.1f}" y="{height - 15}" text-anchor="middle">'
             f'{escape(xlabel)}</text>')
    o.append(f'<text transform="translate(18 {T + ph / 2:.1f}) rotate(-90)" '
             f'text-anchor="middle">{escape(ylabel)}</text>')
    for i, (name, p) in enumerate(series.items()):
        c = PALETTE[i % len(PALETTE)]
        p = sorted(p)
        o.append(f'<polyline fill="none" stroke="{c}" stroke-width="2" points="' +
                 " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in p) + '"/>')
        o += [f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="3" fill="{c}"/>' for x, y in p]
        ly = T + 10 + 20 * i
        o.append(f'<line x1="{L + pw + 15}" y1="{ly}" x2="{L + pw + 40}" y2="{ly}" stroke="{c}" '
                 f'stroke-width="2"/><text x="{L + pw + 46}" y="{ly + 4}">{escape(name)}</text>')
    o.append("</svg>")
    return "\n".join(o) + "\n"


# -- report --

def render(meta, conns, hold, sizes, items, names):
    md = [f"# Memory: Trove vs memcached and redis ({meta['date_utc']} UTC)", "",
          f"- Command: `{meta['command']}` (commit {meta['commit']})",
          f"- Machine: {meta['machine']}"] + [f"- {k}: {v}" for k, v in meta["versions"].items()]
    md.append("")
    if conns or hold:
        md += ["## Per connection", "",
               "VmRSS growth / connections. After-request includes each connection's key and "
               "10-byte value (~100-200 B per key on any of the three servers).", "",
               "| server | port | conns | idle B/conn | after-request B/conn | note |",
               "|---|---|--:|--:|--:|---|"]
        for d in conns + hold:
            fig = (f"{d['idle_b_per_conn']:,.0f} | {d['after_b_per_conn']:,.0f}"
                   if "idle_b_per_conn" in d else "- | -")
            md.append(f"| {d['server']} | {d['protocol']} | {d['conns']:,} | {fig} | "
                      f"{d.get('error', 'ok')} |")
        for d in hold:
            md.append(f"\n--hold {d['conns']:,} on Trove's {d['protocol']} port: opened "
                      f"{d.get('opened', 0):,}, served {d.get('served', 0):,}, failed "
                      f"{d.get('failed', d['conns']):,}; RSS {d.get('rss0_kib', 0) / 1024:.0f} / "
                      f"{d.get('rss_idle_kib', 0) / 1024:.0f} / "
                      f"{d.get('rss_after_kib', 0) / 1024:.0f} MiB (start / idle / after).")
        md.append("")
    if sizes:
        md += ["## Per item", "",
               "15-byte keys. Cells: VmRSS growth / items (B/item) and, in brackets, overhead "
               f"= B/item - 15 - value size. Items per size: min(--items, {ITEM_BUDGET >> 20} "
               "MiB / (15 + value size)).", "",
               "| value B | items | " + " | ".join(names) + " | trove/memcached | "
               "trove/redis |", "|--:|--:|" + "--:|" * (len(names) + 2)]
        notes = []
        for size in sizes:
            row, per = items.get(size, {}), {}
            cells = []
            for nm in names:
                d = row.get(nm)
                if d is None or "error" in d:
                    cells.append("FAILED" if d else "-")
                    if d:
                        notes.append(f"- {size} B, {nm}: {d['error']}")
                    continue
                per[lib.kind(nm)] = d["bytes_per_item"]
                cells.append(f"{d['bytes_per_item']:,.1f} ({d['overhead']:,.1f})")
            n = next((d["items"] for d in row.values()), 0)
            t = per.get("trove")
            md.append(f"| {size} | {n:,} | " + " | ".join(cells) +
                      f" | {ratio(t, per.get('memcached'))} | {ratio(t, per.get('redis'))} |")
        md += [""] + notes + ([""] if notes else [])
    return "\n".join(md) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--parts", default="conns,items")
    p.add_argument("--trove", default=os.path.join(ROOT, "build/release/src/server/trove"))
    p.add_argument("--memcached", default="/work/scratch/memcached-1.6.45/memcached")
    p.add_argument("--no-redis", action="store_true")
    p.add_argument("--conns", type=int, default=10000)
    p.add_argument("--hold", type=int, default=0, metavar="N")
    p.add_argument("--sizes", default="10,50,100,200,500,1000,2000,4096")
    p.add_argument("--items", type=int, default=1000000)
    p.add_argument("--out", default=os.path.join(ROOT, "bench/results"))
    p.add_argument("--svg-out", default=None, metavar="PATH")
    p.add_argument("--time-limit", type=float, default=None, metavar="S",
                   help=lib.TIME_LIMIT_HELP)
    a = p.parse_args()
    parts = set(a.parts.split(","))
    if not parts or parts - {"conns", "items"}:
        sys.exit(f"--parts takes conns and/or items, not {a.parts!r}")
    sizes = sorted({int(s) for s in a.sizes.split(",") if s}) if "items" in parts else []
    if any(s < 1 for s in sizes) or a.conns < 1 or a.hold < 0 or a.items < 1:
        sys.exit("--sizes, --conns and --items must be positive")
    cpus = sorted(os.sched_getaffinity(0))
    layout = lib.CpuLayout(cpus, cpus, cpus, False, "memory only")
    have = {"trove": os.access(a.trove, os.X_OK),
            "memcached": shutil.which(a.memcached) is not None,
            "redis": not a.no_redis and shutil.which("redis-server") is not None}
    for k, why in (("trove", a.trove), ("memcached", a.memcached), ("redis", "redis-server")):
        if not have[k]:
            lib.say(f"skipping {k}: {'--no-redis' if k == 'redis' and a.no_redis else why} "
                    "not found")
    need = max(a.conns if "conns" in parts else 0, a.hold) + 1000  # + the servers' own fds
    if "conns" in parts or a.hold:
        got = raise_nofile(need)
        lib.say(f"fd limit {got} (wanted {need})" + ("" if got >= need else
                                                       ": the larger runs will fail"))
    if a.hold and not have["trove"]:
        lib.say("--hold skipped: no Trove binary")

    def servers(threads, maxconns):
        out = []  # (server, family)
        if have["trove"]:
            out += [(sized(Trove(a.trove, threads, layout), maxconns), f) for f in ("mc", "resp")]
        if have["memcached"]:
            out.append((sized(Memcached(threads, layout, a.memcached), maxconns), "mc"))
        if have["redis"]:
            out.append((sized(Redis(1, layout), maxconns), "resp"))  # its defaults: no io-threads
        return out

    conn_set = servers(2, a.conns + 100) if "conns" in parts else []
    item_set = [(s, f) for s, f in servers(1, 4096)
                if not (isinstance(s, Trove) and f == "resp")] if sizes else []
    n_items = {s: items_for(s, a.items) for s in sizes}
    planned = (len(conn_set) * (lib.START_EST_S + 2.0 + a.conns / 2500.0) +
               (2 * (lib.START_EST_S + 2.0 + a.hold / 2500.0) if a.hold else 0) +
               sum(len(item_set) * (lib.START_EST_S + 1.0 + n / 150000.0 +
                                    n * s / 300e6) for s, n in n_items.items()))
    limit = a.time_limit or lib.default_time_limit(planned)
    lib.PROCS.set_time_limit(limit)
    lib.say(f"planned {planned:.0f} s on an idle machine; time limit {limit:.0f} s")
    t_start = time.monotonic()
    conns, hold, items = [], [], {}
    for srv, fam in conn_set:
        conns.append(conn_run(srv, fam, a.conns))
        lib.say(f"conns {srv.name} {fam}: {conns[-1]}")
    if a.hold and have["trove"]:
        for fam in ("mc", "resp"):
            d = conn_run(sized(Trove(a.trove, 2, layout), a.hold + 100), fam, a.hold)
            hold.append(dict(d, server="trove (--hold)"))
            lib.say(f"hold {fam}: {hold[-1]}")
    for size in sizes:
        if n_items[size] < a.items:
            lib.say(f"{size} B values: {n_items[size]:,} items (700 MiB of keys and values)")
        for srv, fam in item_set:
            d = item_run(srv, fam, size, n_items[size])
            items.setdefault(size, {})[srv.name] = d
            lib.say(f"items {size} B {srv.name}: {d}")
    names = [s.name for s, _ in item_set]
    versions = {s.name: s.version() for s, _ in conn_set + item_set}
    meta = {"date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
            "command": " ".join(sys.argv), "commit": lib.git_commit(ROOT),
            "machine": lib.machine_description(), "versions": versions,
            "elapsed_s": round(time.monotonic() - t_start)}
    md = render(meta, conns, hold, sizes, items, names)
    os.makedirs(a.out, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    base = os.path.join(a.out, f"memory-compare-{stamp}")
    with open(base + ".md", "w") as f:
        f.write(md)
    with open(base + ".json", "w") as f:
        json.dump({"meta": meta, "conns": conns, "hold": hold,
                   "items": {str(k): v for k, v in items.items()}}, f, indent=1)
    series = {nm: [(s, items[s][nm]["overhead"]) for s in sizes
                   if "overhead" in items.get(s, {}).get(nm, {})] for nm in names}
    series = {k: v for k, v in series.items() if v}
    if series:
        svg = svg_chart(series, "Memory overhead per item (15-byte keys)", "value size (bytes)",
                        "bytes per item beyond key + value")
        for path in [os.path.join(a.out, f"memory-curve-{stamp}.svg")] + (
                [a.svg_out] if a.svg_out else []):
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            with open(path, "w") as f:
                f.write(svg)
            lib.say(f"wrote {path}")
    print(md)
    lib.say(f"wrote {base}.md and .json")
    return 0


if __name__ == "__main__":
    sys.exit(lib.run_tool("memory_compare", main))
