"""The built-in proxy: inspectors and mutators (mcp.req_inspector_new,
mcp.res_inspector_new, mcp.req_mutator_new, mcp.res_mutator_new) and the
per-slot user objects they write into (rctx:request_new,
rctx:response_new, fg:ready{u = N}), against scripted backends.

The behaviour asserted is memcached 1.6.45's proxy (proxy_inspector.c,
proxy_mutator.c, proxy_luafgen.c; its t/proxyins.t and t/proxymut.t run the
same features in the memcached suite). Trove's deliberate differences are
in docs/proxy.md ("Differences"). Every route reports what it saw as exact
bytes, so a wrong step, return value or error text fails here.
"""

import pytest

from harness import server as hserver
from test_proxy import write
from test_proxy_api import start  # noqa: F401  (the fixture)

pytestmark = pytest.mark.trove_only

# Lua for each bad step table or call, and memcached's error text for it.
ERRORS = {
    # inspectors
    "i_unknown": ('mcp.req_inspector_new({ t = "bogus" })', "inspector step 1: unknown step type"),
    "i_second": ('mcp.req_inspector_new({ t = "keyis", str = "a" }, { t = "bogus" })',
                 "inspector step 2: unknown step type"),
    "i_compat": ('mcp.res_inspector_new({ t = "sepkey" })',
                 "inspector step 1: step incompatible with inspector type"),
    "i_compat2": ('mcp.res_inspector_new({ t = "keyis", str = "a" })',
                  "inspector step 1: step incompatible with inspector type"),
    "i_noflag": ('mcp.req_inspector_new({ t = "hasflag" })',
                 "inspector step 1: must provide 'flag' argument"),
    "i_longflag": ('mcp.req_inspector_new({ t = "flagtoken", flag = "ab" })',
                   "inspector step 1: 'flag' must be a single character"),
    "i_badflag": ('mcp.req_inspector_new({ t = "flagint", flag = "1" })',
                  "inspect step 1: 'flag' must be alphanumeric"),
    "i_nostr": ('mcp.req_inspector_new({ t = "keyis" })',
                "inspector step 1: must provide 'str' argument"),
    "i_emptystr": ('mcp.req_inspector_new({ t = "keybegin", str = "" })',
                   "inspector step 1: 'str' must have nonzero length"),
    "i_flagis_nostr": ('mcp.res_inspector_new({ t = "flagis", flag = "O" })',
                       "inspector step 1: must provide 'str' argument"),
    "i_sep": ('mcp.req_inspector_new({ t = "sepkey", sep = "ab" })',
              "inspector step 1: separator must be one character"),
    "i_notable": ('mcp.req_inspector_new("x")', "table expected, got string"),
    "i_arg": ('mcp.res_inspector_new({ t = "hasflag", flag = "f" })(mcp.request("mg x\\r\\n"))',
              "invalid argument to inspector object"),
    "i_argtype": ('mcp.req_inspector_new({ t = "keyis", str = "a" })("x")',
                  "userdata expected, got string"),
    # mutators
    "m_none": ("mcp.req_mutator_new()", "mutator failed to initialize, no steps given"),
    "m_unknown": ('mcp.req_mutator_new({ t = "bogus" })', "mutator step 1: unknown step type"),
    "m_compat": ('mcp.req_mutator_new({ t = "rescodeset", val = "HD" })',
                 "mutator step 1: step incompatible with mutator type"),
    "m_compat2": ('mcp.res_mutator_new({ t = "cmdset", cmd = "mg" })',
                  "mutator step 1: step incompatible with mutator type"),
    "m_nocmd": ('mcp.req_mutator_new({ t = "cmdset" })', "mutator step 1: must provide 'cmd' argument"),
    "m_longcmd": ('mcp.req_mutator_new({ t = "cmdset", cmd = string.rep("x", 21) })',
                  "mutator step 1: 'cmd' too long"),
    "m_noval": ('mcp.req_mutator_new({ t = "cmdset", cmd = "mg" }, { t = "keyset" })',
                "mutator step 2: must provide 'val' argument"),
    "m_emptyval": ('mcp.req_mutator_new({ t = "keyset", val = "" })',
                   "mutator step 1: 'val' must have nonzero length"),
    "m_noidx": ('mcp.req_mutator_new({ t = "keycopy" })', "mutator step 1: must provide 'idx' argument"),
    "m_idx0": ('mcp.req_mutator_new({ t = "cmdcopy", idx = 0 })',
               "mutator step 1: 'idx' argument must be greater than 0"),
    "m_idxfloat": ('mcp.res_mutator_new({ t = "valcopy", idx = 1.5 })',
                   "mutator step 1: must provide 'idx' argument as an integer"),
    "m_noflag": ('mcp.req_mutator_new({ t = "flagset" })', "mutator step 1: must provide 'flag' argument"),
    "m_longflag": ('mcp.req_mutator_new({ t = "flagset", flag = "xy" })',
                   "mutator step 1: 'flag' must be a single character"),
    "m_badflag": ('mcp.res_mutator_new({ t = "flagcopy", flag = "1", idx = 1 })',
                  "mutator step 1: 'flag' must be alphanumeric"),
    "m_flagval": ('mcp.req_mutator_new({ t = "flagset", flag = "O", val = {} })',
                  "mutator step 1: unsupported type for 'val'"),
    "m_flagcopy_noidx": ('mcp.res_mutator_new({ t = "flagcopy", flag = "O" })',
                         "mutator step 1: must provide 'idx' argument"),
    "m_nocode": ('mcp.res_mutator_new({ t = "reserr" })', "mutator step 1: must provide 'code' argument"),
    "m_badcode": ('mcp.res_mutator_new({ t = "reserr", code = "teapot" })',
                  "mutator step 1: code must be 'error', server', or 'client'"),
    "m_emptymsg": ('mcp.res_mutator_new({ t = "reserr", code = "server", msg = "" })',
                   "mutator step 1: 'msg' must be a nonzero length string"),
    "m_dst": ('mcp.res_mutator_new({ t = "rescodeset", val = "HD" })(mcp.request("mg x\\r\\n"))',
              "invalid argument to mutator object"),
    "m_nodst": ('mcp.req_mutator_new({ t = "cmdset", cmd = "mg" })()', "userdata expected, got no value"),
    # fg:ready{u = N}
    "u_zero": ('mcp.funcgen_new():ready({ u = 0, f = function() return function() end end })',
               "user obj ('u') in fgen:ready must be between 1 and 255"),
    "u_big": ('mcp.funcgen_new():ready({ u = 256, f = function() return function() end end })',
              "user obj ('u') in fgen:ready must be between 1 and 255"),
    "u_float": ('mcp.funcgen_new():ready({ u = 1.5, f = function() return function() end end })',
                "number has no integer representation"),
}

CONFIG = r"""
-- n:v1 v2 ...: what a call returned (strings quoted, so "" shows).
function show(...)
  local t = table.pack(...)
  local out = {}
  for i = 1, t.n do
    local v = t[i]
    if type(v) == "string" then out[i] = "'" .. v .. "'" else out[i] = tostring(v) end
  end
  return "SERVER_ERROR " .. t.n .. ":" .. table.concat(out, " ") .. "\r\n"
end

-- A funcgen with user objects: gen(rctx, h) makes its handler.
function ufgen(p, u, name, gen)
  local fg = mcp.funcgen_new()
  local h = fg:new_handle(p.z1)
  fg:ready({ n = name, u = u, f = function(rctx) return gen(rctx, h) end })
  return fg
end

function mcp_config_routes(p)
  -- ---- inspectors over requests ----
  local ins_req = mcp.req_inspector_new(
    { t = "sepkey", sep = "/", pos = 2, map = { foo = 1, bar = "two" } },
    { t = "sepkey", pos = 3 },
    { t = "keybegin", str = "ins/" },
    { t = "keyis", str = "ins/foo/x" },
    { t = "hasflag", flag = "O" },
    { t = "flagtoken", flag = "O" },
    { t = "flagint", flag = "N" },
    { t = "flagis", flag = "O", str = "abc" })
  local ins = fn(function(r) return show(ins_req(r)) end, "ins")
  -- leading separators are skipped; a position past the parts, or 0, is nil
  local ins_lead = mcp.req_inspector_new(
    { t = "sepkey", pos = 1 }, { t = "sepkey", pos = 2 }, { t = "sepkey", pos = 3 },
    { t = "sepkey", pos = 0 }, { t = "sepkey", sep = "-", pos = 2 }, { t = "hasflag", flag = "O" },
    { t = "flagtoken", flag = "O" })

  -- ---- inspectors over responses ----
  local ins_res = mcp.res_inspector_new(
    { t = "hasflag", flag = "f" },
    { t = "flagtoken", flag = "O" },
    { t = "flagint", flag = "t" },
    { t = "flagis", flag = "O", str = "abc" })
  local ins_res_nohas = mcp.res_inspector_new(
    { t = "flagtoken", flag = "O" }, { t = "flagint", flag = "t" }, { t = "flagis", flag = "O", str = "a" })
  local res = fgen(p, function(rctx, h)
    return function(r)
      local res = rctx:enqueue_and_wait(r, h.z1)
      if r:key() == "res/nonmeta" then
        local ok, err = pcall(ins_res, res)
        return "SERVER_ERROR " .. tostring(err) .. " | " .. show(ins_res_nohas(res))
      end
      return show(ins_res(res))
    end
  end, "res")

  -- ---- bad step tables and calls ----
  local cases = {
ERROR_CASES  }
  local err = fn(function(r)
    local ok, e = pcall(cases[string.sub(r:key(), 5)])
    return "SERVER_ERROR " .. tostring(ok) .. " " .. tostring(e) .. "\r\n"
  end, "err")

  -- ---- request mutators ----
  local m_set = mcp.req_mutator_new(
    { t = "cmdset", cmd = "mg" }, { t = "keyset", val = "override" }, { t = "flagset", flag = "s" },
    { t = "flagset", flag = "O", val = "opaque" }, { t = "flagset", flag = "N", val = 33 })
  local m_copy = mcp.req_mutator_new(
    { t = "cmdcopy", idx = 1 }, { t = "keycopy", idx = 2 }, { t = "flagcopy", flag = "O", idx = 3 },
    { t = "flagcopy", flag = "T", idx = 4 }, { t = "flagcopy", flag = "q", idx = 5 })
  local m_self = mcp.req_mutator_new(
    { t = "cmdcopy", idx = 1 }, { t = "keycopy", idx = 1 }, { t = "flagcopy", flag = "O", idx = 1 })
  local m_cmdkey = mcp.req_mutator_new({ t = "cmdcopy", idx = 1 }, { t = "keycopy", idx = 2 })
  local m_val = mcp.req_mutator_new(
    { t = "cmdset", cmd = "ms" }, { t = "keycopy", idx = 1 }, { t = "valcopy", idx = 2 },
    { t = "flagcopy", flag = "T", idx = 2 })
  local m_valstr = mcp.req_mutator_new(
    { t = "cmdset", cmd = "ms" }, { t = "keycopy", idx = 1 }, { t = "valcopy", idx = 2 })
  local m_valmg = mcp.req_mutator_new(
    { t = "cmdset", cmd = "mg" }, { t = "keycopy", idx = 1 }, { t = "valcopy", idx = 2 })
  local mreq = ufgen(p, 2, "mreq", function(rctx, h)
    local nreq = rctx:request_new()
    local nres = rctx:response_new()
    return function(r)
      local k = r:key()
      if k == "mreq/set" then
        m_set(nreq)
        return rctx:enqueue_and_wait(nreq, h)
      elseif k == "mreq/ret" then
        return show(m_set(nreq))
      elseif k == "mreq/copy" then
        m_copy(nreq, "md", "other", r, true, nil)
        return rctx:enqueue_and_wait(nreq, h)
      elseif k == "mreq/self" then
        m_self(nreq, r)
        return rctx:enqueue_and_wait(nreq, h)
      elseif k == "mreq/alias" then
        m_set(nreq)
        m_self(nreq, nreq)
        return rctx:enqueue_and_wait(nreq, h)
      elseif k == "mreq/val" then
        m_val(nreq, "mreq/newval", r)
        return rctx:enqueue_and_wait(nreq, h)
      elseif k == "mreq/valstr" then
        m_valstr(nreq, "mreq/k2", "abc\r\n")
        return rctx:enqueue_and_wait(nreq, h)
      elseif k == "mreq/twice" then
        m_val(nreq, "a", r)
        return show(pcall(m_val, nreq, "b", r))
      elseif k == "mreq/toolong" then
        return show(pcall(m_cmdkey, nreq, "mg", string.rep("k", 600)))
      elseif k == "mreq/badparse" then
        return show(pcall(m_cmdkey, nreq, "bogus", "k"))
      elseif k == "mreq/novalue" then
        return show(pcall(m_cmdkey, nreq, "ms", "k 5"))
      elseif k == "mreq/extravalue" then
        return show(pcall(m_valmg, nreq, "k", "abc\r\n"))
      elseif k == "mreq/false" then
        return show(m_cmdkey(nreq, 5, "k"), m_cmdkey(nreq, "mg"), m_valstr(nreq, "k", "abc"),
          m_copy(nreq, "md", "k", 7), m_copy(nreq, "md", "k", {}), m_cmdkey(nreq, nres, "k"))
      elseif k == "mreq/textsrc" then
        return show(m_copy(nreq, "md", "k", r))
      elseif k == "mreq/wrongdst" then
        local ok, e = pcall(m_set, nres)
        return "SERVER_ERROR " .. tostring(e) .. "\r\n"
      elseif k == "mreq/clientdst" then
        m_set(r)
        return rctx:enqueue_and_wait(r, h)
      elseif k == "mreq/blank" then
        return show(nreq:key(), nreq:command(), nreq:raw_line(), nres:ok(), nres:code(), nres:raw_string())
      end
      return "SERVER_ERROR no case\r\n"
    end
  end)

  -- ---- response mutators ----
  local m_code = mcp.res_mutator_new({ t = "rescodeset", val = "HD" })
  local m_bad = mcp.res_mutator_new({ t = "rescodeset", val = "XX" })
  local m_rval = mcp.res_mutator_new({ t = "rescodecopy", idx = 1 }, { t = "valcopy", idx = 2 })
  local m_rvalflag = mcp.res_mutator_new(
    { t = "rescodecopy", idx = 1 }, { t = "valcopy", idx = 2 }, { t = "flagset", flag = "t", val = 5 })
  local m_flags = mcp.res_mutator_new(
    { t = "rescodecopy", idx = 1 }, { t = "valcopy", idx = 1 }, { t = "flagcopy", flag = "O", idx = 1 },
    { t = "flagcopy", flag = "t", idx = 1 }, { t = "flagcopy", flag = "k", idx = 1 },
    { t = "flagset", flag = "X" })
  local m_all = mcp.res_mutator_new({ t = "rescodeset", val = "HD" }, { t = "flagcopyall", idx = 1 })
  local m_err = mcp.res_mutator_new({ t = "reserr", code = "server", msg = "teapot" })
  local m_errbare = mcp.res_mutator_new({ t = "reserr", code = "client" })
  local m_errplain = mcp.res_mutator_new({ t = "reserr", code = "error", msg = "x y" })
  local m_null = mcp.res_mutator_new({ t = "resnull", idx = 1 })
  local m_opq = mcp.res_mutator_new({ t = "rescodeset", val = "HD" }, { t = "flagcopy", flag = "O", idx = 1 })
  local m_rcc = mcp.res_mutator_new({ t = "rescodecopy", idx = 1 })
  local function info(x)
    return string.format("SERVER_ERROR ok=%s hit=%s code=%d vlen=%d line=%s\r\n",
      tostring(x:ok()), tostring(x:hit()), x:code(), x:vlen(), tostring(x:line()))
  end
  local mres = ufgen(p, 1, "mres", function(rctx, h)
    local nres = rctx:response_new()
    return function(r)
      local k = r:key()
      if k == "mres/code" then
        m_code(nres)
        return nres
      elseif k == "mres/val" then
        m_rval(nres, "VA", "example value\r\n")
        return nres
      elseif k == "mres/info" then
        m_rvalflag(nres, "VA", "example value\r\n")
        return info(nres)
      elseif k == "mres/flags" then
        local res = rctx:enqueue_and_wait(r, h)
        m_flags(nres, res)
        return nres
      elseif k == "mres/all" then
        local res = rctx:enqueue_and_wait(r, h)
        if m_all(nres, res) == false then return "SERVER_ERROR all false\r\n" end
        return nres
      elseif k == "mres/err" then
        m_err(nres)
        return nres
      elseif k == "mres/errinfo" then
        m_err(nres)
        return info(nres)
      elseif k == "mres/errbare" then
        m_errbare(nres)
        return nres
      elseif k == "mres/errplain" then
        m_errplain(nres)
        return nres
      elseif k == "mres/null" then
        if m_null(nres, r) == false then return "SERVER_ERROR null false\r\n" end
        return nres
      elseif k == "mres/twice" then
        m_code(nres)
        return show(pcall(m_code, nres))
      elseif k == "mres/badparse" then
        local ok, e = pcall(m_bad, nres)
        m_errplain(nres)
        return "SERVER_ERROR " .. tostring(e) .. " | " .. nres:raw_string()
      elseif k == "mres/short" then
        if m_rval(nres, "VA", "x") == false then m_err(nres) end
        return nres
      elseif k == "mres/backend" then
        local res = rctx:enqueue_and_wait(r, h)
        return show(pcall(m_code, res))
      elseif k == "mres/codecopy" then
        local res = rctx:enqueue_and_wait(r, h)
        if m_rcc(nres, res) == false then return "SERVER_ERROR codecopy false\r\n" end
        return nres
      elseif k == "mres/limit" then
        return show(pcall(rctx.request_new, rctx))
      else  -- mres/par...: a slot's own object, while other slots use theirs
        local res = rctx:enqueue_and_wait(r, h)
        m_opq(nres, k)
        return nres
      end
    end
  end)

  -- ---- funcgens without user objects ----
  local nou = fn(function(r) return "SERVER_ERROR unused\r\n" end, "nou")
  local nou2 = mcp.funcgen_new()
  nou2:ready({ n = "nou2", u = "x", f = function(rctx)
    return function(r) return show(pcall(rctx.response_new, rctx)) end
  end })
  local nou1 = mcp.funcgen_new()
  nou1:ready({ n = "nou1", f = function(rctx)
    return function(r) return show(pcall(rctx.request_new, rctx)) end
  end })

  mcp.attach(mcp.CMD_ANY_STORAGE, mcp.router_new({ map = {
    ins = ins, res = res, err = err, mreq = mreq, mres = mres, nou1 = nou1, nou2 = nou2,
  }, default = nou }))
  mcp.attach(mcp.CMD_DELETE, function(r) return show(ins_lead(r)) end)
end
"""


def config():
    cases = "".join("    %s = function() return %s end,\n" % (k, lua) for k, (lua, _) in ERRORS.items())
    return CONFIG.replace("ERROR_CASES", cases)


@pytest.fixture
def e(start):  # noqa: F811
    return start(config())


# ---- inspectors ----------------------------------------------------------------

@pytest.mark.parametrize("line,want", [
    # sepkey pos 2 with a map, sepkey pos 3, keybegin, keyis, hasflag,
    # flagtoken, flagint, flagis
    ("mg ins/foo/x Oabc N-12", "11:1 'x' true true true true 'abc' true -12 true true"),
    ("mg ins/bar/y/z Ozz Nx", "11:'two' 'y' true false true true 'zz' true nil true false"),
    # a map miss is nil; tokenless flags: "" and nil; only 2 parts
    ("mg ins/baz O N", "11:nil nil true false true true '' true nil true false"),
    # keybegin needs a longer key; an empty last part is nil
    ("mg ins/", "11:nil nil false false false false nil false nil false nil"),
    # empty parts are nil; the flag search stops at the first O
    ("mg ins//x Oabc Odef", "11:nil 'x' true false true true 'abc' false nil true true"),
    # flagint: memcached's integer rules (sign only in front, at most 22 bytes)
    ("mg ins/a N+5", "11:nil nil true false false false nil true nil false nil"),
    ("mg ins/a N-", "11:nil nil true false false false nil true 0 false nil"),
    ("mg ins/a N9223372036854775807", "11:nil nil true false false false nil true 9223372036854775807 false nil"),
    ("mg ins/a N9223372036854775808", "11:nil nil true false false false nil true nil false nil"),
    ("mg ins/a N-9223372036854775808",
     "11:nil nil true false false false nil true -9223372036854775808 false nil"),
    # ms: flags start after the length
    ("ms ins/foo/q 2 Oabc\r\nhi", "11:1 'q' true false true true 'abc' false nil true true"),
    # text commands have no flags, even a token that looks like one
    ("get ins/foo/q", "11:1 'q' true false false false nil false nil false nil"),
])
def test_request_inspector_steps(e, line, want):
    assert e.c.call(line + "\r\n") == "SERVER_ERROR %s\r\n" % want
    e.sync()


def test_sepkey_skips_leading_separators(e):
    c = e.c
    assert c.call("delete //a/b\r\n") == "SERVER_ERROR 8:'a' 'b' nil nil nil false false nil\r\n"
    assert c.call("delete a-b-c/d\r\n") == "SERVER_ERROR 8:'a-b-c' 'd' nil nil 'b' false false nil\r\n"
    assert c.call("delete ///\r\n") == "SERVER_ERROR 8:nil nil nil nil nil false false nil\r\n"
    e.sync()


@pytest.mark.parametrize("reply,want", [
    ("HD f1 Oabc t-5\r\n", "7:true true 'abc' true -5 true true"),
    ("VA 2 t9 Ox\r\nhi\r\n", "7:false true 'x' true 9 true false"),
    ("HD f O t\r\n", "7:true true '' true nil true false"),
    ("EN\r\n", "7:false false nil false nil false nil"),
    ("HD t12x Oabcd\r\n", "7:false true 'abcd' true nil true false"),
    ("NF f1\r\n", "7:true false nil false nil false nil"),
])
def test_response_inspector_steps(e, reply, want):
    e.c.send("mg res/x\r\n")
    assert e.b0.recv_line() == "mg res/x\r\n"
    e.b0.send(reply)
    assert e.c.read_line() == "SERVER_ERROR %s\r\n" % want
    e.sync()


def test_response_inspector_on_a_non_meta_reply(e):
    # hasflag raises; the other flag steps give (false, nil).
    e.c.send("mg res/nonmeta\r\n")
    assert e.b0.recv_line() == "mg res/nonmeta\r\n"
    e.b0.send("SERVER_ERROR boom\r\n")
    assert e.c.read_line() == ("SERVER_ERROR inspector error: response is not meta protocol"
                               " | SERVER_ERROR 6:false nil false nil false nil\r\n")
    e.sync()


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_bad_step_tables_and_calls(e, case):
    got = e.c.call("mg err/%s\r\n" % case)
    assert got.startswith("SERVER_ERROR false "), got
    assert ERRORS[case][1] in got, got
    e.sync()


def test_exact_error_texts(e):
    # Errors raised by C functions carry no position prefix, as memcached's.
    assert e.c.call("mg err/m_none\r\n") == \
        "SERVER_ERROR false mutator failed to initialize, no steps given\r\n"
    assert e.c.call("mg err/i_badflag\r\n") == \
        "SERVER_ERROR false inspect step 1: 'flag' must be alphanumeric\r\n"
    assert e.c.call("mg err/u_big\r\n") == \
        "SERVER_ERROR false user obj ('u') in fgen:ready must be between 1 and 255\r\n"
    assert e.c.call("mg mres/limit\r\n") == \
        "SERVER_ERROR 2:false 'rctx request new: object count limit reached'\r\n"
    e.sync()


def test_inspectors_only_in_worker_vms(tmp_path):
    cfg = write(tmp_path, "bad.lua", """
function mcp_config_pools()
  mcp.req_inspector_new({ t = "keyis", str = "a" })
end
function mcp_config_routes(p) end
""")
    with pytest.raises(hserver.ServerError) as ei:
        hserver.Server(["-o", "proxy_config=" + cfg], start_timeout=3)
    assert "inspectors may only be made in mcp_config_routes" in str(ei.value)


# ---- request mutators --------------------------------------------------------------

def roundtrip(e, line, seen, value=None, reply="HD\r\n"):
    """The client's line makes the route send `seen` (and `value`) to the
    backend; the backend's reply reaches the client."""
    e.c.send(line)
    assert e.b0.recv_line() == seen, line
    if value is not None:
        assert e.b0.recv_exact(len(value)) == value
    e.b0.send(reply)
    assert e.c.read_line() == reply.split("\r\n")[0] + "\r\n"


def test_request_mutator_sets_command_key_and_flags(e):
    roundtrip(e, "mg mreq/set\r\n", "mg override s Oopaque N33\r\n", reply="HD s2 Oopaque\r\n")
    # Success returns nothing.
    assert e.c.call("mg mreq/ret\r\n") == "SERVER_ERROR 0:\r\n"
    e.sync()
    assert e.b0.idle() == ""


def test_request_mutator_copies_from_arguments(e):
    # strings for command and key; a flag from the client's request, a
    # bare flag from `true`, nothing from nil
    roundtrip(e, "mg mreq/copy Oxyz q\r\n", "md other Oxyz T\r\n", reply="NF\r\n")
    roundtrip(e, "mg mreq/copy\r\n", "md other T\r\n", reply="NF\r\n")
    # command, key and flag copied from the client's request
    roundtrip(e, "mg mreq/self v Oq1 t\r\n", "mg mreq/self Oq1\r\n")
    # from the destination itself
    roundtrip(e, "mg mreq/alias\r\n", "mg override Oopaque\r\n")
    e.sync()


def test_request_mutator_values(e):
    # the client's value and T flag copied into a new ms
    roundtrip(e, "ms mreq/val 5 T9\r\nhello\r\n", "ms mreq/newval 5 T9\r\n", value="hello\r\n")
    roundtrip(e, "mg mreq/valstr\r\n", "ms mreq/k2 3\r\n", value="abc\r\n", reply="NS\r\n")
    # A request holding a value cannot be mutated again in the same request;
    # the next request finds the object blank again.
    assert e.c.call("ms mreq/twice 2\r\nhi\r\n") == \
        "SERVER_ERROR 2:false 'mutator: request has already been rendered'\r\n"
    roundtrip(e, "mg mreq/set\r\n", "mg override s Oopaque N33\r\n")
    e.sync()
    assert e.b0.idle() == ""


@pytest.mark.parametrize("key,want", [
    ("toolong", "2:false 'mutator: new request is too long'"),
    ("badparse", "2:false 'mutator: failed to parse new request'"),
    ("novalue", "2:false 'mutator: new request's value does not match its line'"),
    ("extravalue", "2:false 'mutator: new request's value does not match its line'"),
    # a source that cannot give what its step needs: false, nothing changed
    ("false", "6:false false false false false false"),
    ("wrongdst", None),
])
def test_request_mutator_failures(e, key, want):
    got = e.c.call("mg mreq/%s\r\n" % key)
    if want is None:
        assert "invalid argument to mutator object" in got, got
    else:
        assert got == "SERVER_ERROR %s\r\n" % want
    e.sync()
    assert e.b0.idle() == ""


def test_request_mutator_flag_source_must_be_meta(e):
    assert e.c.call("get mreq/textsrc\r\n") == "SERVER_ERROR 1:false\r\n"
    e.sync()


def test_client_request_as_destination(e):
    roundtrip(e, "mg mreq/clientdst v\r\n", "mg override s Oopaque N33\r\n")
    e.sync()


def test_user_objects_start_blank(e):
    assert e.c.call("mg mreq/blank\r\n") == "SERVER_ERROR 6:'' 0 '' true 0 nil\r\n"
    # and are blank again after a request that filled them
    roundtrip(e, "mg mreq/set\r\n", "mg override s Oopaque N33\r\n")
    assert e.c.call("mg mreq/blank\r\n") == "SERVER_ERROR 6:'' 0 '' true 0 nil\r\n"
    e.sync()


# ---- response mutators ----------------------------------------------------------

def test_response_mutator_code_twice_in_a_row(e):
    # The object is released between requests, so it renders again.
    assert e.c.call("mg mres/code\r\n") == "HD\r\n"
    assert e.c.call("mg mres/code\r\n") == "HD\r\n"
    e.sync()


def test_response_mutator_value(e):
    e.c.send("mg mres/val\r\n")
    assert e.c.read_exact(len("VA 13\r\nexample value\r\n")) == "VA 13\r\nexample value\r\n"
    # A mutated response answers like a backend's.
    assert e.c.call("mg mres/info\r\n") == "SERVER_ERROR ok=true hit=true code=15 vlen=13 line=t5\r\n"
    assert e.c.call("mg mres/errinfo\r\n") == \
        "SERVER_ERROR ok=false hit=false code=23 vlen=0 line=nil\r\n"
    e.sync()


def test_response_mutator_copies_flags_and_value_of_a_backend_reply(e):
    e.c.send("mg mres/flags v Oop t\r\n")
    assert e.b0.recv_line() == "mg mres/flags v Oop t\r\n"
    e.b0.send("VA 2 s2 Oop t3 f0\r\nhi\r\n")
    assert e.c.read_exact(len("VA 2 Oop t3 X\r\nhi\r\n")) == "VA 2 Oop t3 X\r\nhi\r\n"
    e.sync()


@pytest.mark.parametrize("reply,want", [
    ("VA 2 t41 Oopaque s2 X W Z\r\nhi\r\n", "HD t41 Oopaque s2 X W Z\r\n"),
    ("HD f1\r\n", "HD f1\r\n"),
    ("HD\r\n", "SERVER_ERROR all false\r\n"),
    ("SERVER_ERROR x\r\n", "SERVER_ERROR all false\r\n"),
])
def test_response_mutator_flagcopyall(e, reply, want):
    e.c.send("mg mres/all\r\n")
    assert e.b0.recv_line() == "mg mres/all\r\n"
    e.b0.send(reply)
    assert e.c.read_line() == want
    e.sync()


@pytest.mark.parametrize("reply,want", [
    ("HD s1\r\n", "HD\r\n"),
    ("VA 1 s1\r\nx\r\n", "SERVER_ERROR mutator: failed to parse new result"),  # VA without a value
    ("SERVER_ERROR x\r\n", "SERVER_ERROR codecopy false\r\n"),
])
def test_response_mutator_rescodecopy(e, reply, want):
    e.c.send("mg mres/codecopy\r\n")
    assert e.b0.recv_line() == "mg mres/codecopy\r\n"
    e.b0.send(reply)
    if want.endswith("\r\n"):
        assert e.c.read_line() == want
    else:
        assert e.c.read_line() == "SERVER_ERROR lua failure\r\n"
    e.sync()


def test_response_mutator_errors(e):
    c = e.c
    assert c.call("mg mres/err\r\n") == "SERVER_ERROR teapot\r\n"
    assert c.call("mg mres/errbare\r\n") == "CLIENT_ERROR\r\n"
    assert c.call("mg mres/errplain\r\n") == "ERROR x y\r\n"
    assert c.call("mg mres/short\r\n") == "SERVER_ERROR teapot\r\n"
    assert c.call("mg mres/code\r\n") == "HD\r\n"  # no corruption after the short one
    e.sync()


@pytest.mark.parametrize("line,want", [
    ("mg mres/null\r\n", "EN\r\n"),
    ("ms mres/null 2\r\nhi\r\n", "NS\r\n"),
    ("md mres/null\r\n", "NF\r\n"),
    ("ma mres/null\r\n", "NF\r\n"),
    ("get mres/null\r\n", "END\r\n"),
    ("set mres/null 0 0 2\r\nhi\r\n", "NOT_STORED\r\n"),
    ("incr mres/null 1\r\n", "NOT_FOUND\r\n"),
    ("touch mres/null 1\r\n", "NOT_FOUND\r\n"),
])
def test_response_mutator_resnull(e, line, want):
    assert e.c.call(line) == want
    e.sync()


def test_response_mutator_render_rules(e):
    c = e.c
    assert c.call("mg mres/twice\r\n") == \
        "SERVER_ERROR 2:false 'mutator: result has already been rendered'\r\n"
    # A failed render leaves the object blank, usable again at once.
    assert c.call("mg mres/badparse\r\n") == \
        "SERVER_ERROR mutator: failed to parse new result | ERROR x y\r\n"
    # A backend's response is already rendered.
    c.send("mg mres/backend\r\n")
    assert e.b0.recv_line() == "mg mres/backend\r\n"
    e.b0.send("HD\r\n")
    assert c.read_line() == "SERVER_ERROR 2:false 'mutator: result has already been rendered'\r\n"
    e.sync()


def test_each_slot_has_its_own_user_objects(e):
    # Two requests in flight at once run in two slots, each with its own
    # response object.
    e.c.send("mg mres/par1\r\nmg mres/par2\r\n")
    assert e.b0.recv_line() == "mg mres/par1\r\n"
    assert e.b0.recv_line() == "mg mres/par2\r\n"
    e.b0.send("HD\r\nHD\r\n")
    assert e.c.read_line() == "HD Omres/par1\r\n"
    assert e.c.read_line() == "HD Omres/par2\r\n"
    e.sync()


# ---- user object limits (fg:ready{u = N}) ------------------------------------------------

def test_user_object_limit(e):
    limit = "SERVER_ERROR 2:false 'rctx request new: object count limit reached'\r\n"
    assert e.c.call("mg mres/limit\r\n") == limit     # u = 1, one made already
    assert e.c.call("mg nou1/x\r\n") == limit         # no u
    assert e.c.call("mg nou2/x\r\n") == limit         # u that is not a number is ignored
    e.sync()


def test_l_option_stays_refused(tmp_path):
    cfg = write(tmp_path, "bad.lua", """
function mcp_config_pools() return {} end
function mcp_config_routes(p)
  mcp.funcgen_new():ready({ l = true, f = function() return function() end end })
end
""")
    with pytest.raises(hserver.ServerError) as ei:
        hserver.Server(["-o", "proxy_config=" + cfg], start_timeout=3)
    assert "option 'l' is not supported" in str(ei.value)
