"""The routelib Trove ships (src/proxy/routelib/*.lua, one chunk): memcached's
declarative proxy config language (settings{}, pools{}, routes{} and the
route_* handlers of docs.memcached.org/features/proxy/reference) on top of
the proxy's mcp API.

Trove is started as memcached's docs say, `-o proxy_config=routelib,
proxy_arg=<config>` (the copy built into the binary). While developing,
TROVE_ROUTELIB_FILE=/path/to/routelib.lua (the build writes the whole chunk to build/<preset>/src/proxy/generated/proxy/routelib.lua) loads that file instead (the same
chunk), so the library can be tested without rebuilding Trove.

The backends are the Mock below: a memcached stand-in that records every
request line and can be slow, silent, broken or missing everything.
"""

import os
import signal
import socket
import threading
import time

import pytest

from harness import server as hserver
from harness.client import Conn, wait_for
from test_proxy import T, watcher, write

pytestmark = pytest.mark.trove_only  # memcached's routelib is a separate file there


def routelib_name():
    return os.environ.get("TROVE_ROUTELIB_FILE") or "routelib"


def proxy_args(cfg, libs=()):
    return ["-o", "proxy_config=%s,proxy_arg=%s" % (":".join([routelib_name()] + list(libs)), cfg)]


def start(make_server, tmp_path, config, *args, libs=()):
    """A Trove running routelib with the user config `config` (text)."""
    cfg = write(tmp_path, "config.lua", config)
    extra = list(args) or ["-t", "2"]
    return make_server(*(proxy_args(cfg, libs) + extra))


def start_error(tmp_path, config, libs=()):
    """The start-up error text of a config that must not load."""
    cfg = write(tmp_path, "bad.lua", config)
    with pytest.raises(hserver.ServerError) as e:
        hserver.Server(proxy_args(cfg, libs) + ["-t", "2"], start_timeout=5)
    return str(e.value)


JOURNAL_LOCK = threading.Lock()


class Mock:
    """A memcached stand-in. Answers version, mg/ms/md, get/gets, set/add/
    replace/cas, delete and touch from its own dict; records every request
    line (str, without CRLF) in `lines`.

    mode: "ok"; "error" (SERVER_ERROR to all but version); "miss" (reads
    miss, writes are dropped with a success reply); "hang" (validates, then
    never answers). delay: seconds to wait before each reply."""

    def __init__(self, name, mode="ok", delay=0.0, journal=None):
        self.name = name
        self.journal = journal  # a shared list of (name, line), in arrival order
        self.mode = mode
        self.delay = delay
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(64)
        self.port = self.lsock.getsockname()[1]
        self.addr = "127.0.0.1:%d" % self.port
        self.lines = []
        self.data = {}     # key -> value (bytes)
        self.ttl = {}      # key -> the TTL of its last store
        self.conns = []
        self.closed = False
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def set(self, key, value):
        self.data[key.encode()] = value.encode()

    def got(self, prefix):
        """The recorded lines that start with prefix."""
        with self.lock:
            return [ln for ln in self.lines if ln.startswith(prefix)]

    def requests(self):
        """Recorded lines, the `version` validation left out."""
        with self.lock:
            return [ln for ln in self.lines if ln != "version"]

    def _accept(self):
        while not self.closed:
            try:
                s, _ = self.lsock.accept()
            except OSError:
                return
            self.conns.append(s)
            threading.Thread(target=self._serve, args=(s,), daemon=True).start()

    def _serve(self, s):
        buf = b""
        while not self.closed:
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
                value = None
                n = self._value_len(words)
                if n is not None:
                    if len(rest) < n + 2:
                        break
                    value, rest = rest[:n], rest[n + 2:]
                buf = rest
                with self.lock:
                    self.lines.append(line.decode("latin1"))
                if self.journal is not None:
                    with JOURNAL_LOCK:
                        self.journal.append((self.name, line.decode("latin1")))
                out = self._reply(words, value)
                if out is None:
                    continue
                if self.delay and words[:1] != [b"version"]:
                    time.sleep(self.delay)
                try:
                    s.sendall(out)
                except OSError:
                    return

    @staticmethod
    def _value_len(words):
        if not words:
            return None
        if words[0] == b"ms" and len(words) >= 3:
            return int(words[2])
        if words[0] in (b"set", b"add", b"replace", b"cas", b"append", b"prepend") and len(words) >= 5:
            return int(words[4])
        return None

    def _reply(self, words, value):
        cmd = words[0] if words else b""
        if cmd == b"version":
            return b"VERSION 1.6.99-mock\r\n"
        if self.mode == "hang":
            return None
        if self.mode == "error":
            return b"SERVER_ERROR %s is broken\r\n" % self.name.encode()
        miss = self.mode == "miss"
        if cmd == b"mg":
            v = None if miss else self.data.get(words[1])
            if v is None:
                return b"EN\r\n"
            if b"v" in words[2:]:
                return b"VA %d\r\n%s\r\n" % (len(v), v)
            return b"HD\r\n"
        if cmd == b"ms":
            if not miss:
                self.data[words[1]] = value
                for f in words[3:]:
                    if f.startswith(b"T"):
                        self.ttl[words[1]] = int(f[1:])
            return b"HD\r\n"
        if cmd == b"md":
            return b"HD\r\n" if self.data.pop(words[1], None) is not None else b"NF\r\n"
        if cmd in (b"get", b"gets"):
            out = b""
            for k in words[1:]:
                v = None if miss else self.data.get(k)
                if v is not None:
                    out += b"VALUE %s 0 %d\r\n%s\r\n" % (k, len(v), v)
            return out + b"END\r\n"
        if cmd in (b"set", b"add", b"replace", b"cas"):
            if not miss:
                self.data[words[1]] = value
                self.ttl[words[1]] = int(words[3])
            return None if words[-1] == b"noreply" else b"STORED\r\n"
        if cmd == b"delete":
            return b"DELETED\r\n" if self.data.pop(words[1], None) is not None else b"NOT_FOUND\r\n"
        if cmd == b"touch":
            return b"TOUCHED\r\n" if words[1] in self.data else b"NOT_FOUND\r\n"
        return b"ERROR\r\n"

    def kill(self):
        """The server goes away: listener and every connection closed."""
        self.closed = True
        self.lsock.close()
        for c in self.conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
                c.close()
            except OSError:
                pass


@pytest.fixture
def mocks():
    made = []

    def make(name="m", mode="ok", delay=0.0, journal=None):
        m = Mock(name, mode, delay, journal)
        made.append(m)
        return m
    yield make
    for m in made:
        m.kill()


def lua_list(ms):
    return "{ %s }" % ", ".join('"%s"' % m.addr for m in ms)


def mg_value(c, key):
    """The value of an `mg key v` through the proxy, or the reply line."""
    line = c.call("mg %s v\r\n" % key)
    if line.startswith("VA "):
        return c.read_line()[:-2]
    return line


# ---- the minimal configuration of the docs -----------------------------------

def test_minimal_docs_config_hashes_keys_over_the_pool(make_server, tmp_path, mocks):
    a, b = mocks("a"), mocks("b")
    px = start(make_server, tmp_path, """
-- Minimal configuration.
pools{
    main = {
        backends = { "%s", "%s" }
    }
}
routes{
    default = route_direct{ child = "main" }
}
""" % (a.addr, b.addr))
    c = T.to(px)
    for i in range(60):
        assert c.call("ms key%d 2\r\nv%d\r\n" % (i, i % 10)) == "HD\r\n"
    # jump hash over both backends, each key on exactly one
    assert len(a.data) + len(b.data) == 60
    assert min(len(a.data), len(b.data)) > 10
    assert not set(a.data) & set(b.data)
    for i in range(60):
        assert mg_value(c, "key%d" % i) == "v%d" % (i % 10)
    # text protocol too
    assert c.call("set t1 0 0 3\r\nabc\r\n") == "STORED\r\n"
    assert c.rt("get t1\r\n") == "VALUE t1 0 3\r\nabc\r\nEND\r\n"
    assert c.call("delete t1\r\n") == "DELETED\r\n"
    assert c.rt("get t1\r\n") == "END\r\n"


def test_backend_strings_labels_down_and_options(make_server, tmp_path, mocks):
    a, b, c3 = mocks("a"), mocks("b"), mocks("c")
    px = start(make_server, tmp_path, """
settings{ backend_connect_timeout = 3, backend_options = { readtimeout = 2 } }
pools{
    one = { backends = { "%s lbl_a" } },
    down = { backends = { "%s _down_" } },
    tbl = { backend_options = { retrytimeout = 1 },
            backends = { { host = "127.0.0.1", port = %d, connections = 2 } } },
}
routes{ map = {
    one = route_direct{ child = "one" },
    down = route_direct{ child = "down" },
    tbl = route_direct{ child = "tbl" },
} }
""" % (a.addr, b.addr, c3.port), "-t", "1")
    c = T.to(px)
    assert c.call("ms one/k 1\r\nx\r\n") == "HD\r\n" and a.data == {b"one/k": b"x"}
    assert c.call("ms down/k 1\r\nx\r\n") == "SERVER_ERROR backend failure\r\n"
    assert b.requests() == [] and b.conns == []  # down: never connected
    assert c.call("ms tbl/k 1\r\nx\r\n") == "HD\r\n" and c3.data == {b"tbl/k": b"x"}
    assert wait_for(lambda: len(c3.conns) == 2)  # connections = 2
    # the label given in the string names the backend
    a.kill()
    assert wait_for(lambda: T.to(px).stats("proxybe").get("bad_lbl_a") == "1", timeout=10)


# ---- route handlers ------------------------------------------------------------

def test_failover_when_a_backend_dies(make_server, tmp_path, mocks):
    a, b = mocks("a"), mocks("b")
    a.set("k", "from-a")
    b.set("k", "from-b")
    px = start(make_server, tmp_path, """
pools{
    pa = { backends = { { host = "127.0.0.1", port = %d, failurelimit = 0, retrytimeout = 60 } } },
    pb = { backends = { "%s" } },
}
routes{ default = route_failover{ children = { "pa", "pb" }, stats = true } }
""" % (a.port, b.addr))
    c = T.to(px)
    assert mg_value(c, "k") == "from-a"
    assert b.got("mg") == []  # no failover while the first answers
    a.kill()
    for _ in range(5):
        assert mg_value(c, "k") == "from-b"
    assert c.call("ms k2 2\r\nhi\r\n") == "HD\r\n" and b.data[b"k2"] == b"hi"
    assert int(c.stats("proxy")["user_default_retries"]) >= 6


def test_failover_on_miss_and_failover_count(make_server, tmp_path, mocks):
    a, b, c3 = mocks("a"), mocks("b"), mocks("c")
    b.set("miss/k", "b-miss")
    b.set("nomiss/k", "b-nomiss")
    b.set("count/k", "b-count")
    c3.set("all/k", "c-all")
    kids = '{ "pa", "pb", "pc" }'
    px = start(make_server, tmp_path, """
pools{ pa = { backends = { "%s" } }, pb = { backends = { "%s" } }, pc = { backends = { "%s" } } }
routes{ map = {
    miss = route_failover{ children = %s, miss = true },
    nomiss = route_failover{ children = %s },
    count = route_failover{ children = %s, miss = true, failover_count = 1 },
    all = route_failover{ children = %s, miss = true },
} }
""" % (a.addr, b.addr, c3.addr, kids, kids, kids, kids))
    c = T.to(px)
    assert mg_value(c, "miss/k") == "b-miss"       # a missed, b hit
    assert c3.got("mg miss/") == []                # c never asked
    assert c.call("mg nomiss/k v\r\n") == "EN\r\n"  # a miss is an answer
    assert b.got("mg nomiss/") == []
    assert c.call("mg count/k v\r\n") == "EN\r\n"   # only one try
    assert b.got("mg count/") == []
    assert mg_value(c, "all/k") == "c-all"         # down the whole list
    assert c.call("mg all/nothing v\r\n") == "EN\r\n"  # all miss: the miss
    assert [len(m.got("mg all/nothing")) for m in (a, b, c3)] == [1, 1, 1]


def test_failover_prefers_a_miss_to_an_error_and_gives_the_last_error(make_server, tmp_path, mocks):
    good, bad1, bad2 = mocks("good"), mocks("bad1", "error"), mocks("bad2", "error")
    px = start(make_server, tmp_path, """
pools{ g = { backends = { "%s" } }, e1 = { backends = { "%s" } }, e2 = { backends = { "%s" } } }
routes{ map = {
    best = route_failover{ children = { "g", "e1" }, miss = true },
    errs = route_failover{ children = { "e1", "e2" } },
} }
""" % (good.addr, bad1.addr, bad2.addr))
    c = T.to(px)
    assert c.call("mg best/k v\r\n") == "EN\r\n"
    assert bad1.got("mg best/k")  # it was asked, its error lost to the miss
    assert c.call("mg errs/k v\r\n") == "SERVER_ERROR bad2 is broken\r\n"


def test_failover_wait_moves_on_from_a_silent_backend(make_server, tmp_path, mocks):
    slow, b = mocks("slow", "hang"), mocks("b")
    b.set("k", "from-b")
    px = start(make_server, tmp_path, """
settings{ backend_read_timeout = 20 }
pools{ ps = { backends = { "%s" } }, pb = { backends = { "%s" } } }
routes{ default = route_failover{ children = { "ps", "pb" }, wait = 0.2 } }
""" % (slow.addr, b.addr))
    c = T.to(px)
    t0 = time.monotonic()
    assert mg_value(c, "k") == "from-b"
    took = time.monotonic() - t0
    assert 0.15 < took < 2, took
    assert slow.got("mg k")


def test_failover_zoned_set_tries_the_local_zone_first(make_server, tmp_path, mocks):
    z = {n: mocks(n) for n in ("z1", "z2", "z3")}
    for n, m in z.items():
        m.set("lz/k", "from-" + n)
        m.set("over/k", "from-" + n)
    body = """
pools{ set_zoned = {
    z1 = { backends = { "%s" } }, z2 = { backends = { "%s" } }, z3 = { backends = { "%s" } },
} }
routes{ map = {
    lz = route_failover{ children = "set_zoned" },
    over = route_failover{ children = "set_zoned", local_zone = "z3" },
} }
""" % (z["z1"].addr, z["z2"].addr, z["z3"].addr)
    px = start(make_server, tmp_path, 'local_zone("z2")\n' + body)
    c = T.to(px)
    for _ in range(3):
        assert mg_value(c, "lz/k") == "from-z2"
        assert mg_value(c, "over/k") == "from-z3"
    assert z["z1"].got("mg") == []


def test_failover_shuffle_orders_each_worker_differently(make_server, tmp_path, mocks):
    journal = []
    ms = [mocks("s%d" % i, journal=journal) for i in range(8)]
    zs = [mocks("z%d" % i, journal=journal) for i in range(4)]
    px = start(make_server, tmp_path, """
settings{ local_zone = "z2" }
pools{
    set_s = { %s },
    set_z = { z0 = { backends = { "%s" } }, z1 = { backends = { "%s" } },
              z2 = { backends = { "%s" } }, z3 = { backends = { "%s" } } },
}
routes{ map = {
    s = route_failover{ children = "set_s", miss = true, shuffle = true },
    z = route_failover{ children = "set_z", miss = true, shuffle = true },
} }
""" % (", ".join('{ backends = { "%s" } }' % m.addr for m in ms),
       zs[0].addr, zs[1].addr, zs[2].addr, zs[3].addr), "-t", "4")
    orders, zorders = set(), []
    for i in range(8):  # connections spread over the four workers
        c = T.to(px)
        del journal[:]
        assert c.call("mg s/miss%d v\r\n" % i) == "EN\r\n"  # all miss: every child once
        order = tuple(n for n, ln in journal if ln.startswith("mg s/miss"))
        assert sorted(order) == sorted(m.name for m in ms)
        orders.add(order)
        del journal[:]
        assert c.call("mg z/miss%d v\r\n" % i) == "EN\r\n"
        zorders.append([n for n, ln in journal if ln.startswith("mg z/miss")])
    assert len(orders) >= 2  # 8! orders: two workers alike is very unlikely
    assert all(o[0] == "z2" and sorted(o) == ["z0", "z1", "z2", "z3"] for o in zorders)


def test_allfastest_answers_from_the_fastest(make_server, tmp_path, mocks):
    s1, fast, s2 = mocks("s1", delay=0.6), mocks("fast"), mocks("s2", delay=0.6)
    for m in (s1, fast, s2):
        m.set("k/k", "from-" + m.name)
    for k in ("k/h", "m/h", "w/h"):
        s1.set(k, "hit-s1")  # only a slow one has these
    px = start(make_server, tmp_path, """
pools{ set_three = { { backends = { "%s" } }, { backends = { "%s" } }, { backends = { "%s" } } } }
routes{ map = {
    k = route_allfastest{ children = "set_three" },
    m = route_allfastest{ children = "set_three", miss = true },
    w = route_allfastest{ children = "set_three", miss = true, wait = 0.2 },
} }
""" % (s1.addr, fast.addr, s2.addr))
    c = T.to(px)
    t0 = time.monotonic()
    assert mg_value(c, "k/k") == "from-fast"
    assert time.monotonic() - t0 < 0.45
    # every child got it
    assert wait_for(lambda: all(m.got("mg k/k") for m in (s1, fast, s2)))
    # miss = false: the first non-error answer, a miss from the fast one
    time.sleep(0.7)
    assert c.call("mg k/h v\r\n") == "EN\r\n"
    # miss = true: waits for the (slow) hit
    time.sleep(0.7)
    t0 = time.monotonic()
    assert mg_value(c, "m/h") == "hit-s1"
    assert time.monotonic() - t0 >= 0.5
    # with wait, the best answer so far (the miss) after 0.2 s
    time.sleep(0.7)
    t0 = time.monotonic()
    assert c.call("mg w/h v\r\n") == "EN\r\n"
    assert 0.15 < time.monotonic() - t0 < 0.5


def test_allsync_waits_for_all_and_returns_an_error(make_server, tmp_path, mocks):
    a, slow, bad = mocks("a"), mocks("slow", delay=0.4), mocks("bad", "error")
    px = start(make_server, tmp_path, """
pools{ pa = { backends = { "%s" } }, ps = { backends = { "%s" } }, pe = { backends = { "%s" } } }
routes{ map = {
    good = route_allsync{ children = { "pa", "ps" } },
    bad = route_allsync{ children = { "pa", "ps", "pe" } },
} }
""" % (a.addr, slow.addr, bad.addr))
    c = T.to(px)
    t0 = time.monotonic()
    assert c.call("ms good/k 2\r\nhi\r\n") == "HD\r\n"
    assert time.monotonic() - t0 >= 0.35  # waited for the slow one
    assert a.data[b"good/k"] == b"hi" and slow.data[b"good/k"] == b"hi"
    assert c.call("ms bad/k 2\r\nhi\r\n") == "SERVER_ERROR bad is broken\r\n"
    assert a.data[b"bad/k"] == b"hi" and slow.data[b"bad/k"] == b"hi"


def test_allasync_answers_at_once_and_every_backend_gets_it(make_server, tmp_path, mocks):
    ms = [mocks("s%d" % i, delay=0.5) for i in range(3)]
    px = start(make_server, tmp_path, """
pools{ set_all = { %s } }
routes{ default = route_allasync{ children = "set_all" } }
""" % ", ".join('{ backends = { "%s" } }' % m.addr for m in ms))
    c = T.to(px)
    t0 = time.monotonic()
    assert c.call("ms k 2\r\nhi\r\n") == "NS\r\n"  # the null reply, at once
    assert c.call("set t 0 0 2\r\nho\r\n") == "NOT_STORED\r\n"
    assert time.monotonic() - t0 < 0.4
    assert wait_for(lambda: all(m.data.get(b"k") == b"hi" and m.data.get(b"t") == b"ho" for m in ms))


def test_split_answers_from_child_a_and_copies_to_child_b(make_server, tmp_path, mocks):
    a, b = mocks("a"), mocks("b", delay=0.5)
    a.set("k", "from-a")
    b.set("k", "from-b")
    px = start(make_server, tmp_path, """
pools{ pa = { backends = { "%s" } }, pb = { backends = { "%s" } } }
routes{ default = route_split{ child_a = "pa", child_b = "pb" } }
""" % (a.addr, b.addr))
    c = T.to(px)
    t0 = time.monotonic()
    assert c.call("ms new 3\r\nabc\r\n") == "HD\r\n"
    assert mg_value(c, "k") == "from-a"
    assert time.monotonic() - t0 < 0.4  # never waited for b
    assert a.data[b"new"] == b"abc"
    assert wait_for(lambda: b.data.get(b"new") == b"abc")
    assert wait_for(lambda: b.got("mg k v"))


def test_zfailover_prefers_the_local_zone(make_server, tmp_path, mocks, monkeypatch):
    z = {n: mocks(n) for n in ("east", "west", "south")}
    for n, m in z.items():
        m.set("main/both", "from-" + n)
    z["south"].set("main/far", "south-far")
    z["east"].set("main/far", "east-far")
    pools_text = """
pools{ set_main = {
    east = { backends = { "%s" } }, west = { backends = { "%s" } }, south = { backends = { "%s" } },
} }
routes{ map = { main = route_zfailover{ children = "set_main", miss = true, stats = true } } }
""" % (z["east"].addr, z["west"].addr, z["south"].addr)

    def check(px, local):
        c = T.to(px)
        for m in z.values():
            m.lines.clear()
        assert mg_value(c, "main/both") == "from-" + local
        assert [n for n, m in z.items() if m.got("mg main/both")] == [local]
        if local == "west":
            # a miss in the local zone: every other zone is asked at once
            assert mg_value(c, "main/far") in ("south-far", "east-far")
            assert wait_for(lambda: all(m.got("mg main/far") for m in z.values()))
            assert int(c.stats("proxy")["user_main_retries"]) == 1

    px = start(make_server, tmp_path, 'local_zone("west")\n' + pools_text)
    check(px, "west")
    px.stop()
    monkeypatch.setenv("TROVE_TEST_ZONE", "south")
    px = start(make_server, tmp_path, 'local_zone_from_env("TROVE_TEST_ZONE")\n' + pools_text)
    check(px, "south")
    px.stop()
    zf = write(tmp_path, "zone.txt", "east\n")
    px = start(make_server, tmp_path, 'local_zone_from_file("%s")\n' % zf + pools_text)
    check(px, "east")


def test_ttl_rewrites_the_ttl_of_sets(make_server, tmp_path, mocks):
    a = mocks("a")
    px = start(make_server, tmp_path, """
pools{ main = { backends = { "%s" } } }
routes{ default = route_ttl{ ttl = 45, child = "main" } }
""" % a.addr)
    c = T.to(px)
    assert c.call("set k1 5 999 2\r\nhi\r\n") == "STORED\r\n"
    assert c.call("add k2 0 0 2\r\nhi\r\n") == "STORED\r\n"
    assert c.call("ms k3 2 T999\r\nhi\r\n") == "HD\r\n"
    assert c.call("ms k4 2\r\nhi\r\n") == "HD\r\n"
    assert c.call("ms k5 2 F50\r\nhi\r\n") == "HD\r\n"
    assert a.got("set k1") == ["set k1 5 45 2"]
    assert a.got("add k2") == ["add k2 0 45 2"]
    assert a.got("ms k3") == ["ms k3 2 T45"]
    assert a.got("ms k4") == ["ms k4 2 T45"]
    assert a.got("ms k5") == ["ms k5 2 F50 T45"]
    assert a.ttl == {b"k1": 45, b"k2": 45, b"k3": 45, b"k4": 45, b"k5": 45}
    assert mg_value(c, "k1") == "hi"  # other commands pass unchanged
    assert a.got("mg k1") == ["mg k1 v"]


def test_ratelim_refuses_past_its_limit(make_server, tmp_path, mocks):
    a = mocks("a")
    a.set("lim/x", "v")
    px = start(make_server, tmp_path, """
pools{ main = { backends = { "%s" } } }
routes{ map = {
    lim = route_ratelim{ child = "main", limit = 5, fillrate = 1, tickrate = 100000, stats = true },
    inv = route_ratelim{ child = "main", limit = 5, fillrate = 1, tickrate = 100000, fail_until_limit = true },
} }
""" % a.addr, "-t", "1")
    c = T.to(px)
    got = [mg_value(c, "lim/x") for _ in range(10)]
    passed = [g for g in got if g != "EN\r\n"]
    assert 1 <= len(passed) <= 5 and got[:len(passed)] == passed  # passes first, then refused
    assert len(a.got("mg lim/")) == len(passed)  # refused ones never reach the backend
    assert c.call("set lim/s 0 0 1\r\nx\r\n") == "NOT_STORED\r\n"
    assert int(c.stats("proxy")["user_lim_limits"]) == 10 - len(passed) + 1
    # fail_until_limit: the other way round
    got = [c.call("ms inv/x 1\r\nx\r\n") for _ in range(10)]
    refused = got.count("NS\r\n")
    assert 1 <= refused <= 5 and got == ["NS\r\n"] * refused + ["HD\r\n"] * (10 - refused)
    assert len(a.got("ms inv/")) == 10 - refused


def test_ratelim_global_bucket_is_shared_by_the_workers(make_server, tmp_path, mocks):
    a = mocks("a")
    px = start(make_server, tmp_path, """
pools{ main = { backends = { "%s" } } }
routes{ default = route_ratelim{ child = "main", limit = 4, fillrate = 1, tickrate = 100000, global = true } }
""" % a.addr, "-t", "4")
    conns = [T.to(px) for _ in range(8)]  # spread over the four workers
    replies = [cn.call("ms k%d 1\r\nx\r\n" % i) for i, cn in enumerate(conns)]
    assert 1 <= replies.count("HD\r\n") <= 4
    assert replies.count("NS\r\n") == 8 - replies.count("HD\r\n")


def test_random_spreads_over_the_children(make_server, tmp_path, mocks):
    ms = [mocks("r%d" % i) for i in range(3)]
    px = start(make_server, tmp_path, """
pools{ set_r = { %s } }
routes{ default = route_random{ children = "set_r" } }
""" % ", ".join('{ backends = { "%s" } }' % m.addr for m in ms))
    c = T.to(px)
    for i in range(300):
        assert c.call("ms same 1\r\n%d\r\n" % (i % 10)) == "HD\r\n"
    counts = [len(m.got("ms same")) for m in ms]
    assert sum(counts) == 300 and min(counts) > 40, counts


def test_null_replies_match_the_command(make_server, tmp_path):
    px = start(make_server, tmp_path, "routes{ default = route_null{} }\n")
    c = T.to(px)
    expect = [
        ("get k\r\n", "END\r\n"), ("gets k\r\n", "END\r\n"),
        ("get a b c\r\n", "END\r\n"),
        ("set k 0 0 2\r\nhi\r\n", "NOT_STORED\r\n"), ("add k 0 0 2\r\nhi\r\n", "NOT_STORED\r\n"),
        ("cas k 0 0 2 5\r\nhi\r\n", "NOT_STORED\r\n"),
        ("delete k\r\n", "NOT_FOUND\r\n"), ("incr k 1\r\n", "NOT_FOUND\r\n"),
        ("touch k 10\r\n", "NOT_FOUND\r\n"),
        ("mg k v\r\n", "EN\r\n"), ("ms k 2\r\nhi\r\n", "NS\r\n"), ("md k\r\n", "NF\r\n"),
        ("ma k\r\n", "NF\r\n"), ("mg k Oxy k v\r\n", "EN Oxy kk\r\n"),
        ("md k O5 q\r\n", "NF O5\r\n"),
    ]
    for req, rep in expect:
        assert c.rt(req) == rep, req
    # quiet: a quiet miss and a noreply set say nothing
    assert c.rt("mg k q v\r\n") == ""
    assert c.rt("set k 0 0 2 noreply\r\nhi\r\n") == ""


def test_cmap_routes_by_command(make_server, tmp_path, mocks):
    g, s, d = mocks("g"), mocks("s"), mocks("d")
    for m in (g, s, d):
        m.set("k", "from-" + m.name)
    px = start(make_server, tmp_path, """
pools{ pg = { backends = { "%s" } }, ps = { backends = { "%s" } }, pd = { backends = { "%s" } } }
routes{
    cmap = {
        get = route_direct{ child = "pg" },
        mg = route_direct{ child = "pg" },
        set = route_direct{ child = "ps" },
    },
    default = route_direct{ child = "pd" },
}
""" % (g.addr, s.addr, d.addr))
    c = T.to(px)
    assert c.rt("get k\r\n") == "VALUE k 0 6\r\nfrom-g\r\nEND\r\n"
    assert mg_value(c, "k") == "from-g"
    assert c.call("set n 0 0 1\r\nx\r\n") == "STORED\r\n" and s.data[b"n"] == b"x"
    assert c.call("ms m 1\r\ny\r\n") == "HD\r\n" and d.data[b"m"] == b"y"  # not in cmap: default
    assert c.call("delete k\r\n") == "DELETED\r\n" and b"k" not in d.data
    assert g.got("set") == [] and g.got("delete") == [] and s.got("get") == []


def test_prefix_map_with_cmdmap_and_fallbacks(make_server, tmp_path, mocks):
    foo, bar, top, dflt = mocks("foo"), mocks("bar"), mocks("top"), mocks("dflt")
    px = start(make_server, tmp_path, """
pools{ foo = { backends = { "%s" } }, bar = { backends = { "%s" } },
       top = { backends = { "%s" } }, dflt = { backends = { "%s" } } }
routes{
    map = {
        foo = route_direct{ child = "foo" },
        bar = cmdmap{ set = route_direct{ child = "bar" }, all = route_direct{ child = "foo" } },
        baz = cmdmap{ ms = route_direct{ child = "bar" } },
    },
    cmap = { md = route_direct{ child = "top" } },
    default = route_direct{ child = "dflt" },
}
""" % (foo.addr, bar.addr, top.addr, dflt.addr))
    c = T.to(px)
    assert c.call("ms foo/1 1\r\na\r\n") == "HD\r\n" and b"foo/1" in foo.data
    assert c.call("set bar/2 0 0 1\r\nb\r\n") == "STORED\r\n" and b"bar/2" in bar.data
    assert c.call("ms bar/3 1\r\nc\r\n") == "HD\r\n" and b"bar/3" in foo.data  # cmdmap "all"
    assert c.call("ms baz/4 1\r\nd\r\n") == "HD\r\n" and b"baz/4" in bar.data
    assert c.call("md baz/4\r\n") == "NF\r\n" and top.got("md baz/4")  # no md in baz: cmap
    assert c.call("md other/5\r\n") == "NF\r\n" and top.got("md other/5")  # unknown prefix: cmap
    assert c.call("ms other/6 1\r\ne\r\n") == "HD\r\n" and b"other/6" in dflt.data
    assert c.call("ms noprefix 1\r\nf\r\n") == "HD\r\n" and b"noprefix" in dflt.data


def test_cmdmap_as_default_and_as_a_child(make_server, tmp_path, mocks):
    a, b, c3 = mocks("a"), mocks("b"), mocks("c")
    px = start(make_server, tmp_path, """
pools{ pa = { backends = { "%s" } }, pb = { backends = { "%s" } }, pc = { backends = { "%s" } } }
routes{
    map = { sp = route_split{ child_a = cmdmap{ ms = route_direct{ child = "pa" } }, child_b = "pc" } },
    default = cmdmap{ set = route_direct{ child = "pa" }, all = route_direct{ child = "pb" } },
}
""" % (a.addr, b.addr, c3.addr))
    c = T.to(px)
    assert c.call("set k 0 0 1\r\nx\r\n") == "STORED\r\n" and b"k" in a.data
    assert c.call("ms k2 1\r\nx\r\n") == "HD\r\n" and b"k2" in b.data
    assert c.call("ms sp/k 1\r\nx\r\n") == "HD\r\n" and b"sp/k" in a.data
    assert wait_for(lambda: b"sp/k" in c3.data)
    assert c.call("md sp/k\r\n") == "SERVER_ERROR no route for this command\r\n"


def test_prefix_map_modes(make_server, tmp_path, mocks):
    a, b = mocks("a"), mocks("b")
    px = start(make_server, tmp_path, """
pools{ pa = { backends = { "%s" } }, pb = { backends = { "%s" } } }
routes{
    conf = { mode = "anchor", start = "_", stop = "|" },
    map = { aa = route_direct{ child = "pa" } },
    default = route_direct{ child = "pb" },
}
""" % (a.addr, b.addr))
    c = T.to(px)
    assert c.call("ms _aa|x 1\r\n1\r\n") == "HD\r\n" and b"_aa|x" in a.data
    assert c.call("ms _bb|x 1\r\n1\r\n") == "HD\r\n" and b"_bb|x" in b.data  # not in map
    assert c.call("ms _aa/x 1\r\n1\r\n") == "HD\r\n" and b"_aa/x" in b.data  # no stop
    px.stop()
    px = start(make_server, tmp_path, """
pools{ pa = { backends = { "%s" } }, pb = { backends = { "%s" } } }
routes{
    conf = { stop = "::" },
    map = { aa = route_direct{ child = "pa" } },
    default = route_direct{ child = "pb" },
}
""" % (a.addr, b.addr))
    c = T.to(px)
    assert c.call("ms aa::y 1\r\n1\r\n") == "HD\r\n" and b"aa::y" in a.data
    assert c.call("ms aa/y 1\r\n1\r\n") == "HD\r\n" and b"aa/y" in b.data


def test_anchor_mode_key_without_the_anchor_takes_the_default(make_server, tmp_path, mocks):
    a, b = mocks("a"), mocks("b")
    px = start(make_server, tmp_path, """
pools{ pa = { backends = { "%s" } }, pb = { backends = { "%s" } } }
routes{
    conf = { mode = "anchor", start = "_", stop = "|" },
    map = { aa = route_direct{ child = "pa" } },
    default = route_direct{ child = "pb" },
}
""" % (a.addr, b.addr))
    c = T.to(px)
    assert c.call("ms aa|x 1\r\n1\r\n") == "HD\r\n" and b"aa|x" in b.data


def test_no_default_route_is_an_error_reply(make_server, tmp_path, mocks):
    a = mocks("a")
    px = start(make_server, tmp_path, """
pools{ pa = { backends = { "%s" } } }
routes{ map = { foo = route_direct{ child = "pa" } } }
""" % a.addr)
    c = T.to(px)
    assert c.call("ms foo/x 1\r\n1\r\n") == "HD\r\n"
    assert c.call("ms bar/x 1\r\n1\r\n").startswith("SERVER_ERROR")
    assert a.got("ms bar") == []


def test_nested_routes_and_child_wrap(make_server, tmp_path, mocks):
    one, two, three = mocks("one"), mocks("two", delay=0.3), mocks("three")
    z1, z2 = mocks("z1"), mocks("z2")
    px = start(make_server, tmp_path, """
pools{
    one = { backends = { "%s" } }, two = { backends = { "%s" } }, three = { backends = { "%s" } },
    set_bar = { z1 = { backends = { "%s" } }, z2 = { backends = { "%s" } } },
}
routes{ map = {
    -- the docs' nested example: a split whose second child is an allfastest
    foo = route_split{
        child_a = "one",
        child_b = route_allfastest{ children = { "two", "three" } },
    },
    wrp = route_allsync{ children = route_ttl{ ttl = 7, child_wrap = "set_bar" } },
    mem = route_direct{ child = "set_bar_z2" },
} }
""" % (one.addr, two.addr, three.addr, z1.addr, z2.addr))
    c = T.to(px)
    assert c.call("ms foo/k 2\r\nhi\r\n") == "HD\r\n"
    assert one.data[b"foo/k"] == b"hi"
    assert wait_for(lambda: two.data.get(b"foo/k") == b"hi" and three.data.get(b"foo/k") == b"hi")
    assert c.call("set wrp/k 0 0 2\r\nhi\r\n") == "STORED\r\n"
    assert z1.got("set wrp/k") == ["set wrp/k 0 7 2"] and z2.got("set wrp/k") == ["set wrp/k 0 7 2"]
    assert c.call("ms mem/k 1\r\nx\r\n") == "HD\r\n" and b"mem/k" in z2.data and b"mem/k" not in z1.data


# ---- custom route handlers ------------------------------------------------------

CUSTOM_LIB = """
-- memcached's examples/customroute-lib.lua interface
register_route_handlers({ "myhello", "first_hit" })

function route_myhello_conf(t, ctx)
    t.msg = t.msg .. " " .. ctx:label()
    if t.stats then t.stats_id = ctx:stats_get_id("myhello") end
    return t
end

function route_myhello_start(a, ctx, fgen)
    fgen:ready({ a = a, n = ctx:label(), f = route_myhello_f })
end

function route_myhello_f(rctx, a)
    local msg = "SERVER_ERROR " .. a.msg .. "\\r\\n"
    local id = a.stats_id
    return function(r)
        if id then mcp.stat(id, 1) end
        return msg
    end
end

-- a handler with children: asks them in order, returns the first hit
function route_first_hit_conf(t, ctx) return t end
function route_first_hit_start(a, ctx, fgen)
    local hs = {}
    for i, child in ipairs(a.children) do hs[i] = fgen:new_handle(child) end
    fgen:ready({ n = ctx:label(), f = function(rctx)
        return function(r)
            local last
            for _, h in ipairs(hs) do
                last = rctx:enqueue_and_wait(r, h)
                if last:hit() then return last end
            end
            return last
        end
    end })
end
"""


def test_register_route_handlers_from_a_handler_file(make_server, tmp_path, mocks):
    a, b = mocks("a"), mocks("b")
    b.set("fh/k", "from-b")
    lib = write(tmp_path, "customroute-lib.lua", CUSTOM_LIB)
    px = start(make_server, tmp_path, """
pools{ foo = { backends = { "%s" } }, bar = { backends = { "%s" } } }
routes{ map = {
    foo = route_myhello{ msg = "hello, world:", stats = true },
    fh = route_first_hit{ children = { "foo", "bar" } },
} }
""" % (a.addr, b.addr), libs=[lib])
    c = T.to(px)
    assert c.call("get foo/a\r\n") == "SERVER_ERROR hello, world: foo\r\n"
    assert c.call("mg foo/b\r\n") == "SERVER_ERROR hello, world: foo\r\n"
    assert c.stats("proxy")["user_myhello"] == "2"
    assert mg_value(c, "fh/k") == "from-b"
    assert a.got("mg fh/k") and b.got("mg fh/k")


def test_register_route_handlers_inside_the_config(make_server, tmp_path):
    px = start(make_server, tmp_path, CUSTOM_LIB + """
routes{ default = route_myhello{ msg = "inline" } }
""")
    assert T.to(px).call("mg x\r\n") == "SERVER_ERROR inline default\r\n"


# ---- configs of memcached's documentation ---------------------------------------

def test_docs_prefix_router_example(make_server, tmp_path, mocks):
    main = [mocks("main%d" % i) for i in range(5)]
    hot = [mocks("hot%d" % i) for i in range(3)]
    # docs.memcached.org/features/proxy/examples, "Prefix router", with our ports
    px = start(make_server, tmp_path, """
pools{
    main = {
        backends = { %s }
    },
    -- These could even be a subset of the same servers listed above, however
    -- we have to describe it as three pools with one backend in each.
    set_hot = {
        { backends = { "%s" } },
        { backends = { "%s" } },
        { backends = { "%s" } },
    },
}

-- keys with prefix "hot/" get routed to a special handler.
routes{
    map = {
        hot = cmdmap{
            -- send all commands to all pools by default
            -- only wait for one response before returning result
            all = route_allfastest{
                children = "set_hot"
            },
            -- override specific commands to fetch from just one server for
            -- performance reasons.
            get = route_failover{
                children = "set_hot",
                stats = true,
                miss = true, -- failover if miss, not just for down server
                shuffle = true, -- each proxy will have a different order
            },
            -- if gat/gets/mg/etc are used override here.
        },
    },
    -- by default, all commands map to exactly one server within the larger
    -- pool.
    default = route_direct{
        child = "main",
    },
}
""" % (", ".join('"%s"' % m.addr for m in main), hot[0].addr, hot[1].addr, hot[2].addr))
    c = T.to(px)
    # hot/ keys are copied to every hot pool
    assert c.call("set hot/a 0 0 3\r\nabc\r\n") == "STORED\r\n"
    assert wait_for(lambda: all(m.data.get(b"hot/a") == b"abc" for m in hot))
    # and fetched from one of them
    assert c.rt("get hot/a\r\n") == "VALUE hot/a 0 3\r\nabc\r\nEND\r\n"
    assert sum(len(m.got("get hot/a")) for m in hot) == 1
    # a miss fails over to the next one
    hot[1].set("hot/only1", "one")
    assert c.rt("get hot/only1\r\n") == "VALUE hot/only1 0 3\r\none\r\nEND\r\n"
    # anything else: one backend of main, by key hash
    for i in range(40):
        assert c.call("set k%d 0 0 1\r\nx\r\n" % i) == "STORED\r\n"
    assert sum(len(m.data) for m in main) == 40 and min(len(m.data) for m in main) > 0
    assert not any(m.got("set k") for m in hot)


def test_docs_tagged_routes_example(make_server, tmp_path, mocks):
    foo, bar, baz = mocks("foo"), mocks("bar"), mocks("baz")
    for m in (foo, bar, baz):
        m.set("k", "from-" + m.name)
    pb, pc = hserver.free_port(), hserver.free_port()
    px = start(make_server, tmp_path, """
pools{
    foo = { backends = { "%s" } },
    bar = { backends = { { host = "127.0.0.1", port = %d, retrytimeout = 5 } } },
    baz = { backends = { "%s" } },
}
-- no supplied tag makes this the "default" router.
routes{ default = route_direct{ child = "foo" } }
routes{ tag = "b", default = route_direct{ child = "bar" } }
routes{ tag = "cccc", default = route_direct{ child = "baz" } }
""" % (foo.addr, bar.port, baz.addr), "-t", "2", "-l", "127.0.0.1",
        "-l", "tag_b_:127.0.0.1:%d" % pb, "-l", "tag_cccc_:127.0.0.1:%d" % pc)
    assert mg_value(T.to(px), "k") == "from-foo"
    assert mg_value(T(Conn(pb)), "k") == "from-bar"
    assert mg_value(T(Conn(pc)), "k") == "from-baz"


def test_docs_example_with_pool_filter_runs(make_server, tmp_path, mocks):
    # configure.md's complete example: pool_options.filter hashes the {tag}
    a, b = mocks("a"), mocks("b")
    px = start(make_server, tmp_path, """
verbose(true)
settings {
    backend_connect_timeout = 3,
    pool_options = { filter = "tags", filter_conf = "{}" }
}
pools { main_pool = { backends = { "%s", "%s" } } }
routes { default = route_direct { child = "main_pool" } }
""" % (a.addr, b.addr))
    c = T.to(px)
    for i in range(40):
        assert c.call("ms k%d{same}x 1\r\nv\r\n" % i) == "HD\r\n"
    # every key hashes as "same": one backend has them all
    assert sorted([len(a.data), len(b.data)]) == [0, 40]


# ---- settings, logging, reload ---------------------------------------------------

def test_settings_reach_the_proxy(make_server, tmp_path, mocks):
    a = mocks("a", "hang")
    px = start(make_server, tmp_path, """
settings{ active_req_limit = 1, backend_read_timeout = 30 }
pools{ main = { backends = { "%s" } } }
routes{ default = route_direct{ child = "main" } }
""" % a.addr, "-t", "1")
    held = T.to(px)
    held.send("mg held\r\n")
    assert wait_for(lambda: T.to(px).stat("proxy_req_active") == "1")
    c = T.to(px)
    assert c.call("mg other\r\n") == "SERVER_ERROR active request limit reached\r\n"
    assert c.stats("proxy")["active_req_limit"] == "1"


def test_verbose_debug_and_say(make_server, tmp_path, mocks):
    a = mocks("a")
    px = start(make_server, tmp_path, """
verbose(true)
debug(true)
say("hello", "from", 42)
dsay("debugging")
assert(type(debug.traceback) == "function")  -- still Lua's debug library
pools{ main = { backends = { "%s" } } }
routes{ default = route_direct{ child = "main" } }
""" % a.addr)
    assert c_ok(px)
    assert wait_for(lambda: "routelib: hello from 42" in px.log())
    log = px.log()
    assert log.count("routelib: hello from 42") == 1  # the config VM only
    assert "routelib debug: debugging" in log
    assert "routelib: pool main with 1 backend(s)" in log
    assert "routelib: routes{} default -> route_direct" in log


def c_ok(px):
    return T.to(px).call("ms k 1\r\nx\r\n") == "HD\r\n"


def test_config_vm_calls_and_trace(make_server, tmp_path, mocks):
    a = mocks("a")
    # top-level mcp calls run in the config VM (where the config is loaded)
    px = start(make_server, tmp_path, """
mcp.active_req_limit(7)
verbosity({ trace = true })
pools{ main = { backends = { "%s" } } }
routes{ default = route_direct{ child = "main" } }
""" % a.addr, "-t", "1")
    assert c_ok(px)
    assert T.to(px).stats("proxy")["active_req_limit"] == "7"
    assert "routelib trace: " in px.log()


def test_quiet_without_verbose(make_server, tmp_path, mocks):
    a = mocks("a")
    px = start(make_server, tmp_path, """
say("not shown")
pools{ main = { backends = { "%s" } } }
routes{ default = route_direct{ child = "main" } }
""" % a.addr)
    assert c_ok(px)
    assert "routelib:" not in px.log()


def test_reload_changes_routes_and_keeps_stats(make_server, tmp_path, mocks):
    a, b = mocks("a"), mocks("b")
    a.set("k", "from-a")
    b.set("k", "from-b")
    text = """
pools{ pa = { backends = { "%s" } }, pb = { backends = { "%s" } } }
routes{ default = route_failover{ children = { "%%s", "%%s" }, miss = true, stats = true } }
""" % (a.addr, b.addr)
    p = tmp_path / "config.lua"
    p.write_text(text % ("pa", "pb"))
    px = make_server(*(proxy_args(str(p)) + ["-t", "2"]))
    c = T.to(px)
    assert mg_value(c, "k") == "from-a"
    assert c.call("mg nope v\r\n") == "EN\r\n"
    assert c.stats("proxy")["user_default_retries"] == "1"
    w = watcher(px)
    p.write_text(text % ("pb", "pa"))
    px.proc.send_signal(signal.SIGHUP)
    assert "status=start" in w.log_line()
    assert "status=done" in w.log_line()
    assert mg_value(c, "k") == "from-b"
    assert c.call("mg nope v\r\n") == "EN\r\n"
    assert c.stats("proxy")["user_default_retries"] == "2"


def test_identical_reload_keeps_the_backend_sockets(make_server, tmp_path, mocks):
    a, b = mocks("a"), mocks("b")
    px = start(make_server, tmp_path, """
pools{
    main = { backends = { "%s", "%s" } },
    set_rep = { { backends = { "%s" } }, { backends = { "%s" } } },
}
routes{ map = { rep = route_allsync{ children = "set_rep" } }, default = route_direct{ child = "main" } }
""" % (a.addr, b.addr, a.addr, b.addr), "-t", "2")
    # the same host:port in two pools is one backend: one socket per worker
    assert wait_for(lambda: len(a.conns) == 2 and len(b.conns) == 2)
    w = watcher(px)
    for _ in range(2):
        px.proc.send_signal(signal.SIGHUP)
        assert "status=start" in w.log_line()
        assert "status=done" in w.log_line()
    time.sleep(0.3)
    assert len(a.conns) == 2 and len(b.conns) == 2
    c = T.to(px)
    assert c.call("ms rep/k 1\r\nx\r\n") == "HD\r\n"
    assert a.data[b"rep/k"] == b"x" and b.data[b"rep/k"] == b"x"


def test_text_multiget_through_a_failover(make_server, tmp_path, mocks):
    a, b = mocks("a"), mocks("b")
    a.set("k1", "a1")
    b.set("k2", "b2")
    b.set("k1", "b1")
    px = start(make_server, tmp_path, """
pools{ set_ab = { { backends = { "%s" } }, { backends = { "%s" } } } }
-- the positional form of the docs' pool set example
routes{ route_failover{ children = "set_ab", miss = true } }
""" % (a.addr, b.addr))
    c = T.to(px)
    assert c.rt("get k1 k2 k3\r\n") == "VALUE k1 0 2\r\na1\r\nVALUE k2 0 2\r\nb2\r\nEND\r\n"
    assert len(b.got("get k1")) == 0 and len(b.got("get k3")) == 1


# ---- configs that must not load --------------------------------------------------

POOL = 'pools{ main = { backends = { "127.0.0.1:1" } } }\n'


@pytest.mark.parametrize("config, message", [
    (POOL + 'routes{ default = route_direct{ child = "nope" } }',
     "routes{} default: route_direct: no pool named 'nope'"),
    (POOL + 'routes{ map = { a = route_failover{ children = { "main", "set_x" } } } }',
     "routes{} map 'a': route_failover: no pool set named 'set_x'"),
    (POOL + 'routes{ default = route_direct{ child = "main", bogus = 1 } }',
     "routes{} default: route_direct: unknown option 'bogus' (it takes child)"),
    (POOL + 'routes{ default = route_failover{ children = { "main" }, shufle = true } }',
     "unknown option 'shufle'"),
    (POOL + 'routes{ default = route_failover{ children = { "main" }, miss = "yes" } }',
     "miss must be true or false"),
    (POOL + 'routes{ default = route_ttl{ child = "main" } }', "needs ttl = <integer seconds>"),
    (POOL + 'routes{ default = route_direct{ child = route_split{ child_a = "main", child_b = "x" } } }',
     "routes{} default: route_direct: route_split: no pool named 'x'"),
    (POOL + 'settings{ backend_connect_timout = 3 }\nroutes{ default = route_null{} }',
     "settings{}: unknown setting 'backend_connect_timout'"),
    (POOL + 'settings{ backend_use_tls = "yes" }\nroutes{ default = route_null{} }',
     "settings{}: backend_use_tls must be true or false"),
    ('pools{ internal = { backends = { "127.0.0.1:1" } } }\nroutes{ default = route_null{} }',
     "pools{}: the name 'internal' is reserved"),
    (POOL + 'routes{ mpa = {} }', "routes{}: unknown option 'mpa'"),
    (POOL, "the config has no routes{} block"),
    (POOL + 'routes{ cmap = { gett = route_null{} } }', "cmap: unknown command 'gett'"),
    (POOL + 'routes{ map = { x = cmdmap{ sett = route_null{} } } }', "cmdmap{}: unknown command 'sett'"),
    ('pools{ set_z = { a = { backends = { "127.0.0.1:1" } } } }\n'
     'routes{ default = route_zfailover{ children = "set_z" } }', "route_zfailover: needs a local zone"),
    ('local_zone("b")\npools{ set_z = { a = { backends = { "127.0.0.1:1" } } } }\n'
     'routes{ default = route_zfailover{ children = "set_z" } }', "the local zone 'b' is not one of"),
    ('local_zone_from_env("TROVE_ROUTELIB_NO_SUCH_VAR")\n' + POOL + 'routes{ default = route_null{} }',
     "the environment variable TROVE_ROUTELIB_NO_SUCH_VAR is not set"),
    ('pools{ main = { backend = { "127.0.0.1:1" } } }\nroutes{ default = route_null{} }',
     "pools{} 'main': unknown pool option 'backend'"),
    ('pools{ main = { backends = { "127.0.0.1:1" }, options = { seed = 1 } } }\n'
     'routes{ default = route_null{} }', "pools{} 'main': pool: seed must be a string"),
    ('pools{ main = { backends = { "127.0.0.1:1" }, options = { filter = "tag" } } }\n'
     'routes{ default = route_null{} }', "pools{} 'main': unknown hash filter specified: tag"),
    ('pools{ main = { backends = { { host = "127.0.0.1", port = 1, tls = true } } } }\n'
     'routes{ default = route_null{} }', "TLS requested but not initialized: call mcp.init_tls()"),
    ('pools{ set_x = { backends = { "127.0.0.1:1" } } }\nroutes{ default = route_null{} }',
     "a name starting with set_ is a set of pools"),
    (POOL + 'routes{ default = route_direct{ child = "main" } }\nroutes{ default = route_null{} }',
     "there is already a routes{} block without a tag"),
    (POOL + 'routes{ conf = { mode = "suffix" }, map = { a = route_null{} } }',
     "mode must be \"prefix\" or \"anchor\""),
    (POOL + 'routes{ default = route_bogus{ child = "main" } }', "route_bogus"),
])
def test_bad_config_fails_the_start_with_a_clear_error(tmp_path, config, message):
    err = start_error(tmp_path, config)
    assert message in err, err


def test_missing_config_file_is_a_clear_error(tmp_path):
    with pytest.raises(hserver.ServerError) as e:
        hserver.Server(["-o", "proxy_config=%s,proxy_arg=%s" % (routelib_name(), tmp_path / "none.lua")],
                       start_timeout=5)
    assert "cannot open the config file" in str(e.value)
    with pytest.raises(hserver.ServerError) as e:
        hserver.Server(["-o", "proxy_config=%s" % routelib_name()], start_timeout=5)
    assert "no config file" in str(e.value)
