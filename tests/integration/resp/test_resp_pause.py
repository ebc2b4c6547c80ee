"""CLIENT PAUSE and CLIENT UNPAUSE (docs/resp_modes.md section 8;
Redis's tests/unit/pause.tcl), with Trove at -t 4 so that the pausing client,
the held clients and the one that unpauses are on different workers. Also
runs against redis-server (TROVE_TEST_TARGET=redis)."""

import os
import time

import pytest

from blocked_clients import blocked, command, silent, wait_blocked


WORKERS = 4
SERVER_ARGS = ["-t", str(WORKERS)]
pytestmark = pytest.mark.skipif(bool(os.environ.get("TROVE_RESP_FAKE")),
                                reason="the fake RESP front has no workers")










@pytest.fixture(autouse=True)
def unpause_after(r):
    yield
    r.execute_command("CLIENT", "UNPAUSE")


def test_errors(raw):
    c = raw()
    assert c.cmd("CLIENT", "PAUSE", "abc") == b"-ERR timeout is not an integer or out of range\r\n"
    assert c.cmd("CLIENT", "PAUSE", "-1") == b"-ERR timeout is negative\r\n"
    assert c.cmd("CLIENT", "PAUSE", "10", "bogus") == \
        b"-ERR CLIENT PAUSE mode must be WRITE or ALL\r\n"
    assert c.cmd("CLIENT", "UNPAUSE") == b"+OK\r\n"


def test_reads_run_and_writes_wait_under_write_pause(r, raw):
    c, w = raw(), raw()
    assert c.cmd("CLIENT", "PAUSE", "100000", "WRITE") == b"+OK\r\n"
    assert c.cmd("GET", "FOO") == b"$-1\r\n"
    assert c.cmd("PING") == b"+PONG\r\n"
    assert c.cmd("INFO", "server").startswith(b"$")
    w.send(command("SET", "FOO", "BAR"))
    wait_blocked(r, 1)
    assert silent(w)
    w2 = raw()
    w2.send(command("PUBLISH", "ch", "m"))  # may-replicate: held too
    wait_blocked(r, 2)
    assert c.cmd("CLIENT", "UNPAUSE") == b"+OK\r\n"
    assert w.read_reply() == b"+OK\r\n"
    assert w2.read_reply() == b":0\r\n"
    wait_blocked(r, 0)
    assert c.cmd("GET", "FOO") == b"$3\r\nBAR\r\n"


def test_syntax_errors_answer_at_once(raw):
    c = raw()
    assert c.cmd("CLIENT", "PAUSE", "100000", "WRITE") == b"+OK\r\n"
    assert c.cmd("SET", "FOO") == b"-ERR wrong number of arguments for 'set' command\r\n"


def test_pause_all_precedence_and_the_later_end_wins(r, raw):
    c, g = raw(), raw()
    assert c.cmd("CLIENT", "PAUSE", "300", "ALL") == b"+OK\r\n"
    t0 = time.monotonic()
    # Held too (ALL), until the pause ends by itself.
    assert c.cmd("CLIENT", "PAUSE", "20", "WRITE") == b"+OK\r\n"
    g.send(command("GET", "FOO"))
    assert g.read_reply() == b"$-1\r\n"
    assert time.monotonic() - t0 >= 0.25
    # A shorter pause leaves the longer end in place.
    assert c.cmd("CLIENT", "PAUSE", "300", "WRITE") == b"+OK\r\n"
    t0 = time.monotonic()
    assert c.cmd("CLIENT", "PAUSE", "10", "WRITE") == b"+OK\r\n"
    assert c.cmd("SET", "FOO", "BAR") == b"+OK\r\n"
    assert time.monotonic() - t0 >= 0.25


def test_multi_exec_of_reads_runs_and_of_writes_waits(r, raw):
    c, m = raw(), raw()
    assert m.cmd("MULTI") == b"+OK\r\n"
    assert m.cmd("SET", "FOO", "BAR") == b"+QUEUED\r\n"
    assert c.cmd("CLIENT", "PAUSE", "100000", "WRITE") == b"+OK\r\n"
    assert c.cmd("MULTI") == b"+OK\r\n"
    assert c.cmd("GET", "FOO") == b"+QUEUED\r\n"
    assert c.cmd("PING") == b"+QUEUED\r\n"
    assert c.cmd("EXEC") == b"*2\r\n$-1\r\n+PONG\r\n"
    m.send(command("EXEC"))
    wait_blocked(r, 1)
    assert c.cmd("CLIENT", "UNPAUSE") == b"+OK\r\n"
    assert m.read_reply() == b"*1\r\n+OK\r\n"


def test_pause_inside_multi_starts_after_exec(r, raw):
    c, w = raw(), raw()
    assert c.cmd("MULTI") == b"+OK\r\n"
    assert c.cmd("SET", "FOO1", "BAR") == b"+QUEUED\r\n"
    assert c.cmd("CLIENT", "PAUSE", "100000", "WRITE") == b"+QUEUED\r\n"
    assert c.cmd("SET", "FOO2", "BAR") == b"+QUEUED\r\n"
    assert c.cmd("EXEC") == b"*3\r\n+OK\r\n+OK\r\n+OK\r\n"
    w.send(command("SET", "FOO3", "BAR"))
    wait_blocked(r, 1)
    assert c.cmd("GET", "FOO2") == b"$3\r\nBAR\r\n"
    assert c.cmd("GET", "FOO3") == b"$-1\r\n"
    assert c.cmd("CLIENT", "UNPAUSE") == b"+OK\r\n"
    assert w.read_reply() == b"+OK\r\n"


def test_many_clients_queue_and_are_let_go(r, raw):
    c = raw()
    assert c.cmd("CLIENT", "PAUSE", "100000", "WRITE") == b"+OK\r\n"
    held = [raw() for _ in range(6)]
    for i, h in enumerate(held):
        h.send(command("INCR", "n") + command("GET", "n"))
        wait_blocked(r, i + 1)
    assert c.cmd("GET", "n") == b"$-1\r\n"
    assert c.cmd("CLIENT", "UNPAUSE") == b"+OK\r\n"
    got = sorted(int(h.read_reply()[1:-2]) for h in held)
    assert got == [1, 2, 3, 4, 5, 6]
    for h in held:
        assert h.read_reply().startswith(b"$")
    wait_blocked(r, 0)


def test_pause_ends_by_itself(r, raw):
    c, w = raw(), raw()
    assert c.cmd("CLIENT", "PAUSE", "150", "WRITE") == b"+OK\r\n"
    t0 = time.monotonic()
    assert w.cmd("SET", "k", "v") == b"+OK\r\n"
    assert time.monotonic() - t0 >= 0.12
    wait_blocked(r, 0)


def test_memcached_port_writes_wait_under_write_pause(trove, r, raw):
    import socket
    mc = socket.create_connection(("127.0.0.1", trove.port), timeout=10)
    mc.sendall(b"set mk 0 0 1\r\na\r\n")
    assert mc.recv(100) == b"STORED\r\n"
    c = raw()
    assert c.cmd("CLIENT", "PAUSE", "100000", "WRITE") == b"+OK\r\n"
    mc.sendall(b"get mk\r\n")  # reads run
    assert mc.recv(100) == b"VALUE mk 0 1\r\na\r\nEND\r\n"
    mc.sendall(b"set mk 0 0 1\r\nb\r\nget mk\r\n")
    wait_blocked(r, 1)
    mc.settimeout(0.2)
    with pytest.raises(socket.timeout):
        mc.recv(100)
    mc.settimeout(10)
    assert r.get("mk") == b"a"
    assert c.cmd("CLIENT", "UNPAUSE") == b"+OK\r\n"
    want = b"STORED\r\nVALUE mk 0 1\r\nb\r\nEND\r\n"
    got = b""
    while len(got) < len(want):
        got += mc.recv(100)
    assert got == want
    wait_blocked(r, 0)
    # A pause that ends by itself lets them go too.
    assert c.cmd("CLIENT", "PAUSE", "100", "WRITE") == b"+OK\r\n"
    t0 = time.monotonic()
    mc.sendall(b"delete mk\r\n")
    assert mc.recv(100) == b"DELETED\r\n"
    assert time.monotonic() - t0 >= 0.08
    mc.close()


def test_a_forever_pause_holds_until_unpause(r, raw):
    c, w = raw(), raw()
    assert c.cmd("CLIENT", "PAUSE", "1000000000000", "WRITE") == b"+OK\r\n"
    w.send(command("SET", "k", "v"))
    wait_blocked(r, 1)
    assert silent(w, 0.1)
    assert c.cmd("CLIENT", "UNPAUSE") == b"+OK\r\n"
    assert w.read_reply() == b"+OK\r\n"


def test_expiry_waits_for_the_pause(r):
    """Redis's pause.tcl "both active and passive expires are skipped": keys
    read as missing during the pause, but expired_keys moves only after."""
    base = r.info("stats")["expired_keys"]
    p = r.pipeline(transaction=True)
    p.set("foo", "bar", px=10)
    p.set("bar", "foo", px=10)
    p.execute_command("CLIENT", "PAUSE", "50000", "WRITE")
    p.execute()
    time.sleep(0.05)
    deadline = time.monotonic() + 5
    while r.get("foo") is not None or r.get("bar") is not None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert r.info("stats")["expired_keys"] == base
    r.execute_command("CLIENT", "UNPAUSE")
    r.get("foo")
    r.get("bar")
    assert r.info("stats")["expired_keys"] == base + 2



def test_pause_all_holds_memcached_reads_too(trove, raw):
    # Under ALL every RESP command waits too (INFO, UNPAUSE): a short pause
    # that ends by itself, and the read's delay is the check.
    import socket
    mc = socket.create_connection(("127.0.0.1", trove.port), timeout=10)
    c = raw()
    assert c.cmd("CLIENT", "PAUSE", "300", "ALL") == b"+OK\r\n"
    t0 = time.monotonic()
    mc.sendall(b"get nothing\r\n")
    assert mc.recv(100) == b"END\r\n"
    assert time.monotonic() - t0 >= 0.25
    mc.close()
