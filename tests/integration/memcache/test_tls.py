"""TLS on the memcached port (-Z and memcached's -o ssl_* options): the
handshake on the worker, reads and writes through OpenSSL, the notls:,
btls: and mtls: listeners, refresh_certs and SIGHUP reloads, memcached's
counters and settings, start-up errors, and hostile clients (plaintext,
random bytes, stalled and truncated handshakes, renegotiation). Trove only:
the reference run would need memcached built with TLS."""

import os
import shutil
import signal
import socket
import ssl
import subprocess
import time

import pytest
from pymemcache.client.base import Client

from harness import server as hserver
from harness.certs import Pki, client_ctx, peer_cn

pytestmark = pytest.mark.trove_only


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    p = Pki(str(tmp_path_factory.mktemp("pki")))
    p.alice = p.issue("alice")
    p.other = Pki(os.path.join(p.dir, "other"), name="otherca")
    p.stranger = p.other.issue("mallory")
    return p


def tls_args(pki, *extra):
    cert, key = pki.server
    return ["-Z", "-o", "ssl_chain_cert=%s,ssl_key=%s" % (cert, key)] + list(extra)




def tls_conn(port, ctx, timeout=5):
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    return ctx.wrap_socket(raw)


def ask(sock, data, until=b"\r\n"):
    sock.sendall(data)
    out = b""
    while not out.endswith(until):
        chunk = sock.recv(65536)
        if not chunk:
            break
        out += chunk
    return out


def stats(port, sub=""):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        out = ask(s, ("stats %s\r\n" % sub).strip().encode() + b"\r\n" if sub else b"stats\r\n",
                  b"END\r\n")
    d = {}
    for line in out.decode().split("\r\n"):
        p = line.split(" ", 2)
        if len(p) == 3 and p[0] == "STAT":
            d[p[1]] = p[2]
    return d


def tls_stats(port, ctx):
    with tls_conn(port, ctx) as s:
        out = ask(s, b"stats\r\n", b"END\r\n")
    return {l.split(" ", 2)[1]: l.split(" ", 2)[2] for l in out.decode().split("\r\n")
            if l.startswith("STAT ")}


def closed_without_reply(sock, timeout=5):
    """True if the peer closes (EOF or reset) without sending a byte."""
    sock.settimeout(timeout)
    try:
        data = sock.recv(4096)
    except (ConnectionResetError, ssl.SSLError, BrokenPipeError):
        return True
    return data == b""


def refused(port, ctx):
    """The server refuses this client: during the handshake (TLS 1.2), or
    right after it (TLS 1.3, whose client side finishes first): a request
    gets no reply, only the close."""
    try:
        s = tls_conn(port, ctx)
        s.sendall(b"version\r\n")
        return closed_without_reply(s)
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
        return True


def ports(n):
    return [hserver.free_port() for _ in range(n)]


# ---- basic TLS ------------------------------------------------------------

def test_set_get_over_tls_and_pymemcache(make_server, pki):
    srv = make_server(*tls_args(pki))
    with tls_conn(srv.port, client_ctx(pki)) as s:
        assert s.version() in ("TLSv1.2", "TLSv1.3")
        assert ask(s, b"set k 5 0 3\r\nabc\r\n") == b"STORED\r\n"
        assert ask(s, b"get k\r\n", b"END\r\n") == b"VALUE k 5 3\r\nabc\r\nEND\r\n"
    mc = Client(("127.0.0.1", srv.port), tls_context=client_ctx(pki), timeout=5)
    mc.set("pm", b"v" * 1000)
    assert mc.get("pm") == b"v" * 1000
    assert mc.get("k") == b"abc"
    mc.close()


def test_large_values_and_pipelines(make_server, pki):
    srv = make_server(*tls_args(pki, "-I", "4m", "-m", "64"))
    big = os.urandom(1500000)
    with tls_conn(srv.port, client_ctx(pki), timeout=20) as s:
        assert ask(s, b"set big 0 0 %d\r\n" % len(big) + big + b"\r\n") == b"STORED\r\n"
        s.sendall(b"get big\r\n" * 4)
        want = (b"VALUE big 0 %d\r\n" % len(big) + big + b"\r\nEND\r\n") * 4
        got = b""
        while len(got) < len(want):
            chunk = s.recv(1 << 20)
            assert chunk
            got += chunk
        assert got == want
        # Many small replies gathered into few records, in order.
        reqs = b"".join(b"set k%d 0 0 %d\r\n%d\r\n" % (i, len(str(i)), i) for i in range(500))
        out = ask(s, reqs + b"mn\r\n", b"MN\r\n")
        assert out == b"STORED\r\n" * 500 + b"MN\r\n"
        out = ask(s, b"".join(b"mg k%d v\r\n" % i for i in range(500)) + b"mn\r\n", b"MN\r\n")
        assert out == b"".join(b"VA %d\r\n%d\r\n" % (len(str(i)), i) for i in range(500)) + b"MN\r\n"


def test_stats_and_settings(make_server, pki):
    srv = make_server(*tls_args(pki, "-o", "ssl_wbuf_size=64"))
    st = tls_stats(srv.port, client_ctx(pki))
    for k in ("ssl_handshake_errors", "ssl_proto_errors", "time_since_server_cert_refresh"):
        assert int(st[k]) >= 0
    assert "ssl_new_sessions" not in st  # only with ssl_session_cache
    keys = list(st)
    assert keys.index("log_watchers") < keys.index("ssl_handshake_errors") < \
        keys.index("ssl_proto_errors") < keys.index("time_since_server_cert_refresh")
    with tls_conn(srv.port, client_ctx(pki)) as s:
        out = ask(s, b"stats settings\r\n", b"END\r\n").decode()
    settings = dict(l.split(" ", 2)[1:] for l in out.split("\r\n") if l.startswith("STAT "))
    assert settings["ssl_enabled"] == "yes"
    assert settings["ssl_chain_cert"] == pki.server[0]
    assert settings["ssl_key"] == pki.server[1]
    assert settings["ssl_verify_mode"] == "0"
    assert settings["ssl_keyformat"] == "1"
    assert settings["ssl_ciphers"] == "NULL"
    assert settings["ssl_ca_cert"] == "NULL"
    assert settings["ssl_wbuf_size"] == str(64 * 1024)
    assert settings["ssl_session_cache"] == "no"
    assert settings["ssl_kernel_tls"] == "no"
    assert settings["ssl_min_version"] == "tlsv1.2"


def test_plain_server_has_no_tls_stats(make_server):
    srv = make_server()
    st = stats(srv.port)
    assert "ssl_handshake_errors" not in st
    with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
        assert ask(s, b"refresh_certs\r\n") == b"Error TLS not enabled\r\n"
        out = ask(s, b"stats settings\r\n", b"END\r\n")
    assert b"STAT ssl_enabled no\r\n" in out


# ---- listeners --------------------------------------------------------------

def test_notls_btls_mtls_listeners(make_server, pki):
    plain, tls, basic, mutual = ports(4)
    srv = make_server(*tls_args(pki, "-o", "ssl_ca_cert=" + pki.ca, "-l",
                                "notls:127.0.0.1:%d,127.0.0.1:%d,btls:127.0.0.1:%d,mtls:127.0.0.1:%d"
                                % (plain, tls, basic, mutual)))
    assert srv.port == plain
    with tls_conn(tls, client_ctx(pki)) as s:
        assert ask(s, b"set foo 0 0 3\r\nbar\r\n") == b"STORED\r\n"
    with socket.create_connection(("127.0.0.1", plain), timeout=5) as s:
        assert ask(s, b"get foo\r\n", b"END\r\n") == b"VALUE foo 0 3\r\nbar\r\nEND\r\n"
    # btls: never asks for a certificate, mtls: requires one from the CA.
    with tls_conn(basic, client_ctx(pki)) as s:
        assert ask(s, b"get foo\r\n", b"END\r\n").startswith(b"VALUE foo")
    with tls_conn(mutual, client_ctx(pki, cert=pki.alice)) as s:
        assert ask(s, b"get foo\r\n", b"END\r\n").startswith(b"VALUE foo")
    for cert in (None, pki.stranger):
        assert refused(mutual, client_ctx(pki, cert=cert))
    # Under TLS 1.3 the client may see the refusal before the server has
    # counted it: wait for the count (a few ms), up to 5 s.
    deadline = time.time() + 5
    while int(stats(plain)["ssl_handshake_errors"]) < 2 and time.time() < deadline:
        time.sleep(0.02)
    assert int(stats(plain)["ssl_handshake_errors"]) >= 2


def test_verify_mode_require(make_server, pki):
    srv = make_server(*tls_args(pki, "-o", "ssl_verify_mode=2,ssl_ca_cert=" + pki.ca))
    with tls_conn(srv.port, client_ctx(pki, cert=pki.alice)) as s:
        assert ask(s, b"version\r\n").startswith(b"VERSION ")
        st = ask(s, b"stats\r\n", b"END\r\n")
    assert b"STAT accepting_conns 1" in st
    assert refused(srv.port, client_ctx(pki))


def test_min_version(make_server, pki):
    srv = make_server(*tls_args(pki, "-o", "ssl_min_version=3"))
    assert refused(srv.port, client_ctx(pki, version=ssl.TLSVersion.TLSv1_2))
    with tls_conn(srv.port, client_ctx(pki, version=ssl.TLSVersion.TLSv1_3)) as s:
        assert ask(s, b"version\r\n").startswith(b"VERSION ")


def test_session_cache_resumption(make_server, pki):
    srv = make_server(*tls_args(pki, "-o", "ssl_session_cache"))
    ctx = client_ctx(pki, version=ssl.TLSVersion.TLSv1_2)
    s1 = tls_conn(srv.port, ctx)
    assert ask(s1, b"version\r\n").startswith(b"VERSION ")
    session = s1.session
    assert not s1.session_reused
    s1.close()
    before = int(tls_stats(srv.port, ctx)["ssl_new_sessions"])
    raw = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    s2 = ctx.wrap_socket(raw, session=session)
    assert ask(s2, b"version\r\n").startswith(b"VERSION ")
    assert s2.session_reused
    s2.close()
    st = stats_over(srv.port, ctx)
    assert int(st["ssl_new_sessions"]) == before + 1  # only the stats connection's own


def stats_over(port, ctx):
    return tls_stats(port, ctx)


# ---- reload ---------------------------------------------------------------



def test_refresh_certs_and_sighup(make_server, pki, tmp_path):
    crt, key = str(tmp_path / "s.crt"), str(tmp_path / "s.key")
    shutil.copy(pki.server[0], crt)
    shutil.copy(pki.server[1], key)
    newer = pki.issue("renewed.example", server=True)
    plain = hserver.free_port()
    srv = make_server("-Z", "-o", "ssl_chain_cert=%s,ssl_key=%s" % (crt, key),
                      "-l", "notls:127.0.0.1:%d,127.0.0.1:%d" % (plain, hserver.free_port()))
    tls_port = int(srv.cmdline[srv.cmdline.index("-l") + 1].split(":")[-1])
    ctx = client_ctx(pki)
    old = tls_conn(tls_port, ctx)
    assert peer_cn(old) == "localhost"
    time.sleep(1.1)
    age = int(stats(plain)["time_since_server_cert_refresh"])
    assert age >= 1
    shutil.copy(newer[0], crt)
    shutil.copy(newer[1], key)
    with socket.create_connection(("127.0.0.1", plain), timeout=5) as p:
        assert ask(p, b"refresh_certs\r\n") == b"OK\r\n"
    assert int(stats(plain)["time_since_server_cert_refresh"]) < age
    with tls_conn(tls_port, ctx) as s:
        assert peer_cn(s) == "renewed.example"
    # The connection made before keeps working with its certificate.
    assert ask(old, b"version\r\n").startswith(b"VERSION ")
    # A broken file: the error line, and the last good certificate stays.
    with open(key, "w") as f:
        f.write("not a key\n")
    with socket.create_connection(("127.0.0.1", plain), timeout=5) as p:
        reply = ask(p, b"refresh_certs\r\n")
    assert reply.startswith(b"Error loading the key: " + key.encode())
    with tls_conn(tls_port, ctx) as s:
        assert peer_cn(s) == "renewed.example"
    # SIGHUP reloads too.
    shutil.copy(pki.server[0], crt)
    shutil.copy(pki.server[1], key)
    srv.proc.send_signal(signal.SIGHUP)
    deadline = time.time() + 5
    while True:
        with tls_conn(tls_port, ctx) as s:
            if peer_cn(s) == "localhost":
                break
        assert time.time() < deadline
        time.sleep(0.05)
    assert ask(old, b"version\r\n").startswith(b"VERSION ")
    old.close()


def test_reload_under_load(make_server, pki, tmp_path):
    crt, key = str(tmp_path / "s.crt"), str(tmp_path / "s.key")
    shutil.copy(pki.server[0], crt)
    shutil.copy(pki.server[1], key)
    newer = pki.issue("load.example", server=True)
    srv = make_server("-Z", "-o", "ssl_chain_cert=%s,ssl_key=%s" % (crt, key))
    ctx = client_ctx(pki)
    loop = tls_conn(srv.port, ctx)
    admin = tls_conn(srv.port, ctx)
    for i in range(200):
        assert ask(loop, b"set l%d 0 0 1\r\nx\r\n" % i) == b"STORED\r\n"
        if i == 100:
            shutil.copy(newer[0], crt)
            shutil.copy(newer[1], key)
            assert ask(admin, b"refresh_certs\r\n") == b"OK\r\n"
    with tls_conn(srv.port, ctx) as s:
        assert peer_cn(s) == "load.example"
    loop.close()
    admin.close()


# ---- start-up errors ---------------------------------------------------------

def start_fails(args):
    rc, out, err = hserver.run_binary(["-p", "0", "--resp-port", "0"] + args, timeout=10)
    return rc, out + err


def test_startup_errors(pki, tmp_path):
    cert, key = pki.server
    rc, out = start_fails(["-Z", "-o", "ssl_chain_cert=/nonexistent.pem,ssl_key=" + key])
    assert rc == 64 and "Error loading the certificate chain: /nonexistent.pem" in out
    rc, out = start_fails(["-Z", "-o", "ssl_chain_cert=%s,ssl_key=%s" % (cert, pki.alice[1])])
    assert rc == 64 and "key values mismatch" in out
    expired = pki.issue("old.example", server=True, days=-1)
    rc, out = start_fails(["-Z", "-o", "ssl_chain_cert=%s,ssl_key=%s" % expired])
    assert rc == 64 and "has expired" in out
    rc, out = start_fails(["-Z"])
    assert rc == 64 and "Error loading the certificate chain" in out
    rc, out = start_fails(["-o", "ssl_chain_cert=" + cert])
    assert rc == 64 and "need -Z" in out
    rc, out = start_fails(["-l", "mtls:127.0.0.1:0"])
    assert rc == 64 and "'mtls' option is valid only when SSL is enabled" in out
    rc, out = start_fails(["-Z", "-o", "ssl_verify_mode=7"])
    assert rc == 64 and "Invalid ssl_verify_mode. Use help to see valid options." in out
    rc, out = start_fails(["-Z", "-o", "ssl_min_version=x"])
    assert rc == 64 and "could not parse argument to ssl_min_version" in out


def test_help_lists_enable_ssl():
    rc, out, _ = hserver.run_binary(["-h"])
    assert rc == 0 and "--enable-ssl" in out


# ---- hostile clients ------------------------------------------------------------

def test_plaintext_and_garbage_are_closed(make_server, pki):
    srv = make_server(*tls_args(pki, "-t", "1"))
    before = int(tls_stats(srv.port, client_ctx(pki))["ssl_handshake_errors"])
    # Random bytes behind a header no TLS record has (type 0, version 0.0):
    # fully random ones can read as an SSLv2 hello or a record longer than
    # what was sent, which is a truncated handshake (the stalled-handshake
    # test's case, closed only at the deadline).
    garbage = b"\x00\x00\x00" + os.urandom(2997)
    for payload in (b"get foo\r\n", garbage, b"\x16\x03\x01\x00\x05hello"):
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        s.sendall(payload)
        assert closed_without_reply_or_alert(s)
        s.close()
    st = tls_stats(srv.port, client_ctx(pki))
    assert int(st["ssl_handshake_errors"]) >= before + 3
    with tls_conn(srv.port, client_ctx(pki)) as s:
        assert ask(s, b"version\r\n").startswith(b"VERSION ")


def closed_without_reply_or_alert(sock):
    """The server closes; at most a TLS alert record (type 21) comes first,
    never a memcached reply."""
    sock.settimeout(5)
    data = b""
    try:
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    except ConnectionResetError:
        pass
    return data == b"" or data[0] == 21


def test_stalled_handshake_is_dropped_and_does_not_delay_others(make_server, pki):
    plain, tls = ports(2)
    make_server(*tls_args(pki, "-t", "1", "-o", "ssl_handshake_timeout=1", "-l",
                                "notls:127.0.0.1:%d,127.0.0.1:%d" % (plain, tls)))
    stalled = [socket.create_connection(("127.0.0.1", tls), timeout=5) for _ in range(20)]
    # Half a ClientHello on some of them: a truncated handshake.
    for s in stalled[:10]:
        s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", plain), timeout=5) as p:
        assert ask(p, b"version\r\n").startswith(b"VERSION ")
    assert time.monotonic() - t0 < 0.5
    with tls_conn(tls, client_ctx(pki)) as s:
        assert ask(s, b"version\r\n").startswith(b"VERSION ")
    for s in stalled:
        assert closed_without_reply_or_alert(s)
        s.close()
    assert time.monotonic() - t0 < 4
    assert int(stats(plain)["ssl_handshake_errors"]) >= 20


def test_renegotiation_closes_the_connection(make_server, pki):
    srv = make_server(*tls_args(pki))
    # openssl s_client renegotiates on a line "R" (TLS 1.2 only).
    p = subprocess.Popen(["openssl", "s_client", "-connect", "127.0.0.1:%d" % srv.port,
                          "-tls1_2", "-quiet", "-no_ign_eof"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        p.stdin.write(b"version\r\n")
        p.stdin.flush()
        first = p.stdout.readline()
        assert first.startswith(b"VERSION ")
        p.stdin.write(b"R\n")
        p.stdin.flush()
        time.sleep(0.5)
        try:
            p.stdin.write(b"version\r\n")
            p.stdin.flush()
        except BrokenPipeError:
            pass
        rest, _ = p.communicate(timeout=10)
        assert b"VERSION" not in rest
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    with tls_conn(srv.port, client_ctx(pki)) as s:
        assert ask(s, b"version\r\n").startswith(b"VERSION ")
    assert int(tls_stats(srv.port, client_ctx(pki))["ssl_proto_errors"]) == 1


# ---- identity ---------------------------------------------------------------------

def test_certificate_cn_names_the_acl_user(make_server, pki, tmp_path):
    """-o ssl_auth_user_cn on an mtls: listener: alice's certificate runs as
    ACL user alice (her key patterns and rate limit), with -Y on or off."""
    (tmp_path / "users.acl").write_text(
        "user alice on nopass +@all -@dangerous ~app:* ratelimit:cps=3\n")
    (tmp_path / "auth").write_text("bob:bobpw\n")
    for extra in ([], ["-Y", str(tmp_path / "auth")]):
        mutual = hserver.free_port()
        make_server(*tls_args(pki, "-o", "ssl_ca_cert=%s,ssl_auth_user_cn" % pki.ca,
                                    "-l", "notls:127.0.0.1:%d,mtls:127.0.0.1:%d"
                                    % (hserver.free_port(), mutual),
                                    "--aclfile", str(tmp_path / "users.acl"), *extra))
        with tls_conn(mutual, client_ctx(pki, cert=pki.alice)) as s:
            assert ask(s, b"set app:1 0 0 1\r\nv\r\n") == b"STORED\r\n"
            assert ask(s, b"set other 0 0 1\r\nv\r\n") == \
                b"SERVER_ERROR NOPERM No permissions to access a key\r\n"
            assert ask(s, b"flush_all\r\n").startswith(b"SERVER_ERROR NOPERM")
            # ratelimit:cps=3 follows the certificate's user.
            replies = [ask(s, b"mg app:1 v\r\n", b"\r\n") for _ in range(8)]
            assert any(r.startswith(b"SERVER_ERROR") for r in replies), replies
        # A certificate naming no user changes nothing: without -Y the
        # connection is open, with -Y it must still log in.
        mallory = pki.issue("mallory")
        with tls_conn(mutual, client_ctx(pki, cert=mallory)) as s:
            reply = ask(s, b"set other 0 0 1\r\nv\r\n")
            if extra:
                assert reply.startswith(b"CLIENT_ERROR")  # the -Y login line it must send
            else:
                assert reply == b"STORED\r\n"
