"""The built-in proxy, part 2: the mcp.* Lua API against scripted backends.

Every test here speaks for its backends itself, the way memcached's
t/proxyunits.t does: a listening socket per backend, made before the proxy
starts; the test accepts the proxy's connection, answers its `version`
check, then reads exactly what the proxy forwarded and writes the reply
bytes. That pins the wire format both ways (what a backend receives, what
the client gets) and lets a test hold a reply back, split it, or answer
garbage.

The behaviour asserted is memcached 1.6's proxy, as its t/proxyunits.t,
proxyrequest.t, proxymatch.t, proxyrouter.t, proxyrctxtimeout.t and
proxyfuncgen.t pin it (Trove's deliberate differences are in
docs/proxy.md). The configs and tests are Trove's own and need no memcached
checkout. Tests marked xfail(strict) are Trove bugs: they assert
memcached's behaviour.
"""

import re
import socket
import time

import pytest

from harness.client import wait_for
from test_proxy import T, proxy, watcher, write

pytestmark = pytest.mark.trove_only

LOG_TS = r"ts=\d+\.\d+ gid=\d+ "


# ---- scripted backends -------------------------------------------------------

class ScriptedBackend:
    """A backend the test speaks for. `accept()` takes the proxy's next
    connection and answers its version check; recv_line/recv_exact/send then
    work on that connection. Strings are latin1."""

    def __init__(self):
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.port = self.lsock.getsockname()[1]
        self.sock = None
        self.buf = b""
        self.old = []

    def accept(self, timeout=5):
        if self.sock is not None:
            self.old.append(self.sock)
        self.lsock.settimeout(timeout)
        s, _ = self.lsock.accept()
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock, self.buf = s, b""
        assert self.recv_line() == "version\r\n"
        self.send("VERSION 1.0.0-mock\r\n")
        return self

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("backend %d: timed out; have %r" % (self.port, self.buf[:300]))
        self.sock.settimeout(left)
        try:
            b = self.sock.recv(1 << 16)
        except socket.timeout:
            raise socket.timeout("backend %d: timed out; have %r" % (self.port, self.buf[:300]))
        if not b:
            raise EOFError("backend %d: proxy closed; have %r" % (self.port, self.buf[:300]))
        self.buf += b

    def recv_line(self, timeout=5):
        """One line up to and including LF (like Perl's <$be>)."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            self._fill(deadline)
        i = self.buf.index(b"\n") + 1
        out, self.buf = self.buf[:i], self.buf[i:]
        return out.decode("latin1")

    def recv_exact(self, n, timeout=5):
        deadline = time.monotonic() + timeout
        while len(self.buf) < n:
            self._fill(deadline)
        out, self.buf = self.buf[:n], self.buf[n:]
        return out.decode("latin1")

    def send(self, data):
        self.sock.sendall(data.encode("latin1") if isinstance(data, str) else data)

    def idle(self, wait=0.15):
        """Whatever the proxy sends within `wait` seconds ("" = nothing)."""
        deadline = time.monotonic() + wait
        try:
            while True:
                self._fill(deadline)
        except (socket.timeout, EOFError):
            pass
        out, self.buf = self.buf, b""
        return out.decode("latin1")

    def closed(self, timeout=3):
        """True when the proxy closes this connection within `timeout`."""
        deadline = time.monotonic() + timeout
        try:
            while True:
                self._fill(deadline)
        except EOFError:
            return True
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False

    def close(self):
        for s in [self.sock, self.lsock] + self.old:
            if s is not None:
                try:
                    s.close()
                except OSError:
                    pass


class Env:
    """A started proxy, its client connection `c` and its backends `be`."""

    def __init__(self, px, bes):
        self.px = px
        self.be = bes
        self.b0 = bes[0]
        self.c = T.to(px)

    def sync(self):
        """Nothing stray is queued for the client (memcached's
        check_version: `version` is answered locally, after everything
        before it)."""
        assert self.c.call("version\r\n").startswith("VERSION ")

    def silent(self, wait=0.2):
        """The client receives nothing within `wait` seconds."""
        got = self.c.pending(wait)
        assert got == b"", got

    def stat(self, name, sub=""):
        return T.to(self.px).stat(name, sub)


def pools_lua(bes, read_timeout):
    backends = "\n".join("  local b%d = mcp.backend('b%d', '127.0.0.1', %d)" % (i + 1, i + 1, b.port)
                         for i, b in enumerate(bes))
    zones = ", ".join("z%d = mcp.pool({ b%d })" % (i + 1, i + 1) for i in range(len(bes)))
    return """
function mcp_config_pools()
  mcp.backend_read_timeout(%s)
  mcp.backend_connect_timeout(5)
  mcp.backend_failure_limit(20)
%s
  return { %s }
end
""" % (read_timeout, backends, zones)


# Worker-side helpers every config below uses.
HELPERS = r"""
-- A funcgen with one handle per pool (h.z1, h.z2, ...); gen(rctx, h) makes
-- the per-request function.
function fgen(p, gen, name)
  local fg = mcp.funcgen_new()
  local h = {}
  for k, pool in pairs(p) do h[k] = fg:new_handle(pool) end
  fg:ready({ n = name, f = function(rctx) return gen(rctx, h) end })
  return fg
end

-- Forwards to z1 and returns the backend's reply.
function direct(p, name)
  return fgen(p, function(rctx, h)
    return function(r) return rctx:enqueue_and_wait(r, h.z1) end
  end, name)
end

-- Answers every request with a fixed string.
function msg(s, name)
  local fg = mcp.funcgen_new()
  fg:ready({ n = name, f = function(rctx) return function(r) return s end end })
  return fg
end

-- A funcgen whose every slot runs the plain function f(r).
function fn(f, name)
  local fg = mcp.funcgen_new()
  fg:ready({ n = name, f = function(rctx) return f end })
  return fg
end

function str(v) if v == nil then return "nil" end return tostring(v) end
"""


@pytest.fixture
def start(make_server, tmp_path):
    """start(routes_lua, nbe=1, read_timeout=2, args=("-t", "1")) -> Env."""
    made = []

    def go(routes, nbe=1, read_timeout=2, args=("-t", "1")):
        bes = [ScriptedBackend() for _ in range(nbe)]
        made.extend(bes)
        text = pools_lua(bes, read_timeout) + HELPERS + routes
        px = proxy(make_server, write(tmp_path, "p.lua", text), *args)
        for b in bes:
            b.accept()
        return Env(px, bes)
    yield go
    for b in made:
        b.close()


# ---- 1-4: client parsing, multiget, noreply/quiet, backend replies -----------------

BASIC = r"""
function mcp_config_routes(p)
  local map = {
    b = direct(p, "b"),
    -- reports what the response object says about a backend reply
    code = fgen(p, function(rctx, h)
      return function(r)
        local res = rctx:enqueue_and_wait(r, h.z1)
        return string.format("SERVER_ERROR ok=%s code=%d\r\n", str(res:ok()), res:code())
      end
    end),
  }
  mcp.attach(mcp.CMD_ANY_STORAGE, mcp.router_new({ map = map, default = msg("SERVER_ERROR no route\r\n") }))
end
"""


def test_parse_errors_keep_the_connection(start):
    e = start(BASIC)
    c = e.c
    c.send("set with the wrong number of tokens\n")
    assert c.read_line() == "CLIENT_ERROR parsing request\r\n"
    for cmd in ("get", "incr", "decr", "touch", "gat", "gats", "mg", "md", "ma", "ms"):
        c.send(cmd + "\r\n")
        assert c.read_line() == "CLIENT_ERROR parsing request\r\n", cmd
    e.sync()
    # Routed requests still work on the same connection.
    c.send("mg b/after v\r\n")
    assert e.b0.recv_line() == "mg b/after v\r\n"
    e.b0.send("EN\r\n")
    assert c.read_line() == "EN\r\n"
    assert e.b0.idle() == ""


def test_multiget_with_a_long_prefix_is_malformed(start):
    e = start(BASIC)
    e.c.send("get" + " " * 200 + " b/k1 b/k2\r\n")
    assert e.c.read_line() == "CLIENT_ERROR malformed request\r\n"
    e.sync()
    assert e.b0.idle() == ""


def test_lf_only_line_endings(start):
    e = start(BASIC)
    c, be = e.c, e.b0
    c.send("mg b/lf v\n")
    assert be.recv_line() == "mg b/lf v\n"  # forwarded as the client wrote it
    be.send("VA 2 v\r\nhi\r\n")
    assert c.read_line() == "VA 2 v\r\n"
    assert c.read_line() == "hi\r\n"
    c.send("set b/lf 0 0 2\nhi\r\n")
    assert be.recv_line() == "set b/lf 0 0 2\n"
    assert be.recv_line() == "hi\r\n"
    be.send("STORED\r\n")
    assert c.read_line() == "STORED\r\n"
    # A multiget's sub-requests are rebuilt with CRLF.
    c.send("get b/x b/y\n")
    assert be.recv_line() == "get b/x\r\n"
    assert be.recv_line() == "get b/y\r\n"
    be.send("END\r\nVALUE b/y 0 1\r\ny\r\nEND\r\n")
    assert c.read_exact(len("VALUE b/y 0 1\r\ny\r\nEND\r\n")) == "VALUE b/y 0 1\r\ny\r\nEND\r\n"
    e.sync()


def test_every_command_passes_through(start):
    e = start(BASIC)
    c, be = e.c, e.b0
    cases = [
        ("set b/a 0 0 2\r\nhi\r\n", ["set b/a 0 0 2\r\n", "hi\r\n"], "STORED\r\n"),
        ("add b/a 0 0 4\r\nabcd\r\n", ["add b/a 0 0 4\r\n", "abcd\r\n"], "NOT_STORED\r\n"),
        ("cas b/a 0 0 3 6\r\nabc\r\n", ["cas b/a 0 0 3 6\r\n", "abc\r\n"], "EXISTS\r\n"),
        ("append b/a 0 0 2\r\nhi\r\n", ["append b/a 0 0 2\r\n", "hi\r\n"], "STORED\r\n"),
        ("prepend b/a 0 0 2\r\nhi\r\n", ["prepend b/a 0 0 2\r\n", "hi\r\n"], "STORED\r\n"),
        ("get b/a\r\n", ["get b/a\r\n"], "VALUE b/a 0 2\r\nhi\r\nEND\r\n"),
        ("gets b/a\r\n", ["gets b/a\r\n"], "VALUE b/a 0 2 2\r\nhi\r\nEND\r\n"),
        ("gat 10 b/a\r\n", ["gat 10 b/a\r\n"], "VALUE b/a 0 2\r\nhi\r\nEND\r\n"),
        ("gat 10 b/a\r\n", ["gat 10 b/a\r\n"], "END\r\n"),
        ("gats 11 b/a\r\n", ["gats 11 b/a\r\n"], "VALUE b/a 0 2 1\r\nhi\r\nEND\r\n"),
        ("touch b/a 50\r\n", ["touch b/a 50\r\n"], "TOUCHED\r\n"),
        ("delete b/a\r\n", ["delete b/a\r\n"], "DELETED\r\n"),
        ("incr b/a 1\r\n", ["incr b/a 1\r\n"], "2\r\n"),
        ("decr b/a 1\r\n", ["decr b/a 1\r\n"], "10\r\n"),
        ("mg b/a s v\r\n", ["mg b/a s v\r\n"], "VA 2 s2\r\nhi\r\n"),
        ("ms b/a 2 T0\r\nhi\r\n", ["ms b/a 2 T0\r\n", "hi\r\n"], "HD\r\n"),
        ("md b/a q\r\n", ["md b/a  \r\n"], "NF\r\n"),
        ("ma b/a\r\n", ["ma b/a\r\n"], "HD\r\n"),
    ]
    for req, seen, reply in cases:
        c.send(req)
        for line in seen:
            assert be.recv_line() == line, req
        be.send(reply)
        assert c.read_exact(len(reply)) == reply, req
    # A large value both ways.
    big = "x" * 256000
    c.send("set b/big 0 0 %d\r\n%s\r\n" % (len(big), big))
    assert be.recv_line() == "set b/big 0 0 %d\r\n" % len(big)
    assert be.recv_exact(len(big) + 2) == big + "\r\n"
    be.send("STORED\r\n")
    assert c.read_line() == "STORED\r\n"
    c.send("get b/big\r\n")
    assert be.recv_line() == "get b/big\r\n"
    be.send("VALUE b/big 0 %d\r\n%s\r\nEND\r\n" % (len(big), big))
    want = "VALUE b/big 0 %d\r\n%s\r\nEND\r\n" % (len(big), big)
    assert c.read_exact(len(want)) == want
    # Pipelined sets, answered in one write.
    c.send("set b/p 0 0 2\r\nab\r\n" * 5)
    for _ in range(5):
        assert be.recv_line() == "set b/p 0 0 2\r\n"
        assert be.recv_line() == "ab\r\n"
    be.send("STORED\r\n" * 5)
    assert c.read_exact(40) == "STORED\r\n" * 5
    # No route for the prefix: the router's default.
    assert c.call("set nope/a 0 0 2\r\nhi\r\n") == "SERVER_ERROR no route\r\n"
    e.sync()
    assert be.idle() == ""


def test_multiget_is_split_per_key(start):
    e = start(BASIC)
    c, be = e.c, e.b0
    c.send("get b/a b/b b/c\r\n")
    assert [be.recv_line() for _ in range(3)] == ["get b/a\r\n", "get b/b\r\n", "get b/c\r\n"]
    be.send("VALUE b/a 0 1\r\na\r\nEND\r\nVALUE b/b 0 1\r\nb\r\nEND\r\nVALUE b/c 0 1\r\nc\r\nEND\r\n")
    want = "VALUE b/a 0 1\r\na\r\nVALUE b/b 0 1\r\nb\r\nVALUE b/c 0 1\r\nc\r\nEND\r\n"
    assert c.read_exact(len(want)) == want
    e.sync()
    # All misses: one END, and the backend connection stays in step.
    c.send("get b/a b/b b/c\r\n")
    assert [be.recv_line() for _ in range(3)] == ["get b/a\r\n", "get b/b\r\n", "get b/c\r\n"]
    be.send("END\r\nEND\r\nEND\r\n")
    assert c.read_line() == "END\r\n"
    e.sync()
    c.send("get b/a\r\n")
    assert be.recv_line() == "get b/a\r\n"
    be.send("END\r\n")
    assert c.read_line() == "END\r\n"
    # A hit in the middle of misses.
    c.send("gets b/a b/b b/c\r\n")
    assert [be.recv_line() for _ in range(3)] == ["gets b/a\r\n", "gets b/b\r\n", "gets b/c\r\n"]
    be.send("END\r\nVALUE b/b 0 1 7\r\nb\r\nEND\r\nEND\r\n")
    assert c.read_exact(len("VALUE b/b 0 1 7\r\nb\r\nEND\r\n")) == "VALUE b/b 0 1 7\r\nb\r\nEND\r\n"
    e.sync()


def test_long_multiget_keeps_key_order(start):
    e = start(BASIC)
    c, be = e.c, e.b0
    keys = ["b/k%d" % i for i in range(60)]
    c.send("get %s\r\nget b/after\r\n" % " ".join(keys))
    for k in keys + ["b/after"]:
        assert be.recv_line() == "get %s\r\n" % k
    reply, want = [], []
    for i, k in enumerate(keys):
        if i % 3 == 0:
            reply.append("VALUE %s 0 %d\r\nv%d\r\nEND\r\n" % (k, len(str(i)) + 1, i))
            want.append("VALUE %s 0 %d\r\nv%d\r\n" % (k, len(str(i)) + 1, i))
        else:
            reply.append("END\r\n")
    reply.append("VALUE b/after 0 1\r\nz\r\nEND\r\n")
    want.append("END\r\nVALUE b/after 0 1\r\nz\r\nEND\r\n")
    be.send("".join(reply))
    assert c.read_exact(len("".join(want))) == "".join(want)
    e.sync()


def test_gat_multiget_keeps_the_exptime_prefix(start):
    e = start(BASIC)
    c, be = e.c, e.b0
    c.send("gat 10 b/a b/b\r\n")
    assert be.recv_line() == "gat 10 b/a\r\n"
    assert be.recv_line() == "gat 10 b/b\r\n"
    be.send("VALUE b/a 0 1\r\na\r\nEND\r\nEND\r\n")
    assert c.read_exact(len("VALUE b/a 0 1\r\na\r\nEND\r\n")) == "VALUE b/a 0 1\r\na\r\nEND\r\n"
    c.send("gats 20 b/a b/b\r\n")
    assert be.recv_line() == "gats 20 b/a\r\n"
    assert be.recv_line() == "gats 20 b/b\r\n"
    be.send("END\r\nVALUE b/b 0 1 3\r\nb\r\nEND\r\n")
    assert c.read_exact(len("VALUE b/b 0 1 3\r\nb\r\nEND\r\n")) == "VALUE b/b 0 1 3\r\nb\r\nEND\r\n"
    e.sync()


def test_noreply_is_forwarded_mangled_and_answers_nothing(start):
    e = start(BASIC)
    c, be = e.c, e.b0
    c.send("set b/a 0 0 2 noreply\r\nhi\r\n")
    assert be.recv_line() == "set b/a 0 0 2 noreplY\r\n"
    assert be.recv_line() == "hi\r\n"
    be.send("STORED\r\n")
    c.send("touch b/a 50\r\n")
    assert be.recv_line() == "touch b/a 50\r\n"
    be.send("TOUCHED\r\n")
    assert c.read_line() == "TOUCHED\r\n"  # not STORED
    c.send("delete b/a noreply\r\n")
    assert be.recv_line() == "delete b/a noreplY\r\n"
    be.send("DELETED\r\n")
    e.sync()


def test_meta_quiet_mode(start):
    e = start(BASIC)
    c, be = e.c, e.b0
    # HD of a quiet ms: suppressed; q is blanked to a space on the way out.
    c.send("ms b/a 2 q\r\nhi\r\n")
    assert be.recv_line() == "ms b/a 2  \r\n"
    assert be.recv_line() == "hi\r\n"
    be.send("HD\r\n")
    e.silent()
    e.sync()
    # EX is not suppressed.
    c.send("ms b/a 2 q\r\nhi\r\n")
    assert be.recv_line() == "ms b/a 2  \r\n"
    assert be.recv_line() == "hi\r\n"
    be.send("EX\r\n")
    assert c.read_line() == "EX\r\n"
    e.sync()
    # mg: EN suppressed, a hit is not.
    c.send("mg b/m q v\r\n")
    assert be.recv_line() == "mg b/m   v\r\n"
    be.send("EN\r\n")
    e.silent()
    c.send("mg b/m v q\r\n")
    assert be.recv_line() == "mg b/m v  \r\n"
    be.send("VA 1\r\nx\r\n")
    assert c.read_line() == "VA 1\r\n"
    assert c.read_line() == "x\r\n"
    e.sync()
    # NS of a quiet ms and NF of a quiet md are not suppressed; HD of md is.
    c.send("ms b/a 2 q\r\nhi\r\n")
    assert be.recv_line() == "ms b/a 2  \r\n"
    assert be.recv_line() == "hi\r\n"
    be.send("NS\r\n")
    assert c.read_line() == "NS\r\n"
    c.send("md b/a q\r\n")
    assert be.recv_line() == "md b/a  \r\n"
    be.send("HD\r\n")
    e.silent()
    c.send("md b/a q\r\n")
    assert be.recv_line() == "md b/a  \r\n"
    be.send("NF\r\n")
    assert c.read_line() == "NF\r\n"
    e.sync()
    # A backend failure is not suppressed either.
    c.send("ms b/a 2 q\r\nhi\r\n")
    assert be.recv_line() == "ms b/a 2  \r\n"
    assert be.recv_line() == "hi\r\n"
    be.send("garbage\r\n")
    assert c.read_line() == "SERVER_ERROR backend failure\r\n"
    be.accept()
    e.sync()


def test_server_error_passes_and_keeps_the_backend(start):
    e = start(BASIC)
    c, be = e.c, e.b0
    c.send("set b/foo 0 0 2\r\nhi\r\n")
    assert be.recv_line() == "set b/foo 0 0 2\r\n"
    assert be.recv_line() == "hi\r\n"
    be.send("SERVER_ERROR object too large for cache\r\n")
    assert c.read_line() == "SERVER_ERROR object too large for cache\r\n"
    c.send("get b/foo\r\n")
    assert be.recv_line() == "get b/foo\r\n"  # same connection
    be.send("END\r\n")
    assert c.read_line() == "END\r\n"
    c.send("mg code/x\r\n")
    assert be.recv_line() == "mg code/x\r\n"
    be.send("SERVER_ERROR test3\r\n")
    assert c.read_line() == "SERVER_ERROR ok=false code=23\r\n"
    assert not be.closed(timeout=0.2)


@pytest.mark.parametrize("reply,code", [("CLIENT_ERROR bad command line format\r\n", 22),
                                        ("ERROR unhappy\r\n", 21), ("ERROR\r\n", 21)])
def test_error_and_client_error_pass_and_close_the_backend(start, reply, code):
    e = start(BASIC)
    c, be = e.c, e.b0
    c.send("get b/moo\r\n")
    assert be.recv_line() == "get b/moo\r\n"
    be.send(reply)
    assert c.read_line() == reply
    assert be.closed()
    be.accept()
    # The response object sees the code.
    c.send("get code/moo\r\n")
    assert be.recv_line() == "get code/moo\r\n"
    be.send(reply)
    assert c.read_line() == "SERVER_ERROR ok=false code=%d\r\n" % code
    assert be.closed()
    be.accept()
    c.send("get b/next\r\n")
    assert be.recv_line() == "get b/next\r\n"
    be.send("END\r\n")
    assert c.read_line() == "END\r\n"


def test_pipelined_request_after_a_client_error_fails(start):
    e = start(BASIC)
    c, be = e.c, e.b0
    c.send("get b/quu\r\nget b/muu\r\n")
    assert be.recv_line() == "get b/quu\r\n"
    assert be.recv_line() == "get b/muu\r\n"
    be.send("CLIENT_ERROR bad protocol\r\nEND\r\n")
    assert c.read_line() == "CLIENT_ERROR bad protocol\r\n"
    assert c.read_line() == "SERVER_ERROR backend failure\r\n"
    assert be.closed()
    be.accept()
    e.sync()


def test_garbage_reply_is_a_backend_failure_and_reconnects(start):
    e = start(BASIC)
    c, be = e.c, e.b0
    c.send("get b/doo\r\n")
    assert be.recv_line() == "get b/doo\r\n"
    be.send("garbage\r\n")
    assert c.read_line() == "SERVER_ERROR backend failure\r\n"
    assert be.closed()
    be.accept()
    c.send("mg code/x\r\n")
    assert be.recv_line() == "mg code/x\r\n"
    be.send("GARBAGE\r\n")
    assert c.read_line() == "SERVER_ERROR ok=false code=23\r\n"
    be.accept()
    c.send("mg b/x\r\n")
    assert be.recv_line() == "mg b/x\r\n"
    be.send("HD\r\n")
    assert c.read_line() == "HD\r\n"


def test_huge_value_length_is_a_backend_failure(start):
    e = start(BASIC)
    c, be = e.c, e.b0
    c.send("get b/e\r\n")
    assert be.recv_line() == "get b/e\r\n"
    be.send("VALUE b/c 0 4294967293\r\n" + "x" * 16000 + "\r\nEND\r\n")
    assert c.read_line() == "SERVER_ERROR backend failure\r\n"
    be.accept()
    c.send("get b/e\r\n")
    assert be.recv_line() == "get b/e\r\n"
    be.send("END\r\n")
    assert c.read_line() == "END\r\n"


def test_trailing_data_after_a_reply_is_logged(start):
    e = start(BASIC)
    c, be = e.c, e.b0
    w = watcher(e.px)
    c.send("get b/c\r\n")
    assert be.recv_line() == "get b/c\r\n"
    be.send("VALUE b/c 0 2\r\nok\r\nEND\r\ngarbage")
    assert c.read_exact(len("VALUE b/c 0 2\r\nok\r\nEND\r\n")) == "VALUE b/c 0 2\r\nok\r\nEND\r\n"
    line = w.log_line()
    assert re.match(LOG_TS + r"type=proxy_backend error=trailingdata name=127\.0\.0\.1 port=%d "
                    r"label=b1 depth=0 rbuf=garbage\n$" % be.port, line), line
    be.accept()
    e.sync()


def test_missing_end_times_out_and_is_logged(start):
    e = start(BASIC, read_timeout=0.5)
    c, be = e.c, e.b0
    w = watcher(e.px)
    c.send("get b/a\r\n")
    assert be.recv_line() == "get b/a\r\n"
    be.send("VALUE b/a 0 2\r\nhi\r\nEN")
    t0 = time.monotonic()
    assert c.read_line(timeout=5) == "SERVER_ERROR backend failure\r\n"
    assert time.monotonic() - t0 > 0.3
    line = w.log_line()
    assert re.match(LOG_TS + r"type=proxy_backend error=timeout name=127\.0\.0\.1 port=%d "
                    r"label=b1 depth=1 rbuf=EN\n$" % be.port, line), line
    be.accept()
    e.sync()


def test_reply_split_across_writes_is_reassembled(start):
    e = start(BASIC)
    c, be = e.c, e.b0
    c.send("get b/c\r\n")
    assert be.recv_line() == "get b/c\r\n"
    for part in ("VALUE b/c 0 5\r\nhe", "llo", "\r\nEND\r\n"):
        be.send(part)
        time.sleep(0.1)
    assert c.read_exact(len("VALUE b/c 0 5\r\nhello\r\nEND\r\n")) == "VALUE b/c 0 5\r\nhello\r\nEND\r\n"
    c.send("mg b/c v\r\n")
    assert be.recv_line() == "mg b/c v\r\n"
    for part in ("V", "A 5 ", "v\r\nhel", "lo\r", "\n"):
        be.send(part)
        time.sleep(0.05)
    assert c.read_exact(len("VA 5 v\r\nhello\r\n")) == "VA 5 v\r\nhello\r\n"
    e.sync()


def test_multiget_edge_cases(start):
    e = start(BASIC)
    c, be = e.c, e.b0
    # Spaces after the last key.
    c.send("get b/a b/b   \r\n")
    assert be.recv_line() == "get b/a\r\n"
    assert be.recv_line() == "get b/b\r\n"
    be.send("END\r\nEND\r\n")
    assert c.read_line() == "END\r\n"
    e.sync()
    # A key over 250 bytes: an error in its place, the others still asked.
    c.send("get b/a %s b/c\r\n" % ("k" * 251))
    assert be.recv_line() == "get b/a\r\n"
    assert be.recv_line() == "get b/c\r\n"
    be.send("VALUE b/a 0 1\r\na\r\nEND\r\nEND\r\n")
    want = "VALUE b/a 0 1\r\na\r\nCLIENT_ERROR key too long\r\nEND\r\n"
    assert c.read_exact(len(want)) == want
    e.sync()
    # A failed sub-request: its error in its place, then the final END.
    c.send("get b/a b/b\r\n")
    assert be.recv_line() == "get b/a\r\n"
    assert be.recv_line() == "get b/b\r\n"
    be.send("VALUE b/a 0 1\r\na\r\nEND\r\ngarbage\r\n")
    want = "VALUE b/a 0 1\r\na\r\nSERVER_ERROR backend failure\r\nEND\r\n"
    assert c.read_exact(len(want)) == want
    be.accept()
    e.sync()
    # A CLIENT_ERROR closes the backend: the keys queued behind it fail.
    c.send("get b/a b/b b/c\r\n")
    assert [be.recv_line() for _ in range(3)] == ["get b/a\r\n", "get b/b\r\n", "get b/c\r\n"]
    be.send("VALUE b/a 0 1\r\na\r\nEND\r\nCLIENT_ERROR bad\r\nEND\r\n")
    want = "VALUE b/a 0 1\r\na\r\nCLIENT_ERROR bad\r\nSERVER_ERROR backend failure\r\nEND\r\n"
    assert c.read_exact(len(want)) == want
    assert be.closed()
    be.accept()
    e.sync()


def test_truncated_reply_line_times_out(start):
    e = start(BASIC, read_timeout=0.5)
    c, be = e.c, e.b0
    c.send("mg code/x\r\n")
    assert be.recv_line() == "mg code/x\r\n"
    be.send("HD\r")
    assert c.read_line() == "SERVER_ERROR ok=false code=23\r\n"
    be.accept()
    c.send("mg b/x\r\n")
    assert be.recv_line() == "mg b/x\r\n"
    be.send("HD\r\n")
    assert c.read_line() == "HD\r\n"


def test_routed_line_of_500_bytes_is_refused_and_closes(start):
    # memcached's MCP_REQUEST_MAXLEN: a routed line (with its CRLF) of 500
    # bytes or more gets CLIENT_ERROR request too long and the connection
    # closes; the backend sees nothing. 499 bytes still goes through.
    e = start(BASIC)
    c, be = e.c, e.b0
    ok = "mg b/" + "k" * (499 - len("mg b/") - len(" v\r\n")) + " v\r\n"
    assert len(ok) == 499
    c.send(ok)
    assert be.recv_line() == ok
    be.send("EN\r\n")
    assert c.read_line() == "EN\r\n"
    long_line = "mg b/x " + "T1 " * 165 + "\r\n"
    assert len(long_line) >= 500
    c.send(long_line)
    assert c.read_line() == "CLIENT_ERROR request too long\r\n"
    assert c.c.buf == b""
    c.c.sock.settimeout(5)
    assert c.c.sock.recv(1) == b""  # the proxy closed the connection
    assert be.idle() == ""


def test_bad_data_chunk_keeps_the_connection(start):
    e = start(BASIC)
    for _ in range(3):
        e.c.send("ms b/badchunk 2\r\nfail")
        assert e.c.read_line() == "CLIENT_ERROR bad data chunk\r\n"
    e.sync()
    assert e.b0.idle() == ""
    c, be = e.c, e.b0
    c.send("ms b/good 2\r\nok\r\n")
    assert be.recv_line() == "ms b/good 2\r\n"
    assert be.recv_line() == "ok\r\n"
    be.send("HD\r\n")
    assert c.read_line() == "HD\r\n"


# ---- 5: the request object -----------------------------------------------------

REQUEST = r"""
function mcp_config_routes(p)
  -- edits made before forwarding to z1; what the edit returned comes back
  -- to the client as "SERVER_ERROR ret=<value>"
  local edits = {
    ["edit/add1"] = function(r) return r:flag_add("F") end,
    ["edit/addstr"] = function(r) return r:flag_add("F", "1234") end,
    ["edit/addnum"] = function(r) return r:flag_add("F", 5678) end,
    ["edit/addexist"] = function(r) return r:flag_add("O", "overwrite") end,
    ["edit/set1"] = function(r) return r:flag_set("F") end,
    ["edit/setstr"] = function(r) return r:flag_set("F", "4321") end,
    ["edit/setnum"] = function(r) return r:flag_set("F", 8765) end,
    ["edit/setexist"] = function(r) return r:flag_set("O", "overwrite") end,
    ["edit/setflag"] = function(r) return r:flag_set("O") end,
    ["edit/repl1"] = function(r) return r:flag_replace("F", "O", "foo") end,
    ["edit/repl2"] = function(r) return r:flag_replace("F", "O") end,
    ["edit/del"] = function(r) return r:flag_del("O") end,
    ["edit/fint"] = function(r)
      local found, n = r:flag_token_int("F")
      r:flag_set("F", n * 10 + 1)
      return str(found) .. ":" .. math.type(n)
    end,
    ["edit/fint2"] = function(r)
      local a, an = r:flag_token_int("T")
      local b, bn = r:flag_token_int("O")
      return str(a) .. ":" .. str(an) .. "," .. str(b) .. ":" .. str(bn)
    end,
    ["edit/ftok"] = function(r)
      local out = {}
      local function add(...)
        local t = table.pack(...)
        for i = 1, t.n do out[#out + 1] = str(t[i]) end
        out[#out + 1] = "|"
      end
      add(r:flag_token("T", "T100"))  -- absent: false, no change
      add(r:flag_token("O", nil))     -- absent
      add(r:flag_token("v", ""))      -- absent
      add(r:flag_token("N", "N100"))  -- replaced: true, old token
      add(r:flag_token("k", nil))     -- present without a token: true only
      add(r:flag_token("c", "c"))     -- replaced by itself
      add(r:has_flag("c"))
      add(r:flag_token("c", ""))      -- removed
      add(r:has_flag("c"))
      add(r:flag_token("R", "R100"))
      add(r:flag_token("R", "R200"))  -- the newer token
      return table.concat(out, " ")
    end,
    ["edit/trepl"] = function(r) r:token(4, "C456") end,
    ["edit/trm"] = function(r) r:token(4, "") end,
    ["edit/tkey"] = function(r)
      r:token(2, "edit/other")
      return r:key() .. ":" .. r:ntokens()
    end,
    ["edit/tfetch"] = function(r) r:flag_token("P", "P" .. r:token(2)) end,
    ["edit/ints"] = function(r)
      local flags = r:token_int(3) + r:token_int(4) + r:token_int(5)
      r:token(3, flags)
      return str(r:token_int(99))
    end,
  }
  local map = {
    edit = fgen(p, function(rctx, h)
      return function(r)
        local ret = edits[r:key()](r)
        local res = rctx:enqueue_and_wait(r, h.z1)
        if ret == nil then return res end
        return "SERVER_ERROR ret=" .. str(ret) .. "\r\n"
      end
    end),
    -- routes answered from Lua alone
    key = fn(function(r) return "VALUE |" .. r:key() .. " 0 2\r\nts\r\nEND\r\n" end),
    info = fn(function(r)
      return string.format("SERVER_ERROR n=%d t1=%s t2=%s t3=%s t9=%s i3=%s c=%s O=%s F=%s\r\n",
        r:ntokens(), str(r:token(1)), str(r:token(2)), str(r:token(3)), str(r:token(9)),
        str(r:token_int(3)), str(r:has_flag("c")), str(r:has_flag("O")), str(r:has_flag("F")))
    end),
    null = fn(function(r)
      local nr = mcp.request("version\r\n")
      nr:token(1, "")  -- the only token: must raise
      return "HD\r\n"
    end),
    rtrim = fgen(p, function(rctx, h)
      return function(r)
        r:rtrimkey(4)
        local res = rctx:enqueue_and_wait(r, h.z1)
        return "SERVER_ERROR key=[" .. r:key() .. "]\r\n"
      end
    end),
    ltrim = fgen(p, function(rctx, h)
      return function(r)
        r:ltrimkey(6)
        local res = rctx:enqueue_and_wait(r, h.z1)
        return "SERVER_ERROR key=[" .. r:key() .. "]\r\n"
      end
    end),
    newreq = fgen(p, function(rctx, h)
      return function(r)
        local k = r:key()
        if k == "newreq/edit" then
          return rctx:enqueue_and_wait(mcp.request("ms newreq/made 2\r\n", "ab\r\n"), h.z1)
        elseif k == "newreq/old" then
          return rctx:enqueue_and_wait(mcp.request("mg newreq/new c\r\n"), h.z1)
        elseif k == "newreq/clone" then
          local res = rctx:enqueue_and_wait(r, h.z1)
          local nr = mcp.request("ms newreq/copy " .. res:vlen() .. "\r\n", res)
          return rctx:enqueue_and_wait(nr, h.z2)
        elseif k == "newreq/fromreq" then
          -- the value copied from the client's own request
          return rctx:enqueue_and_wait(mcp.request("ms newreq/copied 5\r\n", r), h.z1)
        elseif k == "newreq/badval" then
          local ok, err = pcall(mcp.request, "ms newreq/x 2\r\n", "ab")
          local ok2 = pcall(mcp.request, "mg newreq/x")
          return "SERVER_ERROR " .. str(ok) .. " " .. str(ok2) .. "\r\n"
        elseif k == "newreq/len" then
          -- the longest request that can be made, and one byte more
          local ok1 = pcall(mcp.request, "mg k O" .. string.rep("x", 500 - 8) .. "\r\n")
          local ok2, err = pcall(mcp.request, "mg k O" .. string.rep("x", 501 - 8) .. "\r\n")
          return "SERVER_ERROR " .. str(ok1) .. " " .. str(ok2) .. " " ..
                 str(string.find(str(err), "too long", 1, true) ~= nil) .. "\r\n"
        end
      end
    end),
  }
  mcp.attach(mcp.CMD_ANY_STORAGE, mcp.router_new({ map = map, default = direct(p) }))
end
"""


def edit(e, line, seen, ret):
    """Sends `line` to an edit/ route: the backend must see `seen`, the
    client gets what the edit returned."""
    e.c.send(line)
    assert e.b0.recv_line() == seen, line
    e.b0.send("HD\r\n")
    assert e.c.read_line() == "SERVER_ERROR ret=%s\r\n" % ret, line


def test_request_key_and_trims(start):
    e = start(REQUEST)
    c, be = e.c, e.b0
    c.send("get key/testkey\r\n")
    assert c.read_exact(len("VALUE |key/testkey 0 2\r\nts\r\nEND\r\n")) == \
        "VALUE |key/testkey 0 2\r\nts\r\nEND\r\n"
    c.send("mg key/k2 s v\r\n")
    assert c.read_line() == "VALUE |key/k2 0 2\r\n"
    c.read_exact(len("ts\r\nEND\r\n"))
    # The trims overwrite the key with spaces in place.
    c.send("get rtrim/onehalf\r\n")
    assert be.recv_line() == "get rtrim/one    \r\n"
    be.send("END\r\n")
    assert c.read_line() == "SERVER_ERROR key=[rtrim/one]\r\n"
    c.send("get ltrim/test\r\n")
    assert be.recv_line() == "get       test\r\n"
    be.send("END\r\n")
    assert c.read_line() == "SERVER_ERROR key=[test]\r\n"
    c.send("mg ltrim/abc v\r\n")
    assert be.recv_line() == "mg       abc v\r\n"
    be.send("EN\r\n")
    assert c.read_line() == "SERVER_ERROR key=[abc]\r\n"
    e.sync()


def test_request_tokens(start):
    e = start(REQUEST)
    c = e.c
    assert c.call("mg info/test c v\r\n") == \
        "SERVER_ERROR n=4 t1=mg t2=info/test t3=c t9=nil i3=nil c=true O=false F=false\r\n"
    assert c.call("mg info/x Oabc T999\r\n") == \
        "SERVER_ERROR n=4 t1=mg t2=info/x t3=Oabc t9=nil i3=nil c=false O=true F=false\r\n"
    # Text commands have no meta flags.
    assert c.call("get info/F\r\n") == \
        "SERVER_ERROR n=2 t1=get t2=info/F t3=nil t9=nil i3=nil c=false O=false F=false\r\n"
    assert c.call("touch info/c 77\r\n") == \
        "SERVER_ERROR n=3 t1=touch t2=info/c t3=77 t9=nil i3=77 c=false O=false F=false\r\n"
    e.sync()


def test_request_token_edits(start):
    e = start(REQUEST)
    c, be = e.c, e.b0
    c.send("ms edit/trepl 2 C123\r\nhi\r\n")
    assert be.recv_line() == "ms edit/trepl 2 C456\r\n"
    assert be.recv_line() == "hi\r\n"
    be.send("NF\r\n")
    assert c.read_line() == "NF\r\n"
    c.send("ms edit/trm 2 C123\r\nhi\r\n")
    assert be.recv_line() == "ms edit/trm 2\r\n"
    assert be.recv_line() == "hi\r\n"
    be.send("NF\r\n")
    assert c.read_line() == "NF\r\n"
    edit(e, "mg edit/tkey s v\r\n", "mg edit/other s v\r\n", "edit/other:4")
    c.send("ms edit/tfetch 2 C123 P\r\nhi\r\n")
    assert be.recv_line() == "ms edit/tfetch 2 C123 Pedit/tfetch\r\n"
    assert be.recv_line() == "hi\r\n"
    be.send("HD\r\n")
    assert c.read_line() == "HD\r\n"
    # token_int: flags + exptime + bytes written back as the flags.
    c.send("set edit/ints 8 10 2\r\nhi\r\n")
    assert be.recv_line() == "set edit/ints 20 10 2\r\n"
    assert be.recv_line() == "hi\r\n"
    be.send("STORED\r\n")
    assert c.read_line() == "SERVER_ERROR ret=nil\r\n"
    e.sync()


def test_removing_the_only_token_raises(start):
    e = start(REQUEST)
    assert e.c.call("mg null/x\r\n") == "SERVER_ERROR lua failure\r\n"
    e.sync()


def test_request_flag_add(start):
    e = start(REQUEST)
    edit(e, "mg edit/add1 N50\r\n", "mg edit/add1 N50 F\r\n", "true")
    edit(e, "mg edit/addstr N50\r\n", "mg edit/addstr N50 F1234\r\n", "true")
    edit(e, "mg edit/addnum N50\r\n", "mg edit/addnum N50 F5678\r\n", "true")
    # Present already: no change, false.
    edit(e, "mg edit/addexist Oexists\r\n", "mg edit/addexist Oexists\r\n", "false")
    e.sync()


def test_request_flag_set(start):
    e = start(REQUEST)
    edit(e, "mg edit/set1 N50\r\n", "mg edit/set1 N50 F\r\n", "true")
    edit(e, "mg edit/setstr N50\r\n", "mg edit/setstr N50 F4321\r\n", "true")
    edit(e, "mg edit/setnum N50\r\n", "mg edit/setnum N50 F8765\r\n", "true")
    edit(e, "mg edit/setexist N50 Oexists\r\n", "mg edit/setexist N50 Ooverwrite\r\n", "true")
    edit(e, "mg edit/setexist N50 Oexists T73 c\r\n", "mg edit/setexist N50 Ooverwrite T73 c\r\n", "true")
    edit(e, "mg edit/setflag N50 Oexists T73 c\r\n", "mg edit/setflag N50 O T73 c\r\n", "true")
    e.sync()


def test_request_flag_replace_and_del(start):
    e = start(REQUEST)
    edit(e, "mg edit/repl1 N50 F1234 T73\r\n", "mg edit/repl1 N50 Ofoo T73\r\n", "true")
    edit(e, "mg edit/repl2 N50 F5678 T73\r\n", "mg edit/repl2 N50 O T73\r\n", "true")
    edit(e, "mg edit/repl1 F\r\n", "mg edit/repl1 Ofoo\r\n", "true")
    edit(e, "mg edit/del N50 Oremove T80\r\n", "mg edit/del N50 T80\r\n", "true")     # middle
    edit(e, "mg edit/del N51 T81 Oremove\r\n", "mg edit/del N51 T81\r\n", "true")     # end
    edit(e, "mg edit/del Oremove N52 T82\r\n", "mg edit/del N52 T82\r\n", "true")     # front
    edit(e, "mg edit/del O N52 T82\r\n", "mg edit/del N52 T82\r\n", "true")           # tokenless
    edit(e, "mg edit/del N53 T83\r\n", "mg edit/del N53 T83\r\n", "false")           # absent
    e.sync()


def test_request_flag_token(start):
    e = start(REQUEST)
    # fetch / replace / remove / repeated replace, then forwarded.
    edit(e, "mg edit/ftok N10 k c R10\r\n", "mg edit/ftok N100 k R200\r\n",
         "false | false | false | true 10 | true | true | true | true | false | true 10 | true 100 |")
    edit(e, "mg edit/fint F59\r\n", "mg edit/fint F591\r\n", "true:integer")
    edit(e, "mg edit/fint2 Oabc\r\n", "mg edit/fint2 Oabc\r\n", "false:nil,true:nil")
    e.sync()


def test_mcp_request_new_and_copied(start):
    e = start(REQUEST, nbe=2)
    c, be, be2 = e.c, e.be[0], e.be[1]
    c.send("ms newreq/edit 2\r\nhi\r\n")
    assert be.recv_line() == "ms newreq/made 2\r\n"
    assert be.recv_line() == "ab\r\n"
    be.send("HD\r\n")
    assert c.read_line() == "HD\r\n"
    c.send("mg newreq/old\r\n")
    assert be.recv_line() == "mg newreq/new c\r\n"
    be.send("HD c123\r\n")
    assert c.read_line() == "HD c123\r\n"
    # A response's value copied into a new ms for the second backend.
    c.send("mg newreq/clone v\r\n")
    assert be.recv_line() == "mg newreq/clone v\r\n"
    be.send("VA 1 v\r\n4\r\n")
    assert be2.recv_line() == "ms newreq/copy 1\r\n"
    assert be2.recv_line() == "4\r\n"
    be2.send("HD\r\n")
    assert c.read_line() == "HD\r\n"
    # A request's value copied from the client's request.
    c.send("ms newreq/fromreq 5 T1\r\nhello\r\n")
    assert be.recv_line() == "ms newreq/copied 5\r\n"
    assert be.recv_line() == "hello\r\n"
    be.send("HD\r\n")
    assert c.read_line() == "HD\r\n"
    # A value must end in CRLF, and so must the line.
    assert c.call("mg newreq/badval\r\n") == "SERVER_ERROR false false\r\n"
    # 500 bytes is the longest request Lua can create.
    assert c.call("mg newreq/len\r\n") == "SERVER_ERROR true false true\r\n"
    e.sync()
    assert be.idle() == "" and be2.idle() == ""


MATCH = r"""
function mcp_config_routes(p)
  local fg = fgen(p, function(rctx, h)
    return function(r)
      local res = rctx:enqueue_and_wait(r, h.z1)
      local ok, tok = r:match_res(res)
      mcp.log("match " .. str(ok) .. " " .. str(tok))
      return res
    end
  end, "match")
  mcp.attach(mcp.CMD_MG, fg)
  mcp.attach(mcp.CMD_MS, fg)
end
"""


@pytest.mark.parametrize("req,reply,ok", [
    ("ms foo 2\r\nok\r\n", "HD\r\n", "false nil"),                    # neither flag
    ("ms foo 2 k\r\nok\r\n", "HD kfoo\r\n", "true nil"),
    ("ms foo 2 k O1234\r\nok\r\n", "HD kfoo O1234\r\n", "true nil"),
    ("ms foo 2 O9876 k\r\nok\r\n", "HD O9876 kfoo\r\n", "true nil"),
    ("ms foo 2 T99 O9876 k c\r\nok\r\n", "HD O9876 kfoo c2\r\n", "true nil"),
    ("ms foo 2 O1234\r\nok\r\n", "HD O1234\r\n", "true nil"),
    ("ms foo 2 k\r\nok\r\n", "HD k\r\n", "false"),                    # empty k
    ("ms foo 2 O\r\nok\r\n", "HD O\r\n", "false nil"),                # empty O: no opaque
    ("ms foo 2 O c\r\nok\r\n", "HD O c2\r\n", "false nil"),
    ("ms foo 2 k\r\nok\r\n", "HD kbar\r\n", "false"),
    ("ms foo 2 k\r\nok\r\n", "HD kfoob\r\n", "false"),
    ("ms foo 2 O1234\r\nok\r\n", "HD O4321\r\n", "false"),
    ("ms foo 2 O1234\r\nok\r\n", "HD O43210\r\n", "false"),
    ("ms foo 2 k O1234\r\nok\r\n", "HD kfoo O5678\r\n", "false"),
    ("ms foo 2 k O1234\r\nok\r\n", "HD kbar O1234\r\n", "false"),
    ("mg foo t k\r\n", "HD t99 kfoo\r\n", "true nil"),
    ("mg foo t O1234 k c\r\n", "HD t98 O1234 kfoo c2\r\n", "true nil"),
    ("mg foo t O1234 c\r\n", "HD t97 O4321 c2\r\n", "false"),
    ("mg foo t c\r\n", "HD t97 c2\r\n", "false nil"),
    ("mg foo t O1234\r\n", "HD t97\r\n", "false"),                 # O missing from the reply
    ("ms foo 2 k\r\nok\r\n", "HD\r\n", "false nil"),                 # k not echoed: nothing compared
    ("ms foo 2\r\nok\r\n", "HD kfoo\r\n", "true nil"),               # the reply's k is compared
])
def test_request_match_res(start, req, reply, ok):
    e = start(MATCH)
    w = watcher(e.px, "proxyuser")
    e.c.send(req)
    assert e.b0.recv_line() == req.split("\r\n")[0] + "\r\n"
    e.b0.send(reply)
    assert e.c.read_line() == reply
    line = w.log_line()
    m = re.match(LOG_TS + r"type=proxy_user msg=match (\S+) (.*)\n$", line)
    assert m, line
    if ok.endswith("nil"):
        assert "%s %s" % m.groups() == ok, line
    else:
        # a mismatch names its reason
        assert m.group(1) == "false" and m.group(2) not in ("", "nil"), line


# ---- 6: the response object ----------------------------------------------------

RESPONSE = r"""
function mcp_config_routes(p)
  local map = {
    info = fgen(p, function(rctx, h)
      return function(r)
        local res = rctx:enqueue_and_wait(r, h.z1)
        return string.format("SERVER_ERROR ok=%s hit=%s vlen=%d code=%d line=[%s]\r\n",
          str(res:ok()), str(res:hit()), res:vlen(), res:code(), str(res:line()))
      end
    end),
    rbufline = fgen(p, function(rctx, h)
      return function(r)
        local res = rctx:enqueue_and_wait(r, h.z1)
        return "HD " .. res:line() .. "\r\n"
      end
    end),
    blank = fgen(p, function(rctx, h)
      return function(r)
        local res = rctx:enqueue_and_wait(r, h.z1)
        res:flag_blank("O")
        return res
      end
    end),
    elapsed = fgen(p, function(rctx, h)
      return function(r)
        local res = rctx:enqueue_and_wait(r, h.z1)
        return "SERVER_ERROR elapsed=" .. res:elapsed() .. "\r\n"
      end
    end),
    codes = msg(string.format("SERVER_ERROR %d %d %d %d %d %d %d %d %d %d %d %d %d\r\n",
      mcp.MCMC_CODE_STORED, mcp.MCMC_CODE_EXISTS, mcp.MCMC_CODE_DELETED, mcp.MCMC_CODE_TOUCHED,
      mcp.MCMC_CODE_VERSION, mcp.MCMC_CODE_NOT_FOUND, mcp.MCMC_CODE_NOT_STORED, mcp.MCMC_CODE_OK,
      mcp.MCMC_CODE_NOP, mcp.MCMC_CODE_END, mcp.MCMC_CODE_ERROR, mcp.MCMC_CODE_CLIENT_ERROR,
      mcp.MCMC_CODE_SERVER_ERROR)),
  }
  mcp.attach(mcp.CMD_ANY_STORAGE, mcp.router_new({ map = map }))
end
"""


def info(ok, hit, vlen, code, line):
    return "SERVER_ERROR ok=%s hit=%s vlen=%d code=%d line=[%s]\r\n" % (ok, hit, vlen, code, line)


def test_response_code_constants(start):
    e = start(RESPONSE)
    assert e.c.call("mg codes/x\r\n") == "SERVER_ERROR 8 9 10 11 12 13 14 15 16 17 21 22 23\r\n"


def test_response_ok_hit_vlen_code_line(start):
    e = start(RESPONSE)
    c, be = e.c, e.b0
    cases = [
        ("mg info/a v\r\n", "VA 1 v\r\n4\r\n", info("true", "true", 1, 15, "v")),
        ("mg info/a v c\r\n", "VA 1 v c123\r\na\r\n", info("true", "true", 1, 15, "v c123")),
        ("mg info/a\r\n", "HD\r\n", info("true", "true", 0, 15, "nil")),
        ("mg info/a\r\n", "EN\r\n", info("true", "false", 0, 17, "nil")),
        ("md info/a\r\n", "NF\r\n", info("true", "true", 0, 13, "nil")),
        ("ms info/a 1\r\na\r\n", "NS\r\n", info("true", "true", 0, 14, "nil")),
        ("ms info/a 1\r\na\r\n", "EX\r\n", info("true", "true", 0, 9, "nil")),
        ("ms info/a 2\r\nab\r\n", "HD O123 C123\r\n", info("true", "true", 0, 15, "O123 C123")),
        ("get info/a\r\n", "VALUE info/a 0 3\r\nabc\r\nEND\r\n", info("true", "true", 3, 15, "nil")),
        ("get info/a\r\n", "END\r\n", info("true", "false", 0, 17, "nil")),
        ("set info/a 0 0 1\r\na\r\n", "STORED\r\n", info("true", "true", 0, 8, "nil")),
        ("set info/a 0 0 1\r\na\r\n", "EXISTS\r\n", info("true", "true", 0, 9, "nil")),
        ("set info/a 0 0 1\r\na\r\n", "NOT_STORED\r\n", info("true", "true", 0, 14, "nil")),
        ("set info/a 0 0 1\r\na\r\n", "NOT_FOUND\r\n", info("true", "true", 0, 13, "nil")),
        ("touch info/a 50\r\n", "TOUCHED\r\n", info("true", "true", 0, 11, "nil")),
        ("delete info/a\r\n", "DELETED\r\n", info("true", "true", 0, 10, "nil")),
        ("incr info/a 1\r\n", "42\r\n", info("true", "true", 0, 15, "nil")),
        ("mg info/a\r\n", "SERVER_ERROR nope\r\n", info("false", "false", 0, 23, "nil")),
    ]
    for req, reply, want in cases:
        c.send(req)
        for line in req.split("\r\n")[:-1]:
            assert be.recv_line() == line + "\r\n"
        be.send(reply)
        assert c.read_line() == want, (req, reply)
    e.sync()


def test_response_of_a_failed_backend(start):
    e = start(RESPONSE)
    c, be = e.c, e.b0
    c.send("mg info/a\r\n")
    assert be.recv_line() == "mg info/a\r\n"
    be.send("GARBAGE\r\n")
    assert c.read_line() == info("false", "false", 0, 23, "nil")
    be.accept()
    c.send("mg info/a\r\n")
    assert be.recv_line() == "mg info/a\r\n"
    be.send("ERROR\r\n")
    assert c.read_line() == info("false", "false", 0, 21, "nil")
    be.accept()
    c.send("mg info/a\r\n")
    assert be.recv_line() == "mg info/a\r\n"
    be.send("CLIENT_ERROR x\r\n")
    assert c.read_line() == info("false", "false", 0, 22, "nil")


def test_response_line_of_pipelined_replies(start):
    e = start(RESPONSE)
    c, be = e.c, e.b0
    c.send("mg rbufline/a\r\nmg rbufline/a\r\n")
    assert be.recv_line() == "mg rbufline/a\r\n"
    assert be.recv_line() == "mg rbufline/a\r\n"
    be.send("HD Oa\r\nHD Ob\r\n")
    assert c.read_line() == "HD Oa\r\n"
    assert c.read_line() == "HD Ob\r\n"
    e.sync()


def test_response_flag_blank(start):
    e = start(RESPONSE)
    c, be = e.c, e.b0
    c.send("mg blank/a f Ofoo t\r\n")
    assert be.recv_line() == "mg blank/a f Ofoo t\r\n"
    be.send("HD f1234 Ofoo t999\r\n")
    assert c.read_line() == "HD f1234      t999\r\n"
    e.sync()


def test_response_elapsed_is_in_microseconds(start):
    e = start(RESPONSE)
    c, be = e.c, e.b0
    c.send("mg elapsed/a\r\n")
    assert be.recv_line() == "mg elapsed/a\r\n"
    time.sleep(0.1)
    be.send("HD\r\n")
    m = re.match(r"SERVER_ERROR elapsed=(\d+)\r\n$", c.read_line())
    assert m
    assert 100000 < int(m.group(1)) < 3000000


# ---- 7: routers ----------------------------------------------------------------

ROUTER = r"""
function mcp_config_routes(p)
  local fwd = direct(p, "fwd")
  local def = msg("SERVER_ERROR default route\r\n", "def")
  local map = {
    one = fwd,
    two = fwd,
    cmd = { [mcp.CMD_GET] = msg("SERVER_ERROR cmd_get\r\n"),
            [mcp.CMD_SET] = msg("SERVER_ERROR cmd_set\r\n") },
    cmdd = { [mcp.CMD_ANY_STORAGE] = msg("SERVER_ERROR cmd_default\r\n"),
             [mcp.CMD_TOUCH] = msg("SERVER_ERROR cmd_touch\r\n") },
  }
  local cmap = {
    [mcp.CMD_INCR] = msg("SERVER_ERROR cmap incr\r\n"),
    [mcp.CMD_DECR] = msg("SERVER_ERROR cmap decr\r\n"),
  }
  local pfx_short = mcp.router_new({ map = map, cmap = cmap, mode = "prefix", stop = "|", default = def })
  local pfx_long = mcp.router_new({ map = map, mode = "prefix", stop = "+#+", default = def })
  local anc_short = mcp.router_new({ map = map, mode = "anchor", start = "_", stop = ",", default = def })
  local anc_long = mcp.router_new({ map = map, mode = "anchor", start = "=?=", stop = "__", default = def })
  local cmap_only = mcp.router_new({
    cmap = { [mcp.CMD_GETS] = msg("SERVER_ERROR cmap_only gets\r\n") },
    default = msg("SERVER_ERROR cmap_only default\r\n"),
  })
  local no_default = mcp.router_new({ map = { one = fwd } })

  mcp.attach(mcp.CMD_ANY_STORAGE, pfx_short)
  mcp.attach(mcp.CMD_MG, pfx_short)
  mcp.attach(mcp.CMD_MS, pfx_long)
  mcp.attach(mcp.CMD_MD, anc_short)
  mcp.attach(mcp.CMD_MA, anc_long)
  mcp.attach(mcp.CMD_GETS, cmap_only)
  mcp.attach(mcp.CMD_GAT, cmap_only)
  mcp.attach(mcp.CMD_APPEND, no_default)
end
"""


def forwarded(e, req, lines, reply):
    e.c.send(req)
    for ln in lines:
        assert e.b0.recv_line() == ln, req
    e.b0.send(reply)
    assert e.c.read_line() == reply, req


def test_router_prefix_modes(start):
    e = start(ROUTER)
    c = e.c
    forwarded(e, "mg one|key t3\r\n", ["mg one|key t3\r\n"], "EN\r\n")
    forwarded(e, "mg two|key\r\n", ["mg two|key\r\n"], "HD\r\n")
    assert c.call("mg one/found\r\n") == "SERVER_ERROR default route\r\n"  # no stop
    assert c.call("mg three|key\r\n") == "SERVER_ERROR default route\r\n"  # not in map
    # Long stop.
    forwarded(e, "ms one+#+foo 2\r\nhi\r\n", ["ms one+#+foo 2\r\n", "hi\r\n"], "HD\r\n")
    assert c.call("ms one+#found 2\r\nhi\r\n") == "SERVER_ERROR default route\r\n"
    assert c.call("ms borked+ 2\r\nhi\r\n") == "SERVER_ERROR default route\r\n"
    e.sync()
    assert e.b0.idle() == ""


def test_router_anchor_modes(start):
    e = start(ROUTER)
    c = e.c
    forwarded(e, "md _one,bar\r\n", ["md _one,bar\r\n"], "HD\r\n")
    assert c.call("md _one+nothing\r\n") == "SERVER_ERROR default route\r\n"
    assert c.call("md one,bar\r\n") == "SERVER_ERROR default route\r\n"  # no start anchor
    forwarded(e, "ma =?=one__key\r\n", ["ma =?=one__key\r\n"], "HD\r\n")
    assert c.call("ma =?=one_nothing\r\n") == "SERVER_ERROR default route\r\n"
    assert c.call("ma one__key\r\n") == "SERVER_ERROR default route\r\n"
    e.sync()
    assert e.b0.idle() == ""


def test_router_command_maps_and_fallbacks(start):
    e = start(ROUTER)
    c = e.c
    assert c.call("get cmd|test\r\n") == "SERVER_ERROR cmd_get\r\n"
    assert c.call("set cmd|test 0 0 2\r\nhi\r\n") == "SERVER_ERROR cmd_set\r\n"
    # Not in the sub-map and no cmap entry: the default.
    assert c.call("delete cmd|test\r\n") == "SERVER_ERROR default route\r\n"
    # The sub-map's CMD_ANY_STORAGE, unless the command has its own entry.
    assert c.call("delete cmdd|test\r\n") == "SERVER_ERROR cmd_default\r\n"
    assert c.call("touch cmdd|test 1\r\n") == "SERVER_ERROR cmd_touch\r\n"
    # A map miss falls back to the cmap.
    assert c.call("incr bar|foo 1\r\n") == "SERVER_ERROR cmap incr\r\n"
    assert c.call("decr bar|foo 1\r\n") == "SERVER_ERROR cmap decr\r\n"
    assert c.call("incr nostop 1\r\n") == "SERVER_ERROR cmap incr\r\n"
    # A cmap-only router.
    assert c.call("gets one|test\r\n") == "SERVER_ERROR cmap_only gets\r\n"
    assert c.call("gat 5 one|test\r\n") == "SERVER_ERROR cmap_only default\r\n"
    # A miss with no default.
    assert c.call("append nope/x 0 0 1\r\nx\r\n") == "SERVER_ERROR lua start failure\r\n"
    forwarded(e, "append one/x 0 0 1\r\nx\r\n", ["append one/x 0 0 1\r\n", "x\r\n"], "STORED\r\n")
    e.sync()
    assert e.b0.idle() == ""


def test_router_does_not_leak(start):
    e = start(ROUTER)
    c, be = e.c, e.b0
    forwarded(e, "mg one|key t0\r\n", ["mg one|key t0\r\n"], "EN\r\n")
    before = T.to(e.px).stats("proxyfuncs")
    for i in range(500):
        c.send("mg one|key t%d\r\n" % i)
        assert be.recv_line() == "mg one|key t%d\r\n" % i
        be.send("EN\r\n")
        assert c.read_line() == "EN\r\n"
    after = T.to(e.px).stats("proxyfuncs")
    assert after == before
    assert any(k.startswith("slots_") for k in after), after


# ---- 8: request contexts ---------------------------------------------------------

RCTX = r"""
function mcp_config_routes(p)
  local MODES = { any = mcp.WAIT_ANY, ok = mcp.WAIT_OK, good = mcp.WAIT_GOOD,
                  fastgood = mcp.WAIT_FASTGOOD }
  local function rname(flag)
    if flag == mcp.RES_GOOD then return "good" elseif flag == mcp.RES_OK then return "ok"
    elseif flag == mcp.RES_ANY then return "any" end
    return str(flag)
  end
  -- done=<count> to=<timed out> then each handle's result class
  local function report(rctx, all, done, to)
    local out = { "SERVER_ERROR done=" .. str(done), "to=" .. str(to == true) }
    for i, h in ipairs(all) do
      local res, flag = rctx:result(h)
      out[#out + 1] = "z" .. i .. "=" .. rname(flag)
    end
    return table.concat(out, " ") .. "\r\n"
  end
  local function all3(h) return { h.z1, h.z2, h.z3 } end

  local map = {}
  map.all = fgen(p, function(rctx, h)
    local all = all3(h)
    return function(r)
      rctx:enqueue(r, all)
      rctx:wait_cond(3)
      return rctx:result(h.z3)
    end
  end, "all")
  -- cond/<mode>/<n>
  map.cond = fgen(p, function(rctx, h)
    local all = all3(h)
    return function(r)
      local mode, n = string.match(r:key(), "^cond/(%a+)/(%d+)")
      rctx:enqueue(r, all)
      local done, to = rctx:wait_cond(tonumber(n), MODES[mode])
      return report(rctx, all, done, to)
    end
  end, "cond")
  map.cond0 = fgen(p, function(rctx, h)
    local all = all3(h)
    return function(r)
      rctx:enqueue(r, all)
      rctx:wait_cond(0)
      if r:key() == "cond0/then3" then
        local done = rctx:wait_cond(3)
        return report(rctx, all, done)
      end
      return "HD t1\r\n"
    end
  end, "cond0")
  map.tcond = fgen(p, function(rctx, h)
    return function(r)
      rctx:enqueue(r, h.z1)
      local done, to = rctx:wait_cond(1, mcp.WAIT_GOOD, 0.3)
      if to then return report(rctx, { h.z1 }, done, to) end
      return rctx:res_any(h.z1)
    end
  end, "tcond")
  map.teaw = fgen(p, function(rctx, h)
    return function(r)
      local res, to = rctx:enqueue_and_wait(r, h.z1, 0.3)
      if to then return "SERVER_ERROR res=" .. str(res) .. " to=" .. str(to) .. "\r\n" end
      return res
    end
  end, "teaw")
  map.twh = fgen(p, function(rctx, h)
    return function(r)
      rctx:enqueue(r, h.z1)
      local res, to = rctx:wait_handle(h.z1, 0.3)
      if not to then return res end
      if r:key() == "twh/again" then return rctx:wait_handle(h.z1) end
      return "SERVER_ERROR res=" .. str(res) .. " to=" .. str(to) .. "\r\n"
    end
  end, "twh")
  map.sleep = fgen(p, function(rctx, h)
    return function(r)
      local k = r:key()
      if k == "sleep/before" then
        rctx:sleep(0.3)
        return rctx:enqueue_and_wait(r, h.z1)
      elseif k == "sleep/after" then
        local res = rctx:enqueue_and_wait(r, h.z1)
        rctx:sleep(0.3)
        return res
      elseif k == "sleep/enqueue" then
        rctx:enqueue(r, h.z1)
        rctx:sleep(0.3)
        rctx:wait_cond(1, mcp.WAIT_ANY)
        return rctx:result(h.z1)
      end
    end
  end, "sleep")
  map.best = fgen(p, function(rctx, h)
    local all = all3(h)
    return function(r)
      rctx:enqueue(r, all)
      rctx:wait_cond(3)
      return rctx:best_result(all)
    end
  end, "best")
  map.besttime = fgen(p, function(rctx, h)
    local all = all3(h)
    return function(r)
      rctx:enqueue(r, all)
      rctx:wait_cond(3, mcp.WAIT_ANY, 0.3)
      return rctx:best_result(all)
    end
  end, "besttime")
  map.worst = fgen(p, function(rctx, h)
    local all = all3(h)
    return function(r)
      rctx:enqueue(r, all)
      rctx:wait_cond(3)
      return rctx:worst_result(all)
    end
  end, "worst")
  -- a callback that counts misses as good and resumes at once on "HD Ostop"
  map.cb = fgen(p, function(rctx, h)
    local all = all3(h)
    local seen = {}
    local cb = function(res, req)
      seen[#seen + 1] = req:key()
      if res:line() == "Ostop" then return mcp.WAIT_ANY, mcp.WAIT_RESUME end
      if res:code() == mcp.MCMC_CODE_END then return mcp.WAIT_GOOD end
    end
    for _, x in ipairs(all) do rctx:handle_set_cb(x, cb) end
    return function(r)
      seen = {}
      rctx:enqueue(r, all)
      local done = rctx:wait_cond(3, mcp.WAIT_GOOD)
      local out = report(rctx, all, done):gsub("\r\n$", " seen=" .. table.concat(seen, ",") .. "\r\n")
      return out
    end
  end, "cb")
  -- near first; on a timeout also ask the far ones, and answer with
  -- whichever replied first in handle order
  map.near = fgen(p, function(rctx, h)
    local all = all3(h)
    return function(r)
      rctx:enqueue(r, h.z1)
      local done, to = rctx:wait_cond(1, mcp.WAIT_GOOD, 0.3)
      if not to then return rctx:res_any(h.z1) end
      rctx:enqueue(r, { h.z2, h.z3 })
      rctx:wait_cond(1, mcp.WAIT_GOOD)
      for _, x in ipairs(all) do
        local res = rctx:res_any(x)
        if res then return res end
      end
      return "SERVER_ERROR no responses\r\n"
    end
  end, "near")
  map.waitfor = fgen(p, function(rctx, h)
    return function(r)
      local k = r:key()
      if k == "waitfor/c" then
        rctx:enqueue(r, h.z1)
        rctx:wait_cond(0)
        rctx:enqueue(r, h.z2)
        rctx:enqueue(r, h.z3)
        return rctx:wait_handle(h.z1)
      elseif k == "waitfor/d" then
        rctx:enqueue(r, h.z1)
        rctx:enqueue(r, h.z2)
        rctx:wait_handle(h.z1)
        return rctx:wait_handle(h.z2)
      elseif k == "waitfor/double" then
        rctx:enqueue(r, h.z1)
        local res, to = rctx:wait_handle(h.z1, 0.1)
        res, to = rctx:wait_handle(h.z1, 0.1)
        if to then return rctx:wait_handle(h.z1) end
        return "SERVER_ERROR no timeout\r\n"
      end
    end
  end, "waitfor")
  map.failover = fgen(p, function(rctx, h)
    local far = { h.z2, h.z3 }
    return function(r)
      local fres = rctx:enqueue_and_wait(r, h.z1)
      if fres:hit() then return fres end
      rctx:enqueue(r, far)
      rctx:wait_cond(1, mcp.WAIT_GOOD)
      for _, x in ipairs(far) do
        local res = rctx:res_good(x)
        if res then return res end
      end
      return rctx:res_any(h.z1)
    end
  end, "failover")
  map.locality = fgen(p, function(rctx, h)
    local x = 0
    return function(r)
      x = x + 1
      rctx:enqueue_and_wait(r, h.z1)
      return "HD t" .. x .. "\r\n"
    end
  end, "locality")
  -- children that wait 0.25 s for their one backend, under two parents
  local function timesub(zone)
    return fgen(p, function(rctx, h)
      return function(r)
        rctx:enqueue(r, h[zone])
        rctx:wait_cond(1, mcp.WAIT_GOOD, 0.25)
        return rctx:best_result({ h[zone] })
      end
    end, "timesub")
  end
  local subs = { timesub("z1"), timesub("z2"), timesub("z3") }
  local function timeparent(n, mode, name)
    local fg = mcp.funcgen_new()
    local hs = {}
    for _, sub in ipairs(subs) do hs[#hs + 1] = fg:new_handle(sub) end
    fg:ready({ n = name, f = function(rctx)
      return function(r)
        rctx:enqueue(r, hs)
        rctx:wait_cond(n, mode)
        return rctx:best_result(hs)
      end
    end })
    return fg
  end
  map.timetop = timeparent(1, mcp.WAIT_GOOD, "timetop")
  map.timefg = timeparent(2, mcp.WAIT_FASTGOOD, "timefg")
  map.misc = fgen(p, function(rctx, h)
    return function(r)
      local k = r:key()
      if k == "misc/dup" then
        -- a handle runs once per request
        rctx:enqueue(r, h.z1)
        rctx:enqueue(r, h.z1)
        rctx:enqueue(r, { h.z1, h.z2 })
        local done = rctx:wait_cond(3)
        local res2, f2 = rctx:result(h.z3)  -- never queued
        return "SERVER_ERROR done=" .. str(done) .. " z3=" .. str(res2) .. "," .. str(f2) .. "\r\n"
      elseif k == "misc/unqueued" then
        return rctx:wait_handle(h.z3)
      end
    end
  end, "misc")
  -- a child that sleeps before asking z2
  local sleepy = fgen(p, function(rctx, h)
    return function(r)
      rctx:sleep(0.2)
      return rctx:enqueue_and_wait(r, h.z2)
    end
  end, "sleepy")
  map.subsleep = (function()
    local fg = mcp.funcgen_new()
    local ch = fg:new_handle(sleepy)
    fg:ready({ n = "subsleep", f = function(rctx)
      return function(r)
        local res = rctx:enqueue_and_wait(r, ch)
        if r:key() == "subsleep/after" then rctx:sleep(0.2) end
        return res
      end
    end })
    return fg
  end)()
  -- a child funcgen used as a handle
  local child = fgen(p, function(rctx, h)
    return function(r)
      local k = r:key()
      if k == "sub/error" then error("child failed") end
      if k == "sub/nil" then return nil end
      if k == "sub/string" then return "SERVER_ERROR from the child\r\n" end
      if k == "sub/sleep" then rctx:sleep(0.1) error("child failed after resuming") end
      return rctx:enqueue_and_wait(r, h.z2)
    end
  end, "child")
  map.sub = (function()
    local fg = mcp.funcgen_new()
    local ch = fg:new_handle(child)
    fg:ready({ n = "parent", f = function(rctx)
      return function(r) return rctx:enqueue_and_wait(r, ch) end
    end })
    return fg
  end)()
  mcp.attach(mcp.CMD_ANY_STORAGE, mcp.router_new({ map = map }))
end
"""


def all3_recv(e, line):
    for b in e.be:
        assert b.recv_line() == line, b.port


def test_rctx_enqueue_three_and_wait_all(start):
    e = start(RCTX, nbe=3)
    c = e.c
    c.send("mg all/a t\r\n")
    all3_recv(e, "mg all/a t\r\n")
    e.be[0].send("HD t1\r\n")
    e.be[1].send("HD t2\r\n")
    e.silent()
    e.be[2].send("HD t3\r\n")
    assert c.read_line() == "HD t3\r\n"
    e.sync()


def cond(e, key, replies, want, silent_after=()):
    """Sends `mg <key>` (it reaches all three backends), lets backend i
    answer replies[i] in order, checking that the client stays silent
    after the indexes in silent_after, then reads the route's reply."""
    e.c.send("mg %s\r\n" % key)
    all3_recv(e, "mg %s\r\n" % key)
    for i, rep in enumerate(replies):
        e.be[i].send(rep)
        if i in silent_after:
            e.silent(0.15)
    assert e.c.read_line() == want, key


def test_rctx_wait_cond_modes(start):
    e = start(RCTX, nbe=3)
    # WAIT_ANY: every reply counts.
    cond(e, "cond/any/1", ["SERVER_ERROR x\r\n"], "SERVER_ERROR done=1 to=false z1=any z2=nil z3=nil\r\n")
    for b in e.be[1:]:
        b.send("HD\r\n")  # late: swallowed
    # WAIT_OK: hits and misses count, errors do not.
    cond(e, "cond/ok/1", ["SERVER_ERROR x\r\n", "EN\r\n"],
         "SERVER_ERROR done=1 to=false z1=any z2=ok z3=nil\r\n", silent_after=(0,))
    e.be[2].send("EN\r\n")
    # WAIT_GOOD: only hits count.
    cond(e, "cond/good/1", ["EN\r\n", "HD\r\n"],
         "SERVER_ERROR done=1 to=false z1=ok z2=good z3=nil\r\n", silent_after=(0,))
    e.be[2].send("HD\r\n")
    cond(e, "cond/good/2", ["EN\r\n", "HD\r\n", "HD\r\n"],
         "SERVER_ERROR done=2 to=false z1=ok z2=good z3=good\r\n", silent_after=(0, 1))
    # Nothing outstanding ends the wait short of n.
    cond(e, "cond/good/3", ["EN\r\n", "HD\r\n", "EN\r\n"],
         "SERVER_ERROR done=1 to=false z1=ok z2=good z3=ok\r\n", silent_after=(0, 1))
    # WAIT_FASTGOOD: the first hit resumes at once; misses count.
    cond(e, "cond/fastgood/2", ["HD\r\n"], "SERVER_ERROR done=1 to=false z1=good z2=nil z3=nil\r\n")
    for b in e.be[1:]:
        b.send("EN\r\n")
    cond(e, "cond/fastgood/2", ["EN\r\n", "EN\r\n"],
         "SERVER_ERROR done=2 to=false z1=ok z2=ok z3=nil\r\n", silent_after=(0,))
    e.be[2].send("HD\r\n")
    cond(e, "cond/fastgood/3", ["EN\r\n", "HD\r\n"],
         "SERVER_ERROR done=2 to=false z1=ok z2=good z3=nil\r\n", silent_after=(0,))
    e.be[2].send("HD\r\n")
    # Every late reply was swallowed and the backends are in step.
    e.sync()
    cond(e, "cond/any/3", ["HD\r\n", "HD\r\n", "HD\r\n"],
         "SERVER_ERROR done=3 to=false z1=good z2=good z3=good\r\n")
    e.sync()


def test_rctx_wait_cond_zero(start):
    e = start(RCTX, nbe=3)
    c = e.c
    # The client is answered while the three requests are still out.
    c.send("mg cond0/a\r\n")
    assert c.read_line() == "HD t1\r\n"
    all3_recv(e, "mg cond0/a\r\n")
    assert e.stat("proxy_req_active") == "1"  # the slot is still busy
    for b in e.be:
        b.send("HD t9\r\n")
    assert wait_for(lambda: e.stat("proxy_req_active") == "0")
    e.sync()
    # Dispatch with wait_cond(0), then wait for all three.
    c.send("mg cond0/then3 t\r\n")
    all3_recv(e, "mg cond0/then3 t\r\n")
    for b in e.be:
        b.send("HD t13\r\n")
    assert c.read_line() == "SERVER_ERROR done=3 to=false z1=good z2=good z3=good\r\n"
    e.sync()


@pytest.mark.parametrize("key,want", [
    ("tcond/a", "SERVER_ERROR done=0 to=true z1=nil\r\n"),
    ("teaw/a", "SERVER_ERROR res=nil to=true\r\n"),
    ("twh/a", "SERVER_ERROR res=nil to=true\r\n"),
])
def test_rctx_wait_timeouts(start, key, want):
    e = start(RCTX, nbe=3)
    c, be = e.c, e.b0
    t0 = time.monotonic()
    c.send("mg %s t\r\n" % key)
    assert be.recv_line() == "mg %s t\r\n" % key
    assert c.read_line() == want
    assert 0.28 < time.monotonic() - t0 < 2
    be.send("HD t40\r\n")  # late: swallowed
    e.sync()
    # Without a timeout the reply is returned, and the late one did not leak.
    c.send("mg %s t\r\n" % key)
    assert be.recv_line() == "mg %s t\r\n" % key
    be.send("HD t16\r\n")
    assert c.read_line() == "HD t16\r\n"
    e.sync()
    assert wait_for(lambda: e.stat("proxy_req_active") == "0")
    assert T.to(e.px).stats("proxyfuncs")["slots_" + key.split("/")[0]] == "1"


def test_rctx_wait_handle_again_after_a_timeout(start):
    e = start(RCTX, nbe=3)
    c, be = e.c, e.b0
    c.send("mg twh/again t\r\n")
    assert be.recv_line() == "mg twh/again t\r\n"
    time.sleep(0.5)  # past its 0.3 s wait
    be.send("HD t93\r\n")
    assert c.read_line() == "HD t93\r\n"
    e.sync()


def test_rctx_sleep(start):
    e = start(RCTX, nbe=3)
    c, be = e.c, e.b0
    for k in ("before", "after", "enqueue"):
        t0 = time.monotonic()
        c.send("mg sleep/%s t\r\n" % k)
        assert be.recv_line() == "mg sleep/%s t\r\n" % k
        if k == "before":
            assert time.monotonic() - t0 > 0.25
        be.send("HD t94\r\n")
        assert c.read_line() == "HD t94\r\n"
        assert time.monotonic() - t0 > 0.25, k
    e.sync()


@pytest.mark.parametrize("route,replies,want", [
    ("best", ["VA 2 t30\r\nhi\r\n", "EN\r\n", "EN\r\n"], "VA 2 t30\r\nhi\r\n"),
    ("best", ["EN\r\n", "VA 2 t31\r\nhi\r\n", "EN\r\n"], "VA 2 t31\r\nhi\r\n"),
    ("best", ["EN\r\n", "EN\r\n", "HD t32\r\n"], "HD t32\r\n"),
    ("best", ["SERVER_ERROR borked\r\n", "HD t41\r\n", "EN\r\n"], "HD t41\r\n"),
    ("best", ["SERVER_ERROR borked\r\n", "SERVER_ERROR borked2\r\n", "EN\r\n"], "EN\r\n"),
    ("best", ["HD t50\r\n", "HD t51\r\n", "HD t52\r\n"], "HD t50\r\n"),
    ("best", ["EN O1\r\n", "EN O2\r\n", "EN O3\r\n"], "EN O3\r\n"),
    ("worst", ["VA 2 t30\r\nhi\r\n", "EN O1\r\n", "EN O2\r\n"], "EN O2\r\n"),
    ("worst", ["EN O1\r\n", "VA 2 t31\r\nhi\r\n", "EN O2\r\n"], "EN O2\r\n"),
    ("worst", ["EN O1\r\n", "HD t40\r\n", "HD t41\r\n"], "EN O1\r\n"),
    ("worst", ["SERVER_ERROR borked\r\n", "HD t41\r\n", "EN\r\n"], "SERVER_ERROR borked\r\n"),
    ("worst", ["SERVER_ERROR borked\r\n", "SERVER_ERROR borked2\r\n", "EN\r\n"],
     "SERVER_ERROR borked2\r\n"),
    ("worst", ["HD t50\r\n", "HD t51\r\n", "HD t52\r\n"], "HD t52\r\n"),
])
def test_rctx_best_and_worst_result(start, route, replies, want):
    e = start(RCTX, nbe=3)
    e.c.send("mg %s/a v t\r\n" % route)
    all3_recv(e, "mg %s/a v t\r\n" % route)
    for b, rep in zip(e.be, replies):
        b.send(rep)
    assert e.c.read_exact(len(want)) == want
    e.sync()


def test_rctx_best_result_with_nothing_back(start):
    e = start(RCTX, nbe=3)
    e.c.send("mg besttime/a t\r\n")
    all3_recv(e, "mg besttime/a t\r\n")
    assert e.c.read_line() == "SERVER_ERROR bad response\r\n"
    for b in e.be:
        b.send("EN\r\n")
    e.sync()


def test_rctx_callback_reclassifies_and_resumes(start):
    e = start(RCTX, nbe=3)
    # Misses made good by the callback: WAIT_GOOD counts all three.
    cond(e, "cb/a", ["EN\r\n", "EN\r\n", "EN\r\n"],
         "SERVER_ERROR done=3 to=false z1=good z2=good z3=good seen=cb/a,cb/a,cb/a\r\n",
         silent_after=(0, 1))
    # WAIT_RESUME from the callback ends the wait on the first reply (1 of
    # the 3 asked for). WAIT_ANY does not downgrade: the hit stays good.
    cond(e, "cb/b", ["HD Ostop\r\n"], "SERVER_ERROR done=1 to=false z1=good z2=nil z3=nil seen=cb/b\r\n")
    e.be[1].send("HD\r\n")
    e.be[2].send("HD\r\n")
    e.sync()


def test_rctx_timeouts_inside_child_contexts(start):
    e = start(RCTX, nbe=3)
    c = e.c
    # Every child times out and returns nothing: a backend failure each, and
    # the parent's best result is one of them.
    c.send("mg timetop/a t\r\n")
    all3_recv(e, "mg timetop/a t\r\n")
    assert c.read_line() == "SERVER_ERROR backend failure\r\n"
    for b in e.be:
        b.send("EN\r\n")  # late
    e.sync()
    # Two children return errors, one a miss: WAIT_FASTGOOD waits for all,
    # and the miss is the best result.
    c.send("mg timefg/a t\r\n")
    all3_recv(e, "mg timefg/a t\r\n")
    e.be[0].send("SERVER_ERROR nope\r\n")
    e.be[1].send("SERVER_ERROR nope\r\n")
    e.be[2].send("EN\r\n")
    assert c.read_line() == "EN\r\n"
    e.sync()
    assert wait_for(lambda: e.stat("proxy_req_active") == "0")


def test_rctx_a_handle_runs_once_per_request(start):
    e = start(RCTX, nbe=3)
    c = e.c
    c.send("mg misc/dup t\r\n")
    assert e.be[0].recv_line() == "mg misc/dup t\r\n"
    assert e.be[1].recv_line() == "mg misc/dup t\r\n"
    e.be[0].send("HD\r\n")
    e.be[1].send("HD\r\n")
    assert c.read_line() == "SERVER_ERROR done=2 z3=nil,nil\r\n"
    assert e.be[0].idle() == "" and e.be[2].idle() == ""
    # Waiting on a handle nothing was queued for is a Lua error.
    assert c.call("mg misc/unqueued\r\n") == "SERVER_ERROR lua failure\r\n"
    e.sync()


def test_rctx_client_gone_before_the_reply(start):
    e = start(RCTX, nbe=3)
    c2 = T.to(e.px)
    c2.send("mg all/gone t\r\n")
    all3_recv(e, "mg all/gone t\r\n")
    c2.close()
    time.sleep(0.1)
    for b in e.be:
        b.send("HD t1\r\n")
    assert wait_for(lambda: e.stat("proxy_req_active") == "0")
    # The slot and the backends are fine for the next client.
    e.c.send("mg all/next t\r\n")
    all3_recv(e, "mg all/next t\r\n")
    for b in e.be:
        b.send("HD t2\r\n")
    assert e.c.read_line() == "HD t2\r\n"
    e.sync()


def test_rctx_child_funcgen(start):
    e = start(RCTX, nbe=3)
    c, be2 = e.c, e.be[1]
    c.send("mg sub/a t\r\n")
    assert be2.recv_line() == "mg sub/a t\r\n"
    be2.send("HD t5\r\n")
    assert c.read_line() == "HD t5\r\n"
    before = T.to(e.px).stats("proxyfuncs")
    # The child's Lua error or bad return is a backend failure for the parent.
    for _ in range(2):
        assert c.call("mg sub/error t\r\n") == "SERVER_ERROR backend failure\r\n"
        assert c.call("mg sub/nil t\r\n") == "SERVER_ERROR backend failure\r\n"
        assert c.call("mg sub/sleep t\r\n") == "SERVER_ERROR backend failure\r\n"
    assert T.to(e.px).stats("proxyfuncs") == before  # no slot lost or made
    # A string from the child is the parent's result as it is.
    assert c.call("mg sub/string t\r\n") == "SERVER_ERROR from the child\r\n"
    c.send("mg sub/b t\r\n")
    assert be2.recv_line() == "mg sub/b t\r\n"
    be2.send("EN\r\n")
    assert c.read_line() == "EN\r\n"
    e.sync()
    assert e.stat("proxy_req_active") == "0"


def test_rctx_timed_out_request_can_still_answer(start):
    e = start(RCTX, nbe=3)
    c = e.c
    # The near backend times out; the far ones answer.
    c.send("mg near/boo t\r\n")
    assert e.be[1].recv_line() == "mg near/boo t\r\n"
    assert e.be[2].recv_line() == "mg near/boo t\r\n"
    assert e.be[0].recv_line() == "mg near/boo t\r\n"
    e.be[1].send("HD t90\r\n")
    e.be[2].send("HD t90\r\n")
    assert c.read_line() == "HD t90\r\n"
    e.be[0].send("HD t40\r\n")  # swallowed
    e.sync()
    # The near one answers while the far ones are out: its reply wins.
    c.send("mg near/qoo t\r\n")
    assert e.be[1].recv_line() == "mg near/qoo t\r\n"
    assert e.be[2].recv_line() == "mg near/qoo t\r\n"
    assert e.be[0].recv_line() == "mg near/qoo t\r\n"
    e.be[0].send("HD t14\r\n")
    assert c.read_line() == "HD t14\r\n"
    e.be[1].send("HD t17\r\n")
    e.be[2].send("HD t17\r\n")
    e.sync()
    assert wait_for(lambda: e.stat("proxy_req_active") == "0")


def test_rctx_wait_handle_orders(start):
    e = start(RCTX, nbe=3)
    c = e.c
    c.send("mg waitfor/c t\r\n")
    all3_recv(e, "mg waitfor/c t\r\n")
    e.be[1].send("HD t12\r\n")
    e.be[2].send("HD t13\r\n")
    e.silent(0.15)
    e.be[0].send("HD t11\r\n")
    assert c.read_line() == "HD t11\r\n"
    # Two queued; the second answers first, the wait is for the first.
    c.send("mg waitfor/d t\r\n")
    assert e.be[0].recv_line() == "mg waitfor/d t\r\n"
    assert e.be[1].recv_line() == "mg waitfor/d t\r\n"
    e.be[1].send("HD t23\r\n")
    e.silent(0.2)
    e.be[0].send("HD t17\r\n")
    assert c.read_line() == "HD t23\r\n"
    # Two timed-out waits on one handle, then a third without a timeout.
    c.send("mg waitfor/double t\r\n")
    assert e.be[0].recv_line() == "mg waitfor/double t\r\n"
    time.sleep(0.4)
    e.be[0].send("HD t98\r\n")
    assert c.read_line() == "HD t98\r\n"
    e.sync()


def test_rctx_failover(start):
    e = start(RCTX, nbe=3)
    c = e.c
    c.send("mg failover/a t\r\n")
    assert e.be[0].recv_line() == "mg failover/a t\r\n"
    e.be[0].send("HD t31\r\n")
    assert c.read_line() == "HD t31\r\n"
    c.send("mg failover/b t\r\n")
    assert e.be[0].recv_line() == "mg failover/b t\r\n"
    assert e.be[1].idle(0.1) == ""  # not asked before the first missed
    e.be[0].send("EN\r\n")
    assert e.be[1].recv_line() == "mg failover/b t\r\n"
    assert e.be[2].recv_line() == "mg failover/b t\r\n"
    e.be[1].send("EN\r\n")
    e.be[2].send("HD t41\r\n")
    assert c.read_line() == "HD t41\r\n"
    c.send("mg failover/c t\r\n")
    assert e.be[0].recv_line() == "mg failover/c t\r\n"
    e.be[0].send("EN Ofirst\r\n")
    assert e.be[1].recv_line() == "mg failover/c t\r\n"
    assert e.be[2].recv_line() == "mg failover/c t\r\n"
    e.be[1].send("EN Ofailover\r\n")
    e.be[2].send("EN Ofailover\r\n")
    assert c.read_line() == "EN Ofirst\r\n"
    e.sync()


def test_rctx_pipelined_requests_get_their_own_slots(start):
    e = start(RCTX, nbe=3)
    c, be = e.c, e.b0
    for x in range(1, 4):
        c.send("mg locality/a\r\n" * 3)
        for _ in range(3):
            assert be.recv_line() == "mg locality/a\r\n"
        be.send("EN\r\n" * 3)
        assert c.read_exact(3 * len("HD t%d\r\n" % x)) == ("HD t%d\r\n" % x) * 3
    e.sync()


FAILGEN = r"""
function mcp_config_routes(p)
  -- a parent whose child's generator throws from its second call on
  local failchild = (function()
    local armed = false
    local fg = mcp.funcgen_new()
    fg:ready({ n = "failchild", f = function(rctx)
      if armed then error("failgen") end
      armed = true
      return function(r) return "NF\r\n" end
    end })
    return fg
  end)()
  local failgen = (function()
    local fg = mcp.funcgen_new()
    local ch = fg:new_handle(failchild)
    fg:ready({ n = "failgen", f = function(rctx)
      return function(r) return rctx:enqueue_and_wait(r, ch) end
    end })
    return fg
  end)()
  mcp.attach(mcp.CMD_MG, failgen)
end
"""


def test_rctx_generator_failure_is_a_lua_start_failure(start):
    e = start(FAILGEN)
    # A parent slot pins a child slot. The child answers asynchronously, so
    # the pipelined second request needs a second parent slot, whose child
    # slot's generator throws.
    e.c.send("mg failgen/a\r\nmg failgen/a\r\n")
    assert e.c.read_line() == "NF\r\n"
    assert e.c.read_line() == "SERVER_ERROR lua start failure\r\n"
    e.sync()


PINNED = r"""
function mcp_config_routes(p)
  gens = 0
  local child = fgen(p, function(rctx, h)
    gens = gens + 1
    return function(r) return rctx:enqueue_and_wait(r, h.z1) end
  end, "pinchild")
  local parent = mcp.funcgen_new()
  local ch = parent:new_handle(child)
  parent:ready({ n = "pinparent", f = function(rctx)
    return function(r) return rctx:enqueue_and_wait(r, ch) end
  end })
  mcp.attach(mcp.CMD_MG, parent)
  mcp.attach(mcp.CMD_MD, fn(function(r) return "SERVER_ERROR gens=" .. gens .. "\r\n" end))
end
"""


def test_rctx_parent_slot_pins_a_cached_child_slot(start):
    e = start(PINNED)
    c, be = e.c, e.b0
    # ready() made one slot of each; the parent's slot pinned the child's.
    assert c.call("md x\r\n") == "SERVER_ERROR gens=1\r\n"
    funcs = T.to(e.px).stats("proxyfuncs")
    assert (funcs["slots_pinchild"], funcs["slots_pinparent"]) == ("1", "1"), funcs
    # Two pipelined requests: one more parent slot, pinning one new child slot.
    c.send("mg a\r\nmg b\r\n")
    assert be.recv_line() == "mg a\r\n"
    assert be.recv_line() == "mg b\r\n"
    be.send("EN\r\nEN\r\n")
    assert c.read_exact(8) == "EN\r\nEN\r\n"
    assert c.call("md x\r\n") == "SERVER_ERROR gens=2\r\n"
    funcs = T.to(e.px).stats("proxyfuncs")
    assert (funcs["slots_pinchild"], funcs["slots_pinparent"]) == ("2", "2"), funcs


def test_rctx_sleep_inside_a_child(start):
    e = start(RCTX, nbe=3)
    c, be2 = e.c, e.be[1]
    for k in ("subsleep/a", "subsleep/after"):
        t0 = time.monotonic()
        c.send("mg %s t\r\n" % k)
        assert be2.recv_line() == "mg %s t\r\n" % k
        assert time.monotonic() - t0 > 0.15
        be2.send("HD t94\r\n")
        assert c.read_line() == "HD t94\r\n"
    e.sync()


# ---- 9: logging ----------------------------------------------------------------

LOGGING = r"""
function mcp_config_routes(p)
  local map = {
    log = fn(function(r)
      mcp.log("testing manual log messages for " .. r:key())
      return "END\r\n"
    end),
    logreq = fgen(p, function(rctx, h)
      return function(r)
        local res = rctx:enqueue_and_wait(r, h.z1)
        if r:key() == "logreq/cfd" then
          mcp.log_req(r, res, "withcfd", rctx:cfd())
        else
          mcp.log_req(r, res, "logreqtest")
        end
        return res
      end
    end),
    logsamp = fgen(p, function(rctx, h)
      return function(r)
        local res = rctx:enqueue_and_wait(r, h.z1)
        mcp.log_reqsample(150, 0, true, r, res, "logsampletest")
        return res
      end
    end),
  }
  mcp.attach(mcp.CMD_ANY_STORAGE, mcp.router_new({ map = map }))
end
"""


def test_mcp_log(start):
    e = start(LOGGING)
    w = watcher(e.px, "proxyuser proxyreqs")
    assert e.c.call("get log/a\r\n") == "END\r\n"
    line = w.log_line()
    assert re.match(LOG_TS + r"type=proxy_user msg=testing manual log messages for log/a\n$", line), line


def test_mcp_log_req(start):
    e = start(LOGGING)
    w = watcher(e.px, "proxyreqs")
    c, be = e.c, e.b0
    c.send("get logreq/a\r\n")
    assert be.recv_line() == "get logreq/a\r\n"
    be.send("END\r\n")
    assert c.read_line() == "END\r\n"
    line = w.log_line()
    m = re.match(LOG_TS + r"type=proxy_req elapsed=(\d+) type=105 code=17 status=0 res=ok cfd=(\d+) "
                 r"be=127\.0\.0\.1:%d detail=logreqtest req=get logreq/a\n$" % be.port, line)
    assert m, line
    assert m.group(2) == "0"  # no cfd argument
    c.send("get logreq/cfd\r\n")
    assert be.recv_line() == "get logreq/cfd\r\n"
    be.send("VALUE logreq/cfd 0 1\r\nx\r\nEND\r\n")
    assert c.read_exact(len("VALUE logreq/cfd 0 1\r\nx\r\nEND\r\n")) == "VALUE logreq/cfd 0 1\r\nx\r\nEND\r\n"
    line = w.log_line()
    m = re.match(LOG_TS + r"type=proxy_req elapsed=\d+ type=100 code=15 status=0 res=good cfd=(\d+) "
                 r"be=127\.0\.0\.1:%d detail=withcfd req=get logreq/cfd\n$" % be.port, line)
    assert m, line
    assert int(m.group(1)) > 0


def test_mcp_log_reqsample_logs_only_slow_requests(start):
    e = start(LOGGING)
    w = watcher(e.px, "proxyreqs")
    c, be = e.c, e.b0
    c.send("get logsamp/a\r\n")
    assert be.recv_line() == "get logsamp/a\r\n"
    be.send("END\r\n")
    assert c.read_line() == "END\r\n"
    c.send("get logsamp/b\r\n")
    assert be.recv_line() == "get logsamp/b\r\n"
    time.sleep(0.3)  # past the 150 ms threshold
    be.send("END\r\n")
    assert c.read_line() == "END\r\n"
    line = w.log_line()
    m = re.match(LOG_TS + r"type=proxy_req elapsed=(\d+) type=105 code=17 status=0 res=ok cfd=\d+ "
                 r"be=127\.0\.0\.1:%d detail=logsampletest req=get logsamp/b\n$" % be.port, line)
    assert m, line
    assert int(m.group(1)) > 150000
    # allerrors: a fast error is logged too.
    c.send("get logsamp/c\r\n")
    assert be.recv_line() == "get logsamp/c\r\n"
    be.send("SERVER_ERROR boom\r\n")
    assert c.read_line() == "SERVER_ERROR boom\r\n"
    line = w.log_line()
    assert re.match(LOG_TS + r"type=proxy_req elapsed=\d+ type=108 code=23 status=-1 res=any cfd=\d+ "
                    r"be=127\.0\.0\.1:%d detail=logsampletest req=get logsamp/c\n$" % be.port, line), line
