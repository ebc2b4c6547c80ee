// A worker's proxy: config (re)load into its VM, hooks, requests as
// coroutines, and the batches it sends to backends (see worker.h).
#include "proxy/worker.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>

#include "proxy/runtime.h"

namespace trove::proxy {
namespace {

constexpr char kBackendFailure[] = "SERVER_ERROR backend failure\r\n";
constexpr char kBadResponse[] = "SERVER_ERROR bad response\r\n";
constexpr char kLuaFailure[] = "SERVER_ERROR lua failure\r\n";
constexpr char kLuaStartFailure[] = "SERVER_ERROR lua start failure\r\n";
constexpr char kActiveLimit[] = "SERVER_ERROR active request limit reached\r\n";

}  // namespace

ProxyWorker::ProxyWorker(ProxyRuntime* rt, int id, net::EventLoop* loop)
    : rt_(rt), id_(id), loop_(loop), ustats_(new std::atomic<uint64_t>[kMaxUstats + 1]) {
  for (int i = 0; i <= kMaxUstats; ++i) ustats_[static_cast<size_t>(i)].store(0);
  ustat_names_.resize(kMaxUstats + 1);
  vm_ctx_.is_config = false;
  vm_ctx_.runtime = rt;
  vm_ctx_.worker = this;
  L_ = NewVm(&vm_ctx_);
  // Requests leave short-lived garbage (request and response objects):
  // the generational collector takes it in small minor steps.
  if (L_ != nullptr) {
    lua_gc(L_, LUA_GCGEN, 0, 0);
    luaL_newmetatable(L_, "trove.gc_sentinel");
    lua_pushcfunction(L_, &ProxyWorker::GcSentinel);
    lua_setfield(L_, -2, "__gc");
    lua_pop(L_, 1);
    NewGcSentinel(L_);
    vm_kb_.store(static_cast<uint64_t>(lua_gc(L_, LUA_GCCOUNT)), std::memory_order_relaxed);
  }
}

ProxyWorker::~ProxyWorker() {
  if (flush_timer_.armed()) loop_->Cancel(&flush_timer_);
  closing_ = true;
  if (L_ != nullptr) lua_close(L_);
}

void ProxyWorker::NewGcSentinel(lua_State* L) {
  lua_newtable(L);
  luaL_setmetatable(L, "trove.gc_sentinel");
  lua_pop(L, 1);  // unreferenced: the next collection finalizes it
}

int ProxyWorker::GcSentinel(lua_State* L) {
  ProxyWorker* w = Ctx(L)->worker;
  if (w == nullptr || w->closing_) return 0;
  w->gc_runs_.fetch_add(1, std::memory_order_relaxed);
  NewGcSentinel(L);
  return 0;
}

Run* ProxyWorker::AcquireRun() {
  if (free_runs_.empty()) {
    all_runs_.push_back(std::make_shared<Run>());
    Run* r = all_runs_.back().get();
    r->index = all_runs_.size() - 1;
    r->op.done = [this, r](BackendOp* o) { OnOpDone(r, o); };
    return r;
  }
  Run* r = free_runs_.back();
  free_runs_.pop_back();
  return r;
}

void ProxyWorker::ReleaseRun(Run* run, bool keep_coroutine) {
  if (run->co != nullptr) {
    if (keep_coroutine && lua_status(run->co) == LUA_OK) {
      lua_settop(run->co, 0);
    } else {
      luaL_unref(L_, LUA_REGISTRYINDEX, run->co_ref);  // the collector takes it
      run->co = nullptr;
      run->co_ref = LUA_NOREF;
    }
  }
  run->slot_ref = LUA_NOREF;
  run->slot = nullptr;
  run->res = {nullptr, LUA_NOREF};
  run->waiting = false;
  run->line.clear();
  run->finish = nullptr;
  free_runs_.push_back(run);
}

void ProxyWorker::ClearHooks() {
  for (int& r : untagged_) {
    if (r != LUA_NOREF) luaL_unref(L_, LUA_REGISTRYINDEX, r);
    r = LUA_NOREF;
  }
  for (auto& [tag, arr] : hook_index_) {
    for (int r : arr) {
      if (r != LUA_NOREF) luaL_unref(L_, LUA_REGISTRYINDEX, r);
    }
  }
  hook_index_.clear();
}

bool ProxyWorker::Load(const ConfigGeneration& gen, std::string* err) {
  lua_State* L = L_;
  const int top = lua_gettop(L);
  for (const auto& [name, src] : gen.chunks) {
    const std::string chunk = "@" + name;
    if (luaL_loadbuffer(L, src.data(), src.size(), chunk.c_str()) != LUA_OK ||
        lua_pcall(L, 0, 0, 0) != LUA_OK) {
      *err = lua_tostring(L, -1) != nullptr ? lua_tostring(L, -1) : "error loading config";
      lua_settop(L, top);
      return false;
    }
  }
  lua_getglobal(L, "mcp_config_routes");
  if (!lua_isfunction(L, -1)) {
    *err = "no mcp_config_routes function in the config";
    lua_settop(L, top);
    return false;
  }
  lua_newtable(L);
  pending_hooks_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  PushCopy(L, gen.pools);
  const int st = lua_pcall(L, 1, 0, 0);
  const int pending = pending_hooks_ref_;
  pending_hooks_ref_ = LUA_NOREF;
  if (st != LUA_OK) {
    *err = lua_tostring(L, -1) != nullptr ? lua_tostring(L, -1) : "mcp_config_routes failed";
    luaL_unref(L, LUA_REGISTRYINDEX, pending);
    lua_settop(L, top);
    return false;
  }
  // The new hooks replace the old all at once.
  ClearHooks();
  lua_rawgeti(L, LUA_REGISTRYINDEX, pending);
  lua_pushnil(L);
  while (lua_next(L, -2) != 0) {
    std::string tag = lua_tostring(L, -2);
    HookArray* arr = &untagged_;
    if (!tag.empty()) arr = &hook_index_.emplace(tag, NoHooks()).first->second;
    for (int c = 1; c < kCmdSize; ++c) {
      lua_rawgeti(L, -1, c);
      if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
      } else {
        (*arr)[static_cast<size_t>(c)] = luaL_ref(L, LUA_REGISTRYINDEX);
      }
    }
    lua_pop(L, 1);
  }
  luaL_unref(L, LUA_REGISTRYINDEX, pending);
  lua_settop(L, top);
  // User stats: a renamed (or removed) index starts again from zero.
  for (int i = 1; i <= kMaxUstats; ++i) {
    const std::string& nn = static_cast<size_t>(i) < gen.ustat_names.size()
                                ? gen.ustat_names[static_cast<size_t>(i)]
                                : std::string();
    if (nn != ustat_names_[static_cast<size_t>(i)]) {
      ustats_[static_cast<size_t>(i)].store(0, std::memory_order_relaxed);
      ustat_names_[static_cast<size_t>(i)] = nn;
    }
  }
  // memcached divides the limit between the workers.
  const int64_t workers = rt_->options().num_workers;
  const int64_t lim = gen.settings.active_req_limit;
  active_limit_ = lim > workers * 2 ? lim / workers : lim;
  // Old pools and funcgens go now, so that their backends close promptly.
  lua_gc(L, LUA_GCCOLLECT);
  return true;
}

std::shared_ptr<Backend> ProxyWorker::LocalBackend(const std::shared_ptr<const BackendSpec>& spec) {
  const std::string key = spec->Key();
  auto it = backends_.find(key);
  if (it != backends_.end()) {
    if (auto b = it->second.lock()) return b;
  }
  auto b = MakeBackend(spec, loop_, rt_->shared());
  b->Start();
  backends_[key] = b;
  // Forget the expired ones now and then.
  if (backends_.size() > 64) {
    for (auto i = backends_.begin(); i != backends_.end();) {
      i = i->second.expired() ? backends_.erase(i) : std::next(i);
    }
  }
  return b;
}

void ProxyWorker::PushPoolProxy(lua_State* L, const std::shared_ptr<const PoolSpec>& spec) {
  auto wp = std::make_shared<WorkerPool>();
  wp->io = spec->use_iothread;
  for (const auto& bs : spec->backends) {
    wp->backends.push_back(wp->io ? rt_->IoBackend(bs) : LocalBackend(bs));
  }
  void* p = lua_newuserdatauv(L, sizeof(PoolProxyUd), 0);
  new (p) PoolProxyUd{std::move(wp)};
  luaL_setmetatable(L, kPoolProxyMt);
}

void ProxyWorker::NewSlot(lua_State* L, int fg_idx) {
  fg_idx = lua_absindex(L, fg_idx);
  auto* fg = static_cast<FuncgenUd*>(lua_touserdata(L, fg_idx));
  lua_getiuservalue(L, fg_idx, 1);  // fg table
  const int ft = lua_gettop(L);
  auto* rc = new (lua_newuserdatauv(L, sizeof(RctxUd), 2)) RctxUd{};
  rc->worker = this;
  luaL_setmetatable(L, kRctxMt);
  const int rci = lua_gettop(L);
  lua_pushvalue(L, fg_idx);
  lua_setiuservalue(L, rci, 2);
  lua_getfield(L, ft, "handles");
  const lua_Integer nh = static_cast<lua_Integer>(lua_rawlen(L, -1));
  for (lua_Integer h = 1; h <= nh; ++h) {
    lua_rawgeti(L, -1, h);
    rc->pools.push_back(static_cast<PoolProxyUd*>(lua_touserdata(L, -1))->pool);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  rc->res.assign(rc->pools.size(), {nullptr, LUA_NOREF});
  rc->req = new (lua_newuserdatauv(L, sizeof(RequestUd), 0)) RequestUd{};
  luaL_setmetatable(L, kRequestMt);
  rc->req_ref = luaL_ref(L, LUA_REGISTRYINDEX);
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

namespace {
// lua_pcall-able: the funcgen at 1 makes a new slot (pushed).
int NewSlotProtected(lua_State* L) {
  auto* fg = static_cast<FuncgenUd*>(lua_touserdata(L, 1));
  fg->worker->NewSlot(L, 1);
  return 1;
}
}  // namespace

void ProxyWorker::StartRequest(int hook_ref, const RequestView& req, FinishFn finish) {
  lua_State* L = L_;
  requests_.fetch_add(1, std::memory_order_relaxed);
  if (req.cmd > 0 && req.cmd < kCmdSize) {
    cmd_counts_[static_cast<size_t>(req.cmd)].fetch_add(1, std::memory_order_relaxed);
  }
  if (active_limit_ > 0 && req_active_.load(std::memory_order_relaxed) >= active_limit_) {
    finish(kActiveLimit);
    return;
  }
  const int top = lua_gettop(L);
  Run* run = AcquireRun();
  run->cmd = req.cmd;
  run->cfd = req.cfd;
  run->finish = std::move(finish);
  lua_rawgeti(L, LUA_REGISTRYINDEX, hook_ref);
  const int hook = lua_gettop(L);
  if (run->co == nullptr) {
    run->co = lua_newthread(L);
    run->co_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  lua_State* co = run->co;
  if (lua_type(L, hook) == LUA_TUSERDATA) {
    lua_getiuservalue(L, hook, 2);  // the free slots
    const auto n = static_cast<lua_Integer>(lua_rawlen(L, -1));
    if (n > 0) {
      lua_rawgeti(L, -1, n);
      lua_pushnil(L);
      lua_rawseti(L, -3, n);
    } else {
      lua_pushcfunction(L, NewSlotProtected);
      lua_pushvalue(L, hook);
      if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
        if (rt_->shared()->Watching(net::kLogProxyevents)) {
          rt_->shared()->Log(net::kLogProxyevents,
                             std::string("type=proxy_error msg=") + luaL_tolstring(L, -1, nullptr));
        }
        lua_settop(L, top);
        FinishFn f = std::move(run->finish);
        ReleaseRun(run, true);
        f(kLuaStartFailure);
        return;
      }
    }
    run->slot = static_cast<RctxUd*>(lua_touserdata(L, -1));
    lua_getiuservalue(L, -1, 1);  // the handler
    lua_xmove(L, co, 1);
    run->slot_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_settop(L, top);
    // The slot's own request object, refilled (its string keeps its capacity).
    lua_rawgeti(co, LUA_REGISTRYINDEX, run->slot->req_ref);
    run->slot->req->Assign(req);
  } else {
    lua_pushvalue(L, hook);
    lua_xmove(L, co, 1);
    lua_settop(L, top);
    auto* r = new (lua_newuserdatauv(co, sizeof(RequestUd), 0)) RequestUd{};
    luaL_setmetatable(co, kRequestMt);
    r->Assign(req);
  }
  req_active_.fetch_add(1, std::memory_order_relaxed);
  Resume(run, 1);
}

void ProxyWorker::Resume(Run* run, int nargs) {
  lua_State* co = run->co;
  int nres = 0;
  Run* const outer = current_;
  current_ = run;
  const int st = lua_resume(co, L_, nargs, &nres);
  current_ = outer;
  if (st == LUA_YIELD && run->waiting) {
    lua_pop(co, nres);
    return;
  }
  // A view into a response object or a string on the coroutine's stack:
  // both stay until FinishRun has delivered it.
  std::string_view out;
  if (st == LUA_OK) {
    if (nres < 1) {
      out = kBadResponse;
    } else {
      const int idx = lua_gettop(co) - nres + 1;
      if (auto* r = static_cast<ResponseUd*>(TestUd(co, idx, vm_ctx_.response_mt))) {
        out = r->failed ? std::string_view(kBackendFailure) : std::string_view(r->bytes);
      } else if (lua_type(co, idx) == LUA_TSTRING) {
        size_t n = 0;
        const char* s = lua_tolstring(co, idx, &n);
        out = std::string_view(s, n);
      } else {
        out = kBadResponse;
      }
    }
  } else {
    const char* msg = st == LUA_YIELD ? "a route may not yield except through the proxy"
                                      : lua_tostring(co, -1);
    if (rt_->shared()->Watching(net::kLogProxyevents)) {
      rt_->shared()->Log(net::kLogProxyevents,
                         std::string("type=proxy_error msg=") + (msg != nullptr ? msg : "?"));
    }
    out = kLuaFailure;
  }
  FinishRun(run, out);
}

void ProxyWorker::FinishRun(Run* run, std::string_view out) {
  lua_State* L = L_;
  req_active_.fetch_sub(1, std::memory_order_relaxed);
  // Delivered first: `out` may point into the slot's response object or the
  // coroutine's stack, both reused once the run is released.
  FinishFn f = std::move(run->finish);
  f(out);
  if (run->slot_ref != LUA_NOREF) {
    // The slot goes back to its funcgen's free list.
    lua_rawgeti(L, LUA_REGISTRYINDEX, run->slot_ref);
    lua_getiuservalue(L, -1, 2);  // its funcgen
    lua_getiuservalue(L, -1, 2);  // the free list
    lua_pushvalue(L, -3);
    lua_rawseti(L, -2, static_cast<lua_Integer>(lua_rawlen(L, -2)) + 1);
    lua_pop(L, 3);
    luaL_unref(L, LUA_REGISTRYINDEX, run->slot_ref);
  }
  ReleaseRun(run, true);
}

int ProxyWorker::Enqueue(lua_State* L, RctxUd* rc, lua_Integer handle, const RequestUd& req) {
  Run* run = current_;
  if (run == nullptr || run->co != L) return luaL_error(L, "enqueue_and_wait: not inside a request");
  if (handle < 1 || static_cast<size_t>(handle) > rc->pools.size()) {
    return luaL_error(L, "enqueue_and_wait: unknown handle %d", static_cast<int>(handle));
  }
  const auto hi = static_cast<size_t>(handle - 1);
  const std::shared_ptr<WorkerPool>& pool = rc->pools[hi];
  if (pool->backends.empty()) return luaL_error(L, "enqueue_and_wait: the pool has no backends");
  // The slot's response object for this handle, made on first use.
  if (rc->res[hi].first == nullptr) {
    auto* r = new (lua_newuserdatauv(L, sizeof(ResponseUd), 0)) ResponseUd{};
    luaL_setmetatable(L, kResponseMt);
    rc->res[hi] = {r, luaL_ref(L, LUA_REGISTRYINDEX)};
  }
  run->res = rc->res[hi];
  OpPtr op;
  if (!run->op_busy) {
    run->op_busy = true;
    BackendOp* o = &run->op;
    o->request.assign(req.bytes);
    o->log_spec = nullptr;
    o->failed = false;
    o->reply.clear();
    o->parsed = {};
    o->elapsed_us = 0;
    op = OpPtr(all_runs_[run->index], o);  // aliasing: keeps the Run, points at its op
  } else {
    op = std::make_shared<BackendOp>();  // not reached today: one op per run at a time
    op->request = req.bytes;
    op->done = run->op.done;
  }
  op->origin = loop_;
  op->start_ns = loop_->TurnNs();
  run->waiting = true;
  const std::string_view key = req.key();
  const uint64_t h = XXH3_64bits(key.data(), key.size());
  const auto n = static_cast<int32_t>(pool->backends.size());
  const std::shared_ptr<Backend>& be = pool->backends[static_cast<size_t>(JumpHash(h, n))];
  if (be->spec().opts.log) {
    op->log_spec = be->spec_ptr();
    run->line = std::string(req.line());
  }
  if (pool->io) {
    io_batch_.emplace_back(be, std::move(op));
  } else {
    if (!be->has_batch()) dirty_.push_back(be);
    be->Submit(std::move(op));
  }
  return 0;  // the Lua side of enqueue_and_wait yields (mcp_worker_lib.cc)
}

void ProxyWorker::OnOpDone(Run* run, BackendOp* op) {
  if (op == &run->op) run->op_busy = false;
  if (!run->waiting) return;
  run->waiting = false;
  lua_State* co = run->co;
  lua_rawgeti(co, LUA_REGISTRYINDEX, run->res.second);
  ResponseUd* r = run->res.first;
  r->bytes.swap(op->reply);  // both keep their capacity
  r->parsed = op->parsed;
  r->failed = op->failed;
  r->cmd = run->cmd;
  r->elapsed_us = op->elapsed_us;
  if (op->log_spec != nullptr) LogBackendRequest(*run, *op);
  Resume(run, 1);
  ScheduleFlush();
}

void ProxyWorker::LogBackendRequest(const Run& run, const BackendOp& op) {
  const BackendOptions& o = op.log_spec->opts;
  ProxyShared* sh = rt_->shared();
  if (!sh->Watching(net::kLogProxyreqs)) return;
  const bool error = op.failed || op.parsed.is_error();
  bool log = o.log_rate == 1 || (o.log_errors && error) ||
             (o.log_deadline_ms > 0 && op.elapsed_us > o.log_deadline_ms * 1000);
  if (!log && o.log_rate > 1) {
    sample_seed_ ^= sample_seed_ << 13;
    sample_seed_ ^= sample_seed_ >> 7;
    sample_seed_ ^= sample_seed_ << 17;
    log = sample_seed_ % static_cast<uint64_t>(o.log_rate) == 0;
  }
  if (!log) return;
  // memcached's LOGGER_PROXY_REQ line.
  const int type = op.failed ? memcache::kTypeFail : op.parsed.type;
  const int code = op.failed ? memcache::kCodeServerError : op.parsed.code;
  const char* res = "ok";
  if (error) {
    res = "any";
  } else if (code != memcache::kCodeEnd && code != memcache::kCodeNotFound &&
             code != memcache::kCodeNotStored && code != memcache::kCodeExists) {
    res = "good";
  }
  std::string body = "type=proxy_req elapsed=" + std::to_string(op.elapsed_us) +
                     " type=" + std::to_string(type) + " code=" + std::to_string(code) +
                     " status=" + (op.failed ? "-1" : "0") + " res=" + res +
                     " cfd=" + std::to_string(run.cfd) + " be=" + op.log_spec->host + ":" +
                     op.log_spec->port + " detail=" + o.log_tag + " req=";
  body.append(run.line, 0, std::min<size_t>(run.line.size(), 300));
  sh->Log(net::kLogProxyreqs, body);
}

void ProxyWorker::FlushOut() {
  if (in_flush_) return;  // the outer call's loop picks up what was added
  in_flush_ = true;
  vm_kb_.store(static_cast<uint64_t>(lua_gc(L_, LUA_GCCOUNT)), std::memory_order_relaxed);
  while (!dirty_.empty() || !io_batch_.empty()) {
    if (!io_batch_.empty()) {
      std::vector<std::pair<std::shared_ptr<Backend>, OpPtr>> batch;
      batch.swap(io_batch_);
      rt_->io_loop()->Post([b = std::move(batch)]() mutable {
        std::vector<Backend*> touched;
        for (auto& [be, op] : b) {
          if (!be->has_batch()) touched.push_back(be.get());
          be->Submit(std::move(op));
        }
        for (Backend* be : touched) be->Flush();
      });
    }
    dirty_spare_.swap(dirty_);
    for (auto& be : dirty_spare_) be->Flush();
    dirty_spare_.clear();
  }
  in_flush_ = false;
}

void ProxyWorker::CountFuncgen(const std::string& name, int64_t funcs, int64_t slots) {
  MutexLock l(&fg_mu_);
  auto& v = fg_counts_[name];
  v.first += funcs;
  v.second += slots;
}

std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> ProxyWorker::FuncgenCounts() const {
  MutexLock l(&fg_mu_);
  return {fg_counts_.begin(), fg_counts_.end()};
}

}  // namespace trove::proxy
