"""TLS on the RESP port with Redis 7's settings (issue 40): --tls-port (a
TLS listener next to the plain RESP port), --tls-cert-file / -key-file /
-key-file-pass / -ca-cert-file / -ca-cert-dir, tls-auth-clients
yes|no|optional, tls-protocols, ciphers, session caching; CONFIG GET and SET
of every tls-* name (a reload builds a new context for new connections or
fails with Redis's reply and keeps the old one), INFO's tls_port, start-up
errors (exit 64), the certificate CN as ACL user (tls-auth-clients-user CN),
and hostile bytes on the TLS port. Trove only: each test starts its own
server with certificates made by harness/certs.py."""

import os
import shutil
import socket
import ssl
import subprocess
import threading
import time

import pytest
import redis

from conftest import RawConn, resp_target
from harness import server as hserver
from harness.certs import Pki, client_ctx, peer_cn

pytestmark = [pytest.mark.trove_only,
              pytest.mark.skipif(resp_target() != "trove", reason="Trove's TLS RESP port")]

UNABLE = (b"-ERR CONFIG SET failed (possibly related to argument '%s') - "
          b"Unable to update TLS configuration. Check server logs.\r\n")
OK = b"+OK\r\n"
PONG = b"+PONG\r\n"
PING = b"*1\r\n$4\r\nPING\r\n"


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    p = Pki(str(tmp_path_factory.mktemp("pki")))
    p.alice = p.issue("alice")
    p.bob = p.issue("bob")
    p.carol = p.issue("carol")
    p.other = Pki(os.path.join(p.dir, "other"), name="otherca")
    p.stranger = p.other.issue("alice", name="stranger")  # right CN, wrong CA
    return p


# ---- helpers ------------------------------------------------------------------

def start(make_server, pki, *extra, cert=None, ca=True):
    """A server with a TLS RESP port; returns (server, tls port)."""
    port = hserver.free_port()
    crt, key = cert or pki.server
    args = ["--tls-port", str(port), "--tls-cert-file", crt, "--tls-key-file", key]
    if ca:
        args += ["--tls-ca-cert-file", pki.ca]
    srv = make_server(*(args + list(extra)))
    assert srv.resp_tls_port == port, "port file lacks 'resp-tls %d'" % port
    return srv, port


def start_fails(*args):
    rc, out, err = hserver.run_binary(["-p", "0", "--resp-port", "0"] + list(args), timeout=15)
    return rc, out + err




class TlsConn(RawConn):
    """RawConn (RESP over a socket) through TLS."""

    def __init__(self, port, ctx, timeout=5, session=None):
        raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        try:
            self.sock = ctx.wrap_socket(raw, session=session)
        except BaseException:
            raw.close()
            raise
        self.buf = b""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def tls_redis(port, pki, cert="alice", **kw):
    cert = pki.alice if cert == "alice" else cert
    return redis.Redis(host="127.0.0.1", port=port, ssl=True, ssl_ca_certs=pki.ca,
                       ssl_certfile=cert[0] if cert else None,
                       ssl_keyfile=cert[1] if cert else None,
                       ssl_cert_reqs="required", ssl_check_hostname=False,
                       socket_timeout=10, socket_connect_timeout=5, decode_responses=True, **kw)


def plain_redis(srv):
    return redis.Redis(host="127.0.0.1", port=srv.resp_port, socket_timeout=10,
                       decode_responses=True)


def works(port, ctx):
    """A TLS client with this context gets PONG."""
    with TlsConn(port, ctx) as c:
        return c.cmd("PING") == PONG


def refused(port, ctx):
    """The server refuses this client: in the handshake (TLS 1.2) or right
    after it (TLS 1.3, whose client finishes first): a PING gets no reply,
    only the close (or an alert)."""
    try:
        c = TlsConn(port, ctx)
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
        return True
    try:
        c.sock.sendall(PING)
        c.sock.settimeout(5)
        data = c.sock.recv(4096)
    except socket.timeout:
        return False  # neither a reply nor a close
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
        return True
    finally:
        c.close()
    return data == b""




def new_cn(port, pki):
    with TlsConn(port, client_ctx(pki, cert=pki.alice)) as c:
        assert c.cmd("PING") == PONG
        return peer_cn(c.sock)


def config_get(admin, name):
    """CONFIG GET of one name over a RawConn, as text."""
    reply = admin.cmd("CONFIG", "GET", name)
    lines = reply.split(b"\r\n")
    assert lines[0] == b"*2" and lines[2] == name.encode(), reply
    return lines[4].decode()


def reissue_with_key(pki, cn, key, folder):
    """A server certificate for `cn` signed by the CA, over an existing key."""
    base = os.path.join(str(folder), cn)
    csr, crt, ext = base + ".csr", base + ".crt", base + ".ext"
    with open(ext, "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    subprocess.run(["openssl", "req", "-new", "-key", key, "-subj", "/CN=" + cn, "-out", csr],
                   check=True, capture_output=True, timeout=60)
    subprocess.run(["openssl", "x509", "-req", "-in", csr, "-CA", pki.ca, "-CAkey", pki.ca_key,
                    "-CAcreateserial", "-out", crt, "-days", "3650", "-extfile", ext],
                   check=True, capture_output=True, timeout=60)
    return crt


def encrypt_key(key, out, password="1234"):
    subprocess.run(["openssl", "pkey", "-in", key, "-aes256", "-passout", "pass:" + password,
                    "-out", out], check=True, capture_output=True, timeout=60)
    with open(out) as f:
        assert "ENCRYPTED" in f.read()
    return out


def closed_without_reply_or_alert(sock, timeout=5):
    """The server closes; at most a TLS alert record (type 21) comes first,
    never a RESP reply. False if it neither closes nor stops talking."""
    sock.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    except ConnectionResetError:
        pass
    except socket.timeout:
        return False
    return data == b"" or data[0] == 21


def acl_log(rd):
    return [dict(zip(e[::2], e[1::2])) for e in rd.execute_command("ACL", "LOG")]


# ---- serving ------------------------------------------------------------------

def test_tls_port_serves_redis_py_beside_the_plain_port(make_server, pki):
    srv, port = start(make_server, pki)
    assert srv.resp_port not in (None, port)
    c = tls_redis(port, pki)
    p = plain_redis(srv)
    try:
        assert c.ping() is True
        assert c.set("k:tls", "over-tls") is True
        assert p.get("k:tls") == "over-tls"
        assert p.set("k:plain", "over-plain") is True
        assert c.get("k:plain") == "over-plain"
        big = "v" * 400000  # many TLS records each way
        assert c.set("k:big", big) is True
        assert c.get("k:big") == big and p.strlen("k:big") == len(big)
        pipe = c.pipeline(transaction=False)
        for i in range(300):
            pipe.set("k:%d" % i, i)
            pipe.get("k:%d" % i)
        out = pipe.execute()
        assert out == [x for i in range(300) for x in (True, str(i))]
    finally:
        c.close()
        p.close()
    with TlsConn(port, client_ctx(pki, cert=pki.alice)) as t:
        assert t.sock.version() in ("TLSv1.2", "TLSv1.3")
        assert t.cmd("GET", "k:plain") == b"$10\r\nover-plain\r\n"
    info = RawConn(srv.resp_port)
    assert ("\r\ntls_port:%d\r\n" % port) in info.cmd("INFO", "server").decode()
    info.close()


def test_client_certificate_from_the_ca_is_required_by_default(make_server, pki):
    srv, port = start(make_server, pki)
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        assert refused(port, client_ctx(pki, version=version)), version
        assert refused(port, client_ctx(pki, cert=pki.stranger, version=version)), version
        assert works(port, client_ctx(pki, cert=pki.alice, version=version)), version
    admin = RawConn(srv.resp_port)
    assert config_get(admin, "tls-auth-clients") == "yes"
    assert admin.cmd("PING") == PONG
    admin.close()


def test_auth_clients_no_and_optional_at_start(make_server, pki):
    # no: no certificate is asked for, so no CA is needed.
    srv, port = start(make_server, pki, "--tls-auth-clients", "no", ca=False)
    assert works(port, client_ctx(pki))
    assert works(port, client_ctx(pki, cert=pki.stranger))
    admin = RawConn(srv.resp_port)
    assert config_get(admin, "tls-auth-clients") == "no"
    assert config_get(admin, "tls-ca-cert-file") == ""
    admin.close()
    # optional: a client without a certificate is served, a presented one
    # must verify.
    srv, port = start(make_server, pki, "--tls-auth-clients", "optional")
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        assert works(port, client_ctx(pki, version=version)), version
        assert works(port, client_ctx(pki, cert=pki.alice, version=version)), version
        assert refused(port, client_ctx(pki, cert=pki.stranger, version=version)), version
    admin = RawConn(srv.resp_port)
    assert config_get(admin, "tls-auth-clients") == "optional"
    admin.close()


def test_config_set_auth_clients_applies_to_new_connections(make_server, pki):
    srv, port = start(make_server, pki)
    held = TlsConn(port, client_ctx(pki, cert=pki.alice))
    assert held.cmd("PING") == PONG
    admin = RawConn(srv.resp_port)
    bare, stranger = client_ctx(pki), client_ctx(pki, cert=pki.stranger)
    assert refused(port, bare)
    assert admin.cmd("CONFIG", "SET", "tls-auth-clients", "no") == OK
    assert config_get(admin, "tls-auth-clients") == "no"
    assert works(port, bare)
    assert admin.cmd("CONFIG", "SET", "tls-auth-clients", "optional") == OK
    assert config_get(admin, "tls-auth-clients") == "optional"
    assert works(port, bare)
    assert refused(port, stranger)
    assert admin.cmd("CONFIG", "SET", "tls-auth-clients", "yes") == OK
    assert refused(port, bare)
    assert works(port, client_ctx(pki, cert=pki.alice))
    assert admin.cmd("CONFIG", "SET", "tls-auth-clients", "maybe") == (
        b"-ERR CONFIG SET failed (possibly related to argument 'tls-auth-clients') - "
        b"argument(s) must be one of the following: no, yes, optional\r\n")
    assert config_get(admin, "tls-auth-clients") == "yes"
    # The connection made first was never disturbed.
    assert held.cmd("PING") == PONG
    held.close()
    admin.close()


# ---- CONFIG GET / SET -----------------------------------------------------------

def test_config_get_every_tls_setting(make_server, pki):
    srv, port = start(make_server, pki)
    cert, key = pki.server
    want = {
        "tls-port": str(port),
        "tls-cert-file": cert,
        "tls-key-file": key,
        "tls-key-file-pass": "",
        "tls-ca-cert-file": pki.ca,
        "tls-ca-cert-dir": "",
        "tls-auth-clients": "yes",
        "tls-auth-clients-user": "off",
        "tls-protocols": "",
        "tls-ciphers": "",
        "tls-ciphersuites": "",
        "tls-prefer-server-ciphers": "no",
        "tls-session-caching": "yes",
        "tls-session-cache-size": "20480",
        "tls-session-cache-timeout": "300",
        "tls-replication": "no",
        "tls-cluster": "no",
    }
    p = plain_redis(srv)
    try:
        for name, value in want.items():
            assert p.config_get(name) == {name: value}, name
        everything = p.config_get("tls-*")
        for name, value in want.items():
            assert everything.get(name) == value, name
    finally:
        p.close()
    admin = RawConn(srv.resp_port)
    reply = admin.cmd("CONFIG", "SET", "tls-port", str(hserver.free_port()))
    assert reply.startswith(b"-ERR") and b"can't set immutable config" in reply
    assert config_get(admin, "tls-port") == str(port)
    for name in ("tls-replication", "tls-cluster"):
        assert admin.cmd("CONFIG", "SET", name, "yes").startswith(b"-ERR"), name
        assert config_get(admin, name) == "no"
        assert admin.cmd("CONFIG", "SET", name, "no") == OK
        assert config_get(admin, name) == "no"
    assert works(port, client_ctx(pki, cert=pki.alice))
    admin.close()


def test_config_set_scalar_settings(make_server, pki):
    srv, port = start(make_server, pki)
    admin = RawConn(srv.resp_port)
    assert admin.cmd("CONFIG", "SET", "tls-session-cache-size", "100",
                     "tls-session-cache-timeout", "60", "tls-prefer-server-ciphers", "yes",
                     "tls-session-caching", "no") == OK
    assert config_get(admin, "tls-session-cache-size") == "100"
    assert config_get(admin, "tls-session-cache-timeout") == "60"
    assert config_get(admin, "tls-prefer-server-ciphers") == "yes"
    assert config_get(admin, "tls-session-caching") == "no"
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        assert works(port, client_ctx(pki, cert=pki.alice, version=version)), version
    assert admin.cmd("CONFIG", "SET", "tls-session-caching", "maybe") == (
        b"-ERR CONFIG SET failed (possibly related to argument 'tls-session-caching') - "
        b"argument must be 'yes' or 'no'\r\n")
    assert admin.cmd("CONFIG", "SET", "tls-prefer-server-ciphers", "2") == (
        b"-ERR CONFIG SET failed (possibly related to argument 'tls-prefer-server-ciphers') - "
        b"argument must be 'yes' or 'no'\r\n")
    assert admin.cmd("CONFIG", "SET", "tls-session-cache-size", "lots").startswith(
        b"-ERR CONFIG SET failed (possibly related to argument 'tls-session-cache-size')")
    assert config_get(admin, "tls-session-caching") == "no"
    assert config_get(admin, "tls-prefer-server-ciphers") == "yes"
    assert config_get(admin, "tls-session-cache-size") == "100"
    assert works(port, client_ctx(pki, cert=pki.alice))
    admin.close()


def test_tls_protocols_and_ciphers(make_server, pki):
    srv, port = start(make_server, pki, "--tls-protocols", "TLSv1.2 TLSv1.3")
    admin = RawConn(srv.resp_port)
    v12 = client_ctx(pki, cert=pki.alice, version=ssl.TLSVersion.TLSv1_2)
    v13 = client_ctx(pki, cert=pki.alice, version=ssl.TLSVersion.TLSv1_3)
    assert config_get(admin, "tls-protocols") == "TLSv1.2 TLSv1.3"
    assert works(port, v12) and works(port, v13)
    assert admin.cmd("CONFIG", "SET", "tls-protocols", "TLSv1.2") == OK
    assert config_get(admin, "tls-protocols") == "TLSv1.2"
    assert refused(port, v13)
    with TlsConn(port, v12) as c:
        assert c.sock.version() == "TLSv1.2" and c.cmd("PING") == PONG
    assert admin.cmd("CONFIG", "SET", "tls-ciphers", "ECDHE-ECDSA-CHACHA20-POLY1305") == OK
    assert config_get(admin, "tls-ciphers") == "ECDHE-ECDSA-CHACHA20-POLY1305"
    with TlsConn(port, v12) as c:
        assert c.sock.cipher()[0] == "ECDHE-ECDSA-CHACHA20-POLY1305"
        assert c.cmd("PING") == PONG
    assert admin.cmd("CONFIG", "SET", "tls-protocols", "TLSv1.3") == OK
    assert refused(port, v12)
    assert admin.cmd("CONFIG", "SET", "tls-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256") == OK
    assert config_get(admin, "tls-ciphersuites") == "TLS_CHACHA20_POLY1305_SHA256"
    with TlsConn(port, v13) as c:
        assert c.sock.version() == "TLSv1.3"
        assert c.sock.cipher()[0] == "TLS_CHACHA20_POLY1305_SHA256"
        assert c.cmd("PING") == PONG
    # Strings OpenSSL cannot use: Redis's reply, nothing changes.
    assert admin.cmd("CONFIG", "SET", "tls-protocols", "TLSv9") == UNABLE % b"tls-protocols"
    assert config_get(admin, "tls-protocols") == "TLSv1.3"
    assert admin.cmd("CONFIG", "SET", "tls-ciphers", "NO-SUCH-CIPHER") == UNABLE % b"tls-ciphers"
    assert config_get(admin, "tls-ciphers") == "ECDHE-ECDSA-CHACHA20-POLY1305"
    assert refused(port, v12)
    assert works(port, v13)
    admin.close()


def test_ca_cert_dir(make_server, pki, tmp_path):
    good, other = tmp_path / "good", tmp_path / "other"
    for d, ca in ((good, pki.ca), (other, pki.other.ca)):
        d.mkdir()
        shutil.copy(ca, str(d / "ca.pem"))
        subprocess.run(["openssl", "rehash", str(d)], check=True, capture_output=True,
                       timeout=30)
    srv, port = start(make_server, pki, "--tls-ca-cert-dir", str(good), ca=False)
    admin = RawConn(srv.resp_port)
    assert config_get(admin, "tls-ca-cert-dir") == str(good)
    assert config_get(admin, "tls-ca-cert-file") == ""
    assert works(port, client_ctx(pki, cert=pki.alice))
    assert refused(port, client_ctx(pki, cert=pki.stranger))
    assert refused(port, client_ctx(pki))
    # Another CA at run time: its clients in, the first CA's out.
    assert admin.cmd("CONFIG", "SET", "tls-ca-cert-dir", str(other)) == OK
    assert works(port, client_ctx(pki, cert=pki.stranger))
    assert refused(port, client_ctx(pki, cert=pki.alice))
    admin.close()


# ---- start-up errors -------------------------------------------------------------

def test_startup_errors(pki, tmp_path):
    cert, key = pki.server
    port = str(hserver.free_port())
    base = ["--tls-port", port]
    ca = ["--tls-ca-cert-file", pki.ca]

    rc, out = start_fails(*base)
    assert rc == 64 and "No tls-cert-file configured" in out, out

    rc, out = start_fails(*base, "--tls-cert-file", cert, "--tls-key-file", key)
    assert rc == 64, out
    assert "Either tls-ca-cert-file or tls-ca-cert-dir must be specified" in out, out

    missing = str(tmp_path / "missing.crt")
    rc, out = start_fails(*base, "--tls-cert-file", missing, "--tls-key-file", key, *ca)
    assert rc == 64 and missing in out, out

    missing_key = str(tmp_path / "missing.key")
    rc, out = start_fails(*base, "--tls-cert-file", cert, "--tls-key-file", missing_key, *ca)
    assert rc == 64 and missing_key in out, out

    garbage = tmp_path / "garbage.crt"
    garbage.write_text("not a certificate\n")
    rc, out = start_fails(*base, "--tls-cert-file", str(garbage), "--tls-key-file", key, *ca)
    assert rc == 64 and str(garbage) in out, out

    rc, out = start_fails(*base, "--tls-cert-file", cert, "--tls-key-file", pki.alice[1], *ca)
    assert rc == 64 and (pki.alice[1] in out or cert in out or "mismatch" in out), out

    expired = pki.issue("expired.example", server=True, days=-1)
    rc, out = start_fails(*base, "--tls-cert-file", expired[0], "--tls-key-file", expired[1], *ca)
    assert rc == 64 and "expired" in out.lower(), out

    missing_ca = str(tmp_path / "missing-ca.crt")
    rc, out = start_fails(*base, "--tls-cert-file", cert, "--tls-key-file", key,
                          "--tls-ca-cert-file", missing_ca)
    assert rc == 64 and missing_ca in out, out

    rc, out = start_fails(*base, "--tls-cert-file", cert, "--tls-key-file", key, *ca,
                          "--tls-auth-clients", "maybe")
    assert rc == 64 and "tls-auth-clients" in out, out


# ---- certificate reloads ---------------------------------------------------------

def test_config_set_reloads_the_certificate_for_new_connections(make_server, pki, tmp_path):
    crt, key = str(tmp_path / "s.crt"), str(tmp_path / "s.key")
    shutil.copy(pki.server[0], crt)
    shutil.copy(pki.server[1], key)
    srv, port = start(make_server, pki, cert=(crt, key))
    admin = RawConn(srv.resp_port)
    old = TlsConn(port, client_ctx(pki, cert=pki.alice))
    assert peer_cn(old.sock) == "localhost"
    assert old.cmd("SET", "before", "1") == OK

    # The certificate alone (same key).
    same_key = reissue_with_key(pki, "samekey.example", key, tmp_path)
    assert admin.cmd("CONFIG", "SET", "tls-cert-file", same_key) == OK
    assert config_get(admin, "tls-cert-file") == same_key
    assert new_cn(port, pki) == "samekey.example"

    # Certificate and key together, in one call.
    renewed = pki.issue("renewed.reload", server=True)
    assert admin.cmd("CONFIG", "SET", "tls-cert-file", renewed[0],
                     "tls-key-file", renewed[1]) == OK
    assert config_get(admin, "tls-cert-file") == renewed[0]
    assert config_get(admin, "tls-key-file") == renewed[1]
    assert new_cn(port, pki) == "renewed.reload"

    # The same file names again, with new contents: loaded again (Redis 7
    # rebuilds on a file setting even when its value did not change).
    assert admin.cmd("CONFIG", "SET", "tls-cert-file", crt, "tls-key-file", key) == OK
    assert new_cn(port, pki) == "localhost"
    shutil.copy(renewed[0], crt)
    shutil.copy(renewed[1], key)
    assert admin.cmd("CONFIG", "SET", "tls-cert-file", crt, "tls-key-file", key) == OK
    assert new_cn(port, pki) == "renewed.reload"

    # The connection made before every reload keeps working.
    assert old.cmd("GET", "before") == b"$1\r\n1\r\n"
    assert old.cmd("PING") == PONG
    old.close()
    admin.close()


def test_failed_reload_keeps_the_old_certificate(make_server, pki, tmp_path):
    srv, port = start(make_server, pki)
    cert, key = pki.server
    admin = RawConn(srv.resp_port)
    old = TlsConn(port, client_ctx(pki, cert=pki.alice))
    assert old.cmd("PING") == PONG
    missing = str(tmp_path / "missing.crt")
    assert admin.cmd("CONFIG", "SET", "tls-cert-file", missing) == UNABLE % b"tls-cert-file"
    # A certificate whose key is not the configured one.
    other = pki.issue("mismatch.example", server=True)
    assert admin.cmd("CONFIG", "SET", "tls-cert-file", other[0]) == UNABLE % b"tls-cert-file"
    # The error names the first tls-* argument of the call.
    assert admin.cmd("CONFIG", "SET", "tls-key-file", missing, "tls-cert-file", other[0]) == \
        UNABLE % b"tls-key-file"
    garbage = tmp_path / "garbage.key"
    garbage.write_text("not a key\n")
    assert admin.cmd("CONFIG", "SET", "tls-cert-file", other[0], "tls-key-file",
                     str(garbage)) == UNABLE % b"tls-cert-file"
    # Nothing of a failed call is kept, other settings of it included.
    policy = config_get(admin, "maxmemory-policy")
    new_policy = "allkeys-lru" if policy != "allkeys-lru" else "noeviction"
    assert admin.cmd("CONFIG", "SET", "maxmemory-policy", new_policy,
                     "tls-cert-file", missing) == UNABLE % b"tls-cert-file"
    assert config_get(admin, "maxmemory-policy") == policy
    assert config_get(admin, "tls-cert-file") == cert
    assert config_get(admin, "tls-key-file") == key
    assert new_cn(port, pki) == "localhost"
    assert old.cmd("PING") == PONG
    old.close()
    # A good pair still loads after the failures.
    assert admin.cmd("CONFIG", "SET", "tls-cert-file", other[0], "tls-key-file", other[1]) == OK
    assert new_cn(port, pki) == "mismatch.example"
    admin.close()


def test_encrypted_key_file_needs_its_password(make_server, pki, tmp_path):
    cert, key = pki.server
    enc = encrypt_key(key, str(tmp_path / "enc.key"))
    srv, port = start(make_server, pki)
    admin = RawConn(srv.resp_port)
    assert admin.cmd("CONFIG", "SET", "tls-key-file", enc) == UNABLE % b"tls-key-file"
    assert admin.cmd("CONFIG", "SET", "tls-key-file-pass", "wrong", "tls-key-file", enc) == \
        UNABLE % b"tls-key-file-pass"
    assert config_get(admin, "tls-key-file") == key
    assert config_get(admin, "tls-key-file-pass") == ""
    assert new_cn(port, pki) == "localhost"
    assert admin.cmd("CONFIG", "SET", "tls-key-file-pass", "1234", "tls-key-file", enc) == OK
    assert config_get(admin, "tls-key-file") == enc
    assert new_cn(port, pki) == "localhost"
    admin.close()
    # At start: with its password it serves, without it the start fails.
    srv2, port2 = start(make_server, pki, "--tls-key-file-pass", "1234", cert=(cert, enc))
    assert works(port2, client_ctx(pki, cert=pki.alice))
    rc, out = start_fails("--tls-port", str(hserver.free_port()), "--tls-cert-file", cert,
                          "--tls-key-file", enc, "--tls-ca-cert-file", pki.ca)
    assert rc == 64 and enc in out, out


def test_reload_under_load(make_server, pki, tmp_path):
    srv, port = start(make_server, pki)
    renewed = pki.issue("renewed", server=True)
    c = tls_redis(port, pki)
    cid = c.client_id()
    count = [0]
    churn = [0]
    errors = []
    stop = threading.Event()

    def loop():
        try:
            i = 0
            while not stop.is_set():
                c.set("load:%d" % (i % 64), i)
                got = c.get("load:%d" % (i % 64))
                if got != str(i):
                    raise AssertionError("GET gave %r, want %r" % (got, str(i)))
                i += 1
                count[0] = i
        except Exception as e:  # noqa: BLE001 -- reported by the test
            errors.append(("loop", repr(e)))

    def connect_loop():
        ctx = client_ctx(pki, cert=pki.alice)
        try:
            while not stop.is_set():
                with TlsConn(port, ctx) as t:
                    if t.cmd("PING") != PONG:
                        raise AssertionError("no PONG on a new connection")
                churn[0] += 1
        except Exception as e:  # noqa: BLE001
            errors.append(("connect", repr(e)))

    def wait_for(counter, target, deadline):
        while counter[0] < target and not errors and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not errors, errors
        assert counter[0] >= target, "stalled at %d" % counter[0]

    threads = [threading.Thread(target=loop, daemon=True),
               threading.Thread(target=connect_loop, daemon=True)]
    for t in threads:
        t.start()
    admin = RawConn(srv.resp_port)
    deadline = time.monotonic() + 60
    try:
        wait_for(count, 100, deadline)
        for crt, key in (renewed, pki.server, renewed):
            n, m = count[0], churn[0]
            assert admin.cmd("CONFIG", "SET", "tls-cert-file", crt, "tls-key-file", key) == OK
            wait_for(count, n + 100, deadline)
            wait_for(churn, m + 5, deadline)
    finally:
        stop.set()
        for t in threads:
            t.join(15)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)
    # The loop's connection lived through every reload.
    assert c.client_id() == cid
    c.close()
    assert new_cn(port, pki) == "renewed"
    admin.close()


# ---- certificate identity ----------------------------------------------------------

def test_certificate_cn_is_the_acl_user(make_server, pki):
    srv, port = start(make_server, pki, "--tls-auth-clients-user", "CN")
    p = plain_redis(srv)
    c = None
    try:
        assert p.config_get("tls-auth-clients-user") == {"tls-auth-clients-user": "CN"}
        assert p.execute_command("ACL", "SETUSER", "alice", "on", "nopass", "~a:*", "+get",
                                 "+set", "+acl|whoami") == "OK"
        c = tls_redis(port, pki)
        assert c.execute_command("ACL", "WHOAMI") == "alice"
        assert c.set("a:1", "x") is True
        assert c.get("a:1") == "x"
        with pytest.raises(redis.exceptions.NoPermissionError):
            c.set("b:1", "x")
        with pytest.raises(redis.exceptions.NoPermissionError):
            c.execute_command("DEL", "a:1")
        assert p.exists("b:1") == 0 and p.get("a:1") == "x"
        # The plain port is untouched: still the default user.
        assert p.execute_command("ACL", "WHOAMI") == "default"
    finally:
        if c is not None:
            c.close()
        p.close()
    # Off at run time: new TLS connections ignore the CN.
    admin = RawConn(srv.resp_port)
    assert admin.cmd("CONFIG", "SET", "tls-auth-clients-user", "off") == OK
    assert config_get(admin, "tls-auth-clients-user") == "off"
    with TlsConn(port, client_ctx(pki, cert=pki.alice)) as t:
        assert t.cmd("ACL", "WHOAMI") == b"$7\r\ndefault\r\n"
    assert admin.cmd("CONFIG", "SET", "tls-auth-clients-user", "CN") == OK
    with TlsConn(port, client_ctx(pki, cert=pki.alice)) as t:
        assert t.cmd("ACL", "WHOAMI") == b"$5\r\nalice\r\n"
    admin.close()


def test_cn_is_ignored_by_default(make_server, pki):
    srv, port = start(make_server, pki)
    p = plain_redis(srv)
    try:
        assert p.config_get("tls-auth-clients-user") == {"tls-auth-clients-user": "off"}
        p.execute_command("ACL", "SETUSER", "alice", "on", "nopass", "~a:*", "+acl|whoami")
        with TlsConn(port, client_ctx(pki, cert=pki.alice)) as t:
            assert t.cmd("ACL", "WHOAMI") == b"$7\r\ndefault\r\n"
            assert t.cmd("SET", "b:1", "x") == OK  # the default user's rights
        assert not any(e.get("reason") == "tls-cert" for e in acl_log(p))
    finally:
        p.close()


def test_unknown_or_disabled_cn_stays_default(make_server, pki):
    srv, port = start(make_server, pki, "--tls-auth-clients-user", "CN")
    p = plain_redis(srv)
    try:
        p.execute_command("ACL", "LOG", "RESET")
        # bob: no such user.
        with TlsConn(port, client_ctx(pki, cert=pki.bob)) as t:
            assert t.cmd("ACL", "WHOAMI") == b"$7\r\ndefault\r\n"
            assert t.cmd("SET", "any", "x") == OK
        reasons = [e.get("reason") for e in acl_log(p)]
        assert "tls-cert" in reasons, reasons
        # carol: a user that is off.
        p.execute_command("ACL", "SETUSER", "carol", "off", "nopass", "~*", "+@all")
        with TlsConn(port, client_ctx(pki, cert=pki.carol)) as t:
            assert t.cmd("ACL", "WHOAMI") == b"$7\r\ndefault\r\n"
        # Enabled, carol's certificate makes her carol.
        p.execute_command("ACL", "SETUSER", "carol", "on")
        with TlsConn(port, client_ctx(pki, cert=pki.carol)) as t:
            assert t.cmd("ACL", "WHOAMI") == b"$5\r\ncarol\r\n"
    finally:
        p.close()


def test_session_resumption_keeps_the_client_identity(make_server, pki):
    srv, port = start(make_server, pki, "--tls-auth-clients-user", "CN")
    p = plain_redis(srv)
    try:
        p.execute_command("ACL", "SETUSER", "alice", "on", "nopass", "~a:*", "+acl|whoami",
                          "+ping")
    finally:
        p.close()
    ctx = client_ctx(pki, cert=pki.alice, version=ssl.TLSVersion.TLSv1_2)
    with TlsConn(port, ctx) as first:
        assert first.cmd("ACL", "WHOAMI") == b"$5\r\nalice\r\n"
        session = first.sock.session
        assert not first.sock.session_reused
    assert session is not None
    with TlsConn(port, ctx, session=session) as again:
        assert again.cmd("PING") == PONG
        assert again.sock.session_reused
        assert again.cmd("ACL", "WHOAMI") == b"$5\r\nalice\r\n"


# ---- hostile clients ------------------------------------------------------------------

def test_plaintext_and_garbage_on_the_tls_port_are_closed(make_server, pki):
    srv, port = start(make_server, pki, "-t", "1")
    payloads = (b"PING\r\n", PING, b"\x00\x00\x00" + os.urandom(2997),
                b"\x16\x03\x01\x00\x05hello",  # a record that is no ClientHello
                b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    for payload in payloads:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        try:
            s.sendall(payload)
        except (ConnectionResetError, BrokenPipeError):
            pass
        assert closed_without_reply_or_alert(s), payload[:20]
        s.close()
    # A client that sends half a ClientHello and leaves.
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
    s.close()
    # The server serves on, both ports.
    assert works(port, client_ctx(pki, cert=pki.alice))
    admin = RawConn(srv.resp_port)
    assert admin.cmd("PING") == PONG
    admin.close()


def test_certificate_user_rate_limit_applies(make_server, pki):
    """The rate limit of the user a certificate names follows the TLS
    connection (the issue's 'rate limits and permissions follow it')."""
    from test_resp_ratelimit import CPS_ERR
    srv, port = start(make_server, pki, "--tls-auth-clients-user", "CN")
    admin = RawConn(srv.resp_port)
    assert admin.cmd("ACL", "SETUSER", "alice", "on", "nopass", "~*", "+@all",
                     "ratelimit:cps=5") == OK
    with TlsConn(port, client_ctx(pki, cert=pki.alice)) as t:
        replies = [t.cmd("SET", "r%d" % i, "v") for i in range(6)]
    assert replies[:5] == [OK] * 5
    assert replies[5] == CPS_ERR
