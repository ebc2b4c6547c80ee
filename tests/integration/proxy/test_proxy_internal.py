"""The built-in proxy's internal cache: mcp.internal(r) and handles on
mcp.internal_handler (also from child generators and routelib's `internal`
pool) run every storage command on Trove's own cache; mcp.server_stats in
the config VM; mcp.start_arg as a table; `proxy_enabled` in stats settings.

The expectations are memcached 1.6.45's proxy, as its t/proxyinternal.t,
t/proxyinternal2.t, t/proxyintstats.t and t/proxyintext.t pin them (the
first and the last skip without extstore, so their non-extstore parts are
covered here). Replies are asserted byte for byte; `version` after a reply
proves the connection is still in step. No memcached is needed.
"""

import re
import signal
import time

import pytest

from harness.client import wait_for
from test_proxy import T, proxy, watcher, write

pytestmark = pytest.mark.trove_only

LOG_TS = r"ts=\d+\.\d+ gid=\d+ "

# One generator with two internal handles and a child generator with one of
# its own, routed by key prefix:
#   /sub/...  through the child generator's internal handle
#   /fn/...   mcp.internal(r)
#   /res/...  the response object's methods, as a SERVER_ERROR line
#   /good/... WAIT_GOOD over two internal handles: the key's own request on
#             h1 (a miss), a second request for /good/hit on h2
#   /both/... get and mg on both handles, the first result unused
#             (proxyinternal2's leak check)
#   else      rctx:enqueue_and_wait(r, h1)
HANDLES = r"""
function mcp_config_pools() return true end

function mcp_config_routes(c)
  local sub = mcp.funcgen_new()
  local hs = sub:new_handle(mcp.internal_handler)
  sub:ready({ n = "subint", f = function(rctx)
    return function(r) return rctx:enqueue_and_wait(r, hs) end
  end })
  local fg = mcp.funcgen_new()
  local h1 = fg:new_handle(mcp.internal_handler)
  local h2 = fg:new_handle(mcp.internal_handler)
  local hsub = fg:new_handle(sub)
  fg:ready({ n = "internal", f = function(rctx)
    return function(r)
      local k = r:key()
      if k:find("^/sub/") then return rctx:enqueue_and_wait(r, hsub) end
      if k:find("^/fn/") then return mcp.internal(r) end
      if k:find("^/res/") then
        local res = rctx:enqueue_and_wait(r, h1)
        return string.format("SERVER_ERROR ok=%s hit=%s code=%d vlen=%d line=%s\r\n",
          tostring(res:ok()), tostring(res:hit()), res:code(), res:vlen(), tostring(res:line()))
      end
      if k:find("^/good/") then
        local r2 = mcp.request("mg /good/hit v\r\n")
        rctx:enqueue(r, h1)
        rctx:enqueue(r2, h2)
        local n = rctx:wait_cond(1, mcp.WAIT_GOOD)
        local _, m1 = rctx:result(h1)
        local _, m2 = rctx:result(h2)
        return string.format("SERVER_ERROR n=%d h1=%s h2=%s\r\n", n, tostring(m1), tostring(m2))
      end
      if k:find("^/both/") then
        local cmd = r:command()
        if cmd == mcp.CMD_GET or cmd == mcp.CMD_MG then
          local unused = rctx:enqueue_and_wait(r, h1)
        end
        return rctx:enqueue_and_wait(r, h2)
      end
      return rctx:enqueue_and_wait(r, h1)
    end
  end })
  mcp.attach(mcp.CMD_ANY_STORAGE, fg)
end
"""

# t/proxyintstats.lua's shape: every hook is `return mcp.internal(r)`.
PLAIN = r"""
function mcp_config_pools() return true end
function mcp_config_routes(c)
  mcp.attach(mcp.CMD_ANY_STORAGE, function(r) return mcp.internal(r) end)
end
"""


def start(make_server, tmp_path, config=HANDLES, *args):
    cfg = write(tmp_path, "internal.lua", config)
    return proxy(make_server, cfg, "-t", "1", *args)


def in_step(c):
    assert c.call("version\r\n").startswith("VERSION ")


# ---- every command, through a handle, a child and mcp.internal --------------

TEXT_SCRIPT = [
    ("set {k} 5 0 2\r\nhi\r\n", "STORED\r\n"),
    ("get {k}\r\n", "VALUE {k} 5 2\r\nhi\r\nEND\r\n"),
    ("add {k} 0 0 1\r\nx\r\n", "NOT_STORED\r\n"),
    ("replace {k} 0 0 2\r\nyo\r\n", "STORED\r\n"),
    ("append {k} 0 0 1\r\n!\r\n", "STORED\r\n"),
    ("prepend {k} 0 0 1\r\n<\r\n", "STORED\r\n"),
    ("get {k}\r\n", "VALUE {k} 0 4\r\n<yo!\r\nEND\r\n"),
    ("cas {k} 0 0 1 999999\r\nz\r\n", "EXISTS\r\n"),
    ("incr {k} 1\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"),
    ("touch {k} 100\r\n", "TOUCHED\r\n"),
    ("gat 0 {k}\r\n", "VALUE {k} 0 4\r\n<yo!\r\nEND\r\n"),
    ("delete {k}\r\n", "DELETED\r\n"),
    ("delete {k}\r\n", "NOT_FOUND\r\n"),
    ("touch {k} 100\r\n", "NOT_FOUND\r\n"),
    ("incr {k} 1\r\n", "NOT_FOUND\r\n"),
    ("get {k}\r\n", "END\r\n"),
    ("add {k} 0 0 1\r\n7\r\n", "STORED\r\n"),
    ("incr {k} 3\r\n", "10\r\n"),
    ("decr {k} 11\r\n", "0\r\n"),
]

META_SCRIPT = [
    ("ms {k} 2 T0 F3\r\nhi\r\n", "HD\r\n"),
    ("mg {k} v f t s\r\n", "VA 2 f3 t-1 s2\r\nhi\r\n"),
    ("mg {k} k v O9\r\n", "VA 2 k{k} O9\r\nhi\r\n"),
    ("ms {k} 1 MA\r\n!\r\n", "HD\r\n"),
    ("mg {k} v\r\n", "VA 3\r\nhi!\r\n"),
    ("md {k}\r\n", "HD\r\n"),
    ("md {k}\r\n", "NF\r\n"),
    ("mg {k} v\r\n", "EN\r\n"),
    ("ms {k} 2 MR\r\nno\r\n", "NS\r\n"),
    ("ma {k}\r\n", "NF\r\n"),
    ("ma {k} N0 J5 v\r\n", "VA 1\r\n5\r\n"),
    ("ma {k} D3 v\r\n", "VA 1\r\n8\r\n"),
    ("ma {k} MD D9 v\r\n", "VA 1\r\n0\r\n"),
    ("ms {k} 2 MR\r\nok\r\n", "HD\r\n"),
]


@pytest.mark.parametrize("prefix", ["/h/", "/sub/", "/fn/"])
def test_text_commands_on_the_internal_cache(make_server, tmp_path, prefix):
    srv = start(make_server, tmp_path)
    c = T.to(srv)
    k = prefix + "text"
    for req, want in TEXT_SCRIPT:
        got = c.rt(req.format(k=k))
        assert got == want.format(k=k), req
    # decr keeps the value's length, as memcached does ("10" -> "0 ").
    assert re.fullmatch(r"VALUE %s 0 2 \d+\r\n0 \r\nEND\r\n" % k, c.rt("gets %s\r\n" % k))
    in_step(c)


@pytest.mark.parametrize("prefix", ["/h/", "/sub/", "/fn/"])
def test_meta_commands_on_the_internal_cache(make_server, tmp_path, prefix):
    srv = start(make_server, tmp_path)
    c = T.to(srv)
    k = prefix + "meta"
    for req, want in META_SCRIPT:
        assert c.rt(req.format(k=k)) == want.format(k=k), req
    assert c.rt("md %s\r\n" % k) == "HD\r\n"
    assert c.rt("me %s\r\n" % k) == "EN\r\n"
    assert c.rt("ms %s 1\r\nx\r\n" % k) == "HD\r\n"
    assert re.fullmatch(r"ME %s exp=-1 la=\d+ cas=\d+ fetch=no cls=1 size=\d+\r\n" % k,
                        c.rt("me %s\r\n" % k))
    in_step(c)


def test_the_same_cache_as_unrouted_commands(make_server, tmp_path):
    """A value stored through the internal cache is the server's own: the
    unrouted stats count it and flush_all (unrouted) drops it."""
    srv = start(make_server, tmp_path)
    c = T.to(srv)
    assert c.call("set /h/shared 0 0 3\r\nabc\r\n") == "STORED\r\n"
    assert c.call("ms /fn/shared 2\r\nok\r\n") == "HD\r\n"
    st = c.stats()
    assert (st["curr_items"], st["cmd_set"]) == ("2", "2")
    assert c.call("flush_all\r\n") == "OK\r\n"
    assert c.rt("get /h/shared\r\n") == "END\r\n"
    assert c.rt("mg /sub/shared v\r\n") == "EN\r\n"


def test_multiget_through_the_internal_cache(make_server, tmp_path):
    srv = start(make_server, tmp_path)
    c = T.to(srv)
    assert c.rt("get /h/m1 /sub/m2 /fn/m3\r\n") == "END\r\n"
    for k in ("/h/m1", "/sub/m2", "/fn/m3"):
        assert c.call("set %s 0 0 2\r\nhi\r\n" % k) == "STORED\r\n"
    assert c.rt("get /h/m1 /sub/m2 nope /fn/m3\r\n") == (
        "VALUE /h/m1 0 2\r\nhi\r\nVALUE /sub/m2 0 2\r\nhi\r\nVALUE /fn/m3 0 2\r\nhi\r\nEND\r\n")
    in_step(c)


def test_response_objects_of_internal_results(make_server, tmp_path):
    """proxyinternal.t's test_res: hit, code, line and vlen of an internal
    response (MCMC_CODE_END 17 for a miss, MCMC_CODE_OK 15 for HD/VA)."""
    srv = start(make_server, tmp_path)
    c = T.to(srv)
    assert c.rt("mg /res/a v t\r\n") == (
        "SERVER_ERROR ok=true hit=false code=17 vlen=0 line=nil\r\n")
    assert c.rt("ms /res/a 5\r\nhello\r\n") == (
        "SERVER_ERROR ok=true hit=true code=15 vlen=0 line=nil\r\n")
    assert c.rt("mg /res/a v t s h\r\n") == (
        "SERVER_ERROR ok=true hit=true code=15 vlen=5 line=t-1 s5 h0\r\n")
    assert c.rt("incr /res/a 1\r\n") == (
        "SERVER_ERROR ok=false hit=false code=22 vlen=0 line=nil\r\n")


def test_wait_good_weighs_every_internal_result(make_server, tmp_path):
    """Both internal handles answer at once; the wait sees them in order as
    it would see two backends: h1's miss alone does not end WAIT_GOOD while
    h2 (a hit) is still to come."""
    srv = start(make_server, tmp_path)
    c = T.to(srv)
    assert c.rt("mg /good/a v\r\n") == "SERVER_ERROR n=0 h1=16 h2=16\r\n"
    assert c.call("set /h/good/hit 0 0 1\r\nv\r\n") == "STORED\r\n"
    assert c.rt("mg /good/a v\r\n") == "SERVER_ERROR n=0 h1=16 h2=16\r\n"
    assert c.call("set /good/hit 0 0 1\r\nv\r\n").startswith("SERVER_ERROR n=")
    assert c.rt("mg /good/a v\r\n") == "SERVER_ERROR n=1 h1=16 h2=8\r\n"


# ---- quiet mode and noreply ----------------------------------------------------

@pytest.mark.parametrize("prefix", ["/h/", "/fn/"])
def test_meta_quiet_mode(make_server, tmp_path, prefix):
    """proxyinternal.t's 'meta quiet mode': q hides EN (and HD but for mg),
    never a value or an error."""
    srv = start(make_server, tmp_path)
    c = T.to(srv)
    k = prefix + "quiet"
    assert c.rt("mg %s v t q\r\n" % k) == ""
    c.send("mg %s v t q O1\r\nmg %s v t O2\r\nmg %s v t q O3\r\nmn\r\n" % (k, k, k))
    assert c.read_line() == "EN O2\r\n"
    assert c.read_line() == "MN\r\n"
    assert c.rt("ms %s 2 q\r\nhi\r\n" % k) == ""
    assert c.rt("mg %s v t q O4\r\n" % k) == "VA 2 t-1 O4\r\nhi\r\n"
    assert c.rt("mg %s t q O4\r\n" % k) == "HD t-1 O4\r\n"
    assert c.rt("ma %scounter N0 J1 q\r\n" % k) == ""
    # memcached's proxy hides every MCMC_CODE_OK reply but mg's, a VA too.
    assert c.rt("ma %scounter q v\r\n" % k) == ""
    assert c.rt("ma %scounter v\r\n" % k) == "VA 1\r\n3\r\n"
    assert c.rt("md %s q\r\n" % k) == ""
    assert c.rt("md %s q\r\n" % k) == "NF\r\n"
    assert c.rt("ms %s 2 q MR\r\nno\r\n" % k) == "NS\r\n"
    assert c.rt("mg %s v\r\n" % k) == "EN\r\n"
    in_step(c)


@pytest.mark.parametrize("prefix", ["/h/", "/fn/"])
def test_text_noreply(make_server, tmp_path, prefix):
    """noreply hides every answer but an error, and the cache still runs
    the command (proxyinternal.t's 'noreply mode')."""
    srv = start(make_server, tmp_path)
    c = T.to(srv)
    k = prefix + "nr"
    assert c.rt("set %s1 0 0 2 noreply\r\nhi\r\nset %s2 0 0 2 noreply\r\nhi\r\n" % (k, k)) == ""
    assert c.rt("add %s1 0 0 1 noreply\r\nx\r\n" % k) == ""  # NOT_STORED hidden
    assert c.rt("append %s1 0 0 1 noreply\r\n!\r\n" % k) == ""
    assert c.rt("get %s1\r\n" % k) == "VALUE %s1 0 3\r\nhi!\r\nEND\r\n" % k
    assert c.rt("incr %s1 1 noreply\r\n" % k) == (
        "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n")
    assert c.rt("set %sn 0 0 1 noreply\r\n4\r\nincr %sn 2 noreply\r\n" % (k, k)) == ""
    assert c.rt("touch %sn 10 noreply\r\ndelete %s2 noreply\r\n" % (k, k)) == ""
    assert c.rt("get %sn\r\n" % k) == "VALUE %sn 0 1\r\n6\r\nEND\r\n" % k
    assert c.rt("get %s2\r\n" % k) == "END\r\n"
    in_step(c)


# ---- sizes -------------------------------------------------------------------

@pytest.mark.parametrize("prefix", ["/h/", "/fn/"])
def test_too_large_is_refused_and_the_value_swallowed(make_server, tmp_path, prefix):
    """proxyinternal.t's 'object too large': the error, and the value bytes
    never read as commands; a failed set drops the old value, as memcached's
    does."""
    srv = start(make_server, tmp_path)
    c = T.to(srv)
    k = prefix + "toolarge"
    data = "x" * 2000000
    assert c.call("set %s 0 0 2\r\nhi\r\n" % k) == "STORED\r\n"
    assert c.call("set %s 0 0 %d\r\n%s\r\n" % (k, len(data), data)) == (
        "SERVER_ERROR object too large for cache\r\n")
    in_step(c)
    assert c.rt("get %s\r\n" % k) == "END\r\n"
    assert c.call("ms %s %d T30\r\n%s\r\n" % (k, len(data), data)) == (
        "SERVER_ERROR object too large for cache\r\n")
    in_step(c)
    assert c.stats()["store_too_large"] == "2"


def used_chunks(c):
    return {k: v for k, v in c.stats("slabs").items() if re.fullmatch(r"\d+:used_chunks", k)}


@pytest.mark.parametrize("size", [500000, 900000])
def test_large_and_chunked_items_leave_no_reference(make_server, tmp_path, size):
    """proxyinternal2.t: values past the largest slab chunk (32 KiB here)
    are chunked; the get through two handles (a result the route drops)
    copies them out, and once deleted every slab class is empty again: no
    item reference was left behind."""
    srv = start(make_server, tmp_path, HANDLES, "-o", "slab_chunk_max=32")
    c = T.to(srv)
    data = "".join(chr(65 + i % 26) for i in range(size))
    for k in ("/both/big", "/h/big", "/fn/big"):
        assert c.call("set %s 0 0 %d\r\n%s\r\n" % (k, size, data)) == "STORED\r\n"
        c.send("get %s\r\n" % k)
        assert c.read_line() == "VALUE %s 0 %d\r\n" % (k, size)
        assert c.read_exact(size + 2) == data + "\r\n"
        assert c.read_line() == "END\r\n"
        assert c.call("mg %s s v\r\n" % k) == "VA %d s%d\r\n" % (size, size)
        assert c.read_exact(size + 2) == data + "\r\n"
        in_step(c)
    assert any(v != "0" for v in used_chunks(c).values())
    for k in ("/both/big", "/h/big"):
        assert c.call("delete %s\r\n" % k) == "DELETED\r\n"
    assert c.call("md /fn/big\r\n") == "HD\r\n"
    assert used_chunks(c) and all(v == "0" for v in used_chunks(c).values()), used_chunks(c)
    assert not [k for k in c.stats("items") if k.endswith(":number") and c.stats("items")[k] != "0"]


def test_overwriting_a_large_value_many_times_keeps_memory_flat(make_server, tmp_path):
    """proxyinternal2.t's flood: a value overwritten and fetched again and
    again through two handles must not pin its old copies."""
    srv = start(make_server, tmp_path, HANDLES, "-m", "16", "-o", "slab_chunk_max=32")
    c = T.to(srv)
    data = "y" * 300000
    for i in range(120):
        assert c.call("ms /both/boom 300000 T30\r\n%s\r\n" % data) == "HD\r\n", i
        c.send("get /both/boom\r\n")
        assert c.read_line() == "VALUE /both/boom 0 300000\r\n"
        assert c.read_exact(300002) == data + "\r\n"
        assert c.read_line() == "END\r\n"
    assert c.call("md /both/boom\r\n") == "HD\r\n"
    assert all(v == "0" for v in used_chunks(c).values()), used_chunks(c)
    assert c.stats()["curr_items"] == "0"


# ---- watch ---------------------------------------------------------------------

def test_watch_deletions_of_internal_deletes(make_server, tmp_path):
    """proxyinternal.t's 'watch deletions': delete and md through the
    internal cache are logged with the item's size."""
    srv = start(make_server, tmp_path, PLAIN)
    w = watcher(srv, "deletions")
    c = T.to(srv)
    assert c.call("set vfoo 0 0 4\r\nvbar\r\n") == "STORED\r\n"
    assert c.call("delete vfoo\r\n") == "DELETED\r\n"
    assert re.fullmatch(LOG_TS + r"type=deleted key=vfoo cmd=delete clsid=\d+ size=4\n",
                        w.log_line())
    assert c.call("set vfoo 0 0 4\r\nvbar\r\n") == "STORED\r\n"
    assert c.call("md vfoo\r\n") == "HD\r\n"
    assert re.fullmatch(LOG_TS + r"type=deleted key=vfoo cmd=md clsid=\d+ size=4\n", w.log_line())
    assert c.call("md vfoo\r\n") == "NF\r\n"
    assert w.pending(0.2) == b""


def test_log_req_of_an_internal_result(make_server, tmp_path):
    """proxyinternal.t's 'log': mcp.log_req with an internal response."""
    cfg = HANDLES.replace(
        'if k:find("^/sub/")',
        'if k == "log" then local res = rctx:enqueue_and_wait(r, h1) '
        'mcp.log_req(r, res, "testing") return res end\n      if k:find("^/sub/")')
    srv = start(make_server, tmp_path, cfg)
    w = watcher(srv, "proxyreqs")
    c = T.to(srv)
    assert c.call("mg log v\r\n") == "EN\r\n"
    assert "detail=testing" in w.log_line()


# ---- routelib ------------------------------------------------------------------

def test_routelib_internal_pool(make_server, tmp_path):
    cfg = write(tmp_path, "rl.lua", r"""
routes{
  cmap = { get = route_failover{ children = { "internal" } } },
  map = { a = route_split{ child_a = "internal", child_b = "internal" } },
  default = route_direct{ child = "internal" },
}
""")
    srv = make_server("-t", "1", "-o", "proxy_config=routelib,proxy_arg=" + cfg)
    c = T.to(srv)
    assert c.call("set x 0 0 1\r\n1\r\n") == "STORED\r\n"
    assert c.rt("get x\r\n") == "VALUE x 0 1\r\n1\r\nEND\r\n"
    assert c.call("ms a/b 1\r\n2\r\n") == "HD\r\n"
    assert c.rt("mg a/b v\r\n") == "VA 1\r\n2\r\n"
    in_step(c)


# ---- mcp.server_stats ----------------------------------------------------------

STATS = r"""
local function count(t) local n = 0 for _ in pairs(t) do n = n + 1 end return n end
local function sections(t)
  local n = 0
  for k, v in pairs(t) do if type(k) == "number" and type(v) == "table" then n = n + 1 end end
  return n
end

function mcp_config_pools()
  local b = mcp.server_stats()
  mcp.log(string.format("basic many=%s pid=%s cmd_set=%s", tostring(count(b) > 50),
    tostring(b.pid), tostring(b.cmd_set)))
  local s = mcp.server_stats("settings")
  mcp.log("settings proxy_enabled=" .. s.proxy_enabled .. " item_size_max=" .. s.item_size_max)
  local c = mcp.server_stats("conns")
  local states = {}
  for fd, v in pairs(c) do states[#states + 1] = v.state end
  table.sort(states)
  mcp.log("conns sections=" .. sections(c) .. " " .. table.concat(states, ","))
  local it = mcp.server_stats("items")
  mcp.log("items sections=" .. sections(it) .. " number=" .. tostring(it[1] and it[1].number))
  local sl = mcp.server_stats("slabs")
  mcp.log("slabs active_slabs=" .. tostring(sl.active_slabs) .. " chunk_size="
    .. tostring(sl[1] and sl[1].chunk_size) .. " used=" .. tostring(sl[1] and sl[1].used_chunks))
  mcp.log("extstore count=" .. count(mcp.server_stats("extstore")))
  mcp.log("proxy cmd_mg=" .. tostring(mcp.server_stats("proxy").cmd_mg))
  mcp.log("proxyfuncs funcs=" .. tostring(mcp.server_stats("proxyfuncs").funcs_anonymous))
  mcp.log("proxybe count=" .. count(mcp.server_stats("proxybe")))
  for _, bad in ipairs({ "reset", "detail", "cachedump", "items\r\nflush_all", "bogus" }) do
    local ok, err = pcall(mcp.server_stats, bad)
    mcp.log("bad " .. tostring(ok) .. " " .. tostring(err))
  end
  return true
end

function mcp_config_routes(c)
  mcp.attach(mcp.CMD_ANY_STORAGE, function(r)
    if r:key() == "worker" then
      local ok, err = pcall(mcp.server_stats)
      return "SERVER_ERROR " .. tostring(ok) .. " " .. err .. "\r\n"
    end
    return mcp.internal(r)
  end)
end
"""


def test_server_stats_every_group(make_server, tmp_path):
    """mcp.server_stats as memcached's proxy_lua.c builds it: plain stats,
    settings, conns/items/slabs in numbered sections, the proxy's groups,
    extstore empty (Trove has none); any other group is an error. The config
    reloads after a store so that items and slabs have data."""
    srv = start(make_server, tmp_path, STATS)
    w = watcher(srv, "proxyuser")
    c = T.to(srv)
    assert c.call("mg k v\r\n") == "EN\r\n"
    assert c.call("set foo 0 0 2\r\nhi\r\n") == "STORED\r\n"
    srv.signal(signal.SIGHUP)
    lines = [w.log_line() for _ in range(14)]
    msgs = [re.fullmatch(LOG_TS + r"type=proxy_user msg=(.*)\n", l).group(1) for l in lines]
    assert msgs[0] == "basic many=true pid=%d cmd_set=1" % srv.pid()
    assert msgs[1] == "settings proxy_enabled=yes item_size_max=1048576"
    m = re.fullmatch(r"conns sections=(\d+) (.*)", msgs[2])
    states = m.group(2).split(",")
    assert int(m.group(1)) == len(states) >= 3  # a listener and the two clients at least
    assert "conn_listening" in states
    assert msgs[3] == "items sections=1 number=1"
    assert re.fullmatch(r"slabs active_slabs=1 chunk_size=\d+ used=1", msgs[4])
    assert msgs[5] == "extstore count=0"
    assert msgs[6] == "proxy cmd_mg=1"
    assert msgs[7] == "proxyfuncs funcs=1"
    assert msgs[8] == "proxybe count=0"
    for m in msgs[9:]:
        assert m == "bad false unknown subcommand passed to server_stats", m
    assert c.rt("mg worker\r\n") == (
        "SERVER_ERROR false mcp.server_stats may only be called from the config VM\r\n")


def test_stats_settings_proxy_enabled(make_server, tmp_path):
    srv = start(make_server, tmp_path, PLAIN)
    s = T.to(srv).stats("settings")
    assert s["proxy_enabled"] == "yes"
    assert s["proxy_uring_enabled"] == "no"
    keys = list(s)
    assert keys.index("proxy_enabled") + 1 == keys.index("proxy_uring_enabled")
    assert keys.index("proxy_uring_enabled") + 1 == keys.index("memory_file")
    assert T.to(make_server()).stats("settings")["proxy_enabled"] == "no"


# ---- mcp.start_arg -------------------------------------------------------------

START_ARG = r"""
function mcp_config_pools() return true end
function mcp_config_routes(c)
  mcp.attach(mcp.CMD_MG, function(r)
    local a = mcp.start_arg
    if type(a) ~= "table" then return "SERVER_ERROR " .. type(a) .. " " .. tostring(a) .. "\r\n" end
    local o = {}
    for k, v in pairs(a) do o[#o + 1] = k .. "=" .. tostring(v) .. ":" .. type(v) end
    table.sort(o)
    return "SERVER_ERROR table " .. table.concat(o, " ") .. "\r\n"
  end)
end
"""


@pytest.mark.parametrize("arg, want", [
    (None, "boolean false"),
    ("plain", "string plain"),
    ("a_b", "string a_b"),
    ("foo_bar:baz", "table baz=true:boolean foo=bar:string"),
    ("x_1_2::_y:__", "table x=1:string y=true:boolean"),
])
def test_start_arg(make_server, tmp_path, arg, want):
    """memcached's proxy_register_startarg: a string unless it holds ':',
    then a table of "name_value" (or "name" = true) parts."""
    cfg = write(tmp_path, "arg.lua", START_ARG)
    opt = "proxy_config=" + cfg + ("" if arg is None else ",proxy_arg=" + arg)
    srv = make_server("-t", "1", "-o", opt)
    assert T.to(srv).rt("mg k\r\n") == "SERVER_ERROR %s\r\n" % want
