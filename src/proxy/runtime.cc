// The proxy's config thread, reloads, crons, IO thread and stats (runtime.h).
#include "proxy/runtime.h"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "proxy/routelib_src.h"
#include "proxy/worker.h"

namespace trove::proxy {
namespace {

void Fatal(const std::string& msg) {
  std::fprintf(stderr, "proxy config error: %s\n", msg.c_str());
  std::fflush(stderr);
  std::_Exit(EXIT_FAILURE);
}

}  // namespace

ProxyRuntime::ProxyRuntime(const RuntimeOptions& opts, net::LogHub* log)
    : opts_(opts), shared_(log), workers_(static_cast<size_t>(opts.num_workers < 1 ? 1 : opts.num_workers)) {
  for (auto& w : workers_) w.store(nullptr);
  cfg_ctx_.is_config = true;
  cfg_ctx_.runtime = this;
  (void)io_loop_.Init();
}

ProxyRuntime::~ProxyRuntime() {
  Stop();
  for (auto& w : workers_) delete w.exchange(nullptr);
  ClearCrons();
  if (cfg_L_ != nullptr) lua_close(cfg_L_);
}

bool ProxyRuntime::ReadFiles(std::vector<std::pair<std::string, std::string>>* chunks,
                             std::string* err) {
  for (const std::string& f : opts_.files) {
    if (f == "routelib") {
      // The routelib Trove ships (src/proxy/routelib); it runs the file
      // named by proxy_arg.
      chunks->emplace_back("routelib", std::string(kRoutelibSource, sizeof(kRoutelibSource) - 1));
      continue;
    }
    std::ifstream in(f, std::ios::binary);
    if (!in) {
      *err = "failed to open config file " + f;
      return false;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    chunks->emplace_back(f, ss.str());
  }
  return true;
}

bool ProxyRuntime::LoadConfig(ConfigGeneration* gen, std::string* err, bool* fatal) {
  *fatal = false;
  if (!ReadFiles(&gen->chunks, err)) return false;
  lua_State* L = cfg_L_;
  // Syntax first: a file that does not compile fails the load, nothing else.
  for (const auto& [name, src] : gen->chunks) {
    const std::string chunk = "@" + name;
    if (luaL_loadbuffer(L, src.data(), src.size(), chunk.c_str()) != LUA_OK) {
      *err = lua_tostring(L, -1);
      lua_pop(L, 1);
      return false;
    }
    lua_pop(L, 1);
  }
  // settings_ carries over: a setting the new config does not call keeps the
  // last value set, as memcached's tunables do.
  ClearCrons();
  for (const auto& [name, src] : gen->chunks) {
    const std::string chunk = "@" + name;
    if (luaL_loadbuffer(L, src.data(), src.size(), chunk.c_str()) != LUA_OK ||
        lua_pcall(L, 0, 0, 0) != LUA_OK) {
      *err = lua_tostring(L, -1) != nullptr ? lua_tostring(L, -1) : "error running config";
      lua_pop(L, 1);
      *fatal = true;
      return false;
    }
  }
  lua_getglobal(L, "mcp_config_pools");
  if (!lua_isfunction(L, -1)) {
    lua_pop(L, 1);
    *err = "no mcp_config_pools function in the config";
    *fatal = true;
    return false;
  }
  if (lua_pcall(L, 0, 1, 0) != LUA_OK) {
    *err = lua_tostring(L, -1) != nullptr ? lua_tostring(L, -1) : "mcp_config_pools failed";
    lua_pop(L, 1);
    *fatal = true;
    return false;
  }
  const bool ok = CopyOut(L, -1, &gen->pools, err);
  lua_pop(L, 1);
  if (!ok) {
    *fatal = true;
    return false;
  }
  gen->settings = settings_;
  gen->ustat_names = ustat_names_;
  gen->gen = next_gen_++;
  return true;
}

Status ProxyRuntime::LoadInitial() {
  cfg_L_ = NewVm(&cfg_ctx_);
  if (cfg_L_ == nullptr) return Status::Invalid("proxy: cannot create a Lua VM");
  auto gen = std::make_shared<ConfigGeneration>();
  std::string err;
  bool fatal = false;
  if (!LoadConfig(gen.get(), &err, &fatal)) return Status::Invalid("failed to load proxy_config: " + err);
  {
    MutexLock l(&reload_mu_);
    current_ = std::move(gen);
  }
  shared_.counters().config_reloads.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

Status ProxyRuntime::Start() {
  io_thread_ = std::thread([this] {
    io_loop_.BindToThisThread();
    while (!io_stop_.load(std::memory_order_relaxed)) io_loop_.RunOnce(100);
  });
  cfg_thread_ = std::thread([this] { ConfigThread(); });
  return Status::Ok();
}

void ProxyRuntime::Stop() {
  {
    MutexLock l(&reload_mu_);
    stop_ = true;
    reload_cv_.SignalAll();
  }
  if (cfg_thread_.joinable()) cfg_thread_.join();
  io_stop_.store(true);
  if (io_thread_.joinable()) io_thread_.join();
  SetProxyShutdown();
}

void ProxyRuntime::InitWorker(int id, net::EventLoop* loop) {
  auto* w = new ProxyWorker(this, id, loop);
  std::shared_ptr<const ConfigGeneration> gen;
  {
    MutexLock l(&reload_mu_);
    gen = current_;
  }
  std::string err;
  if (gen == nullptr || !w->Load(*gen, &err)) Fatal("worker " + std::to_string(id) + ": " + err);
  workers_[static_cast<size_t>(id)].store(w);
}

ProxyWorker* ProxyRuntime::worker(int id) const {
  if (id < 0 || static_cast<size_t>(id) >= workers_.size()) return nullptr;
  return workers_[static_cast<size_t>(id)].load();
}

void ProxyRuntime::RequestReload() {
  MutexLock l(&reload_mu_);
  reload_wanted_ = true;
  reload_cv_.SignalAll();
}

void ProxyRuntime::AddCron(lua_State* L, std::string name, int64_t every_s, bool rerun) {
  const int ref = luaL_ref(L, LUA_REGISTRYINDEX);
  for (Cron& c : crons_) {
    if (c.name == name) {
      luaL_unref(L, LUA_REGISTRYINDEX, c.ref);
      c.ref = ref;
      c.every_ms = every_s * 1000;
      c.rerun = rerun;
      c.next_ms = NowMs() + c.every_ms;
      return;
    }
  }
  crons_.push_back(Cron{std::move(name), every_s * 1000, rerun, ref, NowMs() + every_s * 1000});
}

void ProxyRuntime::ClearCrons() {
  for (Cron& c : crons_) {
    if (cfg_L_ != nullptr) luaL_unref(cfg_L_, LUA_REGISTRYINDEX, c.ref);
  }
  crons_.clear();
}

void ProxyRuntime::RunCrons() {
  const int64_t now = NowMs();
  for (size_t i = 0; i < crons_.size();) {
    Cron& c = crons_[i];
    if (c.next_ms > now) {
      ++i;
      continue;
    }
    lua_rawgeti(cfg_L_, LUA_REGISTRYINDEX, c.ref);
    shared_.counters().config_cron_runs.fetch_add(1, std::memory_order_relaxed);
    if (lua_pcall(cfg_L_, 0, 0, 0) != LUA_OK) {
      shared_.counters().config_cron_fails.fetch_add(1, std::memory_order_relaxed);
      const char* m = lua_tostring(cfg_L_, -1);
      shared_.Log(net::kLogProxyevents, std::string("type=proxy_error msg=") + (m ? m : "?"));
      lua_pop(cfg_L_, 1);
    }
    if (c.rerun) {
      c.next_ms = now + c.every_ms;
      ++i;
    } else {
      luaL_unref(cfg_L_, LUA_REGISTRYINDEX, c.ref);
      crons_.erase(crons_.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
}

void ProxyRuntime::ConfigThread() {
  for (;;) {
    bool reload = false;
    {
      MutexLock l(&reload_mu_);
      for (;;) {
        if (stop_) return;
        if (reload_wanted_) break;
        int64_t wait = 1000;
        const int64_t now = NowMs();
        for (const Cron& c : crons_) wait = std::min(wait, c.next_ms - now);
        if (wait <= 0) break;
        reload_cv_.WaitFor(wait);
      }
      reload = reload_wanted_;
      reload_wanted_ = false;
    }
    if (reload) Reload();
    RunCrons();
  }
}

void ProxyRuntime::Reload() {
  auto gen = std::make_shared<ConfigGeneration>();
  std::string err;
  bool fatal = false;
  if (!LoadConfig(gen.get(), &err, &fatal)) {
    if (fatal) Fatal(err);  // as memcached: a config that fails to run stops the server
    // A file that does not compile (or cannot be read): the old config stays.
    shared_.counters().config_reload_fails.fetch_add(1, std::memory_order_relaxed);
    std::fprintf(stderr, "proxy: failed to reload config: %s\n", err.c_str());
    shared_.Log(net::kLogProxyevents, "type=proxy_error msg=" + err);
    shared_.Log(net::kLogProxyevents, "type=proxy_conf status=failed");
    return;
  }
  shared_.Log(net::kLogProxyevents, "type=proxy_conf status=start");
  {
    MutexLock l(&reload_mu_);
    current_ = gen;
  }
  struct Wait {
    Mutex mu{LockRank::kLeaf};
    CondVar cv{&mu};
    bool done = false;
    bool ok = false;
    std::string err;
  };
  for (size_t i = 0; i < workers_.size(); ++i) {
    ProxyWorker* w = workers_[i].load();
    if (w == nullptr) continue;  // not started yet: it loads current_ itself
    auto wait = std::make_shared<Wait>();
    w->loop()->Post([w, gen, wait] {
      std::string e;
      const bool ok = w->Load(*gen, &e);
      MutexLock l(&wait->mu);
      wait->ok = ok;
      wait->err = std::move(e);
      wait->done = true;
      wait->cv.SignalAll();
    });
    MutexLock l(&wait->mu);
    while (!wait->done) wait->cv.Wait();
    if (!wait->ok) {
      shared_.counters().config_reload_fails.fetch_add(1, std::memory_order_relaxed);
      std::fprintf(stderr, "proxy: worker %zu failed to load the new config: %s\n", i,
                   wait->err.c_str());
      shared_.Log(net::kLogProxyevents, "type=proxy_conf status=failed");
      return;
    }
  }
  shared_.counters().config_reloads.fetch_add(1, std::memory_order_relaxed);
  shared_.Log(net::kLogProxyevents, "type=proxy_conf status=done");
}

std::shared_ptr<Backend> ProxyRuntime::IoBackend(const std::shared_ptr<const BackendSpec>& spec) {
  const std::string key = spec->Key();
  std::shared_ptr<Backend> b;
  {
    MutexLock l(&io_mu_);
    auto it = io_backends_.find(key);
    if (it != io_backends_.end()) b = it->second.lock();
    if (b != nullptr) return b;
    b = MakeBackend(spec, &io_loop_, &shared_);
    io_backends_[key] = b;
  }
  io_loop_.Post([b] { b->Start(); });
  return b;
}

std::vector<std::pair<std::string, std::string>> ProxyRuntime::GeneralStats() const {
  const ProxyCounters& c = const_cast<ProxyShared&>(shared_).counters();
  auto n = [](const std::atomic<uint64_t>& v) { return std::to_string(v.load(std::memory_order_relaxed)); };
  int64_t active = 0;
  uint64_t reqs = 0, errors = 0;
  for (const auto& w : workers_) {
    if (ProxyWorker* p = w.load()) {
      active += p->req_active();
      reqs += p->requests();
      errors += p->conn_errors();
    }
  }
  return {
      {"proxy_conn_requests", std::to_string(reqs)},
      {"proxy_conn_errors", std::to_string(errors)},
      // memcached counts here only a failed allocation from its IO object
      // cache, which Trove does not have (buffer limit refusals are not
      // counted there either).
      {"proxy_conn_oom", "0"},
      {"proxy_req_active", std::to_string(active)},
      {"proxy_config_reloads", n(c.config_reloads)},
      {"proxy_config_reload_fails", n(c.config_reload_fails)},
      {"proxy_config_cron_runs", n(c.config_cron_runs)},
      {"proxy_config_cron_fails", n(c.config_cron_fails)},
      {"proxy_backend_total", n(c.backend_total)},
      {"proxy_backend_marked_bad", n(c.backend_marked_bad)},
      {"proxy_backend_failed", n(c.backend_failed)},
      {"proxy_request_failed_depth", n(c.request_failed_depth)},
  };
}

bool ProxyRuntime::SubStats(std::string_view sub,
                            std::vector<std::pair<std::string, std::string>>* out) const {
  if (sub == "proxy") {
    std::vector<std::string> names;
    {
      MutexLock l(&reload_mu_);
      if (current_ != nullptr) names = current_->ustat_names;
    }
    for (size_t i = 1; i < names.size(); ++i) {
      if (names[i].empty()) continue;
      uint64_t sum = 0;
      for (const auto& w : workers_) {
        if (ProxyWorker* p = w.load()) sum += p->ustat_value(static_cast<int>(i));
      }
      out->emplace_back("user_" + names[i], std::to_string(sum));
    }
    ProxySettings set;
    {
      MutexLock l(&reload_mu_);
      if (current_ != nullptr) set = current_->settings;
    }
    // As memcached shows them: a worker's share times the workers.
    const int64_t workers = opts_.num_workers < 1 ? 1 : opts_.num_workers;
    const int64_t req_lim = set.active_req_limit;
    const int64_t req_share = req_lim > workers * 2 ? req_lim / workers : req_lim;
    out->emplace_back("active_req_limit", std::to_string(req_share * workers));
    out->emplace_back(
        "buffer_memory_limit",
        std::to_string(PerWorkerBufferLimit(set.buffer_memory_limit_kb, workers) * workers));
    int64_t used = 0;
    for (const auto& w : workers_) {
      if (ProxyWorker* p = w.load()) used += p->buffer_used();
    }
    out->emplace_back("buffer_memory_used", std::to_string(used));
    uint64_t gc = 0, kb = 0;
    std::array<uint64_t, kCmdSize> cmds{};
    for (const auto& w : workers_) {
      if (ProxyWorker* p = w.load()) {
        gc += p->vm_gc_runs();
        kb += p->vm_memory_kb();
        for (int c = 1; c < kCmdSize; ++c) cmds[static_cast<size_t>(c)] += p->cmd_count(c);
      }
    }
    out->emplace_back("vm_gc_runs", std::to_string(gc));
    out->emplace_back("vm_memory_kb", std::to_string(kb));
    // memcached 1.6.45's list and order.
    static constexpr std::pair<const char*, int> kCmds[] = {
        {"mg", kCmdMg},         {"ms", kCmdMs},         {"md", kCmdMd},
        {"mn", kCmdMn},         {"ma", kCmdMa},         {"me", kCmdMe},
        {"get", kCmdGet},       {"gat", kCmdGat},       {"set", kCmdSet},
        {"add", kCmdAdd},       {"cas", kCmdCas},       {"gets", kCmdGets},
        {"gats", kCmdGats},     {"incr", kCmdIncr},     {"decr", kCmdDecr},
        {"touch", kCmdTouch},   {"append", kCmdAppend}, {"prepend", kCmdPrepend},
        {"delete", kCmdDelete}, {"replace", kCmdReplace}};
    for (const auto& [name, c] : kCmds) {
      out->emplace_back(std::string("cmd_") + name, std::to_string(cmds[static_cast<size_t>(c)]));
    }
    return true;
  }
  if (sub == "proxybe") {
    for (const auto& [label, n] : const_cast<ProxyShared&>(shared_).BadLabels()) {
      out->emplace_back("bad_" + label, std::to_string(n));
    }
    return true;
  }
  if (sub == "proxyfuncs") {
    std::map<std::string, std::pair<int64_t, int64_t>> sum;
    for (const auto& w : workers_) {
      if (ProxyWorker* p = w.load()) {
        for (const auto& [name, v] : p->FuncgenCounts()) {
          sum[name].first += v.first;
          sum[name].second += v.second;
        }
      }
    }
    for (const auto& [name, v] : sum) {
      if (v.first == 0 && v.second == 0) continue;
      out->emplace_back("funcs_" + name, std::to_string(v.first));
      out->emplace_back("slots_" + name, std::to_string(v.second));
    }
    return true;
  }
  return false;
}

}  // namespace trove::proxy
