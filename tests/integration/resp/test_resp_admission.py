"""Admission per port (issue 14; docs/resp_modes.md section 3): the RESP port counts its own
connections against maxclients, the memcached port against -c, each with its
own rejected-connections counter; the admin port (--admin-port, 127.0.0.1)
speaks RESP and is never refused, so an operator can always get in. Trove
only (two ports, an admin port)."""

import socket

import pytest

from conftest import RawConn, resp_target

pytestmark = pytest.mark.skipif(resp_target() != "trove", reason="Trove's ports")


def mc_version(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"version\r\n")
    got = s.recv(100)
    return s, got


def test_limits_per_port_and_the_admin_port(make_server):
    srv = make_server("-c", "3", "-t", "2", "--admin-port", "0")
    assert srv.admin_port is not None
    admin = RawConn(srv.admin_port)
    assert admin.cmd("CONFIG", "SET", "maxclients", "2") == b"+OK\r\n"
    assert admin.cmd("CONFIG", "GET", "maxclients") == \
        b"*2\r\n$10\r\nmaxclients\r\n$1\r\n2\r\n"
    a, b = RawConn(srv.resp_port), RawConn(srv.resp_port)
    assert a.cmd("PING") == b"+PONG\r\n" and b.cmd("PING") == b"+PONG\r\n"
    c = RawConn(srv.resp_port)
    assert c.read_reply() == b"-ERR max number of clients reached\r\n"
    assert c.closed()
    # The admin port is not counted and not refused.
    more = [RawConn(srv.admin_port) for _ in range(4)]
    for m in more:
        assert m.cmd("PING") == b"+PONG\r\n"
    stats = admin.cmd("INFO", "stats").decode()
    assert "rejected_connections:1\r\n" in stats
    # The memcached port has its own three slots, untouched by RESP clients.
    held = []
    for _ in range(3):
        s, got = mc_version(srv.port)
        assert got.startswith(b"VERSION ")
        held.append(s)
    s, got = mc_version(srv.port)
    assert got == b"ERROR Too many open connections\r\n"
    # A freed RESP slot is usable again at once.
    a.close()
    for _ in range(100):
        d = RawConn(srv.resp_port)
        r = d.cmd("PING")
        if r == b"+PONG\r\n":
            break
        d.close()
    assert r == b"+PONG\r\n"


def test_admin_port_binds_loopback_by_default(make_server):
    srv = make_server("--admin-port", "0")
    c = RawConn(srv.admin_port)
    line = c.cmd("CLIENT", "INFO").decode()
    assert "laddr=127.0.0.1:%d" % srv.admin_port in line

