"""Protected mode on the RESP ports (issue 35): with protected-mode yes (the
default) and no password on the default user, a client that does not come
from a loopback address gets Redis's -DENIED reply and is closed. As in
Redis 7, an explicit bind address (-l) does not turn it off; a password,
`protected-mode no` (flag or CONFIG SET) or a loopback peer does. The
memcached port has no protected mode (memcached has none).

The remote client lives in a network namespace this test creates: a veth
pair with private addresses of its own (10.213.x.1 here, 10.213.x.2 there).
Traffic goes only over that pair; the test skips when not root or when
namespaces cannot be made."""

import json
import os
import random
import shutil
import subprocess
import sys

import pytest

from conftest import RawConn, resp_target

pytestmark = pytest.mark.skipif(resp_target() != "trove", reason="Trove's flags and ports")

DENIED = (b"-DENIED Redis is running in protected mode because protected mode is enabled "
          b"and no password is set for the default user. In this mode connections are only "
          b"accepted from the loopback interface. If you want to connect from external "
          b"computers to Redis you may adopt one of the following solutions: 1) Just disable "
          b"protected mode sending the command 'CONFIG SET protected-mode no' from the loopback "
          b"interface by connecting to Redis from the same host the server is running, however "
          b"MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG "
          b"REWRITE to make this change permanent. 2) Alternatively you can just disable the "
          b"protected mode by editing the Redis configuration file, and setting the protected "
          b"mode option to 'no', and then restarting the server. 3) If you started the server "
          b"manually just for testing, restart it with the '--protected-mode no' option. 4) "
          b"Set up an authentication password for the default user. NOTE: You only need to do "
          b"one of the above things in order for the server to start accepting connections "
          b"from the outside.\r\n")

# Runs inside the namespace: connect, send, read until the server closes or
# goes quiet, print what arrived (and whether it closed) as JSON.
CLIENT = r"""
import json, socket, sys
host, port, payload = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode()
s = socket.create_connection((host, port), timeout=5)
if payload:
    try:
        s.sendall(payload)
    except OSError:
        pass
got, closed = b"", False
s.settimeout(1.5)
try:
    while True:
        c = s.recv(65536)
        if not c:
            closed = True
            break
        got += c
except socket.timeout:
    pass
except (ConnectionResetError, BrokenPipeError):
    closed = True
print(json.dumps({"got": got.decode("latin1"), "closed": closed}))
"""

PING = b"*1\r\n$4\r\nPING\r\n"


def _run(*cmd):
    return subprocess.run(list(cmd), capture_output=True, timeout=20)


@pytest.fixture(scope="module")
def netns():
    """(namespace name, our address, its address); torn down at the end."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and iproute2 for a network namespace")
    tag = "%d%d" % (os.getpid() % 10000, random.randrange(100))
    name = "trove-pm-%s" % tag
    host_if, ns_if = "tpm%sa" % tag, "tpm%sb" % tag
    octet = random.randrange(1, 254)
    ours, theirs = "10.213.%d.1" % octet, "10.213.%d.2" % octet
    steps = [
        ("ip", "netns", "add", name),
        ("ip", "link", "add", host_if, "type", "veth", "peer", "name", ns_if),
        ("ip", "link", "set", ns_if, "netns", name),
        ("ip", "addr", "add", ours + "/30", "dev", host_if),
        ("ip", "link", "set", host_if, "up"),
        ("ip", "netns", "exec", name, "ip", "addr", "add", theirs + "/30", "dev", ns_if),
        ("ip", "netns", "exec", name, "ip", "link", "set", ns_if, "up"),
        ("ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"),
    ]
    try:
        for st in steps:
            p = _run(*st)
            if p.returncode != 0:
                pytest.skip("cannot make a network namespace: %s: %s"
                            % (" ".join(st), p.stderr.decode().strip()))
        yield name, ours, theirs
    finally:
        _run("ip", "link", "del", host_if)
        _run("ip", "netns", "del", name)


def remote(ns, host, port, payload=PING):
    """Connects from inside the namespace; returns (bytes received, closed)."""
    p = _run("ip", "netns", "exec", ns[0], sys.executable, "-c", CLIENT, host, str(port),
             payload.decode("latin1"))
    assert p.returncode == 0, p.stderr.decode()
    out = json.loads(p.stdout.decode())
    return out["got"].encode("latin1"), out["closed"]


def rejected(port):
    c = RawConn(port)
    info = c.cmd("INFO", "stats").decode()
    c.close()
    for line in info.split("\r\n"):
        if line.startswith("rejected_connections:"):
            return int(line.split(":")[1])
    raise AssertionError(info)


def test_remote_client_is_denied_by_default(make_server, netns):
    srv = make_server()
    got, closed = remote(netns, netns[1], srv.resp_port)
    assert got == DENIED
    assert closed
    # A loopback client is served, and sees the refusal counted.
    c = RawConn(srv.resp_port)
    assert c.cmd("PING") == b"+PONG\r\n"
    assert c.cmd("CONFIG", "GET", "protected-mode") == \
        b"*2\r\n$14\r\nprotected-mode\r\n$3\r\nyes\r\n"
    assert "protected_mode:yes\r\n" in c.cmd("INFO", "server").decode()
    c.close()
    assert rejected(srv.resp_port) == 1
    # The memcached port keeps memcached's behaviour: no protected mode.
    got, _ = remote(netns, netns[1], srv.port, b"version\r\n")
    assert got.startswith(b"VERSION ")


def test_config_set_protected_mode_no_serves_remote_clients(make_server, netns):
    srv = make_server()
    c = RawConn(srv.resp_port)
    assert c.cmd("CONFIG", "SET", "protected-mode", "maybe").startswith(
        b"-ERR CONFIG SET failed (possibly related to argument 'protected-mode')")
    assert c.cmd("CONFIG", "SET", "protected-mode", "no") == b"+OK\r\n"
    got, closed = remote(netns, netns[1], srv.resp_port)
    assert got == b"+PONG\r\n" and not closed
    assert c.cmd("CONFIG", "SET", "protected-mode", "YES") == b"+OK\r\n"
    got, closed = remote(netns, netns[1], srv.resp_port)
    assert got == DENIED and closed
    c.close()


def test_flag_protected_mode_no_serves_remote_clients(make_server, netns):
    srv = make_server("--protected-mode", "no")
    got, closed = remote(netns, netns[1], srv.resp_port)
    assert got == b"+PONG\r\n" and not closed
    c = RawConn(srv.resp_port)
    assert c.cmd("CONFIG", "GET", "protected-mode") == \
        b"*2\r\n$14\r\nprotected-mode\r\n$2\r\nno\r\n"
    c.close()


@pytest.mark.parametrize("how", ["requirepass", "acl"])
def test_a_password_on_the_default_user_serves_remote_clients(make_server, netns, how):
    srv = make_server()
    c = RawConn(srv.resp_port)
    if how == "requirepass":
        assert c.cmd("CONFIG", "SET", "requirepass", "s3cret") == b"+OK\r\n"
    else:
        assert c.cmd("ACL", "SETUSER", "default", ">s3cret") == b"+OK\r\n"
    auth = b"*2\r\n$4\r\nAUTH\r\n$6\r\ns3cret\r\n"
    got, closed = remote(netns, netns[1], srv.resp_port, auth + PING)
    assert got == b"+OK\r\n+PONG\r\n" and not closed
    # Without the password it is a normal NOAUTH, not a refusal.
    got, closed = remote(netns, netns[1], srv.resp_port)
    assert got.startswith(b"-NOAUTH") and not closed
    c.close()


def test_explicit_bind_address_does_not_turn_it_off(make_server, netns):
    # Redis 7 (since 7.0): a bind address of one's own no longer disables
    # protected mode; only a password or protected-mode no does.
    srv = make_server("-l", netns[1], "-l", "127.0.0.1")
    got, closed = remote(netns, netns[1], srv.resp_port)
    assert got == DENIED and closed


def test_admin_port_on_a_remote_address_is_protected_too(make_server, netns):
    srv = make_server("--admin-port", "0", "--admin-bind", netns[1])
    got, closed = remote(netns, netns[1], srv.admin_port)
    assert got == DENIED and closed


def test_bad_flag_value_is_a_usage_error():
    from harness import server as hserver
    rc, _, err = hserver.run_binary(["--protected-mode", "maybe"])
    assert rc == 64
    assert "--protected-mode takes yes or no" in err
