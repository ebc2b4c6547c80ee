// ProxyWorker: one worker thread's part of the proxy: its Lua VM, the hooks
// its current config attached, its backend sockets (when not on the IO
// thread), and the requests it is running as Lua coroutines.
//
// Thread safety: the owner worker thread only, except the counters read by
// `stats` (relaxed atomics).
//
// Invariants:
//  1. Every started request finishes exactly once (Finish called with its
//     reply bytes, or empty for a reply the client must not see), whether
//     its client is still there or not; its slot is freed only when every
//     backend request it made has come back (rctx.h).
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

#include "common/non_copyable.h"
#include "net/event_loop.h"
#include "proxy/backend.h"
#include "proxy/buffer_memory.h"
#include "proxy/internal.h"
#include "proxy/lua_vm.h"
#include "proxy/proxy_types.h"
#include "proxy/rctx.h"
#include "proxy/request.h"

namespace trove::proxy {

class ProxyRuntime;

// A pool as one worker uses it: backends on this worker's loop, or on the
// IO thread's.
struct WorkerPool {
  std::vector<std::shared_ptr<Backend>> backends;
  bool io = false;
  KeySelector selector;  // the PoolSpec's (its ring is shared, read-only)
};

// A client's request as the connection found it (its bytes in the read
// buffer, valid for the StartRequest call).
struct RequestView {
  std::string_view bytes;  // line (with its EOL) and value block
  size_t line_len = 0;     // without EOL
  size_t eol_len = 2;
  ReqInfo info;
  int cfd = 0;
  // The client's verified certificate CN (mtls: listeners), shared by its
  // requests; null without one (rctx:tls_peer_cn()).
  std::shared_ptr<const std::string> peer_cn;
  bool multiget = false;  // one key of a split text multiget: its END is dropped
};

// A pool as a worker VM holds it.
struct PoolProxyUd {
  std::shared_ptr<WorkerPool> pool;
};

// Delivers a finished request's reply bytes to its client (or drops them
// when the client is gone). The bytes are valid only during the call.
using FinishFn = std::function<void(std::string_view)>;

class ProxyWorker : NonCopyable {
 public:
  ProxyWorker(ProxyRuntime* rt, int id, net::EventLoop* loop);
  ~ProxyWorker();

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
  // mcp.buffer_memory_limit, asked at a routed request's line before its
  // value is read: true when memcached would refuse the value (this worker
  // is over its limit) and swallow it unread; the request counts as one,
  // as in memcached. The active request limit is memcached's first check,
  // so a request it will refuse is left to StartRequest.
  bool RefuseValue(int cmd) {
    if (!buffer_mem_.Over()) return false;
    if (active_limit_ > 0 && req_active_.load(std::memory_order_relaxed) >= active_limit_) {
      return false;  // StartRequest's error
    }
    requests_.fetch_add(1, std::memory_order_relaxed);
    if (cmd > 0 && cmd < kCmdSize) {
      cmd_counts_[static_cast<size_t>(cmd)].fetch_add(1, std::memory_order_relaxed);
    }
    return true;
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
  // Makes a new slot of the funcgen at `fg_idx` (gen(rctx, arg) gives its
  // handler) and pushes its rctx; raises a Lua error on failure. Child
  // funcgen handles get their pinned slots here.
  void NewSlot(lua_State* L, int fg_idx);
  // --- for the rctx methods (rctx_lib.cc); L is the slot's coroutine ---
  // Queues request (at req_idx) on handle hi (0-based) of rc.
  void Enqueue(lua_State* L, Rctx* rc, size_t hi, int req_idx);
  // Sets the wait the coroutine is about to yield for (it yields from Lua).
  void PrepareWait(lua_State* L, Rctx* rc, WaitMode mode, int count, size_t handle, int timeout_idx);
  // A slot's userdata is being collected.
  void ForgetSlot(Rctx* rc);
  // A wait's timer fired; a backend op came back (both on this thread).
  void OnTimeout(Rctx* rc);
  void OnOpDone(BackendOp* op);
  // Runs r on Trove's own cache (internal.h) and fills *res; a failed
  // response when this proxy has no cache behind it.
  void RunInternal(const RequestUd& r, ResponseUd* res);
  // The table mcp.attach writes into during mcp_config_routes (registry ref).
  int pending_hooks_ref() const { return pending_hooks_ref_; }
  void CountFuncgen(const std::string& name, int64_t funcs, int64_t slots);
  std::atomic<uint64_t>& ustat(int idx) { return ustats_[static_cast<size_t>(idx)]; }
  // The highest user stat index the current config added (mcp.stat's bound).
  int ustat_max() const { return ustat_names_.empty() ? 0 : static_cast<int>(ustat_names_.size()) - 1; }

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
  int64_t buffer_used() const { return buffer_mem_.used(); }
  // `stats` proxy_conn_errors: requests refused as unparsable or too long.
  uint64_t conn_errors() const { return conn_errors_.load(std::memory_order_relaxed); }
  // REQUIRES: owner thread.
  void CountConnError() { conn_errors_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t ustat_value(int idx) const {
    return ustats_[static_cast<size_t>(idx)].load(std::memory_order_relaxed);
  }
  std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> FuncgenCounts() const;

 private:
  // Runs rc's coroutine from its current stack (nargs values pushed) until
  // it waits for something that has not happened yet, or returns.
  void Drive(Rctx* rc, int nargs);
  // The coroutine returned (st LUA_OK) or failed: top-level slots answer
  // their client, children hand their result to the parent.
  void Finished(Rctx* rc, int st, int nres);
  // Dispatches every queued handle; true when the wait is already met
  // (its results pushed on rc->co, *nargs of them).
  bool RunHandles(Rctx* rc, int* nargs);
  void Dispatch(Rctx* rc, size_t hi);
  // memcached's mcp_process_rctx_wait for handle hi: true (results pushed)
  // when the wait is over.
  bool ProcessWait(Rctx* rc, size_t hi, int* nargs);
  // Ends rc's wait: pushes its result (handle hi's, or the count) on rc->co.
  void EndWait(Rctx* rc, size_t hi, int* nargs);
  // Sets handle hi's result flags from its result (and runs its callback).
  void ProcessReturn(Rctx* rc, size_t hi, const ResponseUd* res);
  // A child's result, handed to its parent from the deferred queue.
  void ChildDone(Rctx* child);
  // One less pending on rc; at 0 a child tells its parent, a top-level
  // slot is released.
  void Dec(Rctx* rc);
  // pending reached 0: reset and back to the funcgen (or tell the parent).
  void Release(Rctx* rc);
  void Reset(Rctx* rc);
  // --- the slot cache (slot_cache.cc) ---
  // memcached's easing: whether a slot that just finished goes back to its
  // funcgen's free list (`nfree` slots there now) or is freed at once.
  bool KeepSlot(FuncgenUd* fg, int64_t nfree);
  // Frees an idle slot and the child slots it pins: their counts drop now
  // and every Lua object they hold becomes garbage in one collection.
  void FreeSlot(Rctx* rc);
  // After a (re)load installed new hooks: funcgens no hook reaches any more
  // are closed (their idle slots freed); the reachable ones are recorded.
  void CloseUnreachable();
  // A closed funcgen whose last slot went: out of funcs_<name> now.
  void RetireIfIdle(FuncgenUd* fg);
  // A funcgen a request is about to take a slot from has none idle.
  static void SlotCacheMiss(FuncgenUd* fg) {
    fg->free_pressure = 0;
    fg->free_waiter_s = 0;
  }
  int live_fgens_ref_ = LUA_NOREF;  // { [funcgen] = true } reached by the hooks
  // The bytes a top-level route's result gives its client.
  std::string_view Output(Rctx* rc, int idx);
  // Backend log={...}: the proxyreqs line for this reply, when it qualifies.
  void LogBackendRequest(const BackendOp& op, const RequestUd& rq, const ResponseUd& res,
                         uint8_t flags, int cfd);
  int TopCfd(const Rctx* rc) const;
  struct Deferred {
    Rctx* rc;
    int kind;  // 0: resume with 0 (wait_cond(0)); 1: child finished
  };
  std::vector<Deferred> deferred_;
  std::vector<Deferred> deferred_spare_;
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
  int64_t active_limit_ = 0;
  bool in_flush_ = false;
  net::Timer flush_timer_{[this] { FlushOut(); }};
  uint64_t sample_seed_ = 0x9E3779B97F4A7C15ULL;  // log rate sampling (xorshift)
  std::string scratch_;  // request bytes for a backend, when edited
  std::unique_ptr<InternalCache> internal_;  // mcp.internal and internal handles; null without a server
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
  BufferMemory buffer_mem_;  // mcp.buffer_memory_limit (buffer_memory.h)
  std::atomic<uint64_t> conn_errors_{0};
  // `stats proxyfuncs`: name -> (funcgens, slots).
  mutable Mutex fg_mu_{LockRank::kLeaf};
  std::map<std::string, std::pair<int64_t, int64_t>> fg_counts_ GUARDED_BY(fg_mu_);
};

}  // namespace trove::proxy
