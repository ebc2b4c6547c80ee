"""The proxy's smaller mcp.* pieces, as memcached 1.6.45 has them:
mcp.luagc_ratio, mcp.stat_limit (and add_stat's and mcp.stat's bounds),
res:close() and the __close metamethod, the constants MCMC_ERR and P_OK,
mcp.attach on every command (version, stats, watch and quit routed when
hooked, mn never), and TLS misuse refused (rctx:tls_peer_cn is nil without
TLS; test_proxy_tls.py has the rest).

Routes answer through Trove's own cache (mcp.internal), so no backend is
needed. Every reply is asserted byte for byte; a local `mn` after a reply
proves the connection is still in step.
"""

import pytest

from harness import server as hserver
from test_proxy import T, proxy, write

pytestmark = pytest.mark.trove_only

SHOW = r"""
function show(...)
  local t = table.pack(...)
  local out = {}
  for i = 1, t.n do
    local v = t[i]
    if type(v) == "string" then out[i] = "'" .. v .. "'" else out[i] = tostring(v) end
  end
  return "SERVER_ERROR " .. table.concat(out, " ") .. "\r\n"
end
"""


def start(make_server, tmp_path, text, *args):
    return proxy(make_server, write(tmp_path, "more.lua", SHOW + text), "-t", "1", *args)


def startup_error(tmp_path, text):
    cfg = write(tmp_path, "bad.lua", text)
    with pytest.raises(hserver.ServerError) as e:
        hserver.Server(["-o", "proxy_config=" + cfg, "-t", "1"], start_timeout=3)
    return str(e.value)


def in_step(c):
    assert c.call("mn\r\n") == "MN\r\n"


# ---- constants ------------------------------------------------------------------

CONSTANTS = r"""
function mcp_config_pools() return {} end
function mcp_config_routes()
  mcp.attach(mcp.CMD_MG, function(r)
    return show(mcp.MCMC_ERR, mcp.P_OK, mcp.MCMC_CODE_STORED, mcp.MCMC_CODE_EXISTS,
      mcp.MCMC_CODE_DELETED, mcp.MCMC_CODE_TOUCHED, mcp.MCMC_CODE_VERSION,
      mcp.MCMC_CODE_NOT_FOUND, mcp.MCMC_CODE_NOT_STORED, mcp.MCMC_CODE_OK, mcp.MCMC_CODE_NOP,
      mcp.MCMC_CODE_END, mcp.MCMC_CODE_ERROR, mcp.MCMC_CODE_CLIENT_ERROR,
      mcp.MCMC_CODE_SERVER_ERROR, mcp.CMD_ANY, mcp.CMD_ANY_STORAGE, mcp.WAIT_ANY, mcp.WAIT_OK,
      mcp.WAIT_GOOD, mcp.WAIT_FASTGOOD, mcp.RES_GOOD, mcp.RES_OK, mcp.RES_ANY, mcp.WAIT_RESUME,
      mcp.CMD_MG, mcp.CMD_END_STORAGE, mcp.CMD_QUIT, mcp.CMD_VERSION, mcp.CMD_CACHE_MEMLIMIT)
  end)
end
"""


def test_constants_have_memcacheds_values(make_server, tmp_path):
    c = T.to(start(make_server, tmp_path, CONSTANTS))
    # memcached's proxy_register_defines: mcmc's codes, MCMC_ERR -1, P_OK 0,
    # the proto_parser.h command numbers, the wait modes and result classes.
    assert c.call("mg k\r\n") == ("SERVER_ERROR -1 0 8 9 10 11 12 13 14 15 16 17 21 22 23 36 37 "
                                  "1 2 3 4 8 16 32 true 1 21 22 27 34\r\n")
    in_step(c)


# ---- mcp.luagc_ratio -----------------------------------------------------------

def test_luagc_ratio_is_accepted_and_routes_still_run(make_server, tmp_path):
    for ratio in ("1.5", "0.5", "50"):  # below 1.1 counts as 1.1; above 11 as 11
        text = ("function mcp_config_pools() mcp.luagc_ratio(%s) return {} end\n" % ratio +
                "function mcp_config_routes() mcp.attach(mcp.CMD_MG, function(r) "
                "return mcp.internal(r) end) end\n")
        px = start(make_server, tmp_path, text)
        c = T.to(px)
        assert c.call("set a 0 0 1\r\nx\r\n") == "STORED\r\n"  # unhooked: local
        for _ in range(200):
            assert c.call("mg a v\r\n") == "VA 1\r\n"
            assert c.read_line() == "x\r\n"
        assert int(c.stats("proxy")["vm_memory_kb"]) > 0
        px.stop()


def test_luagc_ratio_refuses_what_memcached_refuses(tmp_path):
    err = startup_error(tmp_path, "function mcp_config_pools() mcp.luagc_ratio('x') return {} end\n"
                                  "function mcp_config_routes() end\n")
    # memcached's luaL_checknumber(L, -1), message and all.
    assert "bad argument #-1 to 'luagc_ratio' (number expected, got string)" in err
    # A config-VM function: a worker VM refuses it.
    err = startup_error(tmp_path, "function mcp_config_pools() return {} end\n"
                                  "function mcp_config_routes() mcp.luagc_ratio(2) end\n")
    assert "mcp.luagc_ratio may only be called from mcp_config_pools" in err


# ---- mcp.stat_limit, mcp.add_stat, mcp.stat ------------------------------------

STATS = r"""
function mcp_config_pools()
  mcp.stat_limit(2000)
  mcp.add_stat(2000, "far")
  mcp.add_stat(3, "near")
  return {}
end
function mcp_config_routes()
  mcp.attach(mcp.CMD_MG, function(r)
    local n = tonumber(r:key())
    local ok, e = pcall(mcp.stat, n, 5)
    return show(ok, e)
  end)
end
"""


def test_stat_limit_raises_the_add_stat_limit(make_server, tmp_path):
    c = T.to(start(make_server, tmp_path, STATS))
    assert c.call("mg 2000\r\n") == "SERVER_ERROR true nil\r\n"
    assert c.call("mg 2000\r\n") == "SERVER_ERROR true nil\r\n"
    assert c.call("mg 3\r\n") == "SERVER_ERROR true nil\r\n"
    assert c.call("mg 1\r\n") == "SERVER_ERROR true nil\r\n"  # in range, unnamed
    # memcached's bound: the highest index add_stat was given.
    r = c.call("mg 2001\r\n")
    assert r.startswith("SERVER_ERROR false '") and r.endswith("stat index out of range'\r\n")
    r = c.call("mg 0\r\n")
    assert r.endswith("stat index out of range'\r\n")
    st = c.stats("proxy")
    assert st["user_far"] == "10"
    assert st["user_near"] == "5"
    in_step(c)


def _stat_config(body):
    return ("function mcp_config_pools()\n%s\nreturn {} end\n" % body +
            "function mcp_config_routes() end\n")


@pytest.mark.parametrize("body, message", [
    # memcached's default limit is 1024 ...
    ("mcp.add_stat(1025, 'x')", "stat index must be 1024 or less"),
    # ... which stat_limit lowers or raises, 0 restoring the default.
    ("mcp.stat_limit(2) mcp.add_stat(3, 'x')", "stat index must be 2 or less"),
    ("mcp.stat_limit(2) mcp.stat_limit(0) mcp.add_stat(1025, 'x')", "stat index must be 1024 or less"),
    ("mcp.add_stat(0, 'x')", "stat index must be 1 or higher"),
    ("mcp.stat_limit('x')", "number expected, got string"),
    ("mcp.stat_limit(1.5)", "number has no integer representation"),
    # Trove's counters are fixed arrays: more than 8192 is refused.
    ("mcp.stat_limit(8193)", "stat_limit must be 8192 or less in Trove"),
])
def test_stat_limit_errors(tmp_path, body, message):
    assert message in startup_error(tmp_path, _stat_config(body))


def test_stat_limit_zero_is_the_default_and_warns_above_it(make_server, tmp_path):
    text = _stat_config("mcp.stat_limit(0) mcp.add_stat(1024, 'top') mcp.stat_limit(8192) "
                        "mcp.add_stat(8192, 'last')")
    px = start(make_server, tmp_path, text)
    st = T.to(px).stats("proxy")
    assert st["user_top"] == "0" and st["user_last"] == "0"
    px.stop()
    # memcached's warning, on stderr, for a limit above its default.
    assert "setting ustats limit above default may cause performance problems" in px.log()


# ---- res:close() and __close ---------------------------------------------------

CLOSE = r"""
function mcp_config_pools() return {} end
function mcp_config_routes()
  mcp.attach(mcp.CMD_MG, function(r)
    local k = r:key()
    local res = mcp.internal(mcp.request("mg stored v\r\n"))
    local bad = mcp.internal(mcp.request("incr stored abc\r\n"))
    if k == "before" then
      return show(res:ok(), res:hit(), res:code(), res:vlen(), res:line(), res:raw_string())
    elseif k == "after" then
      res:close()
      res:close()  -- twice is harmless
      return show(res:ok(), res:hit(), res:code(), res:vlen(), res:line(), res:raw_string(),
        res:flag_blank("v"), res:elapsed() >= 0)
    elseif k == "error" then
      local before = show(bad:ok(), bad:code(), bad:raw_string())
      bad:close()
      return before .. show(bad:ok(), bad:hit(), bad:vlen(), bad:raw_string())
    elseif k == "return" then
      res:close()
      return res
    elseif k == "return_error" then
      bad:close()
      return bad
    elseif k == "scope" then
      local kept
      do
        local x <close> = mcp.internal(mcp.request("mg stored v\r\n"))
        kept = x
        if x:vlen() ~= 2 then return "SERVER_ERROR not filled\r\n" end
      end
      return show(kept:ok(), kept:vlen(), kept:raw_string())
    elseif k == "error_in_scope" then
      local kept
      local ok, e = pcall(function()
        local x <close> = mcp.internal(mcp.request("mg stored v\r\n"))
        kept = x
        error("boom")
      end)
      return show(ok, kept:raw_string())
    elseif k == "method" then
      return show(type(res.close), type(getmetatable(res).__close))
    end
    return "SERVER_ERROR no case\r\n"
  end)
end
"""


@pytest.fixture
def closer(make_server, tmp_path):
    c = T.to(start(make_server, tmp_path, CLOSE))
    assert c.call("set stored 3 0 2\r\nhi\r\n") == "STORED\r\n"  # unhooked: local
    return c


def test_response_methods_before_close(closer):
    assert closer.call("mg before\r\n") == "SERVER_ERROR true true 15 2 nil 'VA 2\r\n"
    assert closer.read_line() == "hi\r\n"
    assert closer.read_line() == "'\r\n"
    in_step(closer)


def test_closed_response_keeps_its_status_and_loses_its_reply(closer):
    # memcached: the buffer freed, the parsed reply zeroed (code 0, no line,
    # no value), the status kept: a good reply stays ok() and hit().
    assert closer.call("mg after\r\n") == "SERVER_ERROR true true 0 0 nil nil false true\r\n"
    in_step(closer)


def test_closed_error_reply_stays_not_ok(closer):
    assert closer.call("mg error\r\n") == \
        "SERVER_ERROR false 22 'CLIENT_ERROR invalid numeric delta argument\r\n"
    assert closer.read_line() == "'\r\n"
    assert closer.read_line() == "SERVER_ERROR false false 0 nil\r\n"
    in_step(closer)


def test_returned_closed_response_writes_nothing(closer):
    # As memcached's empty response: nothing reaches the client, and the
    # connection goes on.
    closer.send("mg return\r\n")
    in_step(closer)


def test_returned_closed_error_is_a_backend_failure(closer):
    assert closer.call("mg return_error\r\n") == "SERVER_ERROR backend failure\r\n"
    in_step(closer)


def test_to_be_closed_variable_closes_the_response(closer):
    assert closer.call("mg scope\r\n") == "SERVER_ERROR true 0 nil\r\n"
    assert closer.call("mg error_in_scope\r\n") == "SERVER_ERROR false nil\r\n"
    assert closer.call("mg method\r\n") == "SERVER_ERROR 'function' 'function'\r\n"
    in_step(closer)


# ---- mcp.attach ----------------------------------------------------------------

ANY = r"""
function mcp_config_pools() return {} end
function mcp_config_routes()
  mcp.attach(mcp.CMD_ANY, function(r)
    return "SERVER_ERROR routed " .. r:command() .. " " .. r:ntokens() .. "\r\n"
  end)
end
"""


def test_cmd_any_routes_version_stats_watch_and_quit(make_server, tmp_path):
    """memcached's CMD_ANY hooks every command number but mn, and its proxy
    parses version, stats, watch and quit, so those run the route too."""
    c = T.to(start(make_server, tmp_path, ANY))
    assert c.call("version\r\n") == "SERVER_ERROR routed 27 1\r\n"
    assert c.call("stats proxy\r\n") == "SERVER_ERROR routed 23 2\r\n"
    assert c.call("watch proxyevents\r\n") == "SERVER_ERROR routed 25 2\r\n"
    assert c.call("quit\r\n") == "SERVER_ERROR routed 22 1\r\n"
    assert c.call("mg k\r\n") == "SERVER_ERROR routed 1 2\r\n"
    assert c.call("set k 0 0 1\r\nx\r\n") == "SERVER_ERROR routed 9 5\r\n"
    # mn is never hooked; what the proxy's parser does not know stays local.
    in_step(c)
    assert c.call("flush_all\r\n") == "OK\r\n"
    assert c.call("verbosity 1\r\n") == "OK\r\n"


EXPLICIT = r"""
function mcp_config_pools() return {} end
function mcp_config_routes()
  local f = function(r) return "SERVER_ERROR routed " .. r:command() .. "\r\n" end
  mcp.attach(mcp.CMD_VERSION, f)
  mcp.attach(mcp.CMD_STATS, f, "t1")
  mcp.attach(mcp.CMD_MN, f)         -- accepted, never hooked (memcached skips mn)
  mcp.attach(mcp.CMD_SHUTDOWN, f)   -- accepted, never reached (not parsed)
  mcp.attach(mcp.CMD_FLUSH_ALL, f)
  mcp.attach(mcp.CMD_END_STORAGE, f)
end
"""


def test_explicit_hooks_on_local_commands(make_server, tmp_path):
    c = T.to(start(make_server, tmp_path, EXPLICIT))
    assert c.call("version\r\n") == "SERVER_ERROR routed 27\r\n"
    assert c.call("stats settings\r\n").startswith("STAT ")  # its hook is tagged t1 only
    c.read_until(b"END\r\n")
    in_step(c)
    assert c.call("flush_all\r\n") == "OK\r\n"


@pytest.mark.parametrize("call, message", [
    ("mcp.attach(mcp.CMD_MG, 5)", "mcp.attach: must pass a function"),
    ("mcp.attach(mcp.CMD_MG, function() end, '')", "mcp.attach: tag must be 1 to 8 characters"),
    ("mcp.attach(mcp.CMD_MG, function() end, '123456789')",
     "mcp.attach: tag must be 1 to 8 characters"),
    ("mcp.attach(999, function() end)", "mcp.attach: unknown command number 999"),
    ("mcp.attach(0, function() end)", "mcp.attach: unknown command number 0"),
])
def test_attach_errors(tmp_path, call, message):
    text = "function mcp_config_pools() return {} end\nfunction mcp_config_routes()\n%s\nend\n" % call
    assert message in startup_error(tmp_path, text)


# ---- TLS --------------------------------------------------------------------

@pytest.mark.parametrize("body, message", [
    ("mcp.backend_use_tls('yes')", "boolean expected, got string"),
    # As memcached: a TLS backend needs the client context first.
    ("mcp.pool({ mcp.backend({ label = 'b', host = '127.0.0.1', port = 1, tls = true }) })",
     "TLS requested but not initialized: call mcp.init_tls()"),
    ("mcp.backend_use_tls(true)\nmcp.pool({ mcp.backend('b', '127.0.0.1', 1) })",
     "TLS requested but not initialized: call mcp.init_tls()"),
])
def test_tls_misuse_is_refused(tmp_path, body, message):
    assert message in startup_error(tmp_path, _stat_config(body))


TLS_OFF = r"""
function mcp_config_pools()
  mcp.backend_use_tls(false)
  local b = mcp.backend({ label = 'b', host = '127.0.0.1', port = 1, tls = false, down = true })
  return { p = mcp.pool({ b }) }
end
function mcp_config_routes(p)
  mcp.attach(mcp.CMD_MG, function(r) return show(r:command(), nil) end)
  local fg = mcp.funcgen_new()
  fg:ready({ n = "cn", f = function(rctx)
    return function(r) return show(rctx:tls_peer_cn(), type(rctx.tls_peer_cn)) end
  end })
  mcp.attach(mcp.CMD_MD, fg)
end
"""


def test_tls_off_is_accepted_and_the_peer_cn_is_nil(make_server, tmp_path):
    # memcached without TLS takes backend_use_tls(false) and tls = false, and
    # answers nil for a connection without TLS (every Trove connection).
    c = T.to(start(make_server, tmp_path, TLS_OFF))
    assert c.call("md k\r\n") == "SERVER_ERROR nil 'function'\r\n"
    in_step(c)
