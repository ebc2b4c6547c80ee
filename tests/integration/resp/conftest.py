"""Fixtures for the RESP tests.

The RESP target comes from the environment:
  TROVE_TEST_TARGET=redis    a fresh /usr/bin/redis-server (or $REDIS_BIN) per
                             module: checks that the expectations are Redis 7's
  TROVE_RESP_FAKE=/path      build/*/tests/unit/protocol/resp/resp_fake_server
                             (the RESP front over a fake engine)
  otherwise                  the Trove binary, through the harness `server`

  resp_port   the RESP port of the module's server
  r           a redis-py client (bytes), database flushed before each test
  rd          the same with decode_responses=True
  raw         factory of raw sockets: raw() -> RawConn
  trove       the harness Server (skips the test unless the target is Trove)
"""

import os
import socket
import subprocess
import tempfile
import time

import pytest
import redis


def resp_target():
    t = os.environ.get("TROVE_TEST_TARGET", "").strip().lower()
    if t == "redis":
        return "redis"
    if os.environ.get("TROVE_RESP_FAKE"):
        return "fake"
    return "trove"


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def _wait_port(port, proc, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            time.sleep(0.02)
    return False


@pytest.fixture(scope="module")
def resp_port(request):
    kind = resp_target()
    if kind == "trove":
        srv = request.getfixturevalue("server")
        if srv.resp_port is None:
            pytest.fail("Trove did not report a RESP port", pytrace=False)
        yield srv.resp_port
        return
    tmp = tempfile.mkdtemp(prefix="trove-resp-")
    log = open(os.path.join(tmp, "log"), "wb")
    if kind == "redis":
        port = _free_port()
        binary = os.environ.get("REDIS_BIN", "/usr/bin/redis-server")
        proc = subprocess.Popen([binary, "--port", str(port), "--save", "", "--appendonly", "no",
                                 "--enable-debug-command", "yes", "--dir", tmp],
                                stdout=log, stderr=subprocess.STDOUT)
    else:
        pf = os.path.join(tmp, "ports")
        proc = subprocess.Popen([os.environ["TROVE_RESP_FAKE"], pf], stdout=log,
                                stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        text = ""
        while not text.endswith("\n") and time.monotonic() < deadline:
            time.sleep(0.02)
            text = open(pf).read() if os.path.exists(pf) else ""
        port = int(text.split()[1])
    if not _wait_port(port, proc):
        proc.kill()
        pytest.fail("RESP server did not start: " + open(os.path.join(tmp, "log")).read())
    yield port
    proc.kill()
    proc.wait()


@pytest.fixture
def r(resp_port):
    c = redis.Redis(host="127.0.0.1", port=resp_port, socket_timeout=20)
    c.flushall()
    yield c
    c.close()


@pytest.fixture
def rd(resp_port, r):
    c = redis.Redis(host="127.0.0.1", port=resp_port, socket_timeout=20, decode_responses=True)
    yield c
    c.close()


@pytest.fixture
def trove(request):
    if resp_target() != "trove":
        pytest.skip("needs the Trove binary (memcached port)")
    return request.getfixturevalue("server")


class RawConn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError("closed")
        self.buf += chunk

    def readline(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line + b"\r\n"

    def read_reply(self):
        """One complete RESP2/RESP3 reply, as raw bytes."""
        line = self.readline()
        t = line[:1]
        if t in b"+-:_#,(":
            return line
        if t in b"$=!":
            n = int(line[1:-2])
            if n < 0:
                return line
            while len(self.buf) < n + 2:
                self._fill()
            body, self.buf = self.buf[:n + 2], self.buf[n + 2:]
            return line + body
        if t in b"*~>%|":
            n = int(line[1:-2])
            if n < 0:
                return line
            if t in b"%|":
                n *= 2
            return line + b"".join(self.read_reply() for _ in range(n))
        raise AssertionError("bad reply line %r" % line)

    def cmd(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            if isinstance(a, str):
                a = a.encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.send(out)
        return self.read_reply()

    def closed(self, timeout=3):
        """True once the server has closed the connection."""
        self.sock.settimeout(timeout)
        try:
            while True:
                if not self.sock.recv(65536):
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False

    def close(self):
        self.sock.close()


@pytest.fixture
def raw(resp_port, r):
    conns = []

    def make():
        c = RawConn(resp_port)
        conns.append(c)
        return c
    yield make
    for c in conns:
        c.close()
