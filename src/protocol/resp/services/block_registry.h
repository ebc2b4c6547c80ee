// BlockRegistry: the clients blocked in BLPOP, BLMOVE, BZPOPMIN ... and the
// keys they wait on, shared by every worker (a blocked client and the writer
// that serves it may be on different workers).
//
// How a blocked client is served (Redis 7.2's model: the blocked command is
// run again when a key it waits on may have data):
//  1. The blocking command finds no data, still holding its keys' stripes,
//     and registers a Waiter (Add). Registering under the stripes means a
//     push on another worker, which needs the same stripes, comes after it
//     and sees the waiter: no wake-up is lost.
//  2. A write that leaves a list or zset non-empty adds the key to its
//     command's effects (Effects::AddReadyKey, core/effects.h). After that
//     command (or the whole EXEC) the writer's session, holding no stripe,
//     first waits for an input fence when there are several workers
//     (net::WorkerGroup::Fence; the writer's connection is suspended
//     meanwhile): every worker has then read what reached it before the
//     write, so a blocking command sent before the write has blocked (or
//     found the data) by then, as in Redis, which reads in arrival order.
//     Then it takes the first waiter of the key (ClaimHead; a key's waiters
//     are queued by arrival_ns, the kernel's receive time of their command,
//     not by when their worker got to them), runs the waiter's command
//     again through the command seam under the waiter's stripes, and
//     reports the outcome (FinishServe). Two workers may serve one key at
//     once (two pushes, or a push and a client that queued behind the
//     waiters): only the first client of a key's queue is ever claimed, so
//     nobody takes data before the clients ahead of it; a serve that finds
//     the first one claimed hands the key to that claim's server. A served
//     waiter's reply is posted to its own worker; a BLMOVE's push queues its
//     destination, so chained waiters are served in the same pass.
//  3. Time-out (the waiter's worker), CLIENT UNBLOCK (any worker) and close
//     race with a serve only through the state below, under mu_: each waiter
//     ends exactly once.
//
// Lock order: a key stripe (engine) may be held when mu_ is taken (Add);
// nothing is taken while mu_ is held. mu_ is a leaf.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"

namespace trove::resp {

struct CommandSpec;

struct Waiter {
  enum class State : uint8_t { kWaiting, kServing, kDone };
  // Why a waiter was asked to end while a serve was running.
  enum class Cancel : uint8_t { kNone, kTimeout, kError, kGone };

  // --- fixed at Add ---
  uint64_t conn_id = 0;
  uint64_t token = 0;  // tells this block from a later one of the same client
  int proto = 2;
  int db = 0;
  const CommandSpec* spec = nullptr;
  std::vector<std::string> argv;       // the command as sent
  std::vector<std::string> lock_keys;  // engine keys of every key it names (its stripes)
  std::vector<std::string> wait_keys;  // engine keys it waits on, in argument order
  bool timed = false;                  // has a time-out (INFO clients_in_timeout_table)
  // When its command reached the server (the kernel's receive time,
  // CLOCK_REALTIME ns): a key's waiters are queued in this order.
  int64_t arrival_ns = 0;

  // --- under BlockRegistry::mu_ ---
  State state = State::kWaiting;
  Cancel cancel = Cancel::kNone;
  // Keys another worker found this waiter at the head of while it was being
  // served (ClaimHead): its server serves them after it (FinishServe).
  std::vector<std::string> recheck;
};

class BlockRegistry {
 public:
  enum class CancelResult : uint8_t { kEnded, kDeferred, kNotBlocked };

  // Registers w (its keys' stripes held by the caller).
  void Add(std::shared_ptr<Waiter> w) EXCLUDES(mu_);
  // The client queued first on `ekey`, now kServing; null if the queue is
  // empty, or if its first client is being served already (by another
  // worker, for this key or another it waits on): nobody behind it may take
  // the data before it has had its turn, so the key is left to that serve
  // (Waiter::recheck) and this caller stops serving it.
  std::shared_ptr<Waiter> ClaimHead(std::string_view ekey) EXCLUDES(mu_);
  // After a serve attempt. served: the waiter is done (returns kNone, or kGone
  // if its client left meanwhile). Not served: it waits again, unless a
  // time-out or CLIENT UNBLOCK came meanwhile: then it is done and that reason
  // is returned for the caller to answer. Either way the keys other workers
  // left to this serve are appended to *recheck, for the caller to serve.
  Waiter::Cancel FinishServe(const std::shared_ptr<Waiter>& w, bool served,
                             std::vector<std::string>* recheck) EXCLUDES(mu_);
  // Ends a block for `why` (time-out on the owner, close, CLIENT UNBLOCK):
  // kEnded if it was waiting (the caller answers), kDeferred if a serve is
  // running (FinishServe answers), kNotBlocked if it had already ended.
  CancelResult CancelWaiter(const std::shared_ptr<Waiter>& w, Waiter::Cancel why) EXCLUDES(mu_);
  // Any client still queued on `ekey` (waiting, or being served)?
  bool HasWaiters(std::string_view ekey) const EXCLUDES(mu_);
  // The block of client `conn_id`, if it is blocked.
  std::shared_ptr<Waiter> Find(uint64_t conn_id) const EXCLUDES(mu_);

  // Set by the first Add and never cleared: from then on RESP connections
  // read with arrival stamps (net::ProtocolFactory::ArrivalStampsFlag), which
  // order waiters (Waiter::arrival_ns) and a worker's parsing; a server that
  // never blocks a client never pays for them.
  std::atomic<bool> ordered_by_arrival{false};

  // Cheap test for the write path: anyone blocked at all?
  bool any() const { return blocked_.load(std::memory_order_relaxed) > 0; }
  // INFO: blocked_clients, total_blocking_keys.
  int64_t blocked_clients() const { return blocked_.load(std::memory_order_relaxed); }
  int64_t blocking_keys() const EXCLUDES(mu_);
  int64_t timed_clients() const { return timed_.load(std::memory_order_relaxed); }

 private:
  void RemoveLocked(const std::shared_ptr<Waiter>& w) REQUIRES(mu_);

  mutable Mutex mu_{LockRank::kLeaf};
  std::unordered_map<std::string, std::deque<std::shared_ptr<Waiter>>> by_key_ GUARDED_BY(mu_);
  std::unordered_map<uint64_t, std::shared_ptr<Waiter>> by_conn_ GUARDED_BY(mu_);
  std::atomic<int64_t> blocked_{0};
  std::atomic<int64_t> timed_{0};
};

}  // namespace trove::resp
