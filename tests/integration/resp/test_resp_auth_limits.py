"""Before AUTH, Redis refuses what would make the server allocate: more than
10 arguments or an argument over 16 KiB gets a protocol error and the
connection closes (networking.c, "unauthenticated multibulk/bulk length").
Also runs against redis-server (TROVE_TEST_TARGET=redis)."""

import time

import pytest

from harness.proc import rss_kib


@pytest.fixture
def password(r):
    r.config_set("requirepass", "s3cret")
    yield "s3cret"
    r.execute_command("AUTH", "s3cret")
    r.config_set("requirepass", "")


def test_limits_apply_only_before_auth(password, raw):
    c = raw()
    # Ten arguments are fine (and refused for want of AUTH).
    assert c.cmd(*(["DEL"] + ["a"] * 9)).startswith(b"-NOAUTH")
    big = "x" * 16384
    assert c.cmd("ECHO", big).startswith(b"-NOAUTH")
    c.send(b"*2000000000\r\n")
    assert c.read_reply() == b"-ERR Protocol error: unauthenticated multibulk length\r\n"
    assert c.closed()
    c = raw()
    c.send(b"*2\r\n$4\r\nECHO\r\n$100000000\r\n")
    assert c.read_reply() == b"-ERR Protocol error: unauthenticated bulk length\r\n"
    assert c.closed()
    # Authenticated: the usual limits.
    c = raw()
    assert c.cmd("AUTH", password) == b"+OK\r\n"
    assert c.cmd(*(["DEL"] + ["k%d" % i for i in range(20)])) == b":0\r\n"
    v = "y" * 100000
    assert c.cmd("ECHO", v) == b"$100000\r\n" + v.encode() + b"\r\n"


def test_no_limits_without_a_password(raw):
    c = raw()
    assert c.cmd(*(["DEL"] + ["k%d" % i for i in range(20)])) == b":0\r\n"
    v = "z" * 20000
    assert c.cmd("ECHO", v) == b"$20000\r\n" + v.encode() + b"\r\n"


def test_hostile_headers_do_not_grow_memory(password, trove, raw):
    """Many strangers announcing 2^31 arguments and 1 GB bulks: each is cut
    off at once, and the server's resident memory stays where it was."""
    before = rss_kib(trove.proc.pid)
    for i in range(200):
        c = raw()
        if i % 2:
            c.send(b"*2147483647\r\n")
        else:
            c.send(b"*1\r\n$536870912\r\n" + b"x" * 60000)
        assert c.read_reply().startswith(b"-ERR Protocol error: unauthenticated")
        c.close()
    assert rss_kib(trove.proc.pid) - before < 32 * 1024


def test_auth_and_hello_auth_check_the_password(password, raw):
    c = raw()
    assert c.cmd("GET", "k") == b"-NOAUTH Authentication required.\r\n"
    assert c.cmd("AUTH", "wrong") == \
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    assert c.cmd("AUTH", password + "x") == \
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    assert c.cmd("AUTH", password[:-1]) == \
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    assert c.cmd("AUTH", "default", password) == b"+OK\r\n"
    h = raw()
    assert h.cmd("HELLO", "3", "AUTH", "default", password).startswith(b"%")
    assert h.cmd("PING") == b"+PONG\r\n"


def test_password_is_not_kept_in_clear(password, trove, r):
    # Trove keeps only the SHA-256 (docs/resp.md); Redis would answer it.
    assert r.config_get("requirepass") == {"requirepass": ""}


def test_connection_accepted_before_a_password_stays_logged_in(r, raw):
    """A connection is logged in as the default user when it is accepted (no
    password then), so a password set later does not log it out, even before
    it has sent anything (Trove makes its Session only on the first command:
    the state at accept must be kept until then)."""
    before = r.info("clients")["connected_clients"]
    idle = raw()
    deadline = time.time() + 5
    while r.info("clients")["connected_clients"] <= before and time.time() < deadline:
        time.sleep(0.01)
    r.config_set("requirepass", "s3cret")
    try:
        assert idle.cmd("PING") == b"+PONG\r\n"
        assert raw().cmd("PING").startswith(b"-NOAUTH")
    finally:
        r.execute_command("AUTH", "s3cret")
        r.config_set("requirepass", "")
