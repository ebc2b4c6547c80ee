#!/usr/bin/env python3
"""bench/slow_command_latency.py: what a long keyspace command costs the
other clients of its worker (issue 9, part 3).

Loads N keys (default 1,000,000) into Trove (-t 1, so every client shares
the one worker) and into redis-server, then runs KEYS *, DBSIZE, INFO
keyspace and FLUSHALL on one connection while another connection sends PING
after PING. Prints, per server and command: the command's duration and the
PING round trips seen meanwhile (count, median, p99, max).

  bench/slow_command_latency.py [--keys N] [--trove PATH] [--no-redis]

Uses build/release/src/server/trove by default. Not a test: a record.

At normal priority. With the defaults it plans ~20 s (Python work: a busy machine stretches
it); --time-limit (default 300 s) bounds the run, and the servers and redis-cli are stopped on
exit, error, Ctrl-C or SIGTERM (exit 124 past a limit).
"""

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_lib as lib  # noqa: E402  (free_port)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REDIS_CLI_LIMIT_S = 120.0  # one KEYS * over 1,000,000 keys takes a few seconds


def wait_port(port, timeout=10.0):
    t = time.time() + timeout
    while time.time() < t:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("server on port %d did not start" % port)


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def _fill(self):
        d = self.s.recv(1 << 20)
        if not d:
            raise RuntimeError("connection closed")
        self.buf += d

    def line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        ln, _, self.buf = self.buf.partition(b"\r\n")
        return ln

    def need(self, n):
        while len(self.buf) < n:
            self._fill()
        d, self.buf = self.buf[:n], self.buf[n:]
        return d

    def reply(self):
        """Reads one RESP2 reply, returning a small summary (not the data)."""
        ln = self.line()
        t = ln[:1]
        if t in (b"+", b"-", b":"):
            return ln
        if t == b"$":
            n = int(ln[1:])
            if n >= 0:
                self.need(n + 2)
            return ln
        if t == b"*":
            n = int(ln[1:])
            for _ in range(max(n, 0)):
                self.reply()
            return ln
        raise RuntimeError("bad reply %r" % ln)

    def cmd(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.s.sendall(out)
        return self.reply()


def load(port, n):
    c = Conn(port)
    batch = 2000
    for start in range(0, n, batch):
        req = b"".join(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$8\r\nvalue-xx\r\n" %
                       (len(k), k) for k in (b"key:%09d" % i
                                             for i in range(start, min(n, start + batch))))
        c.s.sendall(req)
        for _ in range(min(batch, n - start)):
            c.reply()


def measure(port, command):
    """The slow command runs in its own process (redis-cli), so its reply
    parsing never competes with the PING loop for this interpreter."""
    ping = Conn(port)
    lat = []
    t0 = time.perf_counter()
    slow = lib.PROCS.popen(["redis-cli", "-p", str(port)] + command, name="redis-cli " +
                           " ".join(command), limit=REDIS_CLI_LIMIT_S,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.002)
    while slow.poll() is None:
        t = time.perf_counter()
        ping.cmd("PING")
        lat.append((time.perf_counter() - t) * 1000.0)
    took = time.perf_counter() - t0
    lib.PROCS.stop(slow)
    lat.sort()
    if not lat:
        lat = [float("nan")]
    return {
        "cmd_s": took,
        "pings": len(lat),
        "p50_ms": statistics.median(lat),
        "p99_ms": lat[min(len(lat) - 1, int(len(lat) * 0.99))],
        "max_ms": lat[-1],
    }


def run_server(kind, path, port, tmp):
    if kind == "trove":
        args = [path, "-p", "0", "--resp-port", str(port), "-t", "1", "-m", "4096", "-U", "0"]
    else:
        args = [path, "--port", str(port), "--save", "", "--appendonly", "no",
                "--dir", tmp]
    if os.geteuid() == 0 and kind == "trove":
        args += ["-u", "root"]
    p = lib.PROCS.popen(args, name=f"server {kind}", stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
    wait_port(port)
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--keys", type=int, default=1000000)
    ap.add_argument("--trove", default=os.path.join(ROOT, "build/release/src/server/trove"))
    ap.add_argument("--no-redis", action="store_true")
    ap.add_argument("--time-limit", type=float, default=None, metavar="S",
                    help=lib.TIME_LIMIT_HELP.replace("x 1.3 + 60 s", "x 1.3 + 60 s, at least "
                                                     "300 s"))
    a = ap.parse_args()
    servers = [("trove", a.trove)]
    if not a.no_redis and shutil.which("redis-server"):
        servers.append(("redis", shutil.which("redis-server")))
    commands = [("KEYS *", ["KEYS", "*"]), ("DBSIZE", ["DBSIZE"]),
                ("INFO keyspace", ["INFO", "keyspace"]), ("FLUSHALL", ["FLUSHALL"])]
    # Per server: a start, loading (~6 us a key in Python), the four commands (~3 s).
    planned = len(servers) * (lib.START_EST_S + a.keys * 6e-6 + 3.0)
    limit = a.time_limit or lib.default_time_limit(planned, floor_s=300.0)
    lib.PROCS.set_time_limit(limit)
    lib.say(f"planned {planned:.0f} s on an idle machine; time limit {limit:.0f} s")
    print("| server | command | duration s | PINGs meanwhile | PING p50 ms | p99 ms | max ms |")
    print("|---|---|--:|--:|--:|--:|--:|")
    for kind, path in servers:
        port = lib.free_port()
        tmp = tempfile.mkdtemp()
        p = run_server(kind, path, port, tmp)
        try:
            load(port, a.keys)  # once: FLUSHALL, the last command, empties it
            for name, cmd in commands:
                r = measure(port, cmd)
                print("| %s | %s | %.2f | %d | %.2f | %.2f | %.1f |" % (
                    kind, name, r["cmd_s"], r["pings"], r["p50_ms"], r["p99_ms"], r["max_ms"]))
                sys.stdout.flush()
        finally:
            lib.PROCS.stop(p, grace=0)  # SIGKILL to its process group, as before
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(lib.run_tool("slow_command_latency", main))
