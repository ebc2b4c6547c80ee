-- ---------------------------------------------------------------------------
-- Phase 2: pools (config VM, mcp_config_pools)
-- ---------------------------------------------------------------------------

-- settings{} key -> the mcp function that sets it.
local SETTERS <const> = {
    active_req_limit = "active_req_limit",
    active_request_limit = "active_req_limit",
    backend_connect_timeout = "backend_connect_timeout",
    backend_read_timeout = "backend_read_timeout",
    backend_retry_timeout = "backend_retry_timeout",
    backend_retry_waittime = "backend_retry_waittime",
    backend_failure_limit = "backend_failure_limit",
    backend_depth_limit = "backend_depth_limit",
    backend_flap_time = "backend_flap_time",
    backend_flap_backoff_ramp = "backend_flap_backoff_ramp",
    backend_flap_backoff_max = "backend_flap_backoff_max",
    backend_use_iothread = "backend_use_iothread",
    tcp_keepalive = "tcp_keepalive",
    buffer_memory_limit = "buffer_memory_limit",
}

-- Applies settings{}; returns the pool_options and backend_options defaults.
local function apply_settings(s)
    local pool_opts, be_opts = {}, {}
    for _, k in ipairs(sorted_keys(s)) do
        local v = s[k]
        if k == "pool_options" or k == "backend_options" then
            if type(v) ~= "table" then fail("settings{}: %s must be a table", k) end
            if k == "pool_options" then pool_opts = v else be_opts = v end
        elseif k == "backend_use_tls" then
            -- TLS to every backend made afterwards (backend_options{tls=false} opts one out).
            if type(v) ~= "boolean" then fail("settings{}: backend_use_tls must be true or false") end
            if v then mcp.init_tls() end
            mcp.backend_use_tls(v)
            say("setting", k, "=", v)
        elseif k == "local_zone" then
            -- same as local_zone("name")
            if type(v) ~= "string" or v == "" then fail("settings{}: local_zone must be a zone name") end
            if R.zone ~= nil and R.zone ~= v then
                fail("settings{}: local_zone '%s' differs from the local zone already set ('%s')", v, R.zone)
            end
            R.zone = v
        else
            local fn = SETTERS[k]
            if fn == nil then fail("settings{}: unknown setting '%s'", tostring(k)) end
            if type(mcp[fn]) ~= "function" then fail("settings{}: %s is not supported by Trove yet", k) end
            local ok, err = pcall(mcp[fn], v)
            if not ok then fail("settings{}: %s: %s", k, tostring(err)) end
            say("setting", k, "=", v)
        end
    end
    return pool_opts, be_opts
end

-- "host", "host:port", "[v6addr]:port", each optionally followed by a label
-- and/or _down_.
local function parse_backend_string(s)
    local down = false
    local spec = s:gsub("%s+_down_%s*$", function() down = true return "" end)
    local addr, label = spec:match("^%s*(%S+)%s+(%S+)%s*$")
    if addr == nil then addr = spec:match("^%s*(%S+)%s*$") end
    if addr == nil then return nil end
    local host, port
    if addr:sub(1, 1) == "[" then
        host, port = addr:match("^%[([^%]]+)%]:(%d+)$")
        if host == nil then host = addr:match("^%[([^%]]+)%]$") end
    else
        host, port = addr:match("^([^:]+):(%d+)$")
        if host == nil and not addr:find(":", 1, true) then host = addr end
    end
    if host == nil then return nil end
    local b = { host = host, port = tonumber(port) or 11211, label = label }
    if down then b.down = true end
    return b
end

local function signature(t)
    local parts = {}
    for _, k in ipairs(sorted_keys(t)) do
        local v = t[k]
        parts[#parts + 1] = tostring(k) .. "=" .. (type(v) == "table" and "{" .. signature(v) .. "}" or tostring(v))
    end
    return table.concat(parts, ",")
end

-- One backend object per label and options in a load, so that pools listing
-- the same server share it (and its sockets).
local function make_backend(cache, entry, defaults, where)
    local b = copy(defaults)
    if type(entry) == "string" then
        local p = parse_backend_string(entry)
        if p == nil then
            fail("%s: '%s' is not a backend (host, host:port, then an optional label and _down_)", where, entry)
        end
        for k, v in pairs(p) do b[k] = v end
    elseif type(entry) == "table" then
        for k, v in pairs(entry) do b[k] = v end
        if type(b.host) ~= "string" or b.host == "" then
            fail("%s: a backend table needs host = \"address\"", where)
        end
        if b.port == nil then b.port = 11211 end
    else
        fail("%s: a backend is a \"host:port\" string or a table, not a %s", where, type(entry))
    end
    local auto = b.label == nil
    if auto then b.label = b.host .. ":" .. tostring(b.port) end
    local base, n = b.label, 1
    while true do
        local sig = signature(b)
        local have = cache[b.label]
        if have == nil then
            local ok, obj = pcall(mcp.backend, b)
            if not ok then fail("%s: backend %s: %s", where, b.label, tostring(obj)) end
            cache[b.label] = { sig = sig, obj = obj }
            dsay("backend", b.label, sig)
            return obj
        elseif have.sig == sig then
            return have.obj
        elseif not auto then
            fail("%s: the backend label '%s' names two different backends", where, b.label)
        end
        n = n + 1
        b.label = base .. "/" .. n
    end
end

local POOL_KEYS <const> = { backends = true, options = true, backend_options = true }

local function make_pool(cache, name, def, pool_opts, be_opts)
    local where = "pools{} '" .. name .. "'"
    if type(def) ~= "table" then
        fail("%s: a pool is a table such as { backends = { \"host:port\" } }", where)
    end
    for k in pairs(def) do
        if not POOL_KEYS[k] then
            fail("%s: unknown pool option '%s' (a pool takes backends, options, backend_options)", where, tostring(k))
        end
    end
    local list = def.backends
    if type(list) ~= "table" or list[1] == nil then fail("%s: needs a non-empty backends = { ... } list", where) end
    local defaults = copy(be_opts)
    if def.backend_options ~= nil then
        if type(def.backend_options) ~= "table" then fail("%s: backend_options must be a table", where) end
        for k, v in pairs(def.backend_options) do defaults[k] = v end
    end
    local bes = {}
    for i, entry in ipairs(list) do bes[i] = make_backend(cache, entry, defaults, where) end
    for k in pairs(list) do
        if type(k) ~= "number" or k > #bes then fail("%s: backends must be a list", where) end
    end
    local opts = copy(pool_opts)
    if def.options ~= nil then
        if type(def.options) ~= "table" then fail("%s: options must be a table", where) end
        for k, v in pairs(def.options) do opts[k] = v end
    end
    local ok, pool
    if next(opts) ~= nil then
        ok, pool = pcall(mcp.pool, bes, opts)
    else
        ok, pool = pcall(mcp.pool, bes)
    end
    if not ok then fail("%s: %s", where, tostring(pool)) end
    say("pool", name, "with", #bes, "backend(s)")
    return pool
end

-- A pool set set_x is a list of pools or a table of zone = pool. Its members
-- are also pools of their own: set_x_1 ... or set_x_<zone>.
local function make_pool_set(cache, name, def, pool_opts, be_opts, P)
    local where = "pools{} '" .. name .. "'"
    if type(def) ~= "table" or next(def) == nil then
        fail("%s: a name starting with set_ is a set of pools: %s = { { backends = {...} }, ... }", where, name)
    end
    if def.backends ~= nil then
        fail("%s: a name starting with set_ is a set of pools: wrap the pool in a list, "
            .. "%s = { { backends = {...} } }, or rename it", where, name)
    end
    local nums, strs = 0, 0
    for k in pairs(def) do
        if type(k) == "number" then nums = nums + 1
        elseif type(k) == "string" then strs = strs + 1
        else fail("%s: bad key in a pool set", where) end
    end
    if nums > 0 and strs > 0 then
        fail("%s: a pool set is either a list of pools or a table of zone = pool, not both", where)
    end
    if nums > 0 and nums ~= #def then fail("%s: the list of pools has holes", where) end
    local members = {}
    for _, k in ipairs(sorted_keys(def)) do
        local ref = name .. "_" .. tostring(k)
        if P.refs[ref] ~= nil then fail("%s: the member name %s clashes with another pool", where, ref) end
        P.refs[ref] = make_pool(cache, ref, def[k], pool_opts, be_opts)
        members[k] = ref
    end
    P.sets[name] = members
end

-- Makes every pool; returns { refs = name -> pool object, sets = set name ->
-- { key -> member name } }.
local function build_pools(pool_opts, be_opts)
    local P = { refs = {}, sets = {} }
    local cache = {}
    for _, name in ipairs(sorted_keys(R.pools)) do
        local def = R.pools[name]
        if name == "internal" then
            fail("pools{}: the name 'internal' is reserved: it names the proxy's own cache "
                .. "(mcp.internal_handler)")
        end
        if name:find("^set_") then
            make_pool_set(cache, name, def, pool_opts, be_opts, P)
        else
            if P.refs[name] ~= nil then fail("pools{} '%s': the name clashes with a pool set member", name) end
            P.refs[name] = make_pool(cache, name, def, pool_opts, be_opts)
        end
    end
    return P
end

-- Stats counters (`stats proxy`, user_<name>).
local function stats_id(name)
    if type(name) ~= "string" or name == "" then fail("a stats counter needs a name") end
    local id = KEEP.stat_ids[name]
    if id == nil then
        id = KEEP.next_stat
        if id > 1024 then fail("too many stats counters (at most 1024)") end
        KEEP.next_stat = id + 1
        KEEP.stat_ids[name] = id
    end
    local ok, err = pcall(mcp.add_stat, id, name)
    if not ok then fail("stats counter '%s': %s", name, tostring(err)) end
    return id
end

-- The ctx a route_<x>_conf function gets.
local ConfCtx = {}
ConfCtx.__index = ConfCtx

function ConfCtx:label() return self._label end
function ConfCtx:cmd() return self._cmd end
function ConfCtx:local_zone() return R.zone end
function ConfCtx:get_stats_id(name) return stats_id(name) end
ConfCtx.stats_get_id = ConfCtx.get_stats_id

function ConfCtx:where()
    local w = self._where
    for _, r in ipairs(self._stack) do w = w .. ": " .. r end
    return w
end

-- A pool name's reference: the name of a pool (or set member), or for a
-- pool set a table of its members' names.
function ConfCtx:resolve(name)
    -- The proxy's own cache: the workers hand out mcp.internal_handler.
    if name == "internal" then return name end
    local set = self._P.sets[name]
    if set ~= nil then return copy(set) end
    if self._P.refs[name] ~= nil then return name end
    if name:find("^set_") then fail("%s: no pool set named '%s'", self:where(), name) end
    fail("%s: no pool named '%s'", self:where(), name)
end

function ConfCtx:check_child(child)
    if type(child) ~= "string" then
        fail("%s: invalid child given to route handler: %s", self:where(), type(child))
    end
    self:resolve(child)
    return true
end

function ConfCtx:expand_children(children)
    if type(children) == "table" then return children end
    local r = self:resolve(children)
    if type(r) ~= "table" then fail("%s: expected a pool set, got the pool '%s'", self:where(), children) end
    return r
end

local conf_route, conf_wrap

-- Outside a map entry, a cmdmap{} is a route of its own (route__cmdmap
-- below) that picks one of its routes by the request's command.
local function as_route(v)
    if getmetatable(v) == CommandMap then
        return setmetatable({ f = "_cmdmap", a = { children = copy(v) } }, RouteConf)
    end
    return v
end

-- Resolves the value of a child* option: pool names become references,
-- route handlers descriptors, lists are resolved entry by entry. Applying it
-- twice changes nothing.
local function conf_child(v, ctx)
    v = as_route(v)
    if getmetatable(v) == RouteConf then
        if v.a.child_wrap ~= nil then return conf_wrap(v, ctx) end
        return conf_route(v, ctx)
    end
    if type(v) == "string" then return ctx:resolve(v) end
    if type(v) ~= "table" then
        fail("%s: a child must be a pool name, a list of them or a route handler, not a %s", ctx:where(), type(v))
    end
    if is_route_desc(v) then return v end
    local o = {}
    for k, cv in pairs(v) do
        cv = as_route(cv)
        if getmetatable(cv) == RouteConf then
            if cv.a.child_wrap ~= nil then
                fail("%s: a child_wrap route cannot be one entry of a list", ctx:where())
            end
            o[k] = conf_route(cv, ctx)
        elseif type(cv) == "string" then
            local r = ctx:resolve(cv)
            if type(r) == "table" then
                fail("%s: '%s' is a pool set; a set cannot be one entry of a list", ctx:where(), cv)
            end
            o[k] = r
        elseif is_route_desc(cv) then
            o[k] = cv
        else
            fail("%s: a child must be a pool name or a route handler, not a %s", ctx:where(), type(cv))
        end
    end
    return o
end

-- route_x{ child_wrap = "set_y" } stands for one route_x per member of the
-- set (or of a list), each with child = that member.
function conf_wrap(rc, ctx)
    local w = rc.a.child_wrap
    local list
    if getmetatable(w) == RouteConf then
        if w.a.child_wrap == nil then
            fail("%s: child_wrap needs a pool set or a list, not a single route", ctx:where())
        end
        list = conf_wrap(w, ctx)
    else
        list = conf_child(w, ctx)
        if type(list) ~= "table" or is_route_desc(list) then
            fail("%s: child_wrap needs a pool set or a list of children", ctx:where())
        end
    end
    local o = {}
    for k, child in pairs(list) do
        local a = copy(rc.a)
        a.child_wrap = nil
        a.child = child
        o[k] = conf_route(setmetatable({ f = rc.f, a = a }, RouteConf), ctx)
    end
    return o
end

-- Checks one route handler and its children (children first); returns the
-- descriptor that crosses into the workers.
function conf_route(rc, ctx)
    local name = rc.f
    local conf_fn = _G["route_" .. name .. "_conf"]
    local start_fn = _G["route_" .. name .. "_start"]
    table.insert(ctx._stack, "route_" .. name)
    if type(conf_fn) ~= "function" or type(start_fn) ~= "function" then
        fail("%s: route_%s needs the functions route_%s_conf and route_%s_start",
            ctx:where(), name, name, name)
    end
    local args = copy(rc.a)
    for k, v in pairs(args) do
        if type(k) == "string" and k:find("^child") then args[k] = conf_child(v, ctx) end
    end
    local ret = conf_fn(args, ctx)
    if type(ret) ~= "table" then fail("%s: route_%s_conf must return a table", ctx:where(), name) end
    table.remove(ctx._stack)
    return { _rl_route = name, a = ret, label = ctx._label, cmd = ctx._cmd }
end

local function conf_entry(rc, ctx, label, cmd, where)
    ctx._label, ctx._cmd, ctx._where, ctx._stack = label, cmd, where, {}
    rc = as_route(rc)
    if getmetatable(rc) ~= RouteConf then
        fail("%s: expected a route handler such as route_direct{...}", where)
    end
    if rc.a.child_wrap ~= nil then fail("%s: child_wrap is only allowed for a child", where) end
    local d = conf_route(rc, ctx)
    say(where, "->", rc.f == "_cmdmap" and "cmdmap" or "route_" .. rc.f)
    return d
end

local TREE_KEYS <const> = {
    tag = true, conf = true, map = true, cmap = true, default = true,
    mode = true, start = true, stop = true,
}

-- The router options of a routes{} block (in conf = {...} or inline).
local function conf_router_opts(t, where, out)
    local c = t.conf or {}
    if type(c) ~= "table" then fail("%s: conf must be a table", where) end
    for k in pairs(c) do
        if k ~= "mode" and k ~= "start" and k ~= "stop" then
            fail("%s: conf: unknown option '%s' (conf takes mode, start, stop)", where, tostring(k))
        end
    end
    local mode, start, stop = t.mode or c.mode, t.start or c.start, t.stop or c.stop
    if mode ~= nil and mode ~= "prefix" and mode ~= "anchor" then
        fail("%s: conf: mode must be \"prefix\" or \"anchor\", not '%s'", where, tostring(mode))
    end
    for k, v in pairs({ start = start, stop = stop }) do
        if type(v) ~= "string" or #v < 1 or #v > 5 then
            fail("%s: conf: %s must be a string of 1 to 5 characters", where, k)
        end
    end
    if start ~= nil and mode ~= "anchor" then fail("%s: conf: start needs mode = \"anchor\"", where) end
    if mode == "anchor" and (start == nil) ~= (stop == nil) then
        fail("%s: conf: mode = \"anchor\" takes both start and stop (or neither)", where)
    end
    if mode == nil and stop ~= nil then mode = "prefix" end
    out.mode, out.start, out.stop = mode, start, stop
end

-- Checks one routes{} block; returns its tree for the workers.
local function conf_tree(t, P, tags)
    local tag = t.tag
    if tag ~= nil and (type(tag) ~= "string" or #tag < 1 or #tag > 8) then
        fail("routes{}: tag must be a string of 1 to 8 characters")
    end
    local where = tag and string.format("routes{ tag = %q }", tag) or "routes{}"
    for k, v in pairs(t) do
        if not TREE_KEYS[k] and not (k == 1 and getmetatable(v) == RouteConf) then
            fail("%s: unknown option '%s' (routes{} takes map, cmap, default, conf, tag)", where, tostring(k))
        end
    end
    if tags[tag or ""] then
        fail("%s: there is already a routes{} block %s", where, tag and "with this tag" or "without a tag")
    end
    tags[tag or ""] = true
    local out = { tag = tag }
    conf_router_opts(t, where, out)
    local ctx = setmetatable({ _P = P, _stack = {} }, ConfCtx)
    local pre = tag and (tag .. "_") or ""

    if t.map ~= nil then
        if type(t.map) ~= "table" then fail("%s: map must be a table of prefix = route", where) end
        out.map = {}
        for _, pfx in ipairs(sorted_keys(t.map)) do
            local entry = t.map[pfx]
            if type(pfx) ~= "string" or pfx == "" then fail("%s: map keys must be key prefixes", where) end
            local w = string.format("%s map '%s'", where, pfx)
            if getmetatable(entry) == CommandMap then
                local m = { _rl_cmdmap = true }
                for _, id in ipairs(sorted_keys(entry)) do
                    local label = id == ANY and pre .. pfx or pre .. pfx .. "_" .. CMD_NAME[id]
                    m[id] = conf_entry(entry[id], ctx, label, id, w .. " " .. CMD_NAME[id])
                end
                out.map[pfx] = m
            else
                out.map[pfx] = conf_entry(entry, ctx, pre .. pfx, ANY, w)
            end
        end
    end

    local default = t.default
    if default ~= nil and t[1] ~= nil then fail("%s: a default and a positional route are both given", where) end
    default = default or t[1]

    if t.cmap ~= nil then
        if type(t.cmap) ~= "table" then fail("%s: cmap must be a table of command = route", where) end
        out.cmap = {}
        for _, k in ipairs(sorted_keys(t.cmap)) do
            local id = command_id(k)
            if id == nil then fail("%s: cmap: unknown command '%s'", where, tostring(k)) end
            local w = string.format("%s cmap '%s'", where, CMD_NAME[id])
            local d = conf_entry(t.cmap[k], ctx, pre .. "cmap_" .. CMD_NAME[id], id, w)
            if id == ANY then
                if default ~= nil then fail("%s: cmap 'all' and a default are both given", where) end
                out.default = d
            else
                out.cmap[id] = d
            end
        end
    end

    if default ~= nil then
        out.default = conf_entry(default, ctx, pre .. "default", ANY, where .. " default")
    end
    if out.map == nil and out.cmap == nil and out.default == nil then
        fail("%s: needs a map, a cmap or a default route", where)
    end
    return out
end

local function trace_on()
    if R.trace and LIB_DEBUG.sethook then
        LIB_DEBUG.sethook(function(_, line)
            local info = LIB_DEBUG.getinfo(2, "S")
            print("routelib trace: " .. (info and info.short_src or "?") .. ":" .. tostring(line))
        end, "l")
    end
end

local function trace_off()
    if LIB_DEBUG.sethook then LIB_DEBUG.sethook() end
end

local function config_path()
    local path = mcp.start_arg
    if path == nil or path == false or path == "" then return nil end
    if type(path) ~= "string" then fail("proxy_arg must be the path of a config file") end
    return path
end

local function load_user_config()
    local path = config_path()
    if path == nil then
        if #R.trees > 0 then return end  -- the config came as a proxy_config file
        fail("no config file: start with -o proxy_config=routelib,proxy_arg=/path/to/config.lua")
    end
    local f = io.open(path, "r")
    if f == nil then fail("cannot open the config file %s (proxy_arg)", path) end
    f:close()
    say("loading", path)
    dofile(path)
end

local function pools_phase()
    load_user_config()
    trace_on()
    dsay("settings:", dump(R.settings))
    dsay("pools:", dump(R.pools))
    local pool_opts, be_opts = apply_settings(R.settings)
    if R.zone then say("local zone:", R.zone) end
    local P = build_pools(pool_opts, be_opts)
    if #R.trees == 0 then fail("the config has no routes{} block") end
    local trees, tags = {}, {}
    for i, t in ipairs(R.trees) do trees[i] = conf_tree(t, P, tags) end
    dsay("route trees:", dump(trees))
    return {
        pools = P.refs, sets = P.sets, trees = trees,
        verbose = R.verbose, debug = R.debug, trace = R.trace,
    }
end

function mcp_config_pools()
    R.loud = true
    local ok, res = pcall(pools_phase)
    trace_off()
    R.loud = false
    if not ok then error(res, 0) end
    return res
end

