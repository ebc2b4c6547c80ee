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

