// A worker's proxy: config (re)load into its VM, hooks, requests as
// coroutines, and the batches it sends to backends (see worker.h).
#include "proxy/worker.h"

#include <algorithm>
#include <cstring>

#include "proxy/runtime.h"

namespace trove::proxy {

ProxyWorker::ProxyWorker(ProxyRuntime* rt, int id, net::EventLoop* loop)
    : rt_(rt), id_(id), loop_(loop), ustats_(new std::atomic<uint64_t>[kMaxUstatsCap + 1]) {
  for (int i = 0; i <= kMaxUstatsCap; ++i) ustats_[static_cast<size_t>(i)].store(0);
  if (rt != nullptr && rt->options().local != nullptr) {
    internal_ = std::make_unique<InternalCache>(rt->options().local.get(), id);
  }
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
  // Funcgens the new hooks no longer reach stop caching slots (slot_cache.cc).
  CloseUnreachable();
  // User stats: a renamed (or removed) index starts again from zero.
  // The names only grow (the config VM keeps every index it was given).
  if (ustat_names_.size() < gen.ustat_names.size()) ustat_names_.resize(gen.ustat_names.size());
  for (int i = 1; i < static_cast<int>(ustat_names_.size()); ++i) {
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
  buffer_mem_.set_limit(PerWorkerBufferLimit(gen.settings.buffer_memory_limit_kb, workers));
  // mcp.luagc_ratio as the generational collector's major multiplier (the
  // VM's growth in percent before a major collection; Lua stores it in
  // 4% steps up to 1020%).
  const double growth = (gen.settings.gc_ratio - 1.0) * 100.0;
  lua_gc(L, LUA_GCGEN, 0, static_cast<int>(std::clamp(growth, 10.0, 1000.0)));
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
  b->set_buffer_memory(&buffer_mem_);  // its replies count against this worker's limit
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
  wp->selector = spec->selector;
  for (const auto& bs : spec->backends) {
    wp->backends.push_back(wp->io ? rt_->IoBackend(bs) : LocalBackend(bs));
  }
  void* p = lua_newuserdatauv(L, sizeof(PoolProxyUd), 0);
  new (p) PoolProxyUd{std::move(wp)};
  luaL_setmetatable(L, kPoolProxyMt);
}

void ProxyWorker::FlushOut() {
  if (in_flush_) return;  // the outer call's loop picks up what was added
  in_flush_ = true;
  vm_kb_.store(static_cast<uint64_t>(lua_gc(L_, LUA_GCCOUNT)), std::memory_order_relaxed);
  while (!dirty_.empty() || !io_batch_.empty() || !deferred_.empty()) {
    if (!deferred_.empty()) {
      // Child results and wait_cond(0) resumes (rctx.h invariant 3); they
      // may queue more backend work, which this loop then sends.
      deferred_spare_.swap(deferred_);
      for (const Deferred& d : deferred_spare_) {
        if (d.kind == 0) {
          --d.rc->pending;  // the dummy wait
          lua_pushinteger(d.rc->co, 0);
          Drive(d.rc, 1);
        } else {
          ChildDone(d.rc);
        }
      }
      deferred_spare_.clear();
      continue;
    }
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
