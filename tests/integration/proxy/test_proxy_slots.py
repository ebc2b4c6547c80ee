"""The proxy's slot cache (src/proxy/slot_cache.cc): a funcgen keeps the
slots a burst made, sheds them a slot at a time once traffic is calm, never
below one, frees a slot's pinned child slots with it, and a reload frees the
slots of the funcgens it replaced. Figures are memcached 1.6.45's, as its
t/proxyslotcache.t pins them for its debug build's easing constants, which
the debug and ASan builds here use too (a release build eases over 5000
rounds and 60 s, as memcached's release build)."""

import signal
import socket
import threading

import pytest

from test_proxy import T, proxy, watcher, write

pytestmark = pytest.mark.trove_only

CONFIG = r"""
function mcp_config_pools()
  return mcp.pool({ mcp.backend('b1', '127.0.0.1', %d) })
end
local function basic_fgen(p)
  local fgen = mcp.funcgen_new()
  local h = fgen:new_handle(p)
  fgen:ready({ n = "foo", f = function(rctx)
    return function(r)
      if string.find(r:key(), "collect$") then
        collectgarbage(); collectgarbage()
        return "SERVER_ERROR " .. tostring(collectgarbage("count")) .. "\r\n"
      end
      return rctx:enqueue_and_wait(r, h)
    end
  end })
  return fgen
end
function mcp_config_routes(p)
  local map = { one = basic_fgen(p), two = basic_fgen(basic_fgen(p)),
                three = basic_fgen(basic_fgen(basic_fgen(p))) }
  basic_fgen(p)  -- never attached: goes with the garbage
  mcp.attach(mcp.CMD_MG, mcp.router_new({ map = map }))
end
"""


class GatedBackend:
    """Answers `version`; holds every other request until `gate` of them
    are waiting, then answers them all (HD) and each later one at once."""

    def __init__(self):
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(8)
        self.port = self.lsock.getsockname()[1]
        self.gate = 0
        self.held = 0
        self.cv = threading.Condition()
        self.conns = []
        threading.Thread(target=self._accept, daemon=True).start()

    def hold(self, n):
        with self.cv:
            self.gate, self.held = n, 0

    def wait_held(self, n, timeout=10):
        with self.cv:
            assert self.cv.wait_for(lambda: self.held >= n, timeout), self.held

    def _accept(self):
        while True:
            try:
                s, _ = self.lsock.accept()
            except OSError:
                return
            self.conns.append(s)
            threading.Thread(target=self._serve, args=(s,), daemon=True).start()

    def _serve(self, s):
        buf = b""
        while True:
            try:
                b = s.recv(65536)
            except OSError:
                return
            if not b:
                return
            buf += b
            out = b""
            while b"\r\n" in buf:
                line, buf = buf.split(b"\r\n", 1)
                if line.startswith(b"version"):
                    out += b"VERSION 1.0.0-mock\r\n"
                    continue
                with self.cv:
                    if self.gate > 0:
                        self.held += 1
                        self.cv.notify_all()
                        if self.held < self.gate:
                            continue
                        out += b"HD\r\n" * self.gate
                        self.gate = 0
                        continue
                out += b"HD\r\n"
            if out:
                try:
                    s.sendall(out)
                except OSError:
                    return

    def close(self):
        self.lsock.close()
        for c in self.conns:
            c.close()


@pytest.fixture
def gated():
    g = GatedBackend()
    yield g
    g.close()


def slots(c):
    st = c.stats("proxyfuncs")
    return int(st["funcs_foo"]), int(st["slots_foo"])


def burst(c, be, prefix, n):
    be.hold(n)
    c.send(("mg %s/go N50\r\n" % prefix).encode() * n)
    for _ in range(n):
        assert c.read_line(10) == "HD\r\n"


def one_by_one(c, prefix, n):
    for i in range(n):
        assert c.call("mg %s/go C%d\r\n" % (prefix, i)) == "HD\r\n"


def vm_kb(c):
    line = c.call("mg one/collect\r\n")
    assert line.startswith("SERVER_ERROR ")
    return float(line.split()[1])


@pytest.mark.parametrize("prefix,peak", [("one", 105), ("two", 204), ("three", 303)])
def test_a_burst_is_shed_slot_by_slot_down_to_one(make_server, tmp_path, gated, prefix, peak):
    px = proxy(make_server, write(tmp_path, "s.lua", CONFIG % gated.port), "-t", "1")
    c = T.to(px)
    assert slots(c) == (6, 6)  # one slot per funcgen, made by fg:ready
    start_kb = vm_kb(c)
    burst(c, gated, prefix, 100)
    # A slot per request in flight, and one pinned child slot per level.
    assert slots(c) == (6, peak)
    peak_kb = vm_kb(c)
    assert peak_kb > start_kb * 1.5
    one_by_one(c, prefix, 50)  # still building pressure: nothing freed
    assert slots(c) == (6, peak)
    one_by_one(c, prefix, 100)
    _, s = slots(c)
    assert 6 < s < peak  # shed a few, not all at once
    one_by_one(c, prefix, 1200)
    assert slots(c) == (6, 6)  # never below one slot per funcgen
    # The freed slots' memory is back; what stays is Lua's registry and the
    # free lists, which keep their grown arrays (memcached's test, run after
    # smaller bursts, sees its start figure x1.5).
    end_kb = vm_kb(c)
    assert end_kb < start_kb + (peak_kb - start_kb) / 3, (start_kb, peak_kb, end_kb)


def test_a_new_burst_keeps_its_slots(make_server, tmp_path, gated):
    # A request that finds no idle slot resets the pressure: two bursts in a
    # row do not shed slots between them.
    px = proxy(make_server, write(tmp_path, "s.lua", CONFIG % gated.port), "-t", "1")
    c = T.to(px)
    for _ in range(3):
        burst(c, gated, "one", 60)
        one_by_one(c, "one", 40)
        assert slots(c) == (6, 65)


def test_reload_frees_the_replaced_funcgens_slots(make_server, tmp_path, gated):
    px = proxy(make_server, write(tmp_path, "s.lua", CONFIG % gated.port), "-t", "1")
    c = T.to(px)
    w = watcher(px)
    burst(c, gated, "three", 50)
    assert slots(c) == (6, 153)
    px.proc.send_signal(signal.SIGHUP)
    assert "status=start" in w.log_line()
    assert "status=done" in w.log_line()
    # The old funcgens' idle slots went with the reload, at once.
    assert slots(c) == (6, 6)
    # Slots busy across a reload are freed when they finish, not cached:
    # 19 requests wait at the backend over the reload, the 20th (on the new
    # config) lets them all go.
    gated.hold(20)
    c.send(b"mg two/go N50\r\n" * 19)
    gated.wait_held(19)
    s = T.to(px)  # c's replies wait behind the 19
    assert slots(s) == (6, 6 + 18 * 2)
    px.proc.send_signal(signal.SIGHUP)
    assert "status=start" in w.log_line()
    assert "status=done" in w.log_line()
    # The two old funcgens of "two" count until their busy slots finish.
    assert slots(s) == (6 + 2, 6 + 19 * 2)
    c.send(b"mg two/go N50\r\n")
    for _ in range(20):
        assert c.read_line(10) == "HD\r\n"
    assert slots(c) == (6, 6)
    kb = []
    for _ in range(8):
        burst(c, gated, "three", 50)
        px.proc.send_signal(signal.SIGHUP)
        assert "status=start" in w.log_line()
        assert "status=done" in w.log_line()
        kb.append(vm_kb(c))
    # Flat over reloads: nothing of a replaced config stays behind.
    assert kb[-1] == kb[2], kb
    assert slots(c) == (6, 6)
