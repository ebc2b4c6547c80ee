"""The built-in proxy (-o proxy_config), part 1: config load and reload,
routes, pools of backends on pipelined sockets, failure handling, stats.

Backends are either a second Trove (plain cache) or a mock written here, so
that these tests run without memcached. memcached's own proxy tests (its
t/proxy*.t, run with memcached's harness as docs/memcached_suite.md says,
group "proxy") check the same behaviour against memcached's mock backends;
docs/proxy.md, "What memcached's proxy tests require", lists what they need.
"""

import os
import signal
import socket
import threading
import time

import pytest

from harness import server as hserver
from harness.client import Conn, wait_for

pytestmark = pytest.mark.trove_only  # memcached 1.6.45 needs a proxy build; see the suite

ROUTES = """
function mcp_config_routes(p)
  local fg = mcp.funcgen_new()
  local h = fg:new_handle(p.main)
  fg:ready({ n = "main", f = function(rctx)
    return function(r) return rctx:enqueue_and_wait(r, h) end
  end })
  for _, c in ipairs({mcp.CMD_MG, mcp.CMD_MS, mcp.CMD_GET, mcp.CMD_SET, mcp.CMD_DELETE}) do
    mcp.attach(c, fg)
  end
  mcp.attach(mcp.CMD_MD, function(r) return "SERVER_ERROR md route " .. r:key() .. "\\r\\n" end)
  mcp.attach(mcp.CMD_MA, function(r) return nil end)
  mcp.attach(mcp.CMD_TOUCH, function(r) error("boom") end)
end
"""


class T:
    """A raw connection whose replies are str (the harness's are bytes)."""

    def __init__(self, c):
        self.c = c

    @classmethod
    def to(cls, srv):
        return cls(Conn.to(srv))

    def call(self, d, timeout=None):
        return self.c.call(d, timeout).decode("latin1")

    def read_line(self, timeout=None):
        return self.c.read_line(timeout).decode("latin1")

    def read_exact(self, n, timeout=None):
        return self.c.read_exact(n, timeout).decode("latin1")

    def rt(self, d, timeout=None):
        r = self.c.rt(d, timeout)
        return r.decode("latin1") if isinstance(r, bytes) else r

    def log_line(self, timeout=5):
        """One `watch` line (they end in LF only)."""
        return self.c.read_until(b"\n", timeout).decode("latin1")

    def __getattr__(self, name):
        return getattr(self.c, name)


def pools(backends, extra=""):
    """A config whose pool `main` holds `backends` (list of (label, port))."""
    bs = ", ".join("mcp.backend('%s', '127.0.0.1', %d)" % b for b in backends)
    return ("function mcp_config_pools()\n  %s\n  return { main = mcp.pool({%s}) }\nend\n"
            % (extra, bs)) + ROUTES


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


class MockBackend:
    """A memcached stand-in: answers `version`, stores `ms`, answers `mg`
    with HD/VA/EN. mode "silent" accepts and never answers; "slow" waits
    20 ms before each reply."""

    def __init__(self, mode="ok", port=0):
        self.mode = mode
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", port))
        self.lsock.listen(64)
        self.port = self.lsock.getsockname()[1]
        self.accepts = 0
        self.lines = []
        self.data = {}
        self.conns = []
        self.stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stop:
            try:
                s, _ = self.lsock.accept()
            except OSError:
                return
            self.accepts += 1
            self.conns.append(s)
            threading.Thread(target=self._serve, args=(s,), daemon=True).start()

    def _serve(self, s):
        buf = b""
        while not self.stop:
            try:
                b = s.recv(65536)
            except OSError:
                return
            if not b:
                return
            buf += b
            while b"\r\n" in buf:
                line, rest = buf.split(b"\r\n", 1)
                words = line.split()
                if words and words[0] == b"ms":
                    n = int(words[2])
                    if len(rest) < n + 2:
                        break
                    self.data[words[1]] = rest[:n]
                    rest = rest[n + 2:]
                buf = rest
                self.lines.append(line)
                if self.mode == "silent":
                    continue
                if self.mode == "slow" and words and words[0] != b"version":
                    time.sleep(0.02)
                out = self._reply(words)
                if self.mode == "flappy":  # validates, then hangs up
                    try:
                        s.sendall(out)
                        s.close()
                    except OSError:
                        pass
                    return
                try:
                    s.sendall(out)
                except OSError:
                    return

    def _reply(self, words):
        cmd = words[0] if words else b""
        if cmd == b"version":
            return b"VERSION 1.0.0-mock\r\n"
        if cmd == b"ms":
            return b"HD\r\n"
        if cmd == b"mg":
            v = self.data.get(words[1])
            if v is None:
                return b"EN\r\n"
            if b"v" in words[2:]:
                return b"VA %d\r\n%s\r\n" % (len(v), v)
            return b"HD\r\n"
        return b"SERVER_ERROR mock cannot " + cmd + b"\r\n"

    def close(self):
        self.stop = True
        self.lsock.close()
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass


@pytest.fixture
def mock():
    made = []

    def make(*a, **kw):
        m = MockBackend(*a, **kw)
        made.append(m)
        return m
    yield make
    for m in made:
        m.close()


def proxy(make_server, cfg, *args):
    return make_server("-o", "proxy_config=" + cfg, *args)


def watcher(srv, what="proxyevents"):
    w = T.to(srv)
    assert w.call("watch %s\r\n" % what) == "OK\r\n"
    return w


# ---- routes and passthrough ------------------------------------------------

def test_routes_reach_the_backend_and_local_commands_stay_local(make_server, tmp_path):
    be = make_server()
    cfg = write(tmp_path, "p.lua", pools([("b1", be.port)]))
    px = proxy(make_server, cfg)
    c = T.to(px)
    assert c.call("ms foo 2\r\nhi\r\n") == "HD\r\n"
    assert c.call("mg foo v\r\n") == "VA 2\r\n"
    assert c.read_line() == "hi\r\n"
    # The value is on the backend, not in the proxy's own cache.
    assert T.to(be).get("foo") == b"hi"
    assert c.call("set t 5 0 3\r\nabc\r\n") == "STORED\r\n"
    assert T.to(be).get("t") == b"abc"
    assert c.rt("get t\r\n") == "VALUE t 5 3\r\nabc\r\nEND\r\n"
    # Unhooked: served by the proxy's local cache.
    assert c.call("add local 0 0 1\r\nx\r\n") == "STORED\r\n"
    assert T.to(be).get("local") is None
    assert c.call("version\r\n").startswith("VERSION ")
    assert c.call("mn\r\n") == "MN\r\n"


def test_pymemcache_through_the_proxy(make_server, tmp_path):
    from pymemcache.client.base import Client
    be = make_server()
    px = proxy(make_server, write(tmp_path, "p.lua", pools([("b1", be.port)])))
    cl = Client(("127.0.0.1", px.port), timeout=5)
    for i in range(50):
        assert cl.set("k%d" % i, b"v%d" % i)
    for i in range(50):
        assert cl.get("k%d" % i) == b"v%d" % i
    assert cl.delete("k3")
    assert cl.get("k3") is None


def test_handler_results(make_server, tmp_path):
    be = make_server()
    px = proxy(make_server, write(tmp_path, "p.lua", pools([("b1", be.port)])))
    c = T.to(px)
    assert c.call("md somekey\r\n") == "SERVER_ERROR md route somekey\r\n"
    assert c.call("ma k\r\n") == "SERVER_ERROR bad response\r\n"
    assert c.call("touch k 10\r\n") == "SERVER_ERROR lua failure\r\n"
    assert c.call("mn\r\n") == "MN\r\n"  # the connection is fine


def test_pipelined_replies_stay_in_order(make_server, tmp_path, mock):
    m = mock()
    px = proxy(make_server, write(tmp_path, "p.lua", pools([("b1", m.port)])), "-t", "2")
    c = T.to(px)
    req = []
    want = []
    for i in range(60):
        req.append("ms k%d 3\r\nv%02d\r\n" % (i, i % 100))
        want.append("HD\r\n")
        if i % 10 == 0:
            req.append("mn\r\n")  # local, between routed ones
            want.append("MN\r\n")
        req.append("mg k%d v\r\n" % i)
        want.append("VA 3\r\nv%02d\r\n" % (i % 100))
    c.send("".join(req))
    got = c.read_exact(len("".join(want)))
    assert got == "".join(want)


TWO_POOLS = """
function mcp_config_pools()
  return { fast = mcp.pool({ mcp.backend('f', '127.0.0.1', %d) }),
           slow = mcp.pool({ mcp.backend('s', '127.0.0.1', %d) }) }
end
function mcp_config_routes(p)
  local fg = mcp.funcgen_new()
  local hf = fg:new_handle(p.fast)
  local hs = fg:new_handle(p.slow)
  fg:ready({ n = "split", f = function(rctx)
    return function(r)
      local k = r:key()
      if string.sub(k, 1, 4) == "both" then
        -- two waits in one request: each handle has its own response object
        local a = rctx:enqueue_and_wait(r, hs)
        local b = rctx:enqueue_and_wait(r, hf)
        if b:hit() then return a end
        return "SERVER_ERROR fast missed\\r\\n"
      end
      if string.sub(k, 1, 1) == "s" then return rctx:enqueue_and_wait(r, hs) end
      return rctx:enqueue_and_wait(r, hf)
    end
  end })
  mcp.attach(mcp.CMD_MG, fg)
end
"""


def test_replies_in_order_when_backends_answer_out_of_order(make_server, tmp_path, mock):
    # Requests to a slow backend finish after later ones to a fast backend:
    # the later replies wait (copied aside) and everything leaves in order,
    # past the connection's first queue size (16), twice over on the same
    # reused request and response objects.
    fast, slow = mock(), mock("slow")
    for i in range(50):
        fast.data[b"f%d" % i] = b"fast%d" % i
        slow.data[b"s%d" % i] = b"slow%d" % i
    fast.data[b"both"] = b"F"
    slow.data[b"both"] = b"from-slow"
    px = proxy(make_server, write(tmp_path, "p.lua", TWO_POOLS % (fast.port, slow.port)))
    c = T.to(px)
    for _ in range(2):
        req, want = [], []
        for i in range(50):
            k = b"s%d" % i if i % 3 == 0 else b"f%d" % i
            v = (slow if i % 3 == 0 else fast).data[k]
            req.append("mg %s v\r\n" % k.decode())
            want.append("VA %d\r\n%s\r\n" % (len(v), v.decode()))
        req.append("mg both v\r\n")
        want.append("VA 9\r\nfrom-slow\r\n")
        c.send("".join(req))
        assert c.read_exact(len("".join(want)), timeout=10) == "".join(want)


def test_storage_value_split_across_reads(make_server, tmp_path, mock):
    m = mock()
    px = proxy(make_server, write(tmp_path, "p.lua", pools([("b1", m.port)])))
    c = T.to(px)
    c.send("ms split 10\r\nhello")
    time.sleep(0.2)
    c.send("world\r\n")
    assert c.read_line() == "HD\r\n"
    assert m.data[b"split"] == b"helloworld"
    # A client that leaves mid-value leaves no request behind.
    c2 = T.to(px)
    c2.send("ms gone 100\r\nabc")
    time.sleep(0.1)
    c2.close()
    assert wait_for(lambda: T.to(px).stat("proxy_req_active") == "0")


# ---- start-up and reload -----------------------------------------------------

def test_bad_config_is_a_startup_error(tmp_path):
    for text in ("this is not lua(", "function mcp_config_pools() error('nope') end",
                 "function mcp_config_pools() return function() end end"):
        cfg = write(tmp_path, "bad.lua", text)
        with pytest.raises(hserver.ServerError):
            hserver.Server(["-o", "proxy_config=" + cfg], start_timeout=3)


def test_help_lists_proxy_config():
    import subprocess
    out = subprocess.run([hserver.find_binary(), "-h"], capture_output=True, text=True).stdout
    assert "proxy_config" in out


def test_reload_on_sighup_logs_start_and_done(make_server, tmp_path):
    be = make_server()
    mode = tmp_path / "mode.lua"
    mode.write_text('return "a"')
    text = ("local mode = dofile('%s')\n" % mode +
            pools([("b1", be.port)]).replace(ROUTES, "") + """
function mcp_config_routes(p)
  mcp.attach(mcp.CMD_MG, function(r) return "SERVER_ERROR mode " .. mode .. "\\r\\n" end)
end
""")
    px = proxy(make_server, write(tmp_path, "p.lua", text))
    c = T.to(px)
    assert c.call("mg x\r\n") == "SERVER_ERROR mode a\r\n"
    reloads = int(c.stat("proxy_config_reloads"))
    w = watcher(px)
    mode.write_text('return "b"')
    px.proc.send_signal(signal.SIGHUP)
    assert "type=proxy_conf status=start" in w.log_line()
    assert "type=proxy_conf status=done" in w.log_line()
    assert c.call("mg x\r\n") == "SERVER_ERROR mode b\r\n"
    assert int(c.stat("proxy_config_reloads")) == reloads + 1


def test_reload_with_the_same_config_opens_no_sockets(make_server, tmp_path, mock):
    m = mock()
    px = proxy(make_server, write(tmp_path, "p.lua", pools([("b1", m.port)])), "-t", "4")
    assert wait_for(lambda: m.accepts == 4)  # one per worker without iothread
    w = watcher(px)
    px.proc.send_signal(signal.SIGHUP)
    assert "status=start" in w.log_line()
    assert "status=done" in w.log_line()
    time.sleep(0.3)
    assert m.accepts == 4


def test_iothread_pool_shares_one_socket(make_server, tmp_path, mock):
    m = mock()
    text = pools([("b1", m.port)], extra="mcp.backend_use_iothread(true)")
    px = proxy(make_server, write(tmp_path, "p.lua", text), "-t", "4")
    assert wait_for(lambda: m.accepts == 1)
    conns = [T.to(px) for _ in range(8)]
    for i, c in enumerate(conns):
        assert c.call("ms io%d 1\r\nx\r\n" % i) == "HD\r\n"
    time.sleep(0.2)
    assert m.accepts == 1


def test_cron_and_scheduled_reload(make_server, tmp_path, mock):
    m = mock()
    text = pools([("b1", m.port)], extra="""
  mcp.register_cron("r", { every = 1, rerun = false, func = function()
    mcp.schedule_config_reload()
  end })""")
    px = proxy(make_server, write(tmp_path, "p.lua", text))
    w = watcher(px)
    assert "status=start" in w.log_line()
    assert "status=done" in w.log_line()
    c = T.to(px)
    assert int(c.stat("proxy_config_cron_runs")) >= 1
    assert c.stat("proxy_config_cron_fails") == "0"


def test_runtime_error_during_reload_exits(make_server, tmp_path, mock):
    m = mock()
    p = tmp_path / "p.lua"
    p.write_text(pools([("b1", m.port)]))
    px = proxy(make_server, str(p))
    p.write_text("function mcp_config_pools() error('broken') end\n" + ROUTES)
    px.signal(signal.SIGHUP)
    assert px.wait_exit(timeout=5) not in (None, 0)


# ---- backends ---------------------------------------------------------------

def test_silent_backend_is_marked_bad_then_recovers(make_server, tmp_path, mock):
    m = mock(mode="silent")
    text = """
function mcp_config_pools()
  local b = mcp.backend({ label = "b1", host = "127.0.0.1", port = %d,
                          readtimeout = 0.3, failurelimit = 0, retrytimeout = 0.5 })
  return { main = mcp.pool({ b }) }
end
""" % m.port + ROUTES
    px = proxy(make_server, write(tmp_path, "p.lua", text), "-t", "1")
    c = T.to(px)
    assert wait_for(lambda: c.stats("proxybe").get("bad_b1") == "1", timeout=5)
    assert c.call("mg foo v\r\n") == "SERVER_ERROR backend failure\r\n"
    assert int(c.stat("proxy_backend_marked_bad")) >= 1
    m.mode = "ok"  # answers validation from its next connection on
    assert wait_for(lambda: "bad_b1" not in c.stats("proxybe"), timeout=5)
    assert c.call("ms foo 1\r\nz\r\n") == "HD\r\n"


def test_backend_log_lines(make_server, tmp_path, mock):
    m = mock(mode="silent")
    text = """
function mcp_config_pools()
  local b = mcp.backend({ label = "b1", host = "127.0.0.1", port = %d,
                          readtimeout = 0.3, failurelimit = 0, retrytimeout = 60 })
  return { main = mcp.pool({ b }) }
end
""" % m.port + ROUTES
    cfg = write(tmp_path, "p.lua", text)
    px = proxy(make_server, cfg, "-t", "1")
    c = T.to(px)
    assert wait_for(lambda: c.stats("proxybe").get("bad_b1") == "1", timeout=5)
    w = watcher(px)
    px.proc.send_signal(signal.SIGHUP)  # same config: the backend stays, nothing is logged for it
    assert "status=start" in w.log_line()
    assert "status=done" in w.log_line()
    # A new backend (other options) logs its validation failure and markedbad.
    (tmp_path / "p.lua").write_text(text.replace("readtimeout = 0.3", "readtimeout = 0.4"))
    px.proc.send_signal(signal.SIGHUP)
    lines = [w.log_line() for _ in range(4)]
    assert "status=start" in lines[0] and "status=done" in lines[1]
    assert ("type=proxy_backend error=readvalidate name=127.0.0.1 port=%d label=b1 depth=0 rbuf="
            % m.port) in lines[2]
    assert ("type=proxy_backend error=markedbad name=127.0.0.1 port=%d label=b1 retry=60"
            % m.port) in lines[3]


def test_down_backend_fails_at_once(make_server, tmp_path, mock):
    m = mock()
    text = """
function mcp_config_pools()
  return { main = mcp.pool({ mcp.backend({ label = "d", host = "127.0.0.1", port = %d, down = true }) }) }
end
""" % m.port + ROUTES
    px = proxy(make_server, write(tmp_path, "p.lua", text))
    c = T.to(px)
    assert c.call("mg foo\r\n") == "SERVER_ERROR backend failure\r\n"
    assert m.accepts == 0


def test_refused_backend_fails_fast(make_server, tmp_path):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nobody listens there
    px = proxy(make_server, write(tmp_path, "p.lua", pools([("b1", port)])))
    c = T.to(px)
    t0 = time.monotonic()
    assert c.call("mg foo\r\n") == "SERVER_ERROR backend failure\r\n"
    assert time.monotonic() - t0 < 2


def test_depth_limit(make_server, tmp_path, mock):
    m = mock(mode="silent")
    text = pools([("b1", m.port)], extra="""mcp.backend_depth_limit(3)
  mcp.backend_read_timeout(60)
  mcp.backend_connect_timeout(60)""")
    px = proxy(make_server, write(tmp_path, "p.lua", text), "-t", "1")
    holder = T.to(px)
    for i in range(4):
        holder.send("mg k%d\r\n" % i)
        time.sleep(0.05)
    c = T.to(px)
    assert c.call("mg other\r\n") == "SERVER_ERROR backend failure\r\n"
    assert c.stat("proxy_request_failed_depth") == "1"


def test_connections_option_uses_several_sockets(make_server, tmp_path, mock):
    m = mock()
    text = """
function mcp_config_pools()
  return { main = mcp.pool({ mcp.backend({ label = "c", host = "127.0.0.1", port = %d, connections = 3 }) }) }
end
""" % m.port + ROUTES
    proxy(make_server, write(tmp_path, "p.lua", text), "-t", "1")
    assert wait_for(lambda: m.accepts == 3)


def test_keys_spread_over_the_pool_by_jump_hash(make_server, tmp_path, mock):
    ms = [mock() for _ in range(3)]
    px = proxy(make_server, write(tmp_path, "p.lua",
                                  pools([("b%d" % i, m.port) for i, m in enumerate(ms)])), "-t", "1")
    c = T.to(px)
    for i in range(90):
        assert c.call("ms /test/%d 1\r\nx\r\n" % i) == "HD\r\n"
    counts = [len(m.data) for m in ms]
    assert sum(counts) == 90 and min(counts) > 10
    # The same key always lands on the same backend.
    for i in range(90):
        key = b"/test/%d" % i
        assert sum(1 for m in ms if key in m.data) == 1


# ---- tags, stats, limits ----------------------------------------------------

def test_tagged_listener_uses_its_hooks(make_server, tmp_path, mock):
    m = mock()
    text = pools([("b1", m.port)]).replace(ROUTES, "") + """
function mcp_config_routes(p)
  mcp.attach(mcp.CMD_MG, function(r) return "SERVER_ERROR untagged\\r\\n" end)
  mcp.attach(mcp.CMD_MG, function(r) return "SERVER_ERROR tag b\\r\\n" end, "b")
  mcp.attach(mcp.CMD_MS, function(r) return "SERVER_ERROR ms\\r\\n" end)
end
"""
    tport = hserver.free_port()
    px = proxy(make_server, write(tmp_path, "p.lua", text), "-l", "127.0.0.1",
               "-l", "tag_b_:127.0.0.1:%d" % tport)
    assert T.to(px).call("mg x\r\n") == "SERVER_ERROR untagged\r\n"
    t = T(Conn(tport))
    assert t.call("mg x\r\n") == "SERVER_ERROR tag b\r\n"
    assert t.call("ms x 1\r\nv\r\n") == "SERVER_ERROR ms\r\n"  # falls back to the untagged hook


def test_user_stats_and_rate_limits(make_server, tmp_path):
    text = """
function mcp_config_pools()
  mcp.add_stat(1, "hits")
  mcp.add_stat(2, "neg")
  return { g = mcp.ratelim_global_tbf({ limit = 3, fillrate = 1, tickrate = 100000 }) }
end
function mcp_config_routes(p)
  local t = mcp.ratelim_tbf({ limit = 3, fillrate = 1, tickrate = 100000 })
  mcp.attach(mcp.CMD_MG, function(r)
    mcp.stat(1, 1)
    if t(1) then return "HD\\r\\n" end
    return "SERVER_ERROR limited\\r\\n"
  end)
  mcp.attach(mcp.CMD_MD, function(r)
    mcp.stat(2, -1)
    if p.g(1) then return "HD\\r\\n" end
    return "SERVER_ERROR glimited\\r\\n"
  end)
end
"""
    px = proxy(make_server, write(tmp_path, "p.lua", text), "-t", "1")
    c = T.to(px)
    # The bucket starts full (3) and passes only while it holds more than asked.
    assert [c.call("mg a\r\n") for _ in range(3)] == ["HD\r\n", "HD\r\n", "SERVER_ERROR limited\r\n"]
    assert [c.call("md a\r\n") for _ in range(3)] == ["HD\r\n", "HD\r\n", "SERVER_ERROR glimited\r\n"]
    st = c.stats("proxy")
    assert st["user_hits"] == "3"
    assert st["user_neg"] == str(2 ** 64 - 3)


def test_stats_proxy_counts_commands_and_the_vm(make_server, tmp_path):
    """memcached 1.6.45's `stats proxy` fields: vm_gc_runs, vm_memory_kb and
    cmd_<name> for every request the proxy routed (local ones not counted)."""
    be = make_server()
    px = proxy(make_server, write(tmp_path, "p.lua", pools([("b1", be.port)])), "-t", "2")
    c = T.to(px)
    st = c.stats("proxy")
    names = [k for k in st if k.startswith("cmd_")]
    assert names == ["cmd_mg", "cmd_ms", "cmd_md", "cmd_mn", "cmd_ma", "cmd_me", "cmd_get",
                     "cmd_gat", "cmd_set", "cmd_add", "cmd_cas", "cmd_gets", "cmd_gats",
                     "cmd_incr", "cmd_decr", "cmd_touch", "cmd_append", "cmd_prepend",
                     "cmd_delete", "cmd_replace"]
    assert int(st["vm_memory_kb"]) > 0
    gc0 = int(st["vm_gc_runs"])
    for i in range(20):
        assert c.call("ms k%d 1\r\nv\r\n" % i) == "HD\r\n"
    for i in range(3000):  # enough garbage for the collector to run
        c.send("mg k%d v\r\n" % (i % 20))
    for i in range(3000):
        assert c.read_line() == "VA 1\r\n"
        assert c.read_line() == "v\r\n"
    assert c.call("md x\r\n").startswith("SERVER_ERROR md route")
    assert c.call("add local 0 0 1\r\nx\r\n") == "STORED\r\n"  # unhooked: local
    st = c.stats("proxy")
    assert st["cmd_ms"] == "20" and st["cmd_mg"] == "3000" and st["cmd_md"] == "1"
    assert st["cmd_add"] == "0"
    assert int(st["vm_gc_runs"]) > gc0


def test_tls_backend_needs_init_tls(tmp_path):
    text = ("function mcp_config_pools() return mcp.pool({ mcp.backend({ label = 'x', "
            "host = '127.0.0.1', port = 1, tls = true }) }) end\nfunction mcp_config_routes() end\n")
    cfg = write(tmp_path, "u.lua", text)
    with pytest.raises(hserver.ServerError) as e:
        hserver.Server(["-o", "proxy_config=" + cfg], start_timeout=3)
    assert "TLS requested but not initialized: call mcp.init_tls()" in str(e.value)


def test_mcp_log_reaches_proxyuser_watchers(make_server, tmp_path):
    text = """
function mcp_config_pools() return {} end
function mcp_config_routes(p)
  mcp.attach(mcp.CMD_MG, function(r) mcp.log("saw " .. r:key()) return "HD\\r\\n" end)
end
"""
    px = proxy(make_server, write(tmp_path, "p.lua", text))
    w = watcher(px, "proxyuser")
    c = T.to(px)
    assert c.call("mg abc\r\n") == "HD\r\n"
    assert "type=proxy_user msg=saw abc" in w.log_line()


# ---- under load ------------------------------------------------------------

def _load_client(port, idx, stop, errors, counts, allow_failure):
    """Pipelines ms+mg pairs with values unique to this client and checks each
    reply against its own request."""
    c = Conn(port)
    n = 0
    try:
        while not stop.is_set():
            batch = []
            for j in range(8):
                k = "c%d_%d" % (idx, (n + j) % 50)
                v = "v%d_%d" % (idx, n + j)
                batch.append((k, v))
            c.send("".join("ms %s %d\r\n%s\r\nmg %s v\r\n" % (k, len(v), v, k) for k, v in batch))
            for k, v in batch:
                r1 = c.read_line(timeout=10)
                if r1 == b"SERVER_ERROR backend failure\r\n" and allow_failure:
                    r2 = c.read_line(timeout=10)
                    if r2 == b"SERVER_ERROR backend failure\r\n":
                        counts["failed"] += 1
                        continue
                    if r2.startswith(b"VA "):
                        c.read_line(timeout=10)  # an older value of k: fine after a failed set
                        counts["failed"] += 1
                        continue
                    if r2 == b"EN\r\n":  # a restarted backend that never had k
                        counts["failed"] += 1
                        continue
                    errors.append((k, r1, r2))
                    return
                if r1 != b"HD\r\n":
                    errors.append((k, r1))
                    return
                r2 = c.read_line(timeout=10)
                if r2 == b"SERVER_ERROR backend failure\r\n" and allow_failure:
                    counts["failed"] += 1
                    continue
                val = c.read_line(timeout=10)
                if r2 != b"VA %d\r\n" % len(v) or val != v.encode() + b"\r\n":
                    errors.append((k, r2, val))
                    return
                counts["ok"] += 1
            n += 8
    except Exception as e:  # noqa: BLE001 - reported by the test
        errors.append(repr(e))
    finally:
        c.close()


def _run_load(port, clients, allow_failure=False):
    stop = threading.Event()
    errors = []
    counts = {"ok": 0, "failed": 0}
    ts = [threading.Thread(target=_load_client, args=(port, i, stop, errors, counts, allow_failure))
          for i in range(clients)]
    for t in ts:
        t.start()
    return stop, ts, errors, counts


def test_reload_under_load_drops_and_misorders_nothing(make_server, tmp_path, mock):
    m = mock()
    p = tmp_path / "p.lua"
    p.write_text(pools([("b1", m.port)]))
    px = proxy(make_server, str(p), "-t", "4")
    w = watcher(px)
    stop, ts, errors, counts = _run_load(px.port, 6)
    try:
        for i in range(5):
            time.sleep(0.2)
            # Alternate an identical config and one that changes the backend's
            # options (new sockets), so both reload paths run under load.
            extra = "mcp.backend_read_timeout(%d)" % (3 + i % 2)
            p.write_text(pools([("b1", m.port)], extra=extra))
            px.proc.send_signal(signal.SIGHUP)
            assert "status=start" in w.log_line()
            assert "status=done" in w.log_line()
        time.sleep(0.2)
    finally:
        stop.set()
        for t in ts:
            t.join(timeout=20)
    assert errors == []
    assert counts["ok"] > 50 and counts["failed"] == 0  # > 50: sanitizer builds are slow


def test_backend_killed_and_restarted_mid_load(make_server, tmp_path, mock):
    m = mock()
    port = m.port
    text = """
function mcp_config_pools()
  local b = mcp.backend({ label = "b1", host = "127.0.0.1", port = %d,
                          failurelimit = 1, retrytimeout = 0.2, readtimeout = 1 })
  return { main = mcp.pool({ b }) }
end
""" % port + ROUTES
    px = proxy(make_server, write(tmp_path, "p.lua", text), "-t", "2")
    stop, ts, errors, counts = _run_load(px.port, 4, allow_failure=True)
    try:
        time.sleep(0.5)
        ok_before = counts["ok"]
        m.close()  # every socket and the listener go away
        time.sleep(0.8)
        assert counts["failed"] > 0
        m2 = mock(port=port)
        m2.data = dict(m.data)
        assert wait_for(lambda: counts["ok"] > ok_before + 100, timeout=10)
    finally:
        stop.set()
        for t in ts:
            t.join(timeout=20)
    assert errors == []
    assert ok_before > 0


def test_backend_log_option_writes_proxyreqs_lines(make_server, tmp_path, mock):
    m = mock()
    text = """
function mcp_config_pools()
  local b1 = mcp.backend({ label = "b1", host = "127.0.0.1", port = %d, log = { tag = "fastlog" } })
  local b2 = mcp.backend({ label = "b2", host = "127.0.0.1", port = %d, log = { errors = true, tag = "errs" } })
  return { main = mcp.pool({ b1 }), errs = mcp.pool({ b2 }) }
end
function mcp_config_routes(p)
  local fg = mcp.funcgen_new()
  local h = fg:new_handle(p.main)
  local h2 = fg:new_handle(p.errs)
  fg:ready({ f = function(rctx)
    return function(r)
      if r:command() == mcp.CMD_MG then return rctx:enqueue_and_wait(r, h) end
      return rctx:enqueue_and_wait(r, h2)
    end
  end })
  mcp.attach(mcp.CMD_MG, fg)
  mcp.attach(mcp.CMD_MS, fg)
  mcp.attach(mcp.CMD_SET, fg)
end
""" % (m.port, m.port)
    px = proxy(make_server, write(tmp_path, "p.lua", text), "-t", "1")
    w = watcher(px, "proxyreqs")
    c = T.to(px)
    assert c.call("mg nokey v\r\n") == "EN\r\n"
    line = w.log_line()
    assert "type=proxy_req elapsed=" in line
    assert (" type=101 code=17 status=0 res=ok cfd=" in line and
            " be=127.0.0.1:%d detail=fastlog req=mg nokey v" % m.port in line), line
    assert "cfd=0 " not in line
    # errors=true alone: a good reply is not logged, an error is.
    assert c.call("ms k 1\r\nx\r\n") == "HD\r\n"
    assert c.call("set k 0 0 1\r\nx\r\n") == "SERVER_ERROR mock cannot set\r\n"
    line = w.log_line()
    assert "type=108 code=23 status=-1 res=any" in line and "detail=errs req=set k 0 0 1" in line, line


def _log_lines(w, seconds):
    out = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            out.append(w.log_line(timeout=max(0.05, deadline - time.monotonic())))
        except Exception:  # noqa: BLE001 - a timeout ends the collection
            break
    return out


def test_flapping_backend_backs_off(make_server, tmp_path, mock):
    good, flappy = mock(), mock(mode="flappy")
    p = tmp_path / "p.lua"
    text = """
function mcp_config_pools()
  local b = mcp.backend({ label = "f", host = "127.0.0.1", port = %d, failurelimit = 0,
                          retrytimeout = 1, flaptime = 5, flapbackofframp = 3 })
  return { main = mcp.pool({ b }) }
end
""" + ROUTES
    p.write_text(text % good.port)
    px = proxy(make_server, str(p), "-t", "1")
    w = watcher(px)
    p.write_text(text % flappy.port)
    px.proc.send_signal(signal.SIGHUP)
    lines = _log_lines(w, 3)
    # Validated, then dropped within flaptime: one flap past the limit of 0,
    # so the retry is floor(1) * 3^1 = 3 s, logged as markedbadflap.
    assert any("error=disconnected" in ln and "label=f" in ln for ln in lines), lines
    assert any(("type=proxy_backend error=markedbadflap name=127.0.0.1 port=%d label=f retry=3"
                % flappy.port) in ln for ln in lines), lines
    assert not any("error=markedbad " in ln for ln in lines), lines


def test_active_request_limit(make_server, tmp_path, mock):
    m = mock(mode="silent")
    text = pools([("b1", m.port)], extra="""mcp.active_req_limit(1)
  mcp.backend_read_timeout(30)""")
    px = proxy(make_server, write(tmp_path, "p.lua", text), "-t", "1")
    a = T.to(px)
    a.send("mg held\r\n")
    assert wait_for(lambda: T.to(px).stat("proxy_req_active") == "1")
    b = T.to(px)
    assert b.call("mg other\r\n") == "SERVER_ERROR active request limit reached\r\n"
    assert b.stats("proxy")["active_req_limit"] == "1"


def test_unix_socket_listener_is_proxied(make_server, tmp_path):
    text = """
function mcp_config_pools() return {} end
function mcp_config_routes(p)
  mcp.attach(mcp.CMD_MG, function(r) return "SERVER_ERROR via unix\\r\\n" end)
end
"""
    path = str(tmp_path / "proxy.sock")
    px = proxy(make_server, write(tmp_path, "p.lua", text), "-s", path)
    c = T.to(px)
    assert c.call("mg x\r\n") == "SERVER_ERROR via unix\r\n"
    assert c.call("version\r\n").startswith("VERSION ")


def test_config_sequences_keep_their_order_in_worker_vms(make_server, tmp_path):
    # A list returned by mcp_config_pools is a sequence again in every worker
    # VM: pairs() and ipairs() visit it in order, as in the config VM
    # (memcached's t/proxyfuncgen.lua builds its handles with pairs()).
    cfg = write(tmp_path, "seq.lua", r"""
function mcp_config_pools()
  -- three entries: a hash part of 4 nodes would give 3, 1, 2
  return { short = { "a", "b", "c" }, long = { "d", "e", "f", "g", "h", "i", "j" } }
end
function mcp_config_routes(t)
  local out = {}
  for _, list in ipairs({ t.short, t.long }) do
    for _, v in pairs(list) do out[#out + 1] = v end
  end
  local s = table.concat(out)
  mcp.attach(mcp.CMD_MG, function(r) return "SERVER_ERROR " .. s .. "\r\n" end)
end
""")
    px = proxy(make_server, cfg)
    assert T.to(px).call("mg k\r\n") == "SERVER_ERROR abcdefghij\r\n"
