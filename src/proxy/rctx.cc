// The request engine of a worker (rctx.h): slots, handles, waits, timers,
// backend dispatch and the results routes return.

#include <algorithm>
#include <cstring>

#include "proxy/router.h"
#include "proxy/runtime.h"
#include "proxy/worker.h"

namespace trove::proxy {
namespace {

constexpr char kBadResponse[] = "SERVER_ERROR bad response\r\n";
constexpr char kLuaFailure[] = "SERVER_ERROR lua failure\r\n";
constexpr char kLuaStartFailure[] = "SERVER_ERROR lua start failure\r\n";
constexpr char kActiveLimit[] = "SERVER_ERROR active request limit reached\r\n";

// lua_pcall-able: the funcgen at 1 makes a new slot (pushed).
int NewSlotProtected(lua_State* L) {
  auto* fg = static_cast<FuncgenUd*>(lua_touserdata(L, 1));
  fg->worker->NewSlot(L, 1);
  return 1;
}

}  // namespace

Rctx::Rctx(ProxyWorker* w) : worker(w), timer([this] { worker->OnTimeout(this); }) {}

void ProxyWorker::NewSlot(lua_State* L, int fg_idx) {
  fg_idx = lua_absindex(L, fg_idx);
  auto* fg = static_cast<FuncgenUd*>(lua_touserdata(L, fg_idx));
  if (!fg->ready) luaL_error(L, "function generator is not ready (call fg:ready first)");
  lua_getiuservalue(L, fg_idx, 1);  // fg table
  const int ft = lua_gettop(L);
  auto* rc = new (lua_newuserdatauv(L, sizeof(Rctx), 2)) Rctx(this);
  luaL_setmetatable(L, kRctxMt);
  const int rci = lua_gettop(L);
  rc->fgen_name = fg->name;
  rc->fgen = fg;
  lua_pushvalue(L, fg_idx);
  lua_setiuservalue(L, rci, 2);
  lua_getfield(L, ft, "handles");
  const auto nh = static_cast<size_t>(lua_rawlen(L, -1));
  rc->h.resize(nh);
  for (size_t i = 0; i < nh; ++i) {
    lua_rawgeti(L, -1, static_cast<lua_Integer>(i + 1));
    if (auto* pp = static_cast<PoolProxyUd*>(luaL_testudata(L, -1, kPoolProxyMt))) {
      rc->h[i].pool = pp->pool;
    } else if (luaL_testudata(L, -1, kInternalMt) != nullptr) {
      rc->h[i].internal = true;
    } else {
      // A child funcgen: this slot pins one of its slots, a cached one
      // first (the one ready() made), as memcached does.
      const int cfg = lua_gettop(L);
      lua_getiuservalue(L, cfg, 2);
      const auto nfree = static_cast<lua_Integer>(lua_rawlen(L, -1));
      if (nfree > 0) {
        lua_rawgeti(L, -1, nfree);
        lua_pushnil(L);
        lua_rawseti(L, -3, nfree);
        lua_remove(L, -2);
      } else {
        lua_pop(L, 1);
        SlotCacheMiss(static_cast<FuncgenUd*>(lua_touserdata(L, cfg)));
        NewSlot(L, cfg);
      }
      auto* child = static_cast<Rctx*>(lua_touserdata(L, -1));
      child->is_child = true;
      rc->h[i].child = child;
      rc->h[i].child_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  rc->co = lua_newthread(L);
  rc->co_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_getfield(L, ft, "gen");
  lua_pushvalue(L, rci);
  lua_getfield(L, ft, "arg");
  lua_call(L, 2, 1);
  if (!lua_isfunction(L, -1)) luaL_error(L, "function generator did not return a function");
  lua_setiuservalue(L, rci, 1);
  lua_remove(L, ft);  // leaves the rctx on top
  ++fg->slots;
  CountFuncgen(fg->name, 0, 1);
}

void ProxyWorker::ForgetSlot(Rctx* rc) {
  if (rc->timer.armed()) loop_->Cancel(&rc->timer);
  lua_State* L = L_;
  for (HandleSlot& hs : rc->h) {
    if (hs.op) hs.op->owner = nullptr;  // a late reply finds no slot
    for (int* r : {&hs.child_ref, &hs.req_ref, &hs.res_ref, &hs.result_ref, &hs.cb_ref}) {
      if (*r != LUA_NOREF && L != nullptr && !closing_) luaL_unref(L, LUA_REGISTRYINDEX, *r);
      *r = LUA_NOREF;
    }
  }
  // NOREF after: a slot freed by the slot cache comes here again from __gc.
  for (int* r : {&rc->co_ref, &rc->req_ref}) {
    if (*r != LUA_NOREF && L != nullptr && !closing_) luaL_unref(L, LUA_REGISTRYINDEX, *r);
    *r = LUA_NOREF;
  }
}

void ProxyWorker::StartRequest(int hook_ref, const RequestView& req, FinishFn finish) {
  lua_State* L = L_;
  requests_.fetch_add(1, std::memory_order_relaxed);
  if (req.info.cmd > 0 && req.info.cmd < kCmdSize) {
    cmd_counts_[static_cast<size_t>(req.info.cmd)].fetch_add(1, std::memory_order_relaxed);
  }
  if (active_limit_ > 0 && req_active_.load(std::memory_order_relaxed) >= active_limit_) {
    finish(kActiveLimit);
    return;
  }
  const int top = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, hook_ref);
  auto* fg = static_cast<FuncgenUd*>(lua_touserdata(L, -1));
  // A router picks the funcgen from the key (and command).
  for (int depth = 0; fg != nullptr && fg->router != nullptr; ++depth) {
    const int ref = depth < 8 ? fg->router->Route(req.bytes.substr(req.info.key_off, req.info.key_len),
                                                  req.info.cmd)
                              : LUA_NOREF;
    lua_settop(L, top);
    if (ref == LUA_NOREF) {
      finish(kLuaStartFailure);
      return;
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
    fg = static_cast<FuncgenUd*>(lua_touserdata(L, -1));
  }
  const int fgi = lua_gettop(L);
  lua_getiuservalue(L, fgi, 2);  // the free slots
  const auto n = static_cast<lua_Integer>(lua_rawlen(L, -1));
  if (n > 0) {
    lua_rawgeti(L, -1, n);
    lua_pushnil(L);
    lua_rawseti(L, -3, n);
  } else {
    SlotCacheMiss(fg);
    lua_pushcfunction(L, NewSlotProtected);
    lua_pushvalue(L, fgi);
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
      if (rt_->shared()->Watching(net::kLogProxyevents)) {
        rt_->shared()->Log(net::kLogProxyevents,
                           std::string("type=proxy_error msg=") + luaL_tolstring(L, -1, nullptr));
      }
      lua_settop(L, top);
      finish(kLuaStartFailure);
      return;
    }
  }
  auto* rc = static_cast<Rctx*>(lua_touserdata(L, -1));
  rc->self_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_settop(L, top);
  if (rc->req == nullptr) {
    rc->req = new (lua_newuserdatauv(L, sizeof(RequestUd), 0)) RequestUd{};
    luaL_setmetatable(L, kRequestMt);
    rc->req_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  rc->req->Assign(req.bytes, req.line_len, req.eol_len, req.info, req.cfd);
  if (req.info.has_value) {
    rc->req->charge.Set(&buffer_mem_, static_cast<int64_t>(req.info.vlen) + 2);  // with its CRLF
  }
  rc->finish = std::move(finish);
  rc->multiget = req.multiget;
  rc->cfd = req.cfd;
  rc->peer_cn = req.peer_cn;
  rc->pending = 1;
  rc->running = true;
  req_active_.fetch_add(1, std::memory_order_relaxed);
  lua_State* co = rc->co;
  lua_rawgeti(co, LUA_REGISTRYINDEX, rc->self_ref);
  lua_getiuservalue(co, -1, 1);  // the handler
  lua_remove(co, -2);
  lua_rawgeti(co, LUA_REGISTRYINDEX, rc->req_ref);
  Drive(rc, 1);
}

void ProxyWorker::Drive(Rctx* rc, int nargs) {
  for (;;) {
    lua_State* co = rc->co;
    int nres = 0;
    const int st = lua_resume(co, L_, nargs, &nres);
    if (st != LUA_YIELD) {
      Finished(rc, st, nres);
      return;
    }
    lua_pop(co, nres);
    switch (rc->wait_mode) {
      case kWaitIdle:
        // coroutine.yield from the route itself: nothing would resume it.
        lua_pushstring(co, "a route may not yield except through the proxy");
        Finished(rc, LUA_ERRRUN, 1);
        return;
      case kWaitSleep:
        return;  // the timer resumes it
      case kWaitZero: {
        rc->wait_mode = kWaitIdle;
        int unused = 0;
        (void)RunHandles(rc, &unused);
        ++rc->pending;  // memcached's dummy IO: resumed from the deferred queue
        deferred_.push_back({rc, 0});
        ScheduleFlush();
        return;
      }
      default: {
        int n = 0;
        if (RunHandles(rc, &n)) {
          nargs = n;
          continue;
        }
        ScheduleFlush();
        return;
      }
    }
  }
}

bool ProxyWorker::RunHandles(Rctx* rc, int* nargs) {
  bool met = false;
  // Everything queued goes out first, so that pending counts every request
  // before any result is weighed against the wait (rctx.h invariant 5).
  for (size_t i = 0; i < rc->h.size(); ++i) {
    if (rc->h[i].state == HandleSlot::kQueued) Dispatch(rc, i);
  }
  for (size_t i = 0; i < rc->h.size(); ++i) {
    HandleSlot& hs = rc->h[i];
    if (hs.internal_done) {
      // What OnOpDone does for a backend's reply.
      hs.internal_done = false;
      hs.state = HandleSlot::kComplete;
      ProcessReturn(rc, i, hs.res);
      if (!met && rc->wait_count > 0) {
        --rc->pending;  // the waiting coroutine still counts, so never 0 here
        met = ProcessWait(rc, i, nargs);
      } else {
        Dec(rc);
      }
    } else if (!met && hs.state == HandleSlot::kComplete && rc->wait_count > 0) {
      met = ProcessWait(rc, i, nargs);
    }
  }
  if (!met && rc->wait_count > 0 && rc->pending == 1) {
    // Nothing is outstanding, so nothing can end this wait (a handle waited
    // on twice, a count larger than what was queued): memcached would hang
    // here; the route resumes with what it has.
    EndWait(rc, rc->wait_handle, nargs);
    met = true;
  }
  return met;
}

void ProxyWorker::Dispatch(Rctx* rc, size_t hi) {
  HandleSlot& hs = rc->h[hi];
  hs.state = HandleSlot::kActive;
  if (hs.child != nullptr) {
    Rctx* child = hs.child;
    child->parent = rc;
    child->parent_handle = hi;
    child->cfd = rc->cfd;
    child->pending = 1;
    child->running = true;
    ++rc->pending;
    lua_State* co = child->co;
    lua_rawgeti(co, LUA_REGISTRYINDEX, hs.child_ref);
    lua_getiuservalue(co, -1, 1);
    lua_remove(co, -2);
    lua_rawgeti(co, LUA_REGISTRYINDEX, hs.req_ref);
    Drive(child, 1);
    return;
  }
  const std::shared_ptr<WorkerPool>& pool = hs.pool;
  if (!hs.op && !hs.internal) {
    hs.op = std::make_shared<BackendOp>();
    hs.op->done = [this](BackendOp* o) { OnOpDone(o); };
  }
  if (hs.res == nullptr) {
    hs.res = new (lua_newuserdatauv(L_, sizeof(ResponseUd), 0)) ResponseUd{};
    luaL_setmetatable(L_, kResponseMt);
    hs.res_ref = luaL_ref(L_, LUA_REGISTRYINDEX);
  }
  if (hs.internal) {
    // Answered now; RunHandles returns it (rctx.h invariant 5).
    RunInternal(*hs.rq, hs.res);
    hs.internal_done = true;
    ++rc->pending;
    return;
  }
  BackendOp* op = hs.op.get();
  op->owner = rc;
  op->handle = hi;
  BackendBytes(*hs.rq, &op->request);
  op->failed = false;
  op->reply.clear();
  op->parsed = {};
  op->elapsed_us = 0;
  op->origin = loop_;
  op->start_ns = loop_->TurnNs();
  const int32_t pick = pool->selector.Select(hs.rq->key());  // the pool's hash and dist
  DCHECK(pick >= 0 && static_cast<size_t>(pick) < pool->backends.size());
  const std::shared_ptr<Backend>& be = pool->backends[static_cast<size_t>(pick)];
  op->log_spec = be->spec().opts.log ? be->spec_ptr() : nullptr;
  if (hs.res->be.get() != be->spec_ptr().get()) hs.res->be = be->spec_ptr();
  ++rc->pending;
  if (pool->io) {
    io_batch_.emplace_back(be, hs.op);
  } else {
    if (!be->has_batch()) dirty_.push_back(be);
    be->Submit(hs.op);
  }
}

void ProxyWorker::OnOpDone(BackendOp* op) {
  auto* rc = static_cast<Rctx*>(op->owner);
  if (rc == nullptr) return;
  const size_t hi = op->handle;
  HandleSlot& hs = rc->h[hi];
  ResponseUd* r = hs.res;
  r->bytes.swap(op->reply);  // both keep their capacity
  r->charge.Set(&buffer_mem_, static_cast<int64_t>(r->bytes.size()));
  r->parsed = op->parsed;
  r->failed = op->failed;
  r->cmd = hs.rq->info.cmd;
  r->elapsed_us = op->elapsed_us;
  hs.state = HandleSlot::kComplete;
  ProcessReturn(rc, hi, r);
  if (op->log_spec != nullptr) LogBackendRequest(*op, *hs.rq, *r, hs.flags, TopCfd(rc));
  if (rc->wait_count > 0) {
    --rc->pending;  // the waiting coroutine still counts, so never 0 here
    int n = 0;
    if (ProcessWait(rc, hi, &n)) Drive(rc, n);
  } else {
    Dec(rc);  // a late reply (or nobody waits yet)
  }
  ScheduleFlush();
}

void ProxyWorker::ProcessReturn(Rctx* rc, size_t hi, const ResponseUd* res) {
  HandleSlot& hs = rc->h[hi];
  uint8_t flag = res->Class();
  if (hs.cb_ref != LUA_NOREF) {
    // handle_set_cb(h, fn(res, req)) -> [mode[, resume]]
    lua_State* L = L_;
    const int top = lua_gettop(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, hs.cb_ref);
    lua_rawgeti(L, LUA_REGISTRYINDEX, hs.res_ref != LUA_NOREF ? hs.res_ref : hs.result_ref);
    lua_rawgeti(L, LUA_REGISTRYINDEX, hs.req_ref);
    if (lua_pcall(L, 2, 2, 0) != LUA_OK) {
      if (rt_->shared()->Watching(net::kLogProxyevents)) {
        rt_->shared()->Log(net::kLogProxyevents,
                           std::string("type=proxy_error msg=") + luaL_tolstring(L, -1, nullptr));
      }
    } else if (lua_isinteger(L, top + 1)) {
      switch (lua_tointeger(L, top + 1)) {
        case kWaitGood: flag = kResGood; break;
        case kWaitOk: flag = kResOk; break;
        default: break;
      }
      if (lua_toboolean(L, top + 2)) flag |= kResResume;
    }
    lua_settop(L, top);
  }
  hs.flags |= flag;
}

bool ProxyWorker::ProcessWait(Rctx* rc, size_t hi, int* nargs) {
  HandleSlot& hs = rc->h[hi];
  uint8_t status = hs.flags;
  bool counted = false;
  switch (rc->wait_mode) {
    case kWaitGood: counted = (status & kResGood) != 0; break;
    case kWaitOk: counted = (status & (kResGood | kResOk)) != 0; break;
    case kWaitAny: counted = true; break;
    case kWaitFastGood:
      if (status & kResGood) {
        counted = true;
        status |= kResResume;
      } else {
        counted = (status & kResOk) != 0;
      }
      break;
    case kWaitHandle: counted = hi == rc->wait_handle; break;
    default: return false;
  }
  if (counted) {
    ++rc->wait_done;
    hs.state = HandleSlot::kWaited;
  }
  bool resume = (status & kResResume) != 0;
  if (rc->wait_done >= rc->wait_count || rc->pending == 1) {
    resume = true;
  } else if (status & kResError) {
    // An error may make the count unreachable: resume when nothing else
    // can still answer.
    hs.state = HandleSlot::kWaited;
    bool possible = false;
    for (const HandleSlot& o : rc->h) {
      if (o.state != HandleSlot::kIdle && o.state != HandleSlot::kWaited) possible = true;
    }
    resume = !possible;
  }
  if (!resume) return false;
  EndWait(rc, hi, nargs);
  return true;
}

void ProxyWorker::EndWait(Rctx* rc, size_t hi, int* nargs) {
  lua_State* co = rc->co;
  const bool handle_mode = rc->wait_mode == kWaitHandle;
  rc->wait_count = 0;
  rc->wait_mode = kWaitIdle;
  if (rc->timer.armed()) loop_->Cancel(&rc->timer);
  if (handle_mode) {
    const HandleSlot& w = rc->h[hi];
    lua_rawgeti(co, LUA_REGISTRYINDEX, w.result_ref != LUA_NOREF ? w.result_ref : w.res_ref);
  } else {
    lua_pushinteger(co, rc->wait_done);
  }
  *nargs = 1;
}

void ProxyWorker::OnTimeout(Rctx* rc) {
  lua_State* co = rc->co;
  int nargs = 2;
  if (rc->wait_mode == kWaitHandle) {
    lua_pushnil(co);
  } else if (rc->wait_mode == kWaitSleep) {
    nargs = 1;
  } else {
    lua_pushinteger(co, rc->wait_done);
  }
  lua_pushboolean(co, 1);  // timed out
  rc->wait_count = 0;
  rc->wait_mode = kWaitIdle;
  Drive(rc, nargs);
  ScheduleFlush();
}

void ProxyWorker::PrepareWait(lua_State* L, Rctx* rc, WaitMode mode, int count, size_t handle,
                              int timeout_idx) {
  if (rc->wait_mode != kWaitIdle) luaL_error(L, "wait: cannot wait while already waiting");
  rc->wait_mode = mode;
  rc->wait_count = count;
  rc->wait_done = 0;
  rc->wait_handle = handle;
  if (mode == kWaitZero || timeout_idx == 0 || lua_isnoneornil(L, timeout_idx)) return;
  int isnum = 0;
  const lua_Number s = lua_tonumberx(L, timeout_idx, &isnum);
  if (!isnum || s < 0) {
    rc->wait_mode = kWaitIdle;
    luaL_error(L, "timeout argument to wait or sleep must be a number");
  }
  if (!rc->timer.armed()) loop_->ArmAfter(&rc->timer, static_cast<int64_t>(s * 1000.0));
}

void ProxyWorker::Enqueue(lua_State* L, Rctx* rc, size_t hi, int req_idx) {
  if (hi >= rc->h.size()) luaL_error(L, "attempted to enqueue an invalid handle");
  HandleSlot& hs = rc->h[hi];
  if (hs.state != HandleSlot::kIdle) return;  // once per request (rctx.h invariant 2)
  auto* rq = static_cast<RequestUd*>(lua_touserdata(L, req_idx));
  if (rq->info.key_token == 0) luaL_error(L, "cannot queue requests without a key");
  if (hs.pool && hs.pool->backends.empty()) luaL_error(L, "cannot queue to a pool without backends");
  lua_pushvalue(L, req_idx);
  hs.req_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  hs.rq = rq;
  hs.state = HandleSlot::kQueued;
}

void ProxyWorker::Finished(Rctx* rc, int st, int nres) {
  lua_State* co = rc->co;
  rc->running = false;
  if (st != LUA_OK) {
    const char* msg = lua_tostring(co, -1);
    if (rt_->shared()->Watching(net::kLogProxyevents)) {
      rt_->shared()->Log(net::kLogProxyevents,
                         std::string("type=proxy_error msg=") + (msg != nullptr ? msg : "?"));
    }
  }
  if (rc->is_child) {
    rc->child_ok = st == LUA_OK && nres >= 1;
    if (rc->child_ok) lua_pop(co, nres - 1);  // the first result stays on top
    deferred_.push_back({rc, 1});
    ScheduleFlush();
    return;
  }
  // Delivered first: the view may point into a response object or the
  // coroutine's stack, both reused once the slot is released.
  std::string_view out = kLuaFailure;
  if (st == LUA_OK) out = nres < 1 ? std::string_view(kBadResponse) : Output(rc, lua_gettop(co) - nres + 1);
  FinishFn f = std::move(rc->finish);
  rc->finish = nullptr;
  f(out);
  Dec(rc);
}

void ProxyWorker::ChildDone(Rctx* child) {
  Rctx* parent = child->parent;
  const size_t hi = child->parent_handle;
  HandleSlot& hs = parent->h[hi];
  lua_State* co = child->co;
  hs.state = HandleSlot::kComplete;
  ResponseUd* res = child->child_ok ? static_cast<ResponseUd*>(TestUd(co, -1, vm_ctx_.response_mt))
                                    : nullptr;
  if (res != nullptr) {
    lua_xmove(co, L_, 1);
    hs.result_ref = luaL_ref(L_, LUA_REGISTRYINDEX);
    ProcessReturn(parent, hi, res);
  } else if (child->child_ok && lua_type(co, -1) == LUA_TSTRING) {
    lua_xmove(co, L_, 1);
    hs.result_ref = luaL_ref(L_, LUA_REGISTRYINDEX);
    hs.flags |= kResAny;
  } else {
    // A Lua error or a bad result: the parent sees a failed response
    // (SERVER_ERROR backend failure if it returns it).
    if (child->child_ok) lua_pop(co, 1);
    auto* e = new (lua_newuserdatauv(L_, sizeof(ResponseUd), 0)) ResponseUd{};
    luaL_setmetatable(L_, kResponseMt);
    e->failed = true;
    e->cmd = hs.rq != nullptr ? hs.rq->info.cmd : 0;
    hs.result_ref = luaL_ref(L_, LUA_REGISTRYINDEX);
    hs.flags |= kResAny | kResError;
  }
  // The child's own count first (it may still have requests out), then the
  // parent's wait.
  Dec(child);
  if (parent->wait_count > 0) {
    int n = 0;
    if (ProcessWait(parent, hi, &n)) Drive(parent, n);
  }
}

void ProxyWorker::Dec(Rctx* rc) {
  if (--rc->pending > 0) return;
  if (rc->is_child) {
    Rctx* parent = rc->parent;
    if (parent != nullptr) Dec(parent);
    return;
  }
  Release(rc);
}

void ProxyWorker::Release(Rctx* rc) {
  lua_State* L = L_;
  req_active_.fetch_sub(1, std::memory_order_relaxed);
  Reset(rc);
  // Back to its funcgen's free list, or freed (slot_cache.cc).
  lua_rawgeti(L, LUA_REGISTRYINDEX, rc->self_ref);
  lua_getiuservalue(L, -1, 2);  // its funcgen
  lua_getiuservalue(L, -1, 2);  // the free list
  const auto nfree = static_cast<lua_Integer>(lua_rawlen(L, -1));
  if (rc->fgen != nullptr && KeepSlot(rc->fgen, nfree)) {
    lua_pushvalue(L, -3);
    lua_rawseti(L, -2, nfree + 1);
  } else {
    FreeSlot(rc);
  }
  lua_pop(L, 3);
  luaL_unref(L, LUA_REGISTRYINDEX, rc->self_ref);
  rc->self_ref = LUA_NOREF;
}

void ProxyWorker::Reset(Rctx* rc) {
  lua_State* L = L_;
  if (lua_status(rc->co) != LUA_OK) {
    // A coroutine that failed cannot run again: a new one.
    luaL_unref(L, LUA_REGISTRYINDEX, rc->co_ref);
    rc->co = lua_newthread(L);
    rc->co_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  } else {
    lua_settop(rc->co, 0);
  }
  if (rc->timer.armed()) loop_->Cancel(&rc->timer);
  rc->wait_mode = kWaitIdle;
  rc->wait_count = 0;
  rc->wait_done = 0;
  rc->multiget = false;
  rc->running = false;
  rc->parent = nullptr;
  rc->finish = nullptr;
  if (rc->req != nullptr) rc->req->charge.Clear(&buffer_mem_);
  for (HandleSlot& hs : rc->h) {
    if (hs.res != nullptr) hs.res->charge.Clear(&buffer_mem_);
    hs.state = HandleSlot::kIdle;
    hs.flags = 0;
    hs.rq = nullptr;
    for (int* r : {&hs.req_ref, &hs.result_ref}) {
      if (*r != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, *r);
      *r = LUA_NOREF;
    }
    if (hs.child != nullptr) Reset(hs.child);
  }
  ResetUserObjects(rc);
}

}  // namespace trove::proxy
