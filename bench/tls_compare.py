#!/usr/bin/env python3
"""bench/tls_compare.py: TLS cost side by side (issue 40).

Trove, memcached (built with --enable-tls; MEMCACHED_BIN or --memcached-bin) and
redis-server (Debian's, built with TLS) each serve a plain and a TLS port on
loopback with the same thread count. Measured in one run, on the same cores:

  * W2 (memcached text, pipeline 16) and W5 (RESP, pipeline 16) over TLS with
    trove-bench --tls: ops/s and server CPU per operation, median of --runs;
    the same over the plain port for the TLS overhead;
  * connection setup: new connections that each do a full TLS handshake, one
    request and close, from --clients client processes for --setup-seconds:
    handshakes per second and server CPU per handshake; then the same with
    session resumption (the client offers the session of its previous
    connection; memcached with -o ssl_session_cache, Trove with it too).

Servers and generator run at normal priority with wall-clock limits; every process is
stopped by this tool however it ends (compare_lib.PROCS). Certificates (EC P-256) are made
with openssl into a temporary folder.

  bench/tls_compare.py --trove build/release/src/server/trove \\
      --bench build/release/tools/bench/trove-bench \\
      --memcached-bin /work/scratch/memcached-1.6.45/memcached --runs 3 --duration 4
"""

import argparse
import multiprocessing
import os
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_lib as lib  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

W2 = ["-P", "text", "-c", "50", "-d", "16", "--ratio", "1:10", "-v", "32"]
W5 = ["-P", "resp", "-c", "50", "-d", "16", "--ratio", "1:10", "-v", "32"]


def make_certs(folder):
    def run(*a):
        subprocess.run(["openssl"] + list(a), check=True, capture_output=True, timeout=60)
    ca_key, ca = os.path.join(folder, "ca.key"), os.path.join(folder, "ca.crt")
    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", ca_key, "-out", ca, "-days", "30", "-subj", "/CN=bench CA")
    key, csr, crt = (os.path.join(folder, "server." + e) for e in ("key", "csr", "crt"))
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", key, "-out", csr, "-subj", "/CN=localhost")
    run("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", crt,
        "-days", "30")
    return crt, key


class TlsMixin:
    """Adds a TLS port per family; probes stay on the plain ports."""

    def start(self, timeout=10.0, limit=None):
        self.tls_ports = {"mc": lib.free_port(), "resp": lib.free_port()}
        return super().start(timeout, limit)


class TroveTls(TlsMixin, lib.TroveServer):
    def __init__(self, binary, threads, layout, cert):
        super().__init__(binary, threads, layout)
        self.cert = cert

    def command(self):
        crt, key = self.cert
        cmd = super().command()
        i = cmd.index("-p")
        del cmd[i:i + 2]  # the listeners below carry their ports
        return cmd + ["-Z", "-o", "ssl_chain_cert=%s,ssl_key=%s,ssl_session_cache" % (crt, key),
                      "-l", "notls:127.0.0.1:%d,127.0.0.1:%d" % (self.ports["mc"],
                                                                self.tls_ports["mc"]),
                      "--tls-port", str(self.tls_ports["resp"]), "--tls-cert-file", crt,
                      "--tls-key-file", key, "--tls-auth-clients", "no"]


class MemcachedTls(TlsMixin, lib.MemcachedServer):
    def __init__(self, threads, layout, binary, cert):
        super().__init__(threads, layout, binary)
        self.cert = cert

    def command(self):
        crt, key = self.cert
        cmd = super().command()
        i = cmd.index("-l")
        del cmd[i:i + 2]
        i = cmd.index("-p")
        del cmd[i:i + 2]
        return cmd + ["-Z", "-o", "ssl_chain_cert=%s,ssl_key=%s,ssl_session_cache" % (crt, key),
                      "-l", "notls:127.0.0.1:%d,127.0.0.1:%d" % (self.ports["mc"],
                                                                self.tls_ports["mc"])]


class RedisTls(TlsMixin, lib.RedisServer):
    def __init__(self, threads, layout, cert):
        super().__init__(threads, layout)
        self.cert = cert

    def command(self):
        crt, key = self.cert
        return super().command() + ["--tls-port", str(self.tls_ports["resp"]),
                                    "--tls-cert-file", crt, "--tls-key-file", key,
                                    "--tls-auth-clients", "no"]


# ---- connection setup ---------------------------------------------------------

def _setup_client(port, fam, seconds, mode, cores, out):
    if cores:
        os.sched_setaffinity(0, cores)  # the generator's cores, as trove-bench
    resume = mode == "resumed"
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    req, want = (b"version\r\n", b"VERSION") if fam == "mc" else (b"PING\r\n", b"+PONG")
    n = reused = errors = 0
    session = None
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            raw = socket.create_connection(("127.0.0.1", port), timeout=5)
            s = raw if mode == "plain" else ctx.wrap_socket(raw, session=session)
            s.sendall(req)
            got = b""
            while not got.endswith(b"\r\n"):
                chunk = s.recv(256)
                if not chunk:
                    break
                got += chunk
            if not got.startswith(want):
                errors += 1
            n += 1
            reused += 1 if mode != "plain" and s.session_reused else 0
            if resume:
                session = s.session
            s.close()
        except (OSError, ssl.SSLError):
            errors += 1
    out.put((n, reused, errors))


def setup_rate(server, fam, clients, seconds, mode):
    """mode: plain (no TLS: what a connection costs anyway), full (a full
    handshake each time) or resumed (the previous connection's session)."""
    port = server.ports[fam] if mode == "plain" else server.tls_ports[fam]
    cores = server.layout.gen_cores if server.layout.pinned else []
    q = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=_setup_client,
                                     args=(port, fam, seconds, mode, cores, q))
             for _ in range(clients)]
    cpu0 = server.cpu_seconds()
    t0 = time.monotonic()
    for p in procs:
        p.start()
    res = [q.get(timeout=seconds + 30) for _ in procs]
    for p in procs:
        p.join(timeout=10)
        if p.is_alive():
            p.kill()
    wall = time.monotonic() - t0
    cpu = server.cpu_seconds() - cpu0
    n = sum(r[0] for r in res)
    return {"per_sec": n / wall if wall else 0, "handshakes": n,
            "reused": sum(r[1] for r in res), "errors": sum(r[2] for r in res),
            "server_cpu_us_per_conn": cpu * 1e6 / n if n else 0}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trove", default=os.path.join(ROOT, "build/release/src/server/trove"))
    p.add_argument("--bench", default=os.path.join(ROOT, "build/release/tools/bench/trove-bench"))
    p.add_argument("--memcached-bin", default=os.environ.get(
        "MEMCACHED_BIN", "/work/scratch/memcached-1.6.45/memcached"))
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--duration", type=float, default=4)
    p.add_argument("--warmup", type=float, default=1)
    p.add_argument("--keys", type=int, default=100000)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--setup-seconds", type=float, default=3)
    p.add_argument("--time-limit", type=float, default=None)
    args = p.parse_args()

    layout = lib.CpuLayout.detect()
    lib.say("cpu layout: " + layout.describe())
    lib.say("load average: %.2f %.2f %.2f" % os.getloadavg())
    tmp = tempfile.mkdtemp(prefix="tls-compare-")
    cert = make_certs(tmp)
    servers = [TroveTls(args.trove, args.threads, layout, cert)]
    if os.path.exists(args.memcached_bin):
        servers.append(MemcachedTls(args.threads, layout, args.memcached_bin, cert))
    else:
        lib.say("no memcached at %s: its rows are left out" % args.memcached_bin)
    servers.append(RedisTls(args.threads, layout, cert))
    runner = lib.BenchRunner(args.bench, layout, args.duration, args.warmup, args.keys)
    cells = 2 * 2 * args.runs * (args.duration + args.warmup + 1) + 6 * args.setup_seconds + 30
    results = {}
    try:
        if not lib.start_servers(servers, cells * len(servers), args.time_limit):
            return 1
        for srv in servers:
            for wname, wargs in (("W2", W2), ("W5", W5)):
                fam = "mc" if wname == "W2" else "resp"
                if fam not in srv.families:
                    continue
                runner.prefill(srv.ports[fam], fam, "key:", 32)
                for mode in ("plain", "tls"):
                    port = srv.ports[fam] if mode == "plain" else srv.tls_ports[fam]
                    extra = ["--tls"] if mode == "tls" else []
                    runs = [runner.run(srv, port, wargs + extra) for _ in range(args.runs)]
                    errs = sum(r["errors"]["total"] for r in runs)
                    cell = {"ops": statistics.median(r["total"]["ops_per_sec"] for r in runs),
                            "cpu_us": statistics.median(r["server_cpu_us_per_op"] for r in runs),
                            "p99_us": statistics.median(r["total"]["latency_us"]["p99"]
                                                        for r in runs),
                            "errors": errs}
                    results[(srv.name, wname, mode)] = cell
                    lib.say("%-22s %s %-5s ops/s %9.0f  server CPU/op %.2f us  p99 %s us  errors %d"
                            % (srv.name, wname, mode, cell["ops"], cell["cpu_us"], cell["p99_us"],
                               errs))
                for mode in ("plain", "full", "resumed"):
                    r = setup_rate(srv, fam, args.clients, args.setup_seconds, mode)
                    results[(srv.name, fam + "-setup", mode)] = r
                    lib.say("%-22s %s connections, %-7s: %.0f/s  server CPU/conn %.0f us  "
                            "reused %d/%d  errors %d" % (srv.name, fam, mode, r["per_sec"],
                                                        r["server_cpu_us_per_conn"], r["reused"],
                                                        r["handshakes"], r["errors"]))
    finally:
        lib.PROCS.stop_all()
    trove = servers[0].name
    for other in servers[1:]:
        for wname in ("W2", "W5"):
            a, b = results.get((trove, wname, "tls")), results.get((other.name, wname, "tls"))
            if a and b and b["cpu_us"]:
                lib.say("%s over TLS: Trove server CPU/op = %.2fx %s's" %
                        (wname, a["cpu_us"] / b["cpu_us"], other.name))
    return 0


if __name__ == "__main__":
    sys.exit(lib.run_tool("tls_compare", main))
