--[[
Trove routelib: the route library of Trove's built-in memcached proxy.

It gives operators the declarative config language of memcached 1.6's
routelib (docs.memcached.org/features/proxy/configure and /reference):

    settings{ backend_connect_timeout = 3 }
    pools{ main = { backends = { "127.0.0.1:11214", "127.0.0.1:11215" } } }
    routes{ default = route_direct{ child = "main" } }

Start Trove with -o proxy_config=routelib,proxy_arg=/path/to/config.lua
(custom route handlers: proxy_config=routelib:myhandlers.lua).

How it runs
-----------
Trove runs this chunk (and any further proxy_config chunk) in its config VM
and in every worker VM, on each load and each reload (globals survive a
reload, so every load starts by resetting the state below). The work is
done in three phases:

 1. Recording, in every VM, while the user config runs: settings{},
    pools{}, routes{}, local_zone*(), verbose() ... only write down what they
    are given. route_x{...} returns a descriptor { f = "x", a = options }
    marked with the RouteConf metatable, cmdmap{} a CommandMap. Nothing is
    built yet.

 2. Pools phase: mcp_config_pools(), in the config VM only. It runs the
    user config (mcp.start_arg) -- at this point, so that handler files
    loaded after this one are already there -- applies settings{}, makes
    backends and pools, checks every pool a route names, and runs each
    handler's route_<x>_conf(options, ctx) (validation, stats counters,
    global rate limiters). It returns a plain table: the pools under their
    reference names and one tree per routes{} block, whose routes are
    { _rl_route = "x", a = conf, label =, cmd = } tables. Trove copies it
    into every worker VM.

 3. Routes phase: mcp_config_routes(c), in each worker VM. It runs the user
    config again (so functions it defines exist here too; what it records
    is ignored), swaps pool references for pool objects, calls
    route_<x>_start(options, ctx, fgen) children first (a child's ready
    function generator becomes a handle of its parent), builds one router
    per routes{} block and attaches it, with the block's tag if it has one.

At request time the generator a handler gave to fgen:ready makes, once per
slot, the function that answers one request.

Custom route handlers use the same interface as the built-in ones below:
    register_route_handlers({ "myhello" })
    function route_myhello_conf(t, ctx) ... return t end          -- config VM
    function route_myhello_start(t, ctx, fgen) fgen:ready{...} end  -- workers
Options whose names start with "child" hold pool names, pool set names or
nested route handlers: routelib checks them in phase 2 and gives _start
pool objects and ready function generators in their place.
--]]

-- ---------------------------------------------------------------------------
-- Shared definitions
-- ---------------------------------------------------------------------------

local ANY <const> = mcp.CMD_ANY_STORAGE
local WAIT_ANY <const> = mcp.WAIT_ANY
local RES_GOOD <const> = mcp.RES_GOOD
local RES_OK <const> = mcp.RES_OK

-- Command names as written in cmap{} and cmdmap{} ("all" = any command).
local CMD <const> = {
    mg = mcp.CMD_MG, ms = mcp.CMD_MS, md = mcp.CMD_MD, mn = mcp.CMD_MN,
    ma = mcp.CMD_MA, me = mcp.CMD_ME, get = mcp.CMD_GET, gat = mcp.CMD_GAT,
    set = mcp.CMD_SET, add = mcp.CMD_ADD, cas = mcp.CMD_CAS,
    gets = mcp.CMD_GETS, gats = mcp.CMD_GATS, incr = mcp.CMD_INCR,
    decr = mcp.CMD_DECR, touch = mcp.CMD_TOUCH, append = mcp.CMD_APPEND,
    prepend = mcp.CMD_PREPEND, delete = mcp.CMD_DELETE,
    replace = mcp.CMD_REPLACE, all = ANY,
}
local CMD_NAME = {}
for name, id in pairs(CMD) do CMD_NAME[id] = name end

-- Metatables that type what the user config hands us (config VM only:
-- metatables do not cross between VMs).
local RouteConf = {}
local CommandMap = {}

-- Survives reloads (config VM): stats counter ids stay the same for the
-- same name, so counters keep counting across a reload.
__trove_routelib = __trove_routelib or { stat_ids = {}, next_stat = 1 }
local KEEP = __trove_routelib

-- What the user config recorded during this load.
local R = {
    settings = {},
    pools = {},
    trees = {},
    zone = nil,
    verbose = false,
    debug = false,
    trace = false,
    loud = false,    -- say()/dsay() print (not while a worker replays the config)
    replay = false,  -- a worker re-runs the user config: record, never fail
}

-- Raises a config error: a start-up failure, or a failed reload.
local function fail(fmt, ...)
    error("routelib: " .. string.format(fmt, ...), 0)
end

local function show(prefix, ...)
    local parts = {}
    for i = 1, select("#", ...) do parts[i] = tostring((select(i, ...))) end
    print(prefix .. table.concat(parts, " "))
    io.stdout:flush()
end

local function copy(t)
    local o = {}
    for k, v in pairs(t) do o[k] = v end
    return o
end

local function sorted_keys(t)
    local keys = {}
    for k in pairs(t) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b)
        local ta, tb = type(a), type(b)
        if ta ~= tb then return ta == "number" end
        return a < b
    end)
    return keys
end

-- A readable dump of a table, for debug(true).
local function dump(v, indent)
    indent = indent or ""
    if type(v) ~= "table" then
        return type(v) == "string" and string.format("%q", v) or tostring(v)
    end
    local lines = { "{" }
    for _, k in ipairs(sorted_keys(v)) do
        lines[#lines + 1] = string.format("%s    [%s] = %s,", indent,
            type(k) == "string" and string.format("%q", k) or tostring(k),
            dump(v[k], indent .. "    "))
    end
    lines[#lines + 1] = indent .. "}"
    return table.concat(lines, "\n")
end

local function is_route_desc(v)
    return type(v) == "table" and v._rl_route ~= nil
end

local function command_id(k)
    if type(k) == "string" then return CMD[k] end
    if type(k) == "number" and CMD_NAME[k] then return k end
    return nil
end

-- ---------------------------------------------------------------------------
-- Phase 1: recording (the functions a user config calls)
-- ---------------------------------------------------------------------------

local function on(v)
    if v == nil then return true end
    return v and true or false
end

function verbose(v) R.verbose = on(v) end

-- verbosity{ verbose = bool, debug = bool, trace = bool }
function verbosity(t)
    if type(t) ~= "table" then fail("verbosity{} takes a table") end
    for k, v in pairs(t) do
        if k == "verbose" then R.verbose = on(v)
        elseif k == "debug" then R.debug = on(v)
        elseif k == "trace" then R.trace = on(v)
        else fail("verbosity{}: unknown option '%s' (it takes verbose, debug, trace)", tostring(k))
        end
    end
end

-- debug(true) turns on routelib's debug output. The global `debug` stays
-- Lua's debug library as well: debug.traceback and friends still work.
local LIB_DEBUG = rawget(_G, "debug")
do
    local mt = type(LIB_DEBUG) == "table" and getmetatable(LIB_DEBUG)
    if mt and mt.__routelib_lib then LIB_DEBUG = mt.__routelib_lib end
    if type(LIB_DEBUG) ~= "table" then LIB_DEBUG = {} end
end
debug = setmetatable({}, {
    __index = LIB_DEBUG,
    __routelib_lib = LIB_DEBUG,
    __call = function(_, v) R.debug = on(v) end,
})

function say(...)
    if R.verbose and R.loud then show("routelib: ", ...) end
end

function dsay(...)
    if R.debug and R.loud then show("routelib debug: ", ...) end
end

function settings(t)
    if type(t) ~= "table" then fail("settings{} takes a table") end
    for k, v in pairs(t) do R.settings[k] = v end
end

-- pools{} may be called several times; the pools add up.
function pools(t)
    if type(t) ~= "table" then fail("pools{} takes a table of name = pool") end
    for name, def in pairs(t) do
        if type(name) ~= "string" then fail("pools{}: pool names must be strings") end
        if R.pools[name] ~= nil and not R.replay then
            fail("pools{}: pool '%s' is defined twice", name)
        end
        R.pools[name] = def
    end
end

-- One routes{} block is one route tree (one per listener tag).
function routes(t)
    if type(t) ~= "table" then fail("routes{} takes a table") end
    R.trees[#R.trees + 1] = t
end

function local_zone(zone)
    if type(zone) ~= "string" or zone == "" then fail("local_zone() takes a zone name") end
    R.zone = zone
end

function local_zone_from_env(var)
    if type(var) ~= "string" then fail("local_zone_from_env() takes an environment variable name") end
    local zone = os.getenv(var)
    if zone == nil or zone == "" then
        if R.replay then return end
        fail("local_zone_from_env: the environment variable %s is not set", var)
    end
    R.zone = zone
end

function local_zone_from_file(path)
    if type(path) ~= "string" then fail("local_zone_from_file() takes a file name") end
    local f, err = io.open(path, "r")
    local zone
    if f then
        zone = (f:read("l") or ""):match("^%s*(.-)%s*$")
        f:close()
    end
    if zone == nil or zone == "" then
        if R.replay then return end
        if not f then fail("local_zone_from_file: cannot open %s: %s", path, tostring(err)) end
        fail("local_zone_from_file: %s holds no zone name on its first line", path)
    end
    R.zone = zone
end

-- cmdmap{ get = route..., set = route..., all = route... }: a map entry
-- that routes by command.
function cmdmap(t)
    if type(t) ~= "table" then fail("cmdmap{} takes a table of command = route handler") end
    local m = {}
    for k, v in pairs(t) do
        local id = command_id(k)
        if id == nil then fail("cmdmap{}: unknown command '%s'", tostring(k)) end
        if getmetatable(v) ~= RouteConf then
            fail("cmdmap{}: '%s' must be a route handler such as route_direct{...}", tostring(k))
        end
        m[id] = v
    end
    return setmetatable(m, CommandMap)
end

-- register_route_handlers({ "name", ... }) makes route_name{...}, which
-- describes a route handled by route_name_conf and route_name_start.
function register_route_handlers(names)
    if type(names) ~= "table" then fail("register_route_handlers() takes a list of names") end
    for _, name in pairs(names) do
        if type(name) ~= "string" or not name:match("^[%w_]+$") then
            fail("register_route_handlers: '%s' is not a valid handler name", tostring(name))
        end
        _G["route_" .. name] = function(args)
            if args == nil then args = {} end
            if type(args) ~= "table" or getmetatable(args) ~= nil then
                fail("route_%s takes a table of options: route_%s{ ... }", name, name)
            end
            return setmetatable({ f = name, a = args }, RouteConf)
        end
    end
end

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
            if v then fail("settings{}: backend_use_tls: TLS to backends is not supported by Trove yet") end
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
            fail("pools{}: the name 'internal' is reserved for memcached's internal cache, "
                .. "which Trove does not support yet")
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
    if name == "internal" then
        fail("%s: the 'internal' pool (memcached's mcp.internal) is not supported by Trove yet", self:where())
    end
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

-- ---------------------------------------------------------------------------
-- Built-in route handlers: route_<name>_conf (config VM) validates and
-- prepares the options, route_<name>_start (workers) makes the function
-- generator, and a local generator function makes the per-slot handler.
-- ---------------------------------------------------------------------------

-- route_direct{ child = "pool" }: the child's answer.
function route_direct_conf(t, ctx)
    check_opts(t, ctx, { child = true })
    need_child(t, "child", ctx)
    return t
end

local function direct_gen(rctx, h)
    return function(r) return rctx:enqueue_and_wait(r, h) end
end

function route_direct_start(t, ctx, fgen)
    fgen:ready({ a = fgen:new_handle(t.child), n = ctx:label(), f = direct_gen })
end

-- route_null{}: an empty answer (miss, NOT_STORED, NOT_FOUND...).
function route_null_conf(t, ctx)
    check_opts(t, ctx, {})
    return t
end

local function null_gen(rctx)
    return null_reply
end

function route_null_start(t, ctx, fgen)
    fgen:ready({ n = ctx:label(), f = null_gen })
end

-- route_allsync{ children = ... }: every child, waits for all; the first
-- error received, else the last answer received.
function route_allsync_conf(t, ctx)
    check_opts(t, ctx, { children = true })
    need_children(t, ctx)
    return t
end

local function allsync_gen(rctx, hs)
    local tr = tracker(hs)
    return function(r)
        tr_reset(tr)
        tr_send_all(rctx, tr, r)
        local first_err, last
        while true do
            local i = tr_next(rctx, tr)
            if i == nil then break end
            local res, kind = result_of(rctx, hs[i])
            if kind == ERR and first_err == nil then first_err = res end
            last = res
        end
        return first_err or last
    end
end

function route_allsync_start(t, ctx, fgen)
    fgen:ready({ a = new_handles(fgen, ordered(t.children)), n = ctx:label(), f = allsync_gen })
end

-- route_allasync{ children = ... }: every child; answers at once with the
-- null reply, the requests complete in the background.
function route_allasync_conf(t, ctx)
    check_opts(t, ctx, { children = true })
    need_children(t, ctx)
    return t
end

local function allasync_gen(rctx, hs)
    return function(r)
        rctx:enqueue(r, hs)
        rctx:wait_cond(0)  -- send them now, do not wait
        return null_reply(r)
    end
end

function route_allasync_start(t, ctx, fgen)
    fgen:ready({ a = new_handles(fgen, ordered(t.children)), n = ctx:label(), f = allasync_gen })
end

-- route_allfastest{ children = ..., miss = bool, wait = seconds }: every
-- child; the first answer that is not an error (with miss = true: the first
-- hit). Else the best answer: a miss, or the last error. With wait, after
-- that many seconds the best answer so far (or, if none came yet, the next).
function route_allfastest_conf(t, ctx)
    check_opts(t, ctx, { children = true, miss = true, wait = true })
    need_children(t, ctx)
    opt_bool(t, "miss", ctx)
    opt_number(t, "wait", ctx, 0)
    return t
end

local function allfastest_gen(rctx, a)
    local hs, miss, wait = a.h, a.miss, a.wait
    local tr = tracker(hs)
    return function(r)
        tr_reset(tr)
        tr_send_all(rctx, tr, r)
        local deadline = wait and now_ms() + wait * 1000
        local best_miss, last_err
        while tr.out > 0 do
            local i = tr_next(rctx, tr, deadline)
            if i == nil then
                if best_miss or last_err then break end
                deadline = nil  -- nothing yet: take the next answer
            else
                local res, kind = result_of(rctx, hs[i])
                if kind == GOOD then return res end
                if kind == MISS then
                    if not miss then return res end
                    best_miss = best_miss or res
                else
                    last_err = res
                end
            end
        end
        return best_miss or last_err
    end
end

function route_allfastest_start(t, ctx, fgen)
    local a = { h = new_handles(fgen, ordered(t.children)), miss = t.miss, wait = t.wait }
    fgen:ready({ a = a, n = ctx:label(), f = allfastest_gen })
end

-- route_split{ child_a = ..., child_b = ... }: both; answers with child_a's
-- reply, child_b's completes in the background.
function route_split_conf(t, ctx)
    check_opts(t, ctx, { child_a = true, child_b = true })
    need_child(t, "child_a", ctx)
    need_child(t, "child_b", ctx)
    return t
end

local function split_gen(rctx, a)
    local ha, hb = a.a, a.b
    return function(r)
        rctx:enqueue(r, hb)
        return rctx:enqueue_and_wait(r, ha)
    end
end

function route_split_start(t, ctx, fgen)
    local a = { a = fgen:new_handle(t.child_a), b = fgen:new_handle(t.child_b) }
    fgen:ready({ a = a, n = ctx:label(), f = split_gen })
end

-- route_ttl{ ttl = n, child = ... }: set/add/replace/cas (the exptime token)
-- and ms (the T flag) get this TTL; other commands pass unchanged.
function route_ttl_conf(t, ctx)
    check_opts(t, ctx, { ttl = true, child = true })
    need_child(t, "child", ctx)
    if math.type(t.ttl) ~= "integer" then
        if type(t.ttl) == "number" and t.ttl == math.floor(t.ttl) then
            t.ttl = math.tointeger(t.ttl)
        else
            fail("%s: needs ttl = <integer seconds>", ctx:where())
        end
    end
    return t
end

local TEXT_TTL_CMDS <const> = {
    [mcp.CMD_SET] = true, [mcp.CMD_ADD] = true, [mcp.CMD_REPLACE] = true, [mcp.CMD_CAS] = true,
}

local function ttl_gen(rctx, a)
    local h, ttl = a.h, a.ttl
    return function(r)
        local cmd = r:command()
        if cmd == CMD_MS then
            r:flag_set("T", ttl)
        elseif TEXT_TTL_CMDS[cmd] then
            r:token(4, ttl)
        end
        return rctx:enqueue_and_wait(r, h)
    end
end

function route_ttl_start(t, ctx, fgen)
    local a = { h = fgen:new_handle(t.child), ttl = tostring(t.ttl) }
    fgen:ready({ a = a, n = ctx:label(), f = ttl_gen })
end

-- route_failover{ children = ..., failover_count = n, shuffle = bool,
-- miss = bool, wait = seconds, local_zone = "zone", stats = bool }:
-- the children one at a time until one answers well (a hit; with
-- miss = false any non-error). At most failover_count children (default:
-- all) are tried. With wait, a child that has not answered within that many
-- seconds is given up (its late answer still counts) and the next is tried.
-- With a zoned pool set the local zone goes first. Gives the best answer:
-- the last miss, else the last error.
function route_failover_conf(t, ctx)
    check_opts(t, ctx, {
        children = true, failover_count = true, shuffle = true, miss = true,
        wait = true, local_zone = true, stats = true, stats_name = true,
    })
    need_children(t, ctx)
    opt_number(t, "failover_count", ctx, 1, true)
    opt_bool(t, "shuffle", ctx)
    opt_bool(t, "miss", ctx)
    opt_number(t, "wait", ctx, 0)
    opt_string(t, "local_zone", ctx)
    if t.local_zone == nil then t.local_zone = ctx:local_zone() end
    opt_stats(t, ctx, "_retries")
    return t
end

local function failover_gen(rctx, a)
    local hs, limit, miss, wait, stat = a.h, a.limit, a.miss, a.wait, a.stats_id
    local tr = tracker(hs)
    return function(r)
        tr_reset(tr)
        tr_send(rctx, tr, r, 1)
        local tried = 1
        local deadline = wait and now_ms() + wait * 1000
        local best_miss, last_err
        while true do
            local i = tr_next(rctx, tr, deadline)
            local give_up = false
            if i == nil then
                if tr.out == 0 then break end
                give_up = true  -- this child is late: try the next one
            else
                local res, kind = result_of(rctx, hs[i])
                if kind == GOOD or (kind == MISS and not miss) then return res end
                if kind == MISS then best_miss = res else last_err = res end
                give_up = true
            end
            if give_up then
                if tried < limit then
                    tried = tried + 1
                    if stat then mcp.stat(stat, 1) end
                    tr_send(rctx, tr, r, tried)
                    deadline = wait and now_ms() + wait * 1000
                elseif tr.out == 0 then
                    break
                else
                    deadline = nil  -- nothing left to try: wait for the late ones
                end
            end
        end
        return best_miss or last_err
    end
end

function route_failover_start(t, ctx, fgen)
    local list, front = ordered(t.children, t.local_zone)
    if t.shuffle then
        -- once per worker: each proxy thread has its own order
        local lo = front and 2 or 1
        for i = #list, lo + 1, -1 do
            local j = math.random(lo, i)
            list[i], list[j] = list[j], list[i]
        end
    end
    local hs = new_handles(fgen, list)
    local a = {
        h = hs, limit = math.min(t.failover_count or #hs, #hs),
        miss = t.miss, wait = t.wait, stats_id = t.stats_id,
    }
    fgen:ready({ a = a, n = ctx:label(), f = failover_gen })
end

-- route_zfailover{ children = "set_zoned", miss = bool, stats = bool,
-- local_zone = "zone" }: the local zone's pool first; if it does not answer
-- well, all the other zones at once, and the first good answer of those.
-- Else the best answer (a miss, else the last error).
function route_zfailover_conf(t, ctx)
    check_opts(t, ctx, { children = true, miss = true, local_zone = true, stats = true, stats_name = true })
    need_children(t, ctx)
    opt_bool(t, "miss", ctx)
    opt_string(t, "local_zone", ctx)
    if t.local_zone == nil then t.local_zone = ctx:local_zone() end
    if t.local_zone == nil then
        fail("%s: needs a local zone: call local_zone(), local_zone_from_env() or "
            .. "local_zone_from_file(), or pass local_zone =", ctx:where())
    end
    if t.children[t.local_zone] == nil then
        local zones = {}
        for _, k in ipairs(sorted_keys(t.children)) do zones[#zones + 1] = tostring(k) end
        fail("%s: the local zone '%s' is not one of the children (%s)", ctx:where(), t.local_zone,
            table.concat(zones, ", "))
    end
    opt_stats(t, ctx, "_retries")
    return t
end

local function zfailover_gen(rctx, a)
    local near, far, miss, stat = a.near, a.far, a.miss, a.stats_id
    local tr = tracker(far)
    return function(r)
        local res = rctx:enqueue_and_wait(r, near)
        local kind
        res, kind = result_of(rctx, near)
        if kind == GOOD or (kind == MISS and not miss) then return res end
        if stat then mcp.stat(stat, 1) end
        local best_miss, last_err
        if kind == MISS then best_miss = res else last_err = res end
        tr_reset(tr)
        if tr.n == 0 then return res end
        tr_send_all(rctx, tr, r)
        while true do
            local i = tr_next(rctx, tr)
            if i == nil then break end
            res, kind = result_of(rctx, far[i])
            if kind == GOOD or (kind == MISS and not miss) then return res end
            if kind == MISS then best_miss = best_miss or res else last_err = res end
        end
        return best_miss or last_err
    end
end

function route_zfailover_start(t, ctx, fgen)
    local list = ordered(t.children, t.local_zone)
    local near = fgen:new_handle(list[1])
    local far = {}
    for i = 2, #list do far[#far + 1] = fgen:new_handle(list[i]) end
    local a = { near = near, far = far, miss = t.miss, stats_id = t.stats_id }
    fgen:ready({ a = a, n = ctx:label(), f = zfailover_gen })
end

-- route_ratelim{ child = ..., limit = n, fillrate = n, tickrate = ms,
-- global = bool, fail_until_limit = bool, stats = bool }: a token bucket in
-- front of the child; a request past the limit gets the null reply. With
-- fail_until_limit the other way round: the null reply until the rate is
-- exceeded. global: one bucket for the process instead of one per worker.
function route_ratelim_conf(t, ctx)
    check_opts(t, ctx, {
        child = true, limit = true, fillrate = true, tickrate = true, global = true,
        fail_until_limit = true, stats = true, stats_name = true,
    })
    need_child(t, "child", ctx)
    opt_number(t, "limit", ctx, 1, true, true)
    opt_number(t, "fillrate", ctx, 1, true, true)
    opt_number(t, "tickrate", ctx, 1, true)
    if t.tickrate == nil then t.tickrate = 1000 end
    opt_bool(t, "global", ctx)
    opt_bool(t, "fail_until_limit", ctx)
    opt_stats(t, ctx, "_limits")
    if t.global then
        local ok, tbf = pcall(mcp.ratelim_global_tbf, {
            limit = t.limit, fillrate = t.fillrate, tickrate = t.tickrate,
        })
        if not ok then fail("%s: %s", ctx:where(), tostring(tbf)) end
        t.tbf = tbf
    end
    return t
end

local function ratelim_gen(rctx, a)
    local h, tbf, invert, stat = a.h, a.tbf, a.invert, a.stats_id
    return function(r)
        local pass = tbf(1)
        if invert then pass = not pass end
        if pass then return rctx:enqueue_and_wait(r, h) end
        if stat then mcp.stat(stat, 1) end
        return null_reply(r)
    end
end

function route_ratelim_start(t, ctx, fgen)
    local tbf = t.tbf or mcp.ratelim_tbf({ limit = t.limit, fillrate = t.fillrate, tickrate = t.tickrate })
    local a = { h = fgen:new_handle(t.child), tbf = tbf, invert = t.fail_until_limit, stats_id = t.stats_id }
    fgen:ready({ a = a, n = ctx:label(), f = ratelim_gen })
end

-- route_random{ children = ... }: one child picked at random per request.
function route_random_conf(t, ctx)
    check_opts(t, ctx, { children = true })
    need_children(t, ctx)
    return t
end

local function random_gen(rctx, hs)
    local n = #hs
    local random = math.random
    return function(r) return rctx:enqueue_and_wait(r, hs[random(n)]) end
end

function route_random_start(t, ctx, fgen)
    fgen:ready({ a = new_handles(fgen, ordered(t.children)), n = ctx:label(), f = random_gen })
end

-- cmdmap{...} where a route handler goes (see as_route): the route of the
-- request's command, else the "all" route, else an error reply.
function route__cmdmap_conf(t, ctx)
    return t
end

local function cmdmap_gen(rctx, hs)
    local any = hs[ANY]
    return function(r)
        local h = hs[r:command()] or any
        if h == nil then return "SERVER_ERROR no route for this command\r\n" end
        return rctx:enqueue_and_wait(r, h)
    end
end

function route__cmdmap_start(t, ctx, fgen)
    local hs = {}
    for id, child in pairs(t.children) do hs[id] = fgen:new_handle(child) end
    fgen:ready({ a = hs, n = ctx:label(), f = cmdmap_gen })
end

register_route_handlers({
    "direct", "null", "allsync", "allasync", "allfastest", "split",
    "ttl", "failover", "zfailover", "ratelim", "random",
})
