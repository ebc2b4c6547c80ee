"""MONITOR on the RESP port (docs/resp_modes.md section 9, "MONITOR").

+OK, then one line per command that ran, on any worker:
`+<sec>.<usec> [<db> <ip:port>] "cmd" "arg" ...` with Redis's escaping;
MULTI, the queued commands and EXEC in execution order; admin commands not
shown; AUTH and HELLO AUTH arguments redacted. Every test also runs against
redis-server (TROVE_TEST_TARGET=redis) unless it needs Trove's workers.
Trove runs with -t 4, so the monitor and the clients sit on different
workers (connection id % 4).
"""

import os
import re
import socket
import time

import pytest
import redis


WORKERS = 4
TARGET = os.environ.get("TROVE_TEST_TARGET", "").strip().lower() or (
    "fake" if os.environ.get("TROVE_RESP_FAKE") else "trove")
IS_TROVE = TARGET == "trove"
pytestmark = pytest.mark.skipif(TARGET == "fake", reason="the fake RESP front has no log hub")
LINE = re.compile(r'^\+(\d+)\.(\d{6}) \[(\d+) ([^\]]+)\] (.*)$')


# The module server (conftest `server`) runs with this many workers.
SERVER_ARGS = ["-t", str(WORKERS)]


class Mon:
    """A raw MONITOR connection."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.settimeout(5)
        self.buf = b""
        self.s.sendall(b"MONITOR\r\n")
        assert self.line() == "+OK"

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        l, self.buf = self.buf.split(b"\r\n", 1)
        return l.decode("latin1")

    def command_line(self, needle):
        """The next line naming `needle` (the test harness's own INFO polls
        and other noise are skipped)."""
        for _ in range(200):
            l = self.line()
            if needle in l:
                return l
        raise AssertionError("no monitor line with %r" % needle)


@pytest.fixture
def r(resp_port):
    c = redis.Redis(port=resp_port)
    c.flushall()
    yield c
    c.close()


def test_line_format_and_escaping(resp_port, r):
    m = Mon(resp_port)
    r.set("mon:key", b'a "q"\n\x01\\')
    l = m.command_line("mon:key")
    g = LINE.match(l)
    assert g, l
    assert abs(int(g.group(1)) - time.time()) < 60
    assert g.group(3) == "0"
    assert re.match(r"127\.0\.0\.1:\d+$", g.group(4))
    assert g.group(5) == r'"SET" "mon:key" "a \"q\"\n\x01\\"'


def test_db_after_select(resp_port):
    m = Mon(resp_port)
    c = redis.Redis(port=resp_port, db=3)
    c.get("mon:db3")
    l = m.command_line("mon:db3")
    assert LINE.match(l).group(3) == "3"
    c.close()


def test_transactions_logged_in_execution_order(resp_port, r):
    m = Mon(resp_port)
    p = r.pipeline(transaction=True)
    p.set("mon:tx", "bar")
    p.incr("mon:tx2")
    p.execute()
    assert '"MULTI"' in m.command_line("MULTI")
    assert m.command_line("mon:tx").endswith('"SET" "mon:tx" "bar"')
    assert m.command_line("mon:tx2").endswith('"INCRBY" "mon:tx2" "1"')
    assert m.command_line("EXEC").endswith('"EXEC"')


def test_queue_error_logs_multi_and_exec(resp_port):
    m = Mon(resp_port)
    s = socket.create_connection(("127.0.0.1", resp_port))
    s.sendall(b"MULTI\r\nSYNTAXERROR\r\nEXEC\r\nPING monqerr\r\n")
    time.sleep(0.2)
    lines = [m.command_line("MULTI")]
    l = m.line()
    while "monqerr" not in l:
        lines.append(l)
        l = m.line()
    assert any(x.endswith('"EXEC"') for x in lines), lines
    assert not any("SYNTAXERROR" in x for x in lines), lines
    s.close()


def test_auth_arguments_redacted(resp_port):
    m = Mon(resp_port)
    c = redis.Redis(port=resp_port)
    with pytest.raises(redis.ResponseError):
        c.execute_command("AUTH", "someuser", "secretpass")
    c.execute_command("PING", "after-auth")
    lines = []
    l = m.line()
    while "after-auth" not in l:
        lines.append(l)
        l = m.line()
    auth = [x for x in lines if '"AUTH"' in x or '"auth"' in x]
    assert auth and auth[0].endswith('"AUTH" "(redacted)" "(redacted)"'), lines
    assert not any("secretpass" in x for x in lines)
    c.close()


def test_admin_commands_not_shown(resp_port, r):
    m = Mon(resp_port)
    r.config_get("maxmemory")
    r.execute_command("CLIENT", "LIST")
    r.execute_command("PING", "after-admin")
    lines = []
    l = m.line()
    while "after-admin" not in l:
        lines.append(l)
        l = m.line()
    assert not any('"CONFIG"' in x or '"config"' in x for x in lines), lines
    assert not any('"LIST"' in x or '"list"' in x for x in lines), lines


def test_every_worker_reaches_every_monitor(resp_port):
    mons = [Mon(resp_port) for _ in range(2)]
    clients = [redis.Redis(port=resp_port) for _ in range(WORKERS)]
    for i, c in enumerate(clients):
        c.set("mon:w%d" % i, i)
    for m in mons:
        for i in range(WORKERS):
            assert '"mon:w%d"' % i in m.command_line("mon:w%d" % i)
    for c in clients:
        c.close()


def test_reset_ends_monitoring(resp_port, r):
    s = socket.create_connection(("127.0.0.1", resp_port))
    s.settimeout(3)
    s.sendall(b"MONITOR\r\n")
    assert s.recv(100) == b"+OK\r\n"
    s.sendall(b"RESET\r\n")
    time.sleep(0.1)
    data = s.recv(1000)
    assert data.endswith(b"+RESET\r\n"), data
    r.set("mon:after-reset", 1)
    time.sleep(0.3)
    s.setblocking(False)
    try:
        extra = s.recv(1000)
    except BlockingIOError:
        extra = b""
    assert b"mon:after-reset" not in extra
    s.close()


def test_hello_auth_arguments_redacted(resp_port):
    m = Mon(resp_port)
    c = redis.Redis(port=resp_port)
    with pytest.raises(redis.ResponseError):
        c.execute_command("HELLO", "2", "AUTH", "someuser", "secretpass", "SETNAME", "n1")
    c.execute_command("PING", "after-hello")
    lines = []
    l = m.line()
    while "after-hello" not in l:
        lines.append(l)
        l = m.line()
    hello = [x for x in lines if '"HELLO"' in x]
    if IS_TROVE:
        assert hello, lines  # the failed HELLO ran, so it is shown
    for x in hello:
        assert x.endswith('"HELLO" "2" "AUTH" "(redacted)" "(redacted)" "SETNAME" "n1"'), hello
    assert not any("secretpass" in x or "someuser" in x for x in lines), lines
    c.close()


def test_monitor_is_refused_inside_exec(resp_port):
    s = socket.create_connection(("127.0.0.1", resp_port))
    s.settimeout(3)
    s.sendall(b"MULTI\r\nMONITOR\r\nEXEC\r\n")
    want = b"+OK\r\n+QUEUED\r\n*1\r\n-ERR MONITOR isn't allowed for DENY BLOCKING client\r\n"
    data = b""
    while len(data) < len(want):
        chunk = s.recv(1000)
        if not chunk:
            break
        data += chunk
    assert data == want
    s.close()


def test_redis_py_monitor_parses_lines(resp_port, r):
    with redis.Redis(port=resp_port).monitor() as m:
        r.set("mon:py", "v")
        for _ in range(50):
            cmd = m.next_command()
            if "mon:py" in cmd["command"]:
                assert cmd["command"] == "SET mon:py v"
                assert cmd["db"] == 0
                break
        else:
            raise AssertionError("redis-py saw no SET")


@pytest.mark.skipif(not IS_TROVE, reason="Trove's bounded, lossy monitor stream")
def test_monitor_that_does_not_read_stays_bounded(resp_port):
    s = socket.create_connection(("127.0.0.1", resp_port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(b"MONITOR\r\n")
    c = redis.Redis(port=resp_port)
    value = "x" * 1000
    p = c.pipeline(transaction=False)
    for i in range(20000):
        p.set("mon:big%d" % (i % 100), value)
        if i % 1000 == 999:
            p.execute()
    p.execute()
    time.sleep(0.5)
    info = [l for l in c.execute_command("CLIENT", "LIST").decode().splitlines() if "cmd=monitor" in l]
    assert info, c.execute_command("CLIENT", "LIST")
    omem = int(re.search(r" omem=(\d+)", info[0]).group(1))
    flags = re.search(r" flags=(\S+)", info[0]).group(1)
    assert "O" in flags
    # watcher_logbuf_size (256 KiB) plus one batch in flight.
    assert omem < 2 * 256 * 1024 + 65536, omem
    s.close()
    c.close()


@pytest.mark.skipif(not IS_TROVE, reason="Trove's bounded, lossy monitor stream")
def test_monitor_that_fell_behind_is_told_how_many_lines_it_lost(make_server):
    srv = make_server("-o", "watcher_logbuf_size=8")
    s = socket.create_connection(("127.0.0.1", srv.resp_port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(b"MONITOR\r\n")
    time.sleep(0.1)
    c = redis.Redis(port=srv.resp_port)
    p = c.pipeline(transaction=False)
    for i in range(20000):
        p.set("mon:lost%d" % (i % 50), "x" * 100)
    p.execute()
    time.sleep(0.3)
    s.settimeout(5)
    buf = b""
    found = None
    for i in range(5000):
        if i % 20 == 0:
            c.ping()  # keeps lines coming, so the marker gets its turn
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
        m = re.search(rb'\+\d+\.\d{6} \[0 0\.0\.0\.0:0\] "monitor-skipped" "(\d+)"\r\n', buf)
        if m:
            found = int(m.group(1))
            break
        buf = buf[-200:]
    assert found and found > 0
    s.close()
    c.close()
