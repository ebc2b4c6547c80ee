"""Command-line flags: each one starts its own server and checks the effect
(stats settings, behaviour), plus -h/-V, bad options, -d, -P, -s, shutdown
and signals."""

import os
import signal
import socket
import stat
import subprocess
import tempfile
import time

import pytest

from harness import server as hserver
from harness.client import Conn, wait_for


def settings(srv):
    with Conn.to(srv) as c:
        return c.stats("settings")


def general(srv):
    with Conn.to(srv) as c:
        return c.stats()


# ---- memory and items ---------------------------------------------------

def test_m_sets_memory_limit(make_server):
    srv = make_server("-m", "100")
    assert settings(srv)["maxbytes"] == str(100 * 1024 * 1024)
    assert general(srv)["limit_maxbytes"] == str(100 * 1024 * 1024)


def test_M_disables_evictions(make_server):
    assert settings(make_server("-M"))["evictions"] == "off"


def test_I_raises_item_size_limit(make_server):
    srv = make_server("-I", "2m")
    assert settings(srv)["item_size_max"] == str(2 * 1024 * 1024)
    c = Conn.to(srv)
    value = os.urandom(1536 * 1024)
    assert c.rt(b"set big 0 0 %d\r\n%s\r\n" % (len(value), value), timeout=20) == b"STORED\r\n"
    assert c.get(b"big") == value
    over = 2 * 1024 * 1024 + 1
    assert c.rt(b"set big2 0 0 %d\r\n%s\r\n" % (over, b"x" * over), timeout=20) == \
        b"SERVER_ERROR object too large for cache\r\n"
    c.close()


def test_I_lowers_item_size_limit(make_server):
    # (memcached refuses an -I below slab_chunk_max, 512 KiB by default)
    srv = make_server("-I", "512k")
    assert settings(srv)["item_size_max"] == str(512 * 1024)
    c = Conn.to(srv)
    ok = 500 * 1024
    assert c.rt(b"set a 0 0 %d\r\n%s\r\n" % (ok, b"x" * ok)) == b"STORED\r\n"
    over = 512 * 1024 + 1
    assert c.rt(b"set b 0 0 %d\r\n%s\r\n" % (over, b"x" * over)) == \
        b"SERVER_ERROR object too large for cache\r\n"
    c.close()


def test_f_and_n_shape_slab_classes(make_server):
    srv = make_server("-f", "2", "-n", "100")
    st = settings(srv)
    assert st["growth_factor"] == "2.00"
    assert st["chunk_size"] == "100"
    c = Conn.to(srv)
    for size in (10, 300, 1000, 5000):
        c.set("k%d" % size, "x" * size)
    slabs = c.stats("slabs")
    sizes = sorted(int(v) for k, v in slabs.items() if k.endswith(":chunk_size"))
    assert len(sizes) >= 3
    import math
    for a, b_ in zip(sizes, sizes[1:]):
        # Each class doubles (classes without pages are not listed).
        r = math.log2(b_ / a)
        assert round(r) >= 1 and abs(r - round(r)) < 0.15, sizes
    c.close()


def test_C_disables_cas(make_server):
    srv = make_server("-C")
    assert settings(srv)["cas_enabled"] == "no"
    c = Conn.to(srv)
    c.set("a", "1")
    assert c.rt(b"gets a\r\n") == b"VALUE a 0 1 0\r\n1\r\nEND\r\n"
    assert c.rt(b"mg a c\r\n") == b"HD c0\r\n"
    assert c.rt(b"cas a 0 0 1 0\r\nx\r\n") == b"EXISTS\r\n"
    # Meta compares with CAS off, as memcached: ms C0 still fails, md C0
    # matches the CAS-less item, ma ignores C0.
    assert c.rt(b"ms a 1 C0\r\nx\r\n") == b"EX\r\n"
    c.set("n", "5")
    assert c.rt(b"ma n C0 v\r\n") == b"VA 1\r\n6\r\n"
    assert c.rt(b"md a C0\r\n") == b"HD\r\n"
    assert c.rt(b"mg a v\r\n") == b"EN\r\n"
    c.close()


# ---- threads and connections --------------------------------------------

@pytest.mark.parametrize("n", ["1", "8"])
def test_t_sets_worker_threads(make_server, n):
    srv = make_server("-t", n)
    assert general(srv)["threads"] == n
    assert settings(srv)["num_threads"] == n
    # Every worker serves: connections are spread round-robin.
    conns = [Conn.to(srv) for _ in range(int(n) * 2)]
    for i, c in enumerate(conns):
        c.set("k%d" % i, str(i))
    for i, c in enumerate(conns):
        assert c.get("k%d" % ((i + 1) % len(conns))) == str((i + 1) % len(conns)).encode()
        c.close()


def test_R_limits_requests_per_event(make_server):
    srv = make_server("-R", "2")
    assert settings(srv)["reqs_per_event"] == "2"
    c = Conn.to(srv)
    c.set("a", "1")
    reply = c.rt(b"get a\r\n" * 50)
    assert reply == b"VALUE a 0 1\r\n1\r\nEND\r\n" * 50
    assert int(c.stat("conn_yields")) > 0
    c.close()


def _open_until_rejected(srv, n):
    accepted, rejected = [], []
    for _ in range(n):
        c = Conn.to(srv, timeout=5)
        c.send(b"version\r\n")
        line = c.read_line()
        if line.startswith(b"VERSION "):
            accepted.append(c)
        else:
            assert line == b"ERROR Too many open connections\r\n", line
            assert c.expect_closed() == b""
            rejected.append(c)
    return accepted, rejected


def test_c_limits_connections(make_server):
    srv = make_server("-c", "30")
    assert settings(srv)["maxconns"] == "30"
    accepted, rejected = _open_until_rejected(srv, 40)
    # memcached counts its own descriptors against -c; Trove counts clients.
    assert 1 <= len(accepted) <= 30
    assert len(rejected) >= 10
    assert int(general_after_close(srv, accepted)["rejected_connections"]) >= len(rejected)


def general_after_close(srv, conns):
    """Closes conns, then returns the general stats once a new connection is
    accepted again."""
    for c in conns:
        c.close()

    def ok():
        try:
            with Conn.to(srv) as c:
                return c.stats()
        except (AssertionError, OSError, Exception):
            return None
    return wait_for(ok, timeout=5)


@pytest.mark.trove_only
def test_c_counts_exactly_client_connections(make_server):
    srv = make_server("-c", "30")
    accepted, rejected = _open_until_rejected(srv, 35)
    assert len(accepted) == 30 and len(rejected) == 5
    for c in accepted:
        c.close()
    assert wait_for(lambda: _open_until_rejected(srv, 1)[0], timeout=5)


@pytest.mark.trove_only
def test_no_maxconns_fast_leaves_clients_in_the_backlog_until_a_close(make_server):
    """-o no_maxconns_fast: a client over -c is neither answered nor refused;
    it waits in the listen backlog while the acceptor watches nothing, and
    the close of another connection re-arms the acceptor (no polling)."""
    srv = make_server("-c", "5", "-o", "no_maxconns_fast")
    held = [Conn.to(srv) for _ in range(5)]
    for c in held:
        assert c.call(b"version\r\n", timeout=5).startswith(b"VERSION ")
    waiting = Conn.to(srv)
    waiting.send(b"version\r\n")
    assert waiting.pending(wait=0.5) == b""
    held.pop().close()
    assert waiting.read_line(timeout=5).startswith(b"VERSION ")
    st = waiting.stats()
    assert "rejected_connections" not in st  # memcached prints it only with maxconns_fast
    assert st["curr_connections"] == "5"
    assert int(st["listen_disabled_num"]) >= 1
    assert int(st["time_in_listen_disabled_us"]) >= 400000  # the 0.5 s it waited, at least
    for c in held + [waiting]:
        c.close()


def test_b_sets_backlog(make_server):
    assert settings(make_server("-b", "64"))["tcp_backlog"] == "64"


def test_l_listen_address(make_server):
    srv = make_server("-l", "127.0.0.1")
    assert settings(srv)["inter"] == "127.0.0.1"
    with Conn.to(srv) as c:
        assert c.rt(b"version\r\n").startswith(b"VERSION ")


def test_l_ipv6_and_list(make_server):
    srv = make_server("-l", "127.0.0.1,[::1]")
    for host in ("127.0.0.1", "::1"):
        s = socket.create_connection((host, srv.port), timeout=5)
        s.sendall(b"version\r\n")
        assert s.recv(100).startswith(b"VERSION ")
        s.close()


def test_s_unix_socket_with_mask(make_server, tmp_path):
    path = str(tmp_path / "trove.sock")
    srv = make_server("-s", path, "-a", "0766")
    mode = stat.S_IMODE(os.stat(path).st_mode)
    assert mode == 0o766, oct(mode)
    c = Conn(unix=path)
    c.set("u", "unix")
    assert c.get("u") == b"unix"
    st = c.stats("settings")
    assert st["domain_socket"] == path and st["umask"] == "766"
    c.close()


# ---- -A and shutdown ----------------------------------------------------

def test_shutdown_refused_without_A(server, conn):
    assert conn.rt(b"shutdown\r\n") == b"SERVER_ERROR: shutdown not enabled\r\n"
    assert conn.rt(b"shutdown graceful\r\n") == b"SERVER_ERROR: shutdown not enabled\r\n"
    assert conn.stat("shutdown_command", "settings") == "no"
    assert server.alive()


@pytest.mark.parametrize("cmd", [b"shutdown\r\n", b"shutdown graceful\r\n"])
def test_shutdown_with_A(make_server, cmd):
    srv = make_server("-A")
    c = Conn.to(srv)
    assert c.stat("shutdown_command", "settings") == "yes"
    srv.allow_exit = True
    c.send(cmd)
    assert c.expect_closed(timeout=10) == b""
    assert srv.wait_exit(timeout=10) == 0


def test_shutdown_bad_mode(make_server):
    srv = make_server("-A")
    with Conn.to(srv) as c:
        assert c.rt(b"shutdown foo\r\n") == b"CLIENT_ERROR invalid shutdown mode\r\n"
    assert srv.alive()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signals_exit_cleanly(make_server, sig):
    srv = make_server()
    with Conn.to(srv) as c:
        c.set("a", "1")
    srv.signal(sig)
    assert srv.wait_exit(timeout=10) == 0


# ---- -P, -d, -u ---------------------------------------------------------

def test_P_writes_pid_file(make_server, tmp_path):
    path = str(tmp_path / "trove.pid")
    srv = make_server("-P", path)
    # memcached may write it just after it starts accepting.
    assert wait_for(lambda: os.path.exists(path) and open(path).read().endswith("\n"), timeout=5)
    with open(path) as f:
        assert int(f.read().strip()) == srv.pid()
    srv.signal(signal.SIGTERM)
    assert srv.wait_exit() == 0


def test_d_daemonizes(tmp_path):
    binary = hserver.binary_or_fail()
    pidfile = str(tmp_path / "d.pid")
    portfile = str(tmp_path / "ports")
    args = [binary] + hserver.root_args([]) + ["-d", "-P", pidfile]
    if hserver.is_memcached():
        port = hserver.free_port()
        args += ["-p", str(port), "-U", "0"]
    else:
        args += ["-p", "0", "--resp-port", "0", "--port-file", portfile]
    rc = subprocess.run(args, timeout=10, capture_output=True).returncode
    assert rc == 0
    assert wait_for(lambda: os.path.exists(pidfile) and open(pidfile).read().strip(), timeout=5)
    pid = int(open(pidfile).read().strip())
    try:
        if not hserver.is_memcached():
            assert wait_for(lambda: os.path.exists(portfile), timeout=5)
            port = int([l.split()[1] for l in open(portfile) if l.startswith("memcache ")][0])
        os.kill(pid, 0)
        assert os.getsid(pid) == pid  # a new session, detached from ours
        with Conn(port) as c:
            assert c.rt(b"version\r\n").startswith(b"VERSION ")
    finally:
        os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(os.geteuid() != 0, reason="only meaningful as root")
def test_root_requires_u(tmp_path):
    binary = hserver.binary_or_fail()
    p = subprocess.run([binary, "-p", "0", "-U", "0", "--port-file", str(tmp_path / "p")]
                       if not hserver.is_memcached() else [binary, "-p", "0", "-U", "0"],
                       capture_output=True, timeout=10)
    assert p.returncode == 64
    assert b"must add '-u root' to start as root" in p.stderr + p.stdout


# ---- -h, -V, bad options --------------------------------------------------

def test_h_prints_usage():
    rc, out, err = hserver.run_binary(["-h"])
    assert rc == 0
    text = out + err
    for flag in ("-p, --port", "-m, --memory-limit", "-c, --conn-limit", "-t, --threads",
                 "-I, --max-item-size", "-o, --extended"):
        assert flag in text, flag


def test_V_prints_version():
    rc, out, err = hserver.run_binary(["-V"])
    assert rc == 0
    words = (out + err).split()
    assert len(words) == 2 and words[1][0].isdigit(), out + err


@pytest.mark.parametrize("args", [["--bogus"], ["-y"], ["-o", "bogus=1"], ["-t", "0"],
                                  ["-c", "0"], ["-f", "0.5"], ["-R", "0"]])
def test_bad_options_fail_with_reason(args):
    rc, out, err = hserver.run_binary(args)
    # memcached uses 1 for these; Trove uses 64 (EX_USAGE) for every bad option.
    assert rc in ((1, 64) if hserver.is_memcached() else (64,)), (rc, out, err)
    assert err.strip(), "no reason printed"


@pytest.mark.parametrize("args,reason", [
    (["-B", "foo"], "Invalid value for binding protocol"),
    (["-I", "100"], "Item max size cannot be less than 1024 bytes"),
    (["-m", "1", "-I", "2m"], "Cannot set item size limit higher than 1/2 of memory max"),
])
def test_bad_option_values_exit_64(args, reason):
    rc, out, err = hserver.run_binary(args)
    assert rc == 64, (rc, out, err)
    assert reason in out + err


def test_B_ascii_is_accepted(make_server):
    srv = make_server("-B", "ascii")
    assert settings(srv)["binding_protocol"] == "ascii"


@pytest.mark.trove_only
def test_B_binary_is_refused():
    rc, out, err = hserver.run_binary(["-B", "binary"])
    assert rc == 64
    assert "binary" in (out + err).lower()


def test_vv_logs(make_server):
    quiet = make_server()
    loud = make_server("-vv")
    for srv in (quiet, loud):
        with Conn.to(srv) as c:
            c.set("a", "1")
            c.get("a")
    time.sleep(0.3)
    assert len(loud.log()) > len(quiet.log())


# ---- -o extended options ------------------------------------------------

@pytest.mark.parametrize("opt,checks", [
    ("hashpower=20", {"hashpower_init": "20"}),
    ("no_lru_crawler", {"lru_crawler": "no"}),
    ("lru_crawler", {"lru_crawler": "yes"}),
    ("no_lru_maintainer", {"lru_maintainer_thread": "no"}),
    ("lru_maintainer", {"lru_maintainer_thread": "yes"}),
    ("hot_lru_pct=30,warm_lru_pct=30", {"hot_lru_pct": "30", "warm_lru_pct": "30"}),
    ("hot_max_factor=0.5,warm_max_factor=3.0", {"hot_max_factor": "0.50", "warm_max_factor": "3.00"}),
    ("temporary_ttl=100", {"temp_lru": "yes", "temporary_ttl": "100"}),
    ("slab_reassign,slab_automove=2", {"slab_reassign": "yes", "slab_automove": "2"}),
    ("idle_timeout=30", {"idle_timeout": "30"}),
    ("modern", {"lru_segmented": "yes", "lru_maintainer_thread": "yes"}),
    ("no_modern", {"lru_segmented": "no"}),
])
def test_o_options_visible_in_settings(make_server, opt, checks):
    st = settings(make_server("-o", opt))
    for name, value in checks.items():
        assert st.get(name) == value, (opt, name, st.get(name))


def test_o_slab_chunk_max_chunks_large_items(make_server):
    srv = make_server("-o", "slab_chunk_max=64")  # kilobytes
    c = Conn.to(srv)
    value = os.urandom(300 * 1024)
    assert c.rt(b"set big 0 0 %d\r\n%s\r\n" % (len(value), value)) == b"STORED\r\n"
    assert c.get("big") == value
    c.close()


def test_F_disables_flush_all(make_server):
    srv = make_server("-F")
    c = Conn.to(srv)
    assert c.rt(b"set f 0 0 1\r\nx\r\n") == b"STORED\r\n"
    assert c.rt(b"flush_all\r\n") == b"CLIENT_ERROR flush_all not allowed\r\n"
    assert c.get("f") == b"x"  # nothing was flushed
    assert settings(srv)["flush_enabled"] == "no"
    c.close()


def test_o_hashpower_sets_table_size(make_server):
    assert general(make_server("-o", "hashpower=20"))["hash_power_level"] == "20"


# ---- idle timeout -------------------------------------------------------

def test_idle_timeout_closes_idle_connections(make_server):
    srv = make_server("-o", "idle_timeout=2")
    idle = Conn.to(srv)
    busy = Conn.to(srv)
    idle.rt(b"")
    start = time.monotonic()
    # The busy connection keeps talking and is kept.
    closed_at = None
    while time.monotonic() - start < 7:
        busy.rt(b"")
        if not idle.is_open(wait=0.2):
            closed_at = time.monotonic() - start
            break
    # The busy connection outlives the idle one by more than the timeout.
    for _ in range(12):
        time.sleep(0.2)
        assert busy.rt(b"") == b""
    assert closed_at is not None and closed_at >= 1.9, closed_at
    assert busy.rt(b"version\r\n").startswith(b"VERSION ")
    assert int(busy.stat("idle_kicks")) >= 1
    busy.close()


# ---- -U (UDP) -----------------------------------------------------------

def test_U_udp_served_or_refused_clearly(tmp_path):
    """Issue 3: implement memcached's UDP framing, or refuse -U N clearly."""
    binary = hserver.binary_or_fail()
    udp_port = hserver.free_port()
    args = [binary] + hserver.root_args([]) + ["-U", str(udp_port), "-l", "127.0.0.1"]
    if hserver.is_memcached():
        args += ["-p", str(hserver.free_port())]
    else:
        args += ["-p", "0", "--resp-port", "0", "--port-file", str(tmp_path / "ports")]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        rc = p.wait(timeout=1.5)
    except subprocess.TimeoutExpired:
        rc = None
    if rc is not None:
        err = p.stderr.read().decode("utf-8", "replace")
        assert rc == 64, (rc, err)
        assert "udp" in err.lower(), err
        return
    try:
        # Served: a get over UDP with the 8-byte frame header
        # (request id, sequence 0, 1 datagram, reserved).
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(2)
        header = b"\x12\x34\x00\x00\x00\x01\x00\x00"
        s.sendto(header + b"version\r\n", ("127.0.0.1", udp_port))
        data, _ = s.recvfrom(65536)
        assert data[:2] == b"\x12\x34"
        assert data[8:].startswith(b"VERSION ")
        s.close()
    finally:
        p.kill()
        p.wait(timeout=10)


def _udp_request(sock, port, req_id, body, frames=1):
    sock.sendto(bytes([req_id >> 8, req_id & 0xff, 0, 0, 0, frames, 0, 0]) + body,
                ("127.0.0.1", port))
    got = {}
    while True:
        try:
            d, _ = sock.recvfrom(65536)
        except socket.timeout:
            return got
        assert d[:2] == bytes([req_id >> 8, req_id & 0xff])
        assert d[6:8] == b"\x00\x00"
        seq, total = (d[2] << 8) | d[3], (d[4] << 8) | d[5]
        got[seq] = (total, d[8:])
        if len(got) == total:
            return got


def test_udp_multi_datagram_replies(make_server):
    # memcached's UDP protocol: a 20 KB value comes back in 1,400-byte
    # datagrams numbered 0..n-1, each saying n; noreply sends nothing; a
    # request announcing two datagrams is dropped.
    udp_port = hserver.free_port()
    srv = make_server("-U", str(udp_port), "-l", "127.0.0.1", "-t", "2")
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    big = b"v" * 20000
    r = _udp_request(s, udp_port, 7, b"set big 0 0 20000\r\n" + big + b"\r\n")
    assert r == {0: (1, b"STORED\r\n")}
    r = _udp_request(s, udp_port, 8, b"get big\r\n")
    total = (len(b"VALUE big 0 20000\r\n") + 20000 + 7 + 1391) // 1392
    assert sorted(r) == list(range(total))
    assert all(t == total for t, _ in r.values())
    assert all(len(body) == 1392 for seq, (t, body) in r.items() if seq < total - 1)
    whole = b"".join(r[i][1] for i in range(total))
    assert whole == b"VALUE big 0 20000\r\n" + big + b"\r\nEND\r\n"
    s.settimeout(0.5)
    assert _udp_request(s, udp_port, 9, b"set q 0 0 1 noreply\r\nx\r\n") == {}
    assert _udp_request(s, udp_port, 10, b"get big\r\n", frames=2) == {}
    s.settimeout(2)
    assert _udp_request(s, udp_port, 11, b"get q\r\n") == {0: (1, b"VALUE q 0 1\r\nx\r\nEND\r\n")}
    # Admin requests that need the other workers answer over UDP too (the
    # listening sockets only for stats conns) and never stop the server.
    r = _udp_request(s, udp_port, 12, b"stats conns\r\n")
    whole = b"".join(r[i][1] for i in range(len(r)))
    assert whole.endswith(b"END\r\n") and b"conn_listening" in whole, whole
    if not hserver.is_memcached():  # memcached sends nothing back for watch over UDP
        r = _udp_request(s, udp_port, 13, b"watch\r\n")
        assert r[0][1].startswith(b"CLIENT_ERROR"), r
    # The TCP port sees the same cache.
    c = Conn.to(srv)
    assert c.get("q") == b"x"
    c.close()
    s.close()


# ---- -Y (ASCII authentication) ---------------------------------------------

def test_Y_ascii_authentication(make_server, tmp_path):
    auth = tmp_path / "authfile"
    auth.write_text("foo:bar\nbaaaz:quux")  # the last line without a newline
    srv = make_server("-Y", str(auth), "-U", "0")
    c = Conn.to(srv)
    assert c.call(b"get foo\r\n", timeout=5) == b"CLIENT_ERROR unauthenticated\r\n"
    assert c.call(b"set foo 0 0 7\r\nfoo bab\r\n", timeout=5) == \
        b"CLIENT_ERROR authentication failure\r\n"
    assert c.call(b"set foo 0 0 2147483646\r\n", timeout=5) == \
        b"CLIENT_ERROR auth token too long\r\n"
    assert c.call(b"set foo 0 0 6\r\nfoobar\r\n", timeout=5) == \
        b"CLIENT_ERROR bad authentication token format\r\n"
    assert c.call(b"set foo 0 0 7\r\nfoo bar\r\n", timeout=5) == b"STORED\r\n"
    # Authenticated: an ordinary connection from now on.
    assert c.call(b"set toast 0 0 2\r\nhi\r\n", timeout=5) == b"STORED\r\n"
    assert c.get("toast") == b"hi"
    st = c.stats()
    # The format error and the over-long token are not auth attempts (memcached).
    assert st["auth_cmds"] == "2" and st["auth_errors"] == "1"
    c2 = Conn.to(srv)
    assert c2.call(b"set x 0 0 10\r\nbaaaz quux\r\n", timeout=5) == b"STORED\r\n"
    assert c2.get("toast") == b"hi"
    c.close()
    c2.close()


def test_Y_malformed_authfile_stops_the_start(tmp_path):
    auth = tmp_path / "authfile"
    auth.write_text("no colon here\n")
    binary = hserver.binary_or_fail()
    args = [binary] + hserver.root_args([]) + ["-Y", str(auth), "-p", "0", "-U", "0"]
    if not hserver.is_memcached():
        args += ["--resp-port", "0"]
    p = subprocess.run(args, capture_output=True, timeout=10)
    assert p.returncode != 0
    assert b"malformed entry" in p.stderr + p.stdout


# ---- -o read_buf_mem_limit (memcached's t/conn-limits.t) ----------------

def test_read_buf_mem_limit_refuses_a_multiget_past_the_share(make_server):
    # 1 MB split over 32 workers: each worker's share holds about 32 replies
    # in flight, so a 500-key get is refused; the connection stays usable.
    srv = make_server("-o", "read_buf_mem_limit=1", "-t", "32", "-R", "500")
    c = Conn.to(srv)
    assert c.stats("settings")["read_buf_mem_limit"] == str(1024 * 1024)
    assert c.rt(b"set foo 0 0 1\r\nx\r\n") == b"STORED\r\n"
    line = b"get " + b" ".join([b"foo"] * 500) + b"\r\n"
    assert c.rt(line) == b"SERVER_ERROR out of memory writing get response\r\n"
    assert int(c.stat("response_obj_oom")) >= 1
    # Replies that were written give their share back: many small multigets.
    for _ in range(50):
        assert c.rt(b"get foo foo foo foo foo\r\n") == b"VALUE foo 0 1\r\nx\r\n" * 5 + b"END\r\n"
    c.close()


def test_read_buf_mem_limit_disconnects_a_pipelined_flood(make_server):
    srv = make_server("-o", "read_buf_mem_limit=1", "-t", "32", "-R", "500")
    c = Conn.to(srv)
    before = int(c.stat("response_obj_oom"))
    flood = Conn.to(srv)
    flood.send(b"mg foo v\r\n" * 500)
    assert flood.expect_closed() == b""  # nothing written, then closed
    assert int(c.stat("response_obj_oom")) > before
    assert c.call(b"mn\r\n") == b"MN\r\n"
    c.close()


def test_no_read_buf_mem_limit_by_default(make_server):
    srv = make_server("-t", "32", "-R", "500")
    c = Conn.to(srv)
    assert c.stats("settings")["read_buf_mem_limit"] == "0"
    assert c.rt(b"get " + b" ".join([b"foo"] * 500) + b"\r\n") == b"END\r\n"
    c.send(b"mg foo v\r\n" * 500)
    assert c.read_exact(len(b"EN\r\n") * 500, timeout=10) == b"EN\r\n" * 500
    assert int(c.stat("response_obj_oom")) == 0
    c.close()


# ---- the RESP port at start-up -------------------------------------------

def _hold_port(port, host="0.0.0.0"):
    """A listening socket on host:port, or None when someone else holds it
    (then the port is taken all the same)."""
    import socket as s
    holder = s.socket()
    holder.setsockopt(s.SOL_SOCKET, s.SO_REUSEADDR, 1)
    try:
        holder.bind((host, port))
        holder.listen(1)
    except OSError:
        holder.close()
        return None
    return holder


@pytest.mark.trove_only
def test_taken_default_resp_port_turns_resp_off(monkeypatch):
    # A second instance on the same host (memcached's habit: -p 11211, -p
    # 11212) finds the default RESP port 6379 taken, by us here or by a
    # redis-server: it serves memcached alone and says so once on stderr.
    monkeypatch.delenv("TROVE_RESP_PORT", raising=False)
    holder = _hold_port(6379)
    port = hserver.free_port()
    p = subprocess.Popen([hserver.find_binary()] + hserver.root_args([]) +
                         ["-p", str(port), "-l", "127.0.0.1"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert wait_for(lambda: p.poll() is None and _connects(port), timeout=5), \
            p.stderr.read().decode() if p.poll() is not None else "not listening"
        c = Conn(port)
        settings = c.stats("settings")
        assert settings["resp_port"] == "0"
        assert settings["resp_status"] == "off_default_port_in_use"
        c.set("k", "v")
        assert c.get("k") == b"v"
        c.close()
    finally:
        p.terminate()
        _, err = p.communicate(timeout=10)
        if holder is not None:
            holder.close()
    err = err.decode()
    lines = [l for l in err.splitlines() if "RESP" in l]
    assert len(lines) == 1, err
    assert "default RESP port 6379 is not available" in lines[0]
    assert "serving memcached only" in lines[0]
    assert "--resp-port <port>" in lines[0]


@pytest.mark.trove_only
@pytest.mark.parametrize("how", ["env", "flag"])
def test_taken_requested_resp_port_is_a_startup_error(monkeypatch, how):
    # A RESP port the user asked for (TROVE_RESP_PORT or --resp-port) that
    # cannot be bound stays fatal: they expect RESP there.
    holder = _hold_port(0, "127.0.0.1")
    port = holder.getsockname()[1]
    try:
        args = ["-p", "0", "-l", "127.0.0.1"]
        if how == "env":
            monkeypatch.setenv("TROVE_RESP_PORT", str(port))
        else:
            monkeypatch.delenv("TROVE_RESP_PORT", raising=False)
            args += ["--resp-port", str(port)]
        rc, _, err = hserver.run_binary(args)
        assert rc != 0
        assert "failed to listen on RESP port %d" % port in err
    finally:
        holder.close()


@pytest.mark.trove_only
def test_taken_ipv4_resp_port_is_fatal_on_the_wildcard_address(monkeypatch):
    # IPv4 taken, IPv6 free: Trove must not come up on IPv6 alone (Redis's
    # default bind "* -::*": IPv4 required).
    import socket as s
    holder = s.socket()
    holder.bind(("0.0.0.0", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        monkeypatch.setenv("TROVE_RESP_PORT", str(port))
        rc, _, err = hserver.run_binary(["-p", "0"])
        assert rc != 0
        assert "failed to listen on RESP port %d" % port in err
    finally:
        holder.close()


@pytest.mark.trove_only
def test_resp_port_env_zero_runs_a_pure_memcached_server(monkeypatch):
    # No --resp-port and no --port-file (the harness passes both): the
    # environment's 0 must turn RESP off, which stats settings shows.
    import socket as s
    probe = s.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    monkeypatch.setenv("TROVE_RESP_PORT", "0")
    p = subprocess.Popen([hserver.find_binary()] + hserver.root_args([]) +
                         ["-p", str(port), "-l", "127.0.0.1"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert wait_for(lambda: p.poll() is None and _connects(port), timeout=5)
        c = Conn(port)
        assert c.stats("settings")["resp_port"] == "0"
        assert c.stats("settings")["resp_status"] == "off"
        c.close()
    finally:
        p.terminate()
        p.wait(timeout=10)


def _connects(port):
    import socket as s
    try:
        s.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


# ---- -r and -k do what they say ------------------------------------------

def test_r_raises_the_core_file_limit(make_server):
    srv = make_server("-r")
    with open("/proc/%d/limits" % srv.proc.pid) as f:
        line = [l for l in f if l.startswith("Max core file size")][0]
    assert line.split()[4] != "0"  # soft limit raised (unlimited where allowed)


@pytest.mark.skipif(os.geteuid() != 0, reason="mlockall needs CAP_IPC_LOCK or a high RLIMIT_MEMLOCK")
def test_k_locks_memory(make_server):
    if any(t in hserver.find_binary() for t in ("/asan/", "/tsan/")):
        pytest.skip("sanitizer runtimes keep mlockall from showing in VmLck")
    srv = make_server("-k", "-m", "8")
    time.sleep(0.2)
    if "mlockall() failed" in srv.log():
        # memcached's behaviour (a warning, not an exit); happens under ASan,
        # whose shadow memory cannot be locked.
        pytest.skip("mlockall refused here: " + srv.log().strip().splitlines()[-1])
    with open("/proc/%d/status" % srv.proc.pid) as f:
        locked = [l for l in f if l.startswith("VmLck:")][0]
    assert int(locked.split()[1]) > 0  # kB locked
