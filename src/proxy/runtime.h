// ProxyRuntime: the proxy as a whole. It owns the config VM and the config
// thread (loads, reloads, crons), the IO thread's loop (backends of pools
// with iothread=true), and one ProxyWorker per worker thread.
//
// Reload, as memcached's proxy does it: the config thread re-reads the
// files, runs them and mcp_config_pools in the config VM, then hands the
// result to each worker in turn (a task on that worker's loop) and waits
// for it; a worker runs the files and mcp_config_routes in its own VM, so
// its clients wait for nothing but its own reload.
//
// Thread safety: Load* and crons on the config thread only (the first load
// on the main thread, before the config thread exists); worker(i) is set
// once by InitWorker on worker i's thread and read after Start; stats
// getters from any thread.
//
// Lock order: reload_mu_ (config thread's queue) and io_mu_ are leaves; no
// lock is held while a worker's Load runs.
#pragma once

#include <lua5.4/lua.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/non_copyable.h"
#include "common/status.h"
#include "net/event_loop.h"
#include "net/log_hub.h"
#include "proxy/backend.h"
#include "proxy/internal.h"
#include "proxy/lua_vm.h"
#include "proxy/proxy_shared.h"
#include "proxy/proxy_types.h"

namespace trove::proxy {

class ProxyWorker;

struct RuntimeOptions {
  std::vector<std::string> files;  // proxy_config, split on ':'
  std::string arg;                 // proxy_arg (mcp.start_arg)
  bool has_arg = false;
  int num_workers = 1;
  // Trove's own cache and stats (mcp.internal, mcp.server_stats); null in
  // tests without a server.
  std::shared_ptr<LocalServer> local;
};

class ProxyRuntime : NonCopyable {
 public:
  ProxyRuntime(const RuntimeOptions& opts, net::LogHub* log);
  ~ProxyRuntime();

  // The first load (before any listener opens): an error is fatal.
  Status LoadInitial();
  // Starts the config thread and the IO thread.
  Status Start();
  void Stop();
  // Creates worker `id`'s ProxyWorker on that worker's thread and loads the
  // current config into it; a failure is fatal (exit 1), as in memcached.
  void InitWorker(int id, net::EventLoop* loop);
  ProxyWorker* worker(int id) const;
  // SIGHUP and mcp.schedule_config_reload(): reload soon on the config thread.
  void RequestReload();

  ProxyShared* shared() { return &shared_; }
  net::EventLoop* io_loop() { return &io_loop_; }
  const RuntimeOptions& options() const { return opts_; }

  // --- config VM (config thread) ---
  ProxySettings& pending_settings() { return settings_; }
  std::vector<std::string>& pending_ustats() { return ustat_names_; }
  // mcp.register_cron: the function is on the stack top (popped).
  void AddCron(lua_State* L, std::string name, int64_t every_s, bool rerun);
  // The IO thread's backend for `spec` (one per spec key, shared by workers).
  std::shared_ptr<Backend> IoBackend(const std::shared_ptr<const BackendSpec>& spec);

  // --- stats (any thread) ---
  std::vector<std::pair<std::string, std::string>> GeneralStats() const;
  // `stats proxy` / `proxybe` / `proxyfuncs`; false for another name.
  bool SubStats(std::string_view sub, std::vector<std::pair<std::string, std::string>>* out) const;

 private:
  struct Cron {
    std::string name;
    int64_t every_ms = 0;
    bool rerun = true;
    int ref = LUA_NOREF;
    int64_t next_ms = 0;
  };
  // Runs the files and mcp_config_pools; fills *gen. `fatal` is set for
  // errors memcached exits on (a runtime error, a bad pools result).
  bool LoadConfig(ConfigGeneration* gen, std::string* err, bool* fatal);
  bool ReadFiles(std::vector<std::pair<std::string, std::string>>* chunks, std::string* err);
  void Reload();
  void ConfigThread();
  void RunCrons();
  void ClearCrons();

  const RuntimeOptions opts_;
  ProxyShared shared_;
  VmContext cfg_ctx_;
  lua_State* cfg_L_ = nullptr;
  ProxySettings settings_;
  std::vector<std::string> ustat_names_;
  std::vector<Cron> crons_;
  uint64_t next_gen_ = 1;
  std::shared_ptr<const ConfigGeneration> current_;  // set before workers start

  std::vector<std::atomic<ProxyWorker*>> workers_;

  net::EventLoop io_loop_;
  std::thread io_thread_;
  std::atomic<bool> io_stop_{false};
  mutable Mutex io_mu_{LockRank::kLeaf};
  std::map<std::string, std::weak_ptr<Backend>> io_backends_ GUARDED_BY(io_mu_);

  std::thread cfg_thread_;
  mutable Mutex reload_mu_{LockRank::kLeaf};
  CondVar reload_cv_{&reload_mu_};
  bool reload_wanted_ GUARDED_BY(reload_mu_) = false;
  bool stop_ GUARDED_BY(reload_mu_) = false;
};

}  // namespace trove::proxy
