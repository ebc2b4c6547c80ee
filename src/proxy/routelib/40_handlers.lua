-- ---------------------------------------------------------------------------
-- Built-in route handlers: route_<name>_conf (config VM) validates and
-- prepares the options, route_<name>_start (workers) makes the function
-- generator, and a local generator function makes the per-slot handler.
-- ---------------------------------------------------------------------------

-- The conf of a route whose only option is children.
local function children_conf(t, ctx)
    check_opts(t, ctx, { children = true })
    need_children(t, ctx)
    return t
end

-- The start of such a route: gen(rctx, handles) gets one handle a child, in
-- the children's order.
local function children_start(gen)
    return function(t, ctx, fgen)
        fgen:ready({ a = new_handles(fgen, ordered(t.children)), n = ctx:label(), f = gen })
    end
end

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
route_allsync_conf = children_conf

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

route_allsync_start = children_start(allsync_gen)

-- route_allasync{ children = ... }: every child; answers at once with the
-- null reply, the requests complete in the background.
route_allasync_conf = children_conf

local function allasync_gen(rctx, hs)
    return function(r)
        rctx:enqueue(r, hs)
        rctx:wait_cond(0)  -- send them now, do not wait
        return null_reply(r)
    end
end

route_allasync_start = children_start(allasync_gen)

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
    local first = miss and mcp.WAIT_GOOD or mcp.WAIT_OK
    return function(r)
        if not wait then
            -- Without a wait the engine's own condition does it: resume at
            -- the first answer that counts (or when none can come), then
            -- take the best (the first hit, else the last miss, else the
            -- last error).
            rctx:enqueue(r, hs)
            rctx:wait_cond(1, first)
            return (rctx:best_result(hs))
        end
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
        local tried = 1
        local deadline
        local best_miss, last_err
        if wait then
            tr_send(rctx, tr, r, 1)
            deadline = now_ms() + wait * 1000
        else
            -- The common case, without a wait: the first child waited for
            -- directly (no scan of the handles).
            tr.sent[1], tr.got[1] = true, true
            local res = rctx:enqueue_and_wait(r, hs[1])
            local kind = kind_of(res)
            if kind == GOOD or (kind == MISS and not miss) then return res end
            if kind == MISS then best_miss = res else last_err = res end
            if limit < 2 then return best_miss or last_err end
            tried = 2
            if stat then mcp.stat(stat, 1) end
            tr_send(rctx, tr, r, 2)
        end
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
route_random_conf = children_conf

local function random_gen(rctx, hs)
    local n = #hs
    local random = math.random
    return function(r) return rctx:enqueue_and_wait(r, hs[random(n)]) end
end

route_random_start = children_start(random_gen)

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
