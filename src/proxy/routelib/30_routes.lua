-- ---------------------------------------------------------------------------
-- Phase 3: routes (each worker VM, mcp_config_routes)
-- ---------------------------------------------------------------------------

-- The ctx a route_<x>_start function gets.
local WorkCtx = {}
WorkCtx.__index = WorkCtx

function WorkCtx:label() return self._label end
function WorkCtx:cmd() return self._cmd end

-- A pool object, or a table of them for a pool set.
function WorkCtx:get_child(name)
    if type(name) ~= "string" then fail("get_child: invalid child: %s", type(name)) end
    if name == "internal" then return mcp.internal_handler end  -- the proxy's own cache
    local c = self._c
    local set = c.sets[name]
    if set ~= nil then
        local t = {}
        for k, ref in pairs(set) do t[k] = c.pools[ref] end
        return t
    end
    local p = c.pools[name]
    if p == nil then fail("%s: no pool named '%s'", tostring(self._label), name) end
    return p
end

local w_build

local function w_value(v, c, ctx)
    if type(v) == "string" then return ctx:get_child(v) end
    if type(v) == "table" then
        if is_route_desc(v) then return w_build(v, c) end
        local o = {}
        for k, cv in pairs(v) do o[k] = w_value(cv, c, ctx) end
        return o
    end
    return v
end

-- Makes the function generator of one route descriptor (children first).
function w_build(d, c)
    local ctx = setmetatable({ _label = d.label, _cmd = d.cmd, _c = c }, WorkCtx)
    local a = d.a
    for k, v in pairs(a) do
        if type(k) == "string" and k:find("^child") then a[k] = w_value(v, c, ctx) end
    end
    local start = _G["route_" .. d._rl_route .. "_start"]
    if type(start) ~= "function" then
        fail("%s: route_%s_start is not defined in the worker VMs (load handler files with proxy_config)%s",
            tostring(d.label), d._rl_route,
            R.replay_error and "; re-running the config here failed: " .. R.replay_error or "")
    end
    local fgen = mcp.funcgen_new()
    start(a, ctx, fgen)
    dsay("built", "route_" .. d._rl_route, "for", d.label)
    return fgen
end

local function w_tree(tree, c)
    local conf = { mode = tree.mode, start = tree.start, stop = tree.stop }
    if tree.map then
        conf.map = {}
        for pfx, e in pairs(tree.map) do
            if e._rl_cmdmap then
                local m = {}
                for id, d in pairs(e) do
                    if type(id) == "number" then m[id] = w_build(d, c) end
                end
                conf.map[pfx] = m
            else
                conf.map[pfx] = w_build(e, c)
            end
        end
    end
    if tree.cmap then
        conf.cmap = {}
        for id, d in pairs(tree.cmap) do conf.cmap[id] = w_build(d, c) end
    end
    if tree.default then conf.default = w_build(tree.default, c) end
    if conf.map == nil and conf.cmap == nil then conf.cmap = {} end
    local router = mcp.router_new(conf)
    if tree.tag then
        mcp.attach(ANY, router, tree.tag)
    else
        mcp.attach(ANY, router)
    end
end

-- Runs the user config again so that what it defines (custom handlers, a
-- require'd library) exists in this VM too; its recordings are dropped.
-- A config that calls config-VM-only functions at its top level fails here:
-- that only matters if it defines a handler this VM then lacks.
local function replay_user_config(c)
    local path = config_path()
    if path == nil then return end
    R.replay = true
    local ok, err = pcall(dofile, path)
    R.replay = false
    if not ok then
        R.replay_error = tostring(err)
        if c.debug then show("routelib debug: re-running the config in a worker failed: ", R.replay_error) end
    end
end

function mcp_config_routes(c)
    replay_user_config(c)
    R.verbose, R.debug, R.trace = c.verbose, c.debug, c.trace
    R.loud = true
    trace_on()
    local ok, err = pcall(function()
        for _, tree in ipairs(c.trees) do w_tree(tree, c) end
    end)
    trace_off()
    R.loud = false
    if not ok then error(err, 0) end
end

-- ---------------------------------------------------------------------------
-- Helpers for route handlers
-- ---------------------------------------------------------------------------

-- Option checks, for _conf functions.
local function check_opts(t, ctx, allowed)
    for k in pairs(t) do
        if not allowed[k] then
            local names = sorted_keys(allowed)
            fail("%s: unknown option '%s' (it takes %s)", ctx:where(), tostring(k),
                #names > 0 and table.concat(names, ", ") or "no options")
        end
    end
end

local function need_child(t, key, ctx)
    local v = t[key]
    if v == nil then fail("%s: needs %s = \"pool name\" (or a route handler)", ctx:where(), key) end
    if type(v) ~= "string" and not is_route_desc(v) then
        fail("%s: %s must be one pool or route; a pool set or a list goes in children", ctx:where(), key)
    end
end

local function need_children(t, ctx)
    local v = t.children
    if type(v) == "string" or is_route_desc(v) then
        t.children = { v }
    elseif type(v) ~= "table" or next(v) == nil then
        fail("%s: needs children = { \"pool\", ... } or the name of a pool set", ctx:where())
    end
end

local function opt_bool(t, key, ctx)
    if t[key] ~= nil and type(t[key]) ~= "boolean" then fail("%s: %s must be true or false", ctx:where(), key) end
end

local function opt_string(t, key, ctx)
    if t[key] ~= nil and (type(t[key]) ~= "string" or t[key] == "") then
        fail("%s: %s must be a string", ctx:where(), key)
    end
end

local function opt_number(t, key, ctx, min, integer, required)
    local v = t[key]
    if v == nil then
        if required then fail("%s: needs %s = <number>", ctx:where(), key) end
        return
    end
    if type(v) ~= "number" or v < min or (integer and math.type(v) ~= "integer" and v ~= math.floor(v)) then
        fail("%s: %s must be %s of at least %s", ctx:where(), key, integer and "an integer" or "a number", min)
    end
    if integer then t[key] = math.tointeger(v) end
end

-- Adds the stats counter <name>_<suffix> when stats = true.
local function opt_stats(t, ctx, suffix)
    opt_bool(t, "stats", ctx)
    opt_string(t, "stats_name", ctx)
    if t.stats then t.stats_id = ctx:get_stats_id((t.stats_name or ctx:label()) .. suffix) end
end

-- Children in a stable order: a list in order, named children by name,
-- the zone `first` (if given and present) first.
local function ordered(children, first)
    local keys = sorted_keys(children)
    local o, front = {}, false
    if first ~= nil and children[first] ~= nil then
        o[1] = children[first]
        front = true
    end
    for _, k in ipairs(keys) do
        if not (front and k == first) then o[#o + 1] = children[k] end
    end
    return o, front
end

local function new_handles(fgen, list)
    local hs = {}
    for i, child in ipairs(list) do hs[i] = fgen:new_handle(child) end
    return hs
end

-- Result kinds: a hit (or any non-miss success), a miss, an error.
local GOOD <const>, MISS <const>, ERR <const> = 1, 2, 3

-- A child route may return a string: classify it as the engine classifies
-- responses (SERVER_ERROR/CLIENT_ERROR/ERROR: error, EN/END: miss).
local function string_kind(s)
    if s == "" or s == "END\r\n" or s:find("^EN[\r ]") then return MISS end
    if s:find("^SERVER_ERROR") or s:find("^CLIENT_ERROR") or s:find("^ERROR") then return ERR end
    return GOOD
end

-- The result of handle h and its kind, or nil while it has not answered.
local function result_of(rctx, h)
    local res, tag = rctx:result(h)
    if res == nil then return nil end
    if tag == RES_GOOD then return res, GOOD end
    if tag == RES_OK then return res, MISS end
    if type(res) == "string" then return res, string_kind(res) end
    return res, ERR
end

-- The kind of a result a route waited for directly (enqueue_and_wait).
local function kind_of(res)
    if type(res) == "string" then return string_kind(res) end
    if res:hit() then return GOOD end
    if res:ok() then return MISS end
    return ERR
end

local now_ms = mcp.time_mono_millis

-- A tracker follows a slot's handles through one request: which were sent,
-- which answered. tr_next() returns them one at a time, in the order they
-- answer. One tracker per slot, reset per request.
local function tracker(hs)
    return { h = hs, n = #hs, sent = {}, got = {}, out = 0 }
end

local function tr_reset(tr)
    for i = 1, tr.n do
        tr.sent[i] = false
        tr.got[i] = false
    end
    tr.out = 0
end

local function tr_send(rctx, tr, r, i)
    rctx:enqueue(r, tr.h[i])
    tr.sent[i] = true
    tr.out = tr.out + 1
end

local function tr_send_all(rctx, tr, r)
    rctx:enqueue(r, tr.h)
    for i = 1, tr.n do tr.sent[i] = true end
    tr.out = tr.n
end

local function tr_scan(rctx, tr)
    for i = 1, tr.n do
        if tr.sent[i] and not tr.got[i] and rctx:result(tr.h[i]) ~= nil then
            tr.got[i] = true
            tr.out = tr.out - 1
            return i
        end
    end
    return nil
end

-- The index of the next handle to answer; nil if none is outstanding or the
-- deadline (mcp.time_mono_millis() value, optional) passes first.
local function tr_next(rctx, tr, deadline)
    while true do
        local i = tr_scan(rctx, tr)
        if i ~= nil then return i end
        if tr.out == 0 then return nil end
        if deadline ~= nil then
            local left = deadline - now_ms()
            if left <= 0 then return nil end
            rctx:wait_cond(1, WAIT_ANY, left / 1000)
        else
            rctx:wait_cond(1, WAIT_ANY)
        end
    end
end

-- The "null" reply route_null (and a refused route_ratelim, route_allasync)
-- gives: a miss / not stored / not found in the command's own protocol.
local CMD_MG <const>, CMD_MS <const> = mcp.CMD_MG, mcp.CMD_MS
local NULL_META <const> = {
    [mcp.CMD_MG] = "EN", [mcp.CMD_MS] = "NS", [mcp.CMD_MD] = "NF",
    [mcp.CMD_MA] = "NF", [mcp.CMD_ME] = "EN", [mcp.CMD_MN] = "MN",
}
local NULL_META_LINE = {}
for id, code in pairs(NULL_META) do NULL_META_LINE[id] = code .. "\r\n" end
local NULL_TEXT <const> = {
    [mcp.CMD_GET] = "END\r\n", [mcp.CMD_GETS] = "END\r\n",
    [mcp.CMD_GAT] = "END\r\n", [mcp.CMD_GATS] = "END\r\n",
    [mcp.CMD_SET] = "NOT_STORED\r\n", [mcp.CMD_ADD] = "NOT_STORED\r\n",
    [mcp.CMD_REPLACE] = "NOT_STORED\r\n", [mcp.CMD_APPEND] = "NOT_STORED\r\n",
    [mcp.CMD_PREPEND] = "NOT_STORED\r\n", [mcp.CMD_CAS] = "NOT_STORED\r\n",
    [mcp.CMD_DELETE] = "NOT_FOUND\r\n", [mcp.CMD_INCR] = "NOT_FOUND\r\n",
    [mcp.CMD_DECR] = "NOT_FOUND\r\n", [mcp.CMD_TOUCH] = "NOT_FOUND\r\n",
}

local function null_reply(r)
    local cmd = r:command()
    local code = NULL_META[cmd]
    if code ~= nil then
        -- meta: q hides a miss; O (opaque) and k (key) come back
        if cmd == CMD_MG and r:has_flag("q") then return "" end
        if r:has_flag("O") or r:has_flag("k") then
            local line = code
            for i = 3, r:ntokens() do
                local tok = r:token(i)
                if tok:sub(1, 1) == "O" then
                    line = line .. " " .. tok
                elseif tok == "k" then
                    line = line .. " k" .. r:key()
                end
            end
            return line .. "\r\n"
        end
        return NULL_META_LINE[cmd]
    end
    local line = NULL_TEXT[cmd]
    if line == nil then return "SERVER_ERROR route_null cannot answer this command\r\n" end
    if r:token(r:ntokens()) == "noreply" then return "" end
    return line
end

