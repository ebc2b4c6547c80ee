// ProxyWorker: one worker thread's part of the proxy: its Lua VM, the hooks
// its current config attached, its backend sockets (when not on the IO
// thread), and the requests it is running as Lua coroutines.
//
// Thread safety: the owner worker thread only, except the counters read by
// `stats` (relaxed atomics).
//
// Invariants:
//  1. Every started request finishes exactly once (Finish called with its
//     reply bytes), whether its client is still there or not.
//  2. Backends submitted to in a turn are flushed in the same turn: client
//     input and completions arm a zero-delay timer, which the loop runs
//     after the turn's epoll batch (one write per backend per turn).
//  3. A Backend is destroyed only from a task on its own loop, never from
//     inside Lua (a pool's __gc posts the release).
#pragma once

#include <lua5.4/lua.hpp>

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "net/event_loop.h"
#include "proxy/backend.h"
#include "proxy/lua_vm.h"
#include "proxy/proxy_types.h"

namespace trove::proxy {

class ProxyRuntime;

// A pool as one worker uses it: backends on this worker's loop, or on the
// IO thread's.
struct WorkerPool {
  std::vector<std::shared_ptr<Backend>> backends;
  bool io = false;
};

// A client's request as the connection found it (its bytes in the read
// buffer, valid for the StartRequest call).
struct RequestView {
  std::string_view bytes;  // line (with its CRLF) and value block
  int cmd = 0;
  size_t line_len = 0;  // without CRLF
  size_t key_off = 0, key_len = 0;
  int cfd = 0;
};

// The request userdata (mcp.request): the client's exact bytes.
struct RequestUd {
  std::string bytes;  // line (with its CRLF) and value block
  int cmd = 0;
  size_t line_len = 0;  // without CRLF
  size_t key_off = 0, key_len = 0;
  int cfd = 0;  // the client's socket (proxyreqs lines)
  std::string_view line() const { return std::string_view(bytes).substr(0, line_len); }
  std::string_view key() const { return std::string_view(bytes).substr(key_off, key_len); }
  // Refills this object (bytes keeps its capacity).
  void Assign(const RequestView& v) {
    bytes.assign(v.bytes);
    cmd = v.cmd;
    line_len = v.line_len;
    key_off = v.key_off;
    key_len = v.key_len;
    cfd = v.cfd;
  }
};

// The response userdata (mcp.response).
struct ResponseUd {
  std::string bytes;
  memcache::ParsedReply parsed;
  bool failed = false;
  int cmd = 0;  // the request's command (r:hit() for mg)
  int64_t elapsed_us = 0;
};

// mcp.funcgen_new(): uservalue 1 is { handles = {pool proxies}, gen = f,
// arg = a }, uservalue 2 the free list of idle slots (an array of rctx).
struct FuncgenUd {
  ProxyWorker* worker = nullptr;
  std::string name;
  bool ready = false;
  int64_t slots = 0;
};
// A slot (mcp.rctx): uservalue 1 is its handler function, uservalue 2 its
// funcgen (a slot in flight keeps its funcgen alive across a reload).
// As in memcached, a slot owns one request object and one response object
// per handle, reused by every request the slot runs: a route must not keep
// them past its request. They are held by registry refs, which __gc drops
// (they reference nothing, so the refs make no cycle).
struct RctxUd {
  ProxyWorker* worker = nullptr;
  std::vector<std::shared_ptr<WorkerPool>> pools;  // by handle - 1
  RequestUd* req = nullptr;
  int req_ref = LUA_NOREF;
  std::vector<std::pair<ResponseUd*, int>> res;  // by handle - 1, made on first use
};
// A pool as a worker VM holds it.
struct PoolProxyUd {
  std::shared_ptr<WorkerPool> pool;
};

struct Run;
// Delivers a finished request's reply bytes to its client (or drops them
// when the client is gone). The bytes are valid only during the call.
using FinishFn = std::function<void(std::string_view)>;

class ProxyWorker {
 public:
  ProxyWorker(ProxyRuntime* rt, int id, net::EventLoop* loop);
  ~ProxyWorker();
  ProxyWorker(const ProxyWorker&) = delete;
  ProxyWorker& operator=(const ProxyWorker&) = delete;

  int id() const { return id_; }
  net::EventLoop* loop() const { return loop_; }

  // Runs the config files and mcp_config_routes for `gen` in this VM; on
  // failure the old hooks stay and *err says why.
  bool Load(const ConfigGeneration& gen, std::string* err);

  // The hook for `cmd` on a listener tagged `tag` ("" untagged), falling
  // back to the untagged hook: a registry ref, or LUA_NOREF.
  int HookFor(const std::string& tag, int cmd) const {
    if (cmd <= 0 || cmd >= kCmdSize) return LUA_NOREF;
    if (!tag.empty()) {
      auto it = hook_index_.find(tag);
      if (it != hook_index_.end() && it->second[static_cast<size_t>(cmd)] != LUA_NOREF) {
        return it->second[static_cast<size_t>(cmd)];
      }
    }
    return untagged_[static_cast<size_t>(cmd)];
  }
  // Starts a hooked request (its bytes are copied into the request object).
  void StartRequest(int hook_ref, const RequestView& req, FinishFn finish);
  // Sends every backend batch of this turn (invariant 2).
  void FlushOut();
  // FlushOut at the end of this loop turn (a zero-delay timer: timers run
  // after the epoll batch), so requests from all the connections served in
  // one turn go to a backend in one write.
  void ScheduleFlush() {
    if (!flush_timer_.armed()) loop_->ArmAfter(&flush_timer_, 0);
  }

  // --- for the mcp functions ---
  void PushPoolProxy(lua_State* L, const std::shared_ptr<const PoolSpec>& spec);
  // rctx:enqueue_and_wait from coroutine L: queues req for its backend in
  // the handle's pool; the caller (Lua) then yields until the reply.
  int Enqueue(lua_State* L, RctxUd* rc, lua_Integer handle, const RequestUd& req);
  // Makes a new slot of the funcgen at `fg_idx` (gen(rctx, arg) gives its
  // handler) and pushes its rctx; raises a Lua error on failure.
  void NewSlot(lua_State* L, int fg_idx);
  // The table mcp.attach writes into during mcp_config_routes (registry ref).
  int pending_hooks_ref() const { return pending_hooks_ref_; }
  void CountFuncgen(const std::string& name, int64_t funcs, int64_t slots);
  std::atomic<uint64_t>& ustat(int idx) { return ustats_[static_cast<size_t>(idx)]; }

  // --- stats (any thread) ---
  int64_t req_active() const { return req_active_.load(std::memory_order_relaxed); }
  uint64_t requests() const { return requests_.load(std::memory_order_relaxed); }
  // `stats proxy` cmd_<name>: requests the proxy routed, by command.
  uint64_t cmd_count(int cmd) const {
    return cmd_counts_[static_cast<size_t>(cmd)].load(std::memory_order_relaxed);
  }
  // `stats proxy` vm_memory_kb (sampled once per output flush) and
  // vm_gc_runs (collection cycles, counted by a finalizer sentinel).
  uint64_t vm_memory_kb() const { return vm_kb_.load(std::memory_order_relaxed); }
  uint64_t vm_gc_runs() const { return gc_runs_.load(std::memory_order_relaxed); }
  int64_t buffer_used() const { return buffer_used_.load(std::memory_order_relaxed); }
  uint64_t ustat_value(int idx) const {
    return ustats_[static_cast<size_t>(idx)].load(std::memory_order_relaxed);
  }
  std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> FuncgenCounts() const;

 private:
  void Resume(Run* run, int nargs);
  void FinishRun(Run* run, std::string_view out);
  void OnOpDone(Run* run, BackendOp* op);
  // A Run (with a reusable coroutine) from the pool; back with ReleaseRun.
  Run* AcquireRun();
  void ReleaseRun(Run* run, bool keep_coroutine);
  // Backend log={...}: the proxyreqs line for this reply, when it qualifies.
  void LogBackendRequest(const Run& run, const BackendOp& op);
  using HookArray = std::array<int, kCmdSize>;
  void ClearHooks();
  static HookArray NoHooks() {
    HookArray a;
    a.fill(LUA_NOREF);
    return a;
  }
  std::shared_ptr<Backend> LocalBackend(const std::shared_ptr<const BackendSpec>& spec);

  ProxyRuntime* const rt_;
  const int id_;
  net::EventLoop* const loop_;
  VmContext vm_ctx_;
  lua_State* L_ = nullptr;
  int pending_hooks_ref_ = LUA_NOREF;  // tag -> { [cmd] = fgen | function }, being filled
  // The attached hooks: registry refs by (tag, cmd).
  HookArray untagged_ = NoHooks();
  std::unordered_map<std::string, HookArray> hook_index_;
  // Runs are pooled with their coroutines: a request allocates neither when
  // the previous one on that coroutine ended normally.
  std::vector<std::shared_ptr<Run>> all_runs_;
  std::vector<Run*> free_runs_;
  Run* current_ = nullptr;  // the run whose coroutine is executing (Resume)
  int64_t active_limit_ = 0;
  bool in_flush_ = false;
  net::Timer flush_timer_{[this] { FlushOut(); }};
  uint64_t sample_seed_ = 0x9E3779B97F4A7C15ULL;  // log rate sampling (xorshift)
  // Backends on this loop, by spec key (reused across reloads).
  std::map<std::string, std::weak_ptr<Backend>> backends_;
  std::vector<std::shared_ptr<Backend>> dirty_;
  std::vector<std::shared_ptr<Backend>> dirty_spare_;  // FlushOut's, kept for its capacity
  std::vector<std::pair<std::shared_ptr<Backend>, OpPtr>> io_batch_;
  std::vector<std::string> ustat_names_;
  std::unique_ptr<std::atomic<uint64_t>[]> ustats_;
  std::atomic<int64_t> req_active_{0};
  std::atomic<uint64_t> requests_{0};
  std::array<std::atomic<uint64_t>, kCmdSize> cmd_counts_{};
  std::atomic<uint64_t> vm_kb_{0};
  std::atomic<uint64_t> gc_runs_{0};
  // A table that is garbage from birth, whose finalizer counts a cycle and
  // makes the next one (none while closing).
  static int GcSentinel(lua_State* L);
  static void NewGcSentinel(lua_State* L);
  bool closing_ = false;
  std::atomic<int64_t> buffer_used_{0};
  // `stats proxyfuncs`: name -> (funcgens, slots).
  mutable Mutex fg_mu_{LockRank::kLeaf};
  std::map<std::string, std::pair<int64_t, int64_t>> fg_counts_ GUARDED_BY(fg_mu_);
};

// One request in flight: its coroutine, its slot and where its reply goes.
// Owned by its worker's pool; alive (and not reused) while an op it waits
// for is outstanding, so a completion may hold a plain pointer to it.
// The run's BackendOp is reused by each request it runs (its strings keep
// their capacity); a backend holds it through an aliasing pointer to the
// Run, so an op outlives neither its Run nor is freed under a backend.
struct Run {
  size_t index = 0;  // in the worker's all_runs_
  int cmd = 0;
  int cfd = 0;
  std::string line;  // the request line, kept only for backend log={...}
  lua_State* co = nullptr;
  int co_ref = LUA_NOREF;
  int slot_ref = LUA_NOREF;  // the rctx userdata, returned to its funcgen at the end
  RctxUd* slot = nullptr;
  bool waiting = false;  // yielded in enqueue_and_wait
  bool op_busy = false;  // `op` is with a backend
  BackendOp op;
  std::pair<ResponseUd*, int> res{nullptr, LUA_NOREF};  // where the reply goes
  FinishFn finish;
};

}  // namespace trove::proxy
