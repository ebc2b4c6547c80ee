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

-- Sets the zone a lookup found. Finding none fails with the message
-- fail(...) formats, except on a replay, which keeps the zone it has.
local function set_found_zone(zone, ...)
    if zone == nil or zone == "" then
        if R.replay then return end
        fail(...)
    end
    R.zone = zone
end

function local_zone_from_env(var)
    if type(var) ~= "string" then fail("local_zone_from_env() takes an environment variable name") end
    set_found_zone(os.getenv(var), "local_zone_from_env: the environment variable %s is not set", var)
end

function local_zone_from_file(path)
    if type(path) ~= "string" then fail("local_zone_from_file() takes a file name") end
    local f, err = io.open(path, "r")
    local zone
    if f then
        zone = (f:read("l") or ""):match("^%s*(.-)%s*$")
        f:close()
    end
    local why = f and "local_zone_from_file: %s holds no zone name on its first line"
        or "local_zone_from_file: cannot open %s: %s"
    set_found_zone(zone, why, path, tostring(err))
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

