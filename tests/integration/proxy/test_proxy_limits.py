"""The proxy's limits as memcached 1.6.45 has them: mcp.buffer_memory_limit
(client values and backend replies held by requests in flight, per worker;
a value over the limit is refused with SERVER_ERROR out of memory and
swallowed, a backend reply over it fails its request and resets the socket
with error=outofmemory), both limits split between the workers and shown in
`stats proxy` as memcached shows them, and `stats` proxy_conn_errors /
proxy_conn_oom. Backends here are raw sockets the test answers by hand."""

import signal
import socket
import time

import pytest

from harness.client import wait_for
from test_proxy import T, proxy, watcher, write
from test_routelib import start as routelib_start

pytestmark = pytest.mark.trove_only

ROUTES = """
function mcp_config_routes(p)
  local fg = mcp.funcgen_new()
  local h = fg:new_handle(p.main)
  fg:ready({ n = "main", f = function(rctx)
    return function(r) return rctx:enqueue_and_wait(r, h) end
  end })
  for _, c in ipairs({mcp.CMD_MG, mcp.CMD_MS, mcp.CMD_GET, mcp.CMD_SET}) do mcp.attach(c, fg) end
end
"""


def limit_config(tmp_path, port, limit_file):
    """Pool `main` on 127.0.0.1:port; the limit (kB) is read from limit_file
    at each (re)load."""
    return write(tmp_path, "p.lua", """
function mcp_config_pools()
  mcp.backend_read_timeout(10)
  local f = io.open('%s')
  local kb = tonumber(f:read('a'))
  f:close()
  if kb >= 0 then mcp.buffer_memory_limit(kb) end
  return { main = mcp.pool({ mcp.backend('b1', '127.0.0.1', %d) }) }
end
""" % (limit_file, port) + ROUTES)


class RawBackend:
    """A listening socket the test answers by hand, line by line."""

    def __init__(self):
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(8)
        self.lsock.settimeout(10)
        self.port = self.lsock.getsockname()[1]
        self.s = None
        self.buf = b""

    def accept(self):
        """Accepts the proxy's socket and answers its `version`."""
        self.s, _ = self.lsock.accept()
        self.s.settimeout(10)
        self.buf = b""
        assert self.read_line() == b"version\r\n"
        self.s.sendall(b"VERSION 1.0.0-mock\r\n")

    def read_line(self):
        while b"\n" not in self.buf:
            d = self.s.recv(65536)
            assert d, "backend socket closed"
            self.buf += d
        line, self.buf = self.buf.split(b"\n", 1)
        return line + b"\n"

    def read_exact(self, n):
        while len(self.buf) < n:
            d = self.s.recv(65536)
            assert d, "backend socket closed"
            self.buf += d
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send(self, b):
        self.s.sendall(b)

    def close(self):
        for s in (self.s, self.lsock):
            if s is not None:
                s.close()


@pytest.fixture
def raw_backend():
    made = []

    def make():
        b = RawBackend()
        made.append(b)
        return b
    yield make
    for b in made:
        b.close()


def reload(px, w):
    px.proc.send_signal(signal.SIGHUP)
    assert "type=proxy_conf status=start" in w.log_line()
    assert "type=proxy_conf status=done" in w.log_line()


def pstats(px):
    return T.to(px).stats("proxy")


def test_buffer_memory_limit_refuses_values_fails_replies_and_reloads(make_server, tmp_path,
                                                                       raw_backend):
    be = raw_backend()
    kb = tmp_path / "kb"
    kb.write_text("20")
    px = proxy(make_server, limit_config(tmp_path, be.port, kb), "-t", "1")
    be.accept()
    w = watcher(px)
    st = pstats(px)
    assert st["buffer_memory_limit"] == "20480"  # 20 kB, one worker
    assert st["buffer_memory_used"] == "0"

    a, b = T.to(px), T.to(px)
    big = "x" * 30000
    # Under the limit: taken, and held (value and CRLF) while in flight.
    a.send("ms foo 30000 T30\r\n%s\r\n" % big)
    assert be.read_line() == b"ms foo 30000 T30\r\n"
    assert be.read_exact(30002) == big.encode() + b"\r\n"
    assert wait_for(lambda: pstats(px)["buffer_memory_used"] == "30002")
    ms0 = int(pstats(px)["cmd_ms"])

    # Over it now: refused at the line, the value swallowed unread (even
    # when it arrives in pieces), the connection fine afterwards.
    assert b.call("ms bar 30000 T30\r\n%s\r\n" % big) == "SERVER_ERROR out of memory\r\n"
    b.send("ms bar 10 T30\r\n")
    assert b.read_line() == "SERVER_ERROR out of memory\r\n"
    b.send("mn\r\nmn\r\n")  # looks like commands, but is the value
    time.sleep(0.1)
    b.send("ab\r\n")
    assert b.call("version\r\n").startswith("VERSION ")
    assert int(pstats(px)["cmd_ms"]) == ms0 + 2  # refused requests count, as memcached
    # A request without a value is not refused; it queues behind a's.
    b.send("mg held v\r\n")
    assert be.read_line() == b"mg held v\r\n"
    assert pstats(px)["buffer_memory_used"] == "30002"

    # A reply while over the limit: memcached cannot buffer it, fails the
    # requests on that socket and resets it.
    be.send(b"HD\r\n")
    assert a.read_line() == "SERVER_ERROR backend failure\r\n"
    assert b.read_line() == "SERVER_ERROR backend failure\r\n"
    line = w.log_line()
    assert "type=proxy_backend error=outofmemory name=127.0.0.1" in line
    assert "label=b1 depth=2 rbuf=HD%0D%0A" in line
    be.accept()  # reconnects at once
    assert wait_for(lambda: pstats(px)["buffer_memory_used"] == "0")

    # Both connections work again.
    for c in (a, b):
        c.send("ms foo 2 T30\r\nhi\r\n")
        assert be.read_line() == b"ms foo 2 T30\r\n"
        assert be.read_line() == b"hi\r\n"
        be.send(b"HD\r\n")
        assert c.read_line() == "HD\r\n"

    # Backend replies count while their request holds them: a miss, then
    # a value for a get; all given back once answered.
    a.send("get foo\r\n")
    assert be.read_line() == b"get foo\r\n"
    be.send(b"VALUE foo 0 2\r\nhi\r\nEND\r\n")
    assert a.read_line() == "VALUE foo 0 2\r\n"
    assert a.read_line() == "hi\r\n"
    assert a.read_line() == "END\r\n"
    assert pstats(px)["buffer_memory_used"] == "0"

    # Reload: raised, kept by a config without the call (memcached keeps
    # the last value set), removed (0), still removed without the call.
    kb.write_text("200")
    reload(px, w)
    assert pstats(px)["buffer_memory_limit"] == "204800"
    kb.write_text("-1")
    reload(px, w)
    assert pstats(px)["buffer_memory_limit"] == "204800"
    kb.write_text("0")
    reload(px, w)
    assert pstats(px)["buffer_memory_limit"] == "0"
    kb.write_text("-1")
    reload(px, w)
    assert pstats(px)["buffer_memory_limit"] == "0"
    # No limit: two large values in flight at once.
    a.send("ms foo 30000 T30\r\n%s\r\n" % big)
    b.send("ms bar 30000 T30\r\n%s\r\n" % big)
    for _ in range(2):
        assert be.read_line().startswith(b"ms ")
        assert be.read_exact(30002) == big.encode() + b"\r\n"
    assert wait_for(lambda: pstats(px)["buffer_memory_used"] == "60004")
    be.send(b"HD\r\nHD\r\n")
    assert a.read_line() == "HD\r\n"
    assert b.read_line() == "HD\r\n"
    assert wait_for(lambda: pstats(px)["buffer_memory_used"] == "0")


HOLD_CONFIG = """
function mcp_config_pools()
  mcp.backend_read_timeout(10)
  mcp.buffer_memory_limit(1)
  return { fast = mcp.pool({ mcp.backend('f', '127.0.0.1', %d) }),
           slow = mcp.pool({ mcp.backend('s', '127.0.0.1', %d) }) }
end
function mcp_config_routes(p)
  local fg = mcp.funcgen_new()
  local hf = fg:new_handle(p.fast)
  local hs = fg:new_handle(p.slow)
  fg:ready({ n = "both", f = function(rctx)
    return function(r)
      rctx:enqueue(r, { hf, hs })
      rctx:wait_cond(2)
      return rctx:res_any(hf)
    end
  end })
  mcp.attach(mcp.CMD_MG, fg)
  mcp.attach(mcp.CMD_MS, fg)
end
"""


def test_a_held_backend_reply_counts_against_the_limit(make_server, tmp_path, raw_backend):
    fast, slow = raw_backend(), raw_backend()
    px = proxy(make_server, write(tmp_path, "p.lua", HOLD_CONFIG % (fast.port, slow.port)), "-t", "1")
    fast.accept()
    slow.accept()
    assert pstats(px)["buffer_memory_limit"] == "1024"
    a = T.to(px)
    a.send("mg k v\r\n")
    assert fast.read_line() == b"mg k v\r\n"
    assert slow.read_line() == b"mg k v\r\n"
    reply = b"VA 2000\r\n" + b"y" * 2000 + b"\r\n"
    fast.send(reply)  # held until the slow one answers
    assert wait_for(lambda: pstats(px)["buffer_memory_used"] == str(len(reply)))
    # Over the limit by a reply alone: a value is refused.
    assert T.to(px).call("ms k 1\r\nz\r\n") == "SERVER_ERROR out of memory\r\n"
    slow.send(b"EN\r\n")
    assert a.read_line() == "VA 2000\r\n"
    assert a.read_exact(2002) == "y" * 2000 + "\r\n"
    assert wait_for(lambda: pstats(px)["buffer_memory_used"] == "0")


@pytest.mark.parametrize("threads,req,kb,shown_req,shown_kb", [
    ("1", 4, 20, "4", "20480"),
    # memcached's split: divided only when over two per worker; shown as a
    # worker's share times the workers.
    ("3", 10, 1, "9", "1023"),
    ("3", 5, 1, "15", "1023"),
    ("4", 0, 0, "0", "0"),
])
def test_limits_are_split_between_workers_as_memcached(make_server, tmp_path, raw_backend,
                                                         threads, req, kb, shown_req, shown_kb):
    be = raw_backend()
    text = """
function mcp_config_pools()
  mcp.active_req_limit(%d)
  mcp.buffer_memory_limit(%d)
  return { main = mcp.pool({ mcp.backend('b1', '127.0.0.1', %d) }) }
end
""" % (req, kb, be.port) + ROUTES
    px = proxy(make_server, write(tmp_path, "p.lua", text), "-t", threads)
    st = pstats(px)
    assert st["active_req_limit"] == shown_req
    assert st["buffer_memory_limit"] == shown_kb


def test_buffer_memory_limit_argument_is_checked(make_server, tmp_path):
    from harness import server as hserver
    text = ("function mcp_config_pools() mcp.buffer_memory_limit(-1) "
            "return mcp.pool({ mcp.backend('b', '127.0.0.1', 1) }) end\n"
            "function mcp_config_routes() end\n")
    with pytest.raises(hserver.ServerError) as e:
        hserver.Server(["-o", "proxy_config=" + write(tmp_path, "bad.lua", text)], start_timeout=3)
    assert "buffer_memory_limit: value out of range" in str(e.value)


def test_routelib_settings_pass_buffer_memory_limit(make_server, tmp_path, raw_backend):
    be = raw_backend()
    px = routelib_start(make_server, tmp_path, """
settings{ buffer_memory_limit = 64 }
pools{ main = { backends = { "127.0.0.1:%d" } } }
routes{ default = route_direct{ child = "main" } }
""" % be.port, "-t", "2")
    assert pstats(px)["buffer_memory_limit"] == "65536"


def test_proxy_conn_errors_and_oom_in_stats(make_server, tmp_path, raw_backend):
    be = raw_backend()
    kb = tmp_path / "kb"
    kb.write_text("-1")
    px = proxy(make_server, limit_config(tmp_path, be.port, kb), "-t", "1")
    c = T.to(px)
    st = c.stats()
    keys = list(st)
    # memcached's order, after proxy_conn_requests
    i = keys.index("proxy_conn_requests")
    assert keys[i:i + 4] == ["proxy_conn_requests", "proxy_conn_errors", "proxy_conn_oom",
                             "proxy_req_active"]
    assert st["proxy_conn_errors"] == "0" and st["proxy_conn_oom"] == "0"
    assert c.call("ms k notanumber\r\n") == "CLIENT_ERROR parsing request\r\n"
    assert c.stat("proxy_conn_errors") == "1"
    d = T.to(px)
    d.send("mg " + "k" * 600 + "\r\n")
    assert d.read_line() == "CLIENT_ERROR request too long\r\n"
    assert c.stat("proxy_conn_errors") == "2"
    assert c.stat("proxy_conn_oom") == "0"
