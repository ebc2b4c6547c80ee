#!/usr/bin/python3
"""bench/pubsub_bench.py: PUBLISH throughput and delivery latency, Trove
against redis-server, with 1, 100 and 1,000 subscribers.

For each server (Trove -t 4, redis-server single-threaded, both fresh per
run on ephemeral loopback ports) and each subscriber count it:

  1. opens the subscribers (spread over --procs client processes; Trove deals
     connections to its workers round-robin, so they cover every worker) and
     one publisher connection, all SUBSCRIBEd / checked before timing;
  2. throughput phase (--duration s): the publisher keeps --window PUBLISH
     commands in flight (closed loop). Reported: PUBLISH replies per second,
     and messages delivered per second (every subscriber's frames, over the
     time from the first publish to the last frame received);
  3. latency phase (--duration s): a fixed rate of publishes (20,000
     deliveries/s in total, at most 5,000 publishes/s, at least 20), so the
     server is not saturated. Reported: p50 / p99 / max of
     (receipt - send) over every delivered message, where the send time is
     CLOCK_MONOTONIC taken just before the publisher's send() and written
     into the payload, and the receipt time is CLOCK_MONOTONIC just after
     the subscriber's recv() returned the bytes;
  4. checks that every subscriber got every message of each phase, in order
     (sequence numbers), none lost.

Runs interleave the servers (run 1: trove, redis; run 2: ...) and the table
shows medians over --runs.

  bench/pubsub_bench.py [--runs 3] [--duration 5] [--subs 1,100,1000]
                        [--trove PATH] [--redis PATH] [--size 64] [--json F]

Why Python (stdlib only, no redis-py): a subscriber reads whole socket
buffers and walks fixed-size frames (every message has the same length, so
a chunk holds len // L of them) with slicing only, and runs in its own
processes; the per-message Python work is one int() of the timestamp. The
cost is a client that is slower than the servers at high fan-out on this
2-core machine, which the report states (client CPU share per cell).
Not a test: a record (docs/benchmarks.md).

Servers and clients run at normal priority; --rt N (SCHED_FIFO) is opt-in and not for a shared
machine. With the defaults it plans ~5 minutes; --time-limit (default 466 s for those) bounds
the run, servers and subscriber processes have wall-clock limits, and all are stopped on exit,
error, Ctrl-C or SIGTERM (exit 124 past a limit).
"""

import argparse
import json
import multiprocessing as mp
import os
import resource
import select
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_lib as lib  # noqa: E402  (free_port, probe)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHANNEL = b"bnch"
TS_DIGITS = 19
SEQ_DIGITS = 10
# A control frame (ts field all zeros) ends a phase; its seq field is the
# number of messages the publisher sent in that phase.
CTRL_TS = b"0" * TS_DIGITS


def now_ns():
    return time.monotonic_ns()


def wait_ping(port, timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        if lib.probe(port, b"PING\r\n", b"+PONG"):
            return
        time.sleep(0.05)
    raise RuntimeError("server on port %d does not answer PING" % port)


def frame_for(payload_len):
    """The exact bytes of one delivered message, minus the payload."""
    head = b"*3\r\n$7\r\nmessage\r\n$%d\r\n%s\r\n$%d\r\n" % (len(CHANNEL), CHANNEL, payload_len)
    return head, len(head) + payload_len + 2


def payload(ts, seq, size):
    p = b"%019d%010d" % (ts, seq)
    return p + b"x" * (size - len(p))


def publish_cmd(ts, seq, size):
    p = payload(ts, seq, size)
    return b"*3\r\n$7\r\nPUBLISH\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(CHANNEL), CHANNEL, len(p), p)


def read_exact(s, n):
    b = b""
    while len(b) < n:
        d = s.recv(n - len(b))
        if not d:
            raise RuntimeError("connection closed")
        b += d
    return b


# --- subscriber process ---

def subscriber_proc(port, nconns, size, ctl, phases):
    """Opens nconns subscribers, reports 'ready', then for each phase
    collects every frame until each connection has seen the control frame
    and reports (frames, last receipt ns, latencies sample, errors)."""
    try:
        head, flen = frame_for(size)
        conns = []
        confirm = b"*3\r\n$9\r\nsubscribe\r\n$%d\r\n%s\r\n:1\r\n" % (len(CHANNEL), CHANNEL)
        for _ in range(nconns):
            s = socket.create_connection(("127.0.0.1", port))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.sendall(b"*2\r\n$9\r\nSUBSCRIBE\r\n$%d\r\n%s\r\n" % (len(CHANNEL), CHANNEL))
            conns.append(s)
        for s in conns:
            got = read_exact(s, len(confirm))
            if got != confirm:
                raise RuntimeError("unexpected SUBSCRIBE reply %r" % got[:80])
            s.setblocking(False)
        ep = select.epoll()
        fds = {}
        for s in conns:
            ep.register(s.fileno(), select.EPOLLIN)
            fds[s.fileno()] = s
        ctl.send(("ready", None))
        t_cpu0 = time.process_time()
        for phase in phases:
            sample_every = phase["sample_every"]
            left = len(conns)
            rest = {fd: b"" for fd in fds}
            next_seq = {fd: 0 for fd in fds}
            done = {fd: False for fd in fds}
            frames = 0
            recvs = 0
            eagain = 0
            polls = 0
            lat = []
            errors = 0
            last_rx = 0
            first_err = ""
            quiet_since = time.time()
            while left > 0:
                ready = ep.poll(1.0)
                polls += 1
                if not ready and time.time() - quiet_since > 30:
                    raise RuntimeError("no message for 30 s, %d subscribers unfinished" % left)
                if ready:
                    quiet_since = time.time()
                for fd, _ in ready:
                    s = fds[fd]
                    try:
                        # 64 KiB: below malloc's mmap threshold, so no
                        # mmap + page faults per call as with 256 KiB.
                        d = s.recv(1 << 16)
                    except BlockingIOError:
                        eagain += 1
                        continue
                    rx = now_ns()
                    recvs += 1
                    if not d:
                        raise RuntimeError("subscriber connection closed by the server")
                    buf = rest[fd] + d if rest[fd] else d
                    n = len(buf) // flen
                    rest[fd] = buf[n * flen:]
                    if n == 0:
                        continue
                    if buf.count(head, 0, n * flen) != n:
                        errors += 1
                        first_err = first_err or "malformed frames %r" % buf[:80]
                    hl = len(head)
                    seq = next_seq[fd]
                    for i in range(n):
                        o = i * flen + hl
                        tsb = buf[o:o + TS_DIGITS]
                        if tsb == CTRL_TS:
                            if int(buf[o + TS_DIGITS:o + TS_DIGITS + SEQ_DIGITS]) != seq:
                                errors += 1
                                first_err = first_err or "got %d of %d messages" % (
                                    seq, int(buf[o + TS_DIGITS:o + TS_DIGITS + SEQ_DIGITS]))
                            done[fd] = True
                            left -= 1
                            continue
                        if int(buf[o + TS_DIGITS:o + TS_DIGITS + SEQ_DIGITS]) != seq:
                            errors += 1
                            first_err = first_err or "out of order"
                        if seq % sample_every == 0:
                            lat.append(rx - int(tsb))
                        seq += 1
                        frames += 1
                    next_seq[fd] = seq
                    last_rx = rx
            ctl.send(("phase", {"frames": frames, "recvs": recvs, "eagain": eagain, "polls": polls, "last_rx": last_rx, "lat": lat,
                                "errors": errors, "first_error": first_err}))
        ctl.send(("cpu", time.process_time() - t_cpu0))
        for s in conns:
            s.close()
    except Exception as e:  # reported to the parent, which fails the cell
        ctl.send(("error", repr(e)))


# --- publisher (parent process) ---

class Publisher:
    def __init__(self, port, size):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.size = size
        self.buf = b""

    def replies(self, block):
        """Reads what is there; returns the number of complete replies and
        the receiver counts seen."""
        self.s.setblocking(block)
        try:
            d = self.s.recv(1 << 16)
        except BlockingIOError:
            return 0
        finally:
            self.s.setblocking(True)
        if not d:
            raise RuntimeError("publisher connection closed")
        self.buf += d
        n = self.buf.count(b"\n")
        if n:
            cut = self.buf.rfind(b"\n") + 1
            done, self.buf = self.buf[:cut], self.buf[cut:]
            if not done.startswith(b":"):
                raise RuntimeError("PUBLISH reply %r" % done[:80])
            self.last_reply = done[:done.find(b"\r")]
        return n

    def publish_one(self, seq):
        self.s.sendall(publish_cmd(now_ns(), seq, self.size))

    def control(self, nsent):
        self.s.sendall(publish_cmd(0, nsent, self.size))
        while self.replies(True) == 0:
            pass

    def closed_loop(self, duration, window):
        seq = 0
        out = b"".join(publish_cmd(now_ns(), seq + i, self.size) for i in range(window))
        self.s.sendall(out)
        seq += window
        answered = 0
        t0 = now_ns()
        end = t0 + int(duration * 1e9)
        while True:
            n = self.replies(True)
            answered += n
            if now_ns() >= end:
                break
            if n:
                ts = now_ns()
                self.s.sendall(b"".join(publish_cmd(ts, seq + i, self.size) for i in range(n)))
                seq += n
        while answered < seq:
            answered += self.replies(True)
        t1 = now_ns()
        return seq, t0, t1

    def fixed_rate(self, duration, rate):
        seq = 0
        t0 = now_ns()
        interval = int(1e9 / rate)
        total = int(duration * rate)
        answered = 0
        for k in range(total):
            due = t0 + k * interval
            d = due - now_ns()
            if d > 0:
                time.sleep(d / 1e9)  # never spin: at SCHED_FIFO it would starve the server
            self.publish_one(seq)
            seq += 1
            answered += self.replies(False)
        while answered < seq:
            answered += self.replies(True)
        return seq, t0


def pct(sorted_vals, p):
    if not sorted_vals:
        return float("nan")
    i = min(len(sorted_vals) - 1, int(round(p / 100.0 * (len(sorted_vals) - 1))))
    return sorted_vals[i]


def run_cell(port, nsubs, args, server_pid):
    nprocs = min(args.procs, nsubs)
    per = [nsubs // nprocs + (1 if i < nsubs % nprocs else 0) for i in range(nprocs)]
    lat_rate = max(20, min(5000, 20000 // nsubs))
    # Keep ~100k latency samples at most in the throughput phase.
    phases = [{"name": "check", "sample_every": 1 << 30},
              {"name": "warmup", "sample_every": 1 << 30},
              {"name": "throughput", "sample_every": max(1, nsubs // 10)},
              {"name": "latency", "sample_every": 1}]
    ctx = mp.get_context("fork")
    pipes, procs = [], []
    for n in per:
        a, b = ctx.Pipe()
        p = ctx.Process(target=subscriber_proc, args=(port, n, args.size, b, phases))
        p.start()
        lib.PROCS.adopt(p.pid, "subscriber process", cell_limit(args))
        pipes.append(a)
        procs.append(p)

    def collect(kind):
        out = []
        for c in pipes:
            if not c.poll(120):
                raise RuntimeError("subscriber process silent")
            k, v = c.recv()
            if k == "error":
                raise RuntimeError("subscriber: " + v)
            assert k == kind, (k, kind)
            out.append(v)
        return out

    try:
        collect("ready")
        pub = Publisher(port, args.size)
        # Every subscriber is registered: PUBLISH answers the receiver count.
        pub.control(0)
        if pub.last_reply != b":%d" % nsubs:
            raise RuntimeError("PUBLISH reached %r, want %d" % (pub.last_reply, nsubs))
        collect("phase")  # the "check" phase: that control frame only
        # Warm-up: 1 s closed loop, not recorded.
        t_warm = time.time()
        n, _, _ = pub.closed_loop(1.0, args.window)
        pub.control(n)
        collect("phase")
        cpu0 = cpu_seconds(server_pid)
        w0 = time.time()
        n, t0, t1 = pub.closed_loop(args.duration, args.window)
        pub.control(n)
        tput = collect("phase")
        cpu1 = cpu_seconds(server_pid)
        w1 = time.time()
        n_lat, _ = pub.fixed_rate(args.duration, lat_rate)
        pub.control(n_lat)
        latp = collect("phase")
        client_cpu = sum(collect("cpu"))
        for p in procs:
            p.join(10)
            if not p.is_alive():
                lib.PROCS.forget(p.pid)
        errors = sum(r["errors"] for r in tput + latp)
        first = next((r["first_error"] for r in tput + latp if r["first_error"]), "")
        frames = sum(r["frames"] for r in tput)
        recvs = sum(r["recvs"] for r in tput)
        last_rx = max(r["last_rx"] for r in tput)
        lt = sorted(x for r in tput for x in r["lat"])
        ll = sorted(x for r in latp for x in r["lat"])
        return {
            "subs": nsubs,
            "publishes": n,
            "pub_per_s": n / ((t1 - t0) / 1e9),
            "deliveries_per_s": frames / ((last_rx - t0) / 1e9),
            "expected_frames": n * nsubs,
            "frames": frames,
            "sat_p50_us": pct(lt, 50) / 1e3, "sat_p99_us": pct(lt, 99) / 1e3,
            "lat_rate": lat_rate,
            "lat_samples": len(ll),
            "p50_us": pct(ll, 50) / 1e3, "p99_us": pct(ll, 99) / 1e3,
            "max_us": (ll[-1] / 1e3) if ll else float("nan"),
            "server_cpu_share": (cpu1 - cpu0) / (w1 - w0),
            "client_cpu_s": client_cpu,
            "client_cpu_share": client_cpu / (time.time() - t_warm),
            "frames_per_recv": frames / max(1, recvs),
            "errors": errors, "first_error": first,
        }
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
            lib.PROCS.forget(p.pid)


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cell_limit(args):
    """Wall-clock limit of one cell's subscriber processes: warm-up, the two phases, and the
    120 s the parent waits for a silent subscriber."""
    return 1.0 + 2 * args.duration + 120.0


def cell_planned(args):
    """A cell's expected time: subscriber start-up, 1 s warm-up, two phases, drains (~6 s)."""
    return 1.0 + 2 * args.duration + 6.0


class Server:
    def __init__(self, name, cmd, port):
        self.name, self.cmd, self.port = name, cmd, port
        self.log = tempfile.TemporaryFile()
        self.p = lib.PROCS.popen(cmd, name=f"server {name}", stdout=self.log,
                                 stderr=subprocess.STDOUT)
        wait_ping(port)

    def stop(self):
        lib.PROCS.stop(self.p, grace=10)  # SIGTERM to its group, SIGKILL after 10 s


def start(name, args):
    port = lib.free_port()
    if name == "trove":
        cmd = [args.trove, "-p", str(lib.free_port()), "--resp-port", str(port), "-t", str(args.trove_threads),
               "-U", "0", "-m", "1024", "-c", "4096"]
        if os.geteuid() == 0:
            cmd += ["-u", "root"]  # like memcached, Trove refuses root without -u
    else:
        cmd = [args.redis, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
               "--appendonly", "no", "--maxclients", "4096"]
    if args.rt > 0:
        cmd = ["chrt", "-f", str(args.rt)] + cmd
    return Server(name, cmd, port)


def version(args, name):
    try:
        exe = args.trove if name == "trove" else args.redis
        out = lib.PROCS.probe([exe, "--version" if name == "redis" else "-V"], limit=5)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except Exception:
        return "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=float, default=5.0, help="seconds per phase")
    ap.add_argument("--subs", default="1,100,1000")
    ap.add_argument("--window", type=int, default=16, help="PUBLISH in flight (throughput)")
    ap.add_argument("--size", type=int, default=64, help="payload bytes (>= 29)")
    ap.add_argument("--procs", type=int, default=2, help="subscriber processes")
    ap.add_argument("--servers", default="trove,redis")
    ap.add_argument("--trove", default=os.path.join(ROOT, "build/release/src/server/trove"))
    ap.add_argument("--trove-threads", type=int, default=4, help="Trove's -t")
    ap.add_argument("--redis", default="/usr/bin/redis-server")
    ap.add_argument("--json", help="write every run here")
    ap.add_argument("--rt", type=int, default=0,
                    help=lib.RT_HELP.replace("generator", "clients (the clients one below)"))
    ap.add_argument("--time-limit", type=float, default=None, metavar="S",
                    help=lib.TIME_LIMIT_HELP)
    args = ap.parse_args()
    subs = [int(x) for x in args.subs.split(",")]
    servers = args.servers.split(",")
    planned = args.runs * len(servers) * (lib.START_EST_S + len(subs) * cell_planned(args))
    limit = args.time_limit or lib.default_time_limit(planned)
    lib.PROCS.set_time_limit(limit)
    lib.say(f"planned {planned:.0f} s on an idle machine; time limit {limit:.0f} s")
    if args.rt > 0:
        # As bench/compare: on this machine the other builders' threads
        # delay every wake-up by a scheduler slice. The clients run
        # one priority below the servers: a busy client must never keep a
        # server thread off a core (same-priority FIFO threads never preempt
        # each other, and four Trove workers share two cores with them).
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(max(1, args.rt - 1)))
    need = max(subs) + 64
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, need), hard))
    print("ulimit -n: %d (need ~%d)" % (resource.getrlimit(resource.RLIMIT_NOFILE)[0], need),
          file=sys.stderr)
    results = {s: {n: [] for n in subs} for s in servers}
    for run in range(args.runs):
        for name in servers:
            srv = start(name, args)
            try:
                for n in subs:
                    r = run_cell(srv.port, n, args, srv.p.pid)
                    r["load"] = os.getloadavg()[0]
                    results[name][n].append(r)
                    print("run %d %-5s subs=%-4d pub/s=%9.0f deliv/s=%10.0f p50=%7.0fus "
                          "p99=%7.0fus (sat p50=%7.0f p99=%7.0f) srv cpu=%.2f cli cpu=%.2f msg/recv=%.1f "
                          "errors=%d %s" % (
                              run + 1, name, n, r["pub_per_s"], r["deliveries_per_s"],
                              r["p50_us"], r["p99_us"], r["sat_p50_us"], r["sat_p99_us"],
                              r["server_cpu_share"], r["client_cpu_share"],
                              r["frames_per_recv"], r["errors"], r["first_error"]),
                          file=sys.stderr)
            finally:
                srv.stop()
    keys = ["pub_per_s", "deliveries_per_s", "sat_p50_us", "sat_p99_us", "p50_us", "p99_us",
            "server_cpu_share", "client_cpu_share", "errors"]
    print("| subscribers | server | PUBLISH/s | deliveries/s | saturated p50 / p99 (us) "
          "| at fixed rate | p50 (us) | p99 (us) | server CPU (cores) | client CPU (cores) | errors |")
    print("|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for n in subs:
        for name in servers:
            rs = results[name][n]
            m = {k: statistics.median(r[k] for r in rs) for k in keys}
            print("| %d | %s | %s | %s | %s / %s | %d pub/s | %s | %s | %.2f | %.2f | %d |" % (
                n, name, f"{m['pub_per_s']:,.0f}", f"{m['deliveries_per_s']:,.0f}",
                f"{m['sat_p50_us']:,.0f}", f"{m['sat_p99_us']:,.0f}", rs[0]["lat_rate"],
                f"{m['p50_us']:,.0f}", f"{m['p99_us']:,.0f}", m["server_cpu_share"],
                m["client_cpu_share"],
                sum(r["errors"] for r in rs)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "versions": {s: version(args, s) for s in servers},
                       "results": results}, f, indent=1)


if __name__ == "__main__":
    sys.exit(lib.run_tool("pubsub_bench", main))
