#!/usr/bin/env python3
"""bench/blocking_wakeup.py: wake-up latency of a blocked BLPOP.

A waiter sends BLPOP and blocks; a pusher sends LPUSH; the figure is the time
from the pusher's send to the waiter's reply, over --iterations rounds, for
Trove (-t 4, waiter and pusher on different workers) and redis-server, run
alternately in the same process. Both clients are raw sockets in this process,
so Python's own cost (tens of microseconds) is in both columns alike: compare
the two rows, not the absolute figures.

  bench/blocking_wakeup.py [--iterations 3000] [--trove build/release/src/server/trove]

At normal priority. With the defaults it plans ~20 s (Python round trips: a busy machine
stretches it); --time-limit (default 300 s) bounds the run, and both servers are stopped on
exit, error, Ctrl-C or SIGTERM (exit 124 past a limit).
"""

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_lib as lib  # noqa: E402  (the process registry)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            time.sleep(0.02)
    return False


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def send(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a.encode() if isinstance(a, str) else a
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.s.sendall(out)

    def recv_until(self, end):
        buf = b""
        while not buf.endswith(end):
            buf += self.s.recv(4096)
        return buf

    def call(self, *args):
        self.send(*args)
        return self.recv_until(b"\r\n")


def client_id(c):
    return int(c.call("CLIENT", "ID")[1:-2])


def pair(port, workers):
    """A waiter and a pusher; with workers > 1, on different workers."""
    waiter = Conn(port)
    while True:
        pusher = Conn(port)
        if workers <= 1 or client_id(pusher) % workers != client_id(waiter) % workers:
            return waiter, pusher


def measure(port, workers, n, samples):
    waiter, pusher = pair(port, workers)
    pusher.call("DEL", "wq")
    for i in range(n):
        waiter.send("BLPOP", "wq", "0")
        # Wait until it is blocked: the pusher's INFO shows it.
        while b"blocked_clients:1" not in pusher.call_info():
            pass
        t0 = time.perf_counter_ns()
        pusher.send("LPUSH", "wq", "x")
        waiter.recv_until(b"$1\r\nx\r\n")
        samples.append((time.perf_counter_ns() - t0) / 1000)
        pusher.recv_until(b"\r\n")


def call_info(self):
    self.send("INFO", "clients")
    head = b""
    while b"\r\n" not in head:
        head += self.s.recv(4096)
    n = int(head[1:head.index(b"\r\n")])
    body = head[head.index(b"\r\n") + 2:]
    while len(body) < n + 2:
        body += self.s.recv(4096)
    return body


Conn.call_info = call_info


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", type=int, default=3000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--trove", default=os.path.join(ROOT, "build/release/src/server/trove"))
    p.add_argument("--redis", default="/usr/bin/redis-server")
    p.add_argument("--time-limit", type=float, default=None, metavar="S",
                   help=lib.TIME_LIMIT_HELP.replace("x 1.3 + 60 s", "x 1.3 + 60 s, at least "
                                                    "300 s"))
    args = p.parse_args()
    # Two starts, then iterations x rounds x 2 servers wake-ups of ~1 ms each (Python).
    planned = 2 * lib.START_EST_S + args.iterations * args.rounds * 2 * 1e-3
    limit = args.time_limit or lib.default_time_limit(planned, floor_s=300.0)
    lib.PROCS.set_time_limit(limit)
    lib.say(f"planned {planned:.0f} s on an idle machine; time limit {limit:.0f} s")
    tmp = tempfile.mkdtemp(prefix="wakeup-")
    tport, rport = free_port(), free_port()
    cmd = [args.trove, "-p", "0", "-U", "0", "-t", "4", "--resp-port", str(tport)]
    if os.geteuid() == 0:
        cmd += ["-u", "root"]
    procs = [lib.PROCS.popen(cmd, name="server trove", stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL),
             lib.PROCS.popen([args.redis, "--port", str(rport), "--save", "", "--appendonly",
                              "no", "--dir", tmp], name="server redis",
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        if not (wait_port(tport) and wait_port(rport)):
            print("a server did not start")
            return 1
        res = {"trove -t 4 (other worker)": [], "redis-server": []}
        for _ in range(args.rounds):
            measure(tport, 4, args.iterations, res["trove -t 4 (other worker)"])
            measure(rport, 1, args.iterations, res["redis-server"])
        print("| server | wake-ups | p50 µs | p99 µs | mean µs |")
        print("|---|--:|--:|--:|--:|")
        for name, s in res.items():
            s.sort()
            print("| %s | %d | %.1f | %.1f | %.1f |" % (name, len(s), s[len(s) // 2],
                                                       s[int(len(s) * 0.99)], statistics.mean(s)))
    finally:
        for pr in procs:
            lib.PROCS.stop(pr, grace=0)  # SIGKILL to its process group, as before
    return 0


if __name__ == "__main__":
    raise SystemExit(lib.run_tool("blocking_wakeup", main))
