"""The built-in proxy's key placement: mcp.pool's dist, hash, seed, filter,
filter_conf and beprefix options, as memcached 1.6's proxy has them.

Each test starts listening backends that record the keys they are sent,
routes `ms` requests through a pool of them, and checks that every key
reached the backend that tests/unit/proxy/fixtures/gen_ring_fixtures.py
computes from the published algorithms (jump hash, libketama, twemproxy,
EVCache and memcached's own ring) for the same host:port strings. The
fixed-address fixtures are checked in tests/unit/proxy/hash_dist_test.cc;
here the backends' ports are the ones the test got.
"""

import os
import random
import signal
import socket
import sys
import threading

import pytest

from harness import server as hserver
from harness.client import wait_for
from test_proxy import T, proxy, watcher, write

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "unit", "proxy", "fixtures"))
import gen_ring_fixtures as gen  # noqa: E402

pytestmark = pytest.mark.trove_only  # memcached 1.6.45 needs a proxy build


class RecordingBackend:
    """Answers `version`, records the key of every `ms` (answering HD) and
    counts its connections."""

    def __init__(self, host="127.0.0.1", port=0):
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind((host, port))
        self.lsock.listen(64)
        self.host, self.port = host, self.lsock.getsockname()[1]
        self.keys, self.accepts, self.conns = [], 0, []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                s, _ = self.lsock.accept()
            except OSError:
                return
            self.accepts += 1
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
                line, rest = buf.split(b"\r\n", 1)
                words = line.split()
                if words and words[0] == b"ms":
                    n = int(words[2])
                    if len(rest) < n + 2:
                        break
                    rest = rest[n + 2:]
                    with self.lock:
                        self.keys.append(words[1])
                    out += b"HD\r\n"
                elif words and words[0] == b"version":
                    out += b"VERSION 1.0.0-mock\r\n"
                else:
                    out += b"SERVER_ERROR unexpected\r\n"
                buf = rest
            try:
                s.sendall(out)
            except OSError:
                return

    def close(self):
        self.lsock.close()
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass


@pytest.fixture
def backends():
    made = []

    def make(n, host="127.0.0.1", port=0):
        for _ in range(n):
            made.append(RecordingBackend(host, port))
        return made[-n:]
    yield make
    for b in made:
        b.close()


ROUTES = """
function mcp_config_routes(p)
  for name, pool in pairs(p) do
    local fg = mcp.funcgen_new()
    local h = fg:new_handle(pool)
    fg:ready({ n = name, f = function(rctx)
      return function(r) return rctx:enqueue_and_wait(r, h) end
    end })
    mcp.attach(mcp.CMD_MS, fg)
  end
end
"""


def config(bes, opts):
    lines = ["function mcp_config_pools()", "  local b = {}"]
    for i, be in enumerate(bes):
        lines.append("  b[%d] = mcp.backend('b%d', '%s', %d)" % (i + 1, i + 1, be.host, be.port))
    lines.append("  return { main = mcp.pool(b%s) }" % (", " + opts if opts else ""))
    lines.append("end")
    return "\n".join(lines) + ROUTES


def send_keys(px, keys):
    c = T.to(px)
    batch = 50
    for i in range(0, len(keys), batch):
        part = keys[i:i + batch]
        c.send("".join("ms %s 1\r\nx\r\n" % k.decode() for k in part))
        for _ in part:
            assert c.read_line() == "HD\r\n"


def check_placement(bes, keys, pool):
    want = [[] for _ in bes]
    for k in keys:
        want[pool.place(k)].append(k)
    got = [sorted(b.keys) for b in bes]
    for i, b in enumerate(bes):
        assert got[i] == sorted(want[i]), "backend %d (%s:%d)" % (i, b.host, b.port)
    assert all(len(w) > 0 for w in want)  # a placement test that could fail
    return [len(w) for w in want]


# The pool options, and the same pool for gen_ring_fixtures.Pool.
MODES = [
    ("jump_default", "", {}, "plain"),
    ("jump_explicit", "{ dist = mcp.dist_jump_hash, hash = mcp.hash_xxhash }", {}, "plain"),
    ("jump_seed", "{ seed = 'hello' }", {"seed": "hello"}, "plain"),
    ("jump_md5", "{ hash = mcp.dist_ring_hash.hash }", {"hash_name": "md5"}, "plain"),
    ("ring_default", "{ dist = mcp.dist_ring_hash }", {"dist": "default"}, "plain"),
    ("ring_default_seed_b40", "{ dist = mcp.dist_ring_hash, omode = 'default', obuckets = 40, seed = 'x' }",
     {"dist": "default", "buckets": 40, "seed": "x"}, "plain"),
    ("ring_ketama", "{ dist = mcp.dist_ring_hash, omode = 'ketama', hash = mcp.dist_ring_hash.hash }",
     {"dist": "ketama", "hash_name": "md5"}, "plain"),
    ("ring_ketama_xxh3", "{ dist = mcp.dist_ring_hash, omode = 'ketama' }", {"dist": "ketama"}, "plain"),
    ("ring_twemproxy", "{ dist = mcp.dist_ring_hash, omode = 'twemproxy', hash = mcp.dist_ring_hash.hash }",
     {"dist": "twemproxy", "hash_name": "md5"}, "plain"),
    ("ring_evcache", "{ dist = mcp.dist_ring_hash, omode = 'evcache', hash = mcp.dist_ring_hash.hash, "
     "obuckets = 240 }", {"dist": "evcache", "hash_name": "md5", "buckets": 240}, "plain"),
    ("jump_stop", "{ filter = 'stop', filter_conf = '|#|' }", {"filt": "stop", "conf": b"|#|"}, "stop"),
    ("ring_tags_iothread", "{ dist = mcp.dist_ring_hash, omode = 'ketama', hash = mcp.dist_ring_hash.hash, "
     "filter = 'tags', filter_conf = '{}', iothread = true }",
     {"dist": "ketama", "hash_name": "md5", "filt": "tags", "conf": b"{}"}, "tags"),
]


@pytest.mark.parametrize("name,opts,pool_opts,kind", MODES, ids=[m[0] for m in MODES])
def test_keys_reach_the_backend_the_algorithm_names(make_server, tmp_path, backends, name, opts,
                                                    pool_opts, kind):
    bes = backends(4)
    px = proxy(make_server, write(tmp_path, "p.lua", config(bes, opts)), "-t", "2")
    keys = [gen.key_of(i, kind) for i in range(600)]
    send_keys(px, keys)
    pool = gen.Pool([(b.host, str(b.port)) for b in bes], **pool_opts)
    counts = check_placement(bes, keys, pool)
    assert sum(counts) == len(keys)


def free_loopback_11211(n):
    """n backends on 127.x.y.z:11211 (the port twemproxy leaves out of its
    point names), or None when the port cannot be had."""
    rnd = random.Random()
    made = []
    for _ in range(40):
        if len(made) == n:
            return made
        host = "127.%d.%d.%d" % (rnd.randint(1, 254), rnd.randint(1, 254), rnd.randint(2, 254))
        try:
            made.append(RecordingBackend(host, 11211))
        except OSError:
            pass
    for b in made:
        b.close()
    return None


def test_twemproxy_mode_leaves_the_default_port_out(make_server, tmp_path, backends):
    bes = free_loopback_11211(3)
    if bes is None:
        pytest.skip("no loopback address with port 11211 free")
    try:
        bes.append(backends(1)[0])  # one on another port keeps its ":port"
        opts = "{ dist = mcp.dist_ring_hash, omode = 'twemproxy', hash = mcp.dist_ring_hash.hash }"
        px = proxy(make_server, write(tmp_path, "p.lua", config(bes, opts)), "-t", "2")
        keys = [gen.key_of(i) for i in range(600)]
        send_keys(px, keys)
        servers = [(b.host, str(b.port)) for b in bes]
        check_placement(bes, keys, gen.Pool(servers, dist="twemproxy", hash_name="md5"))
        # ketama over the same servers places keys elsewhere: the names differ.
        ketama = gen.Pool(servers, dist="ketama", hash_name="md5")
        twem = gen.Pool(servers, dist="twemproxy", hash_name="md5")
        assert any(ketama.place(k) != twem.place(k) for k in keys)
    finally:
        for b in bes[:3]:
            b.close()


def test_placement_survives_a_reload_and_keeps_its_sockets(make_server, tmp_path, backends):
    bes = backends(3)
    opts = "{ dist = mcp.dist_ring_hash, omode = 'ketama', hash = mcp.dist_ring_hash.hash }"
    px = proxy(make_server, write(tmp_path, "p.lua", config(bes, opts)), "-t", "1")
    keys = [gen.key_of(i) for i in range(300)]
    send_keys(px, keys)
    w = watcher(px)
    px.proc.send_signal(signal.SIGHUP)
    assert "status=start" in w.log_line()
    assert "status=done" in w.log_line()
    send_keys(px, keys)
    pool = gen.Pool([(b.host, str(b.port)) for b in bes], dist="ketama", hash_name="md5")
    check_placement(bes, keys + keys, pool)
    assert [b.accepts for b in bes] == [1, 1, 1]


def test_beprefix_gives_a_pool_sockets_of_its_own(make_server, tmp_path, backends):
    (be,) = backends(1)
    text = """
function mcp_config_pools()
  local b = mcp.backend('b1', '127.0.0.1', %d)
  return { a = mcp.pool({ b }), b = mcp.pool({ b }), c = mcp.pool({ b }, { beprefix = 'other' }) }
end
""" % be.port + ROUTES
    proxy(make_server, write(tmp_path, "p.lua", text), "-t", "1")
    # a and b share one socket; c, with its prefix, has its own.
    assert wait_for(lambda: be.accepts == 2)
    time_left = wait_for(lambda: be.accepts > 2, 0.3)
    assert not time_left and be.accepts == 2


def test_routelib_passes_pool_options_through(make_server, tmp_path, backends):
    bes = backends(3)
    cfg = write(tmp_path, "config.lua", """
settings{ pool_options = { dist = mcp.dist_ring_hash, omode = "evcache", hash = mcp.dist_ring_hash.hash } }
pools{ main = { backends = { %s }, options = { seed = "ignored by md5" } } }
routes{ default = route_direct{ child = "main" } }
""" % ", ".join('"127.0.0.1:%d"' % b.port for b in bes))
    px = make_server("-o", "proxy_config=routelib,proxy_arg=" + cfg, "-t", "2")
    keys = [gen.key_of(i) for i in range(400)]
    send_keys(px, keys)
    pool = gen.Pool([(b.host, str(b.port)) for b in bes], dist="evcache", hash_name="md5")
    check_placement(bes, keys, pool)


BAD = [
    ("{ filter = 'bogus', filter_conf = '{}' }", "unknown hash filter specified: bogus"),
    ("{ filter = 'tags' }", "hash filter requires 'filter_conf' string"),
    ("{ filter = 'stop', filter_conf = 'x' }", "hash filter conf must be between 2 and 5 characters"),
    ("{ filter = 'stop', filter_conf = 'abcdef' }", "hash filter conf must be between 2 and 5 characters"),
    ("{ dist = mcp.dist_ring_hash, omode = 'ketama2' }", "ring_hash: bad omode argument"),
    ("{ dist = mcp.dist_ring_hash, obuckets = 0 }", "ring_hash: option argument must be a positive integer"),
    ("{ dist = {} }", "key distribution object missing 'new' function"),
    ("{ dist = { new = function() return 1, 2 end } }", "dist.new must return a distribution"),
    ("{ hash = 'xxhash' }", "hash must be mcp.hash_xxhash or mcp.dist_ring_hash.hash"),
    ("{ seed = 5 }", "seed must be a string"),
    ("{ sed = 'x' }", "pool: unknown option 'sed'"),
]


@pytest.mark.parametrize("opts,message", BAD, ids=[b[1][:30] for b in BAD])
def test_bad_pool_options_fail_the_start(tmp_path, opts, message):
    text = ("function mcp_config_pools() return { main = mcp.pool({ mcp.backend('x', '127.0.0.1', 1) }, %s) } end\n"
            "function mcp_config_routes() end\n" % opts)
    cfg = write(tmp_path, "bad.lua", text)
    with pytest.raises(hserver.ServerError) as e:
        hserver.Server(["-o", "proxy_config=" + cfg], start_timeout=5)
    assert message in str(e.value)
