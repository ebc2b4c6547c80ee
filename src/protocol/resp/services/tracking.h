// Tracking: the server side of client-side caching (CLIENT TRACKING): which
// clients hold which keys, the BCAST prefixes, and the fan-out of
// invalidation messages to the tracking clients' workers. Any worker, and the
// KeyEvents reporter thread (expired and evicted keys).
//
// Keys are tracked by name, without their database, as Redis does: a write
// to `k` in any database invalidates `k` for every client that read it in
// any database (a spurious message at worst, never a missed one).
//
// How a key is invalidated:
//  1. A read-only command of a client in default mode remembers its keys
//     (Remember) after it has run.
//  2. Whatever changes a key calls Invalidate with the key names and the id
//     of the client that changed them (0: the memcached port, expiry,
//     eviction). The entry is taken out of the table under its shard lock,
//     so each remembered read produces at most one message.
//  3. The messages go to the tracking clients' own workers (DeliverFn), one
//     task per worker and call; the owner session applies its mode (NOLOOP,
//     a default-mode key reaching a client now in BCAST) and its redirect.
//  4. A key the engine evicts while a RESP command runs on this thread (an
//     EvictionCapture is open) is invalidated by that command's session
//     (InvalidateEvicted), its own message written in place, before its
//     reply, as Redis (which evicts before running the command) does; other
//     expired and evicted keys come through the KeyEvents reporter thread.
//
// Thread safety: all methods are thread-safe. Every mutex here is a leaf,
// never held while posting to a worker: callers may hold nothing either
// (Invalidate posts; REQUIRES: no engine stripe held on this thread, since a
// full inbox makes the poster wait for a worker that may want that stripe).
// An EvictionCapture is the exception: it belongs to the thread that opened
// it, and only that thread's engine calls reach it.
//
// Invariants:
//  1. total_keys() is the number of keys in the table and total_items() the
//     number of (key, client) pairs; an entry with no clients is erased.
//  2. A prefix is in prefixes_ iff at least one BCAST client registered it.
//  3. After EnforceLimit or SetMaxKeys returns, total_keys() <= max_keys()
//     (keys over the limit are invalidated, as Redis's table eviction does);
//     sessions call EnforceLimit after each command outside EXEC.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/mutex.h"
#include "common/non_copyable.h"
#include "common/thread_annotations.h"
#include "net/worker_group.h"
#include "protocol/resp/core/conn_state.h"

namespace trove::resp {

// One invalidation as its receivers see it (shared, never copied per client).
struct TrackingMessage {
  std::vector<std::string> keys;  // key names (no database)
  bool flush = false;             // FLUSHALL / FLUSHDB / flush_all: a null key list
  bool bcast = false;             // from a BCAST prefix (else a remembered read)
  uint64_t modifier = 0;          // the client that made the change (NOLOOP); 0 = none
};

// The ids of the open RESP connections, for CLIENT TRACKING ... REDIRECT:
// the target must exist when tracking is turned on, and is looked up again
// for every message. Thread-safe (striped leaf locks: an open or a close
// takes one stripe).
class LiveClients {
 public:
  void Add(uint64_t id);
  void Remove(uint64_t id);
  bool Contains(uint64_t id) const;

 private:
  static constexpr size_t kStripes = 16;
  struct Stripe {
    mutable Mutex mu{LockRank::kLeaf};
    std::unordered_set<uint64_t> ids GUARDED_BY(mu);
  };
  Stripe stripes_[kStripes];
};

class Tracking : NonCopyable {
 public:
  // Runs on the tracking client's worker (or in place without workers).
  using DeliverFn = void (*)(uint64_t conn_id, const std::shared_ptr<const TrackingMessage>& m);
  // Called after the first client turns tracking on and after the last
  // turns it off (KeyEvents reads active() again and sets its tracking bit).
  using ActiveFn = std::function<void()>;

  static constexpr size_t kDefaultMaxKeys = 1000000;  // tracking-table-max-keys

  explicit Tracking(DeliverFn deliver) : deliver_(deliver) {}

  void set_group(net::WorkerGroup* g) { group_ = g; }
  void set_active_fn(ActiveFn f) { active_fn_ = std::move(f); }

  // A client turned tracking on / off (its BCAST prefixes are removed by
  // RemovePrefix before ClientOff).
  void ClientOn(uint64_t id) EXCLUDES(clients_mu_);
  void ClientOff(uint64_t id) EXCLUDES(clients_mu_);
  // The connection's side, on its worker: CLIENT TRACKING OFF, RESET and
  // close. Leaves the table (prefixes first, then ClientOff) and clears the
  // connection's TrackingState t; nothing when tracking is off.
  void Disable(TrackingState& t, uint64_t id);
  // Invalidates the engine keys (database prefix included) that a command
  // by client `modifier` changed (NOLOOP compares it), and empties ekeys.
  void InvalidateEngineKeys(std::vector<std::string>* ekeys, uint64_t modifier);
  size_t clients() const EXCLUDES(clients_mu_);
  // True while any client tracks (one relaxed load).
  bool active() const { return active_.load(std::memory_order_relaxed); }

  // Default mode: client `id` read `key`. Never sends anything, so it may
  // run with key stripes held (inside EXEC); call EnforceLimit afterwards.
  void Remember(std::string_view key, uint64_t id);
  // Evicts (and invalidates) keys while the table is over max_keys().
  // REQUIRES: no engine stripe held (it posts). Inline check first.
  void EnforceLimit() {
    const size_t max = max_keys();
    if (max != 0 && total_keys() > max) EnforceLimitSlow();
  }

  // BCAST: client `id` wants every change of a key starting with `prefix`.
  void AddPrefix(std::string_view prefix, uint64_t id) EXCLUDES(prefix_mu_);
  void RemovePrefix(std::string_view prefix, uint64_t id) EXCLUDES(prefix_mu_);

  // `keys` (names) were changed by client `modifier` (0: not a RESP client).
  void Invalidate(std::span<const std::string_view> keys, uint64_t modifier);
  void Invalidate(std::string_view key, uint64_t modifier) {
    Invalidate(std::span<const std::string_view>(&key, 1), modifier);
  }

  // Collects the keys the engine evicts on this thread while it is open, in
  // place of the KeyEvents reporter (which would invalidate them after the
  // reply of the command that evicted them). Session::Run opens one around
  // a command while anyone tracks. One per thread at a time: a nested one
  // hides the outer one until it closes.
  class EvictionCapture : NonCopyable {
   public:
    EvictionCapture();
    ~EvictionCapture();
    // Closes the capture and returns the names (no database) it collected.
    std::vector<std::string> Take();

   private:
    friend class Tracking;
    std::vector<std::string> keys_;
    EvictionCapture* outer_;
    bool open_ = true;
  };
  // The engine evicted `key` (a name, no database) on this thread; called
  // from its removal report, stripe and LRU locks maybe held, so it only
  // appends. True if a capture is open here and now holds the key: its
  // session invalidates it, the caller must not.
  static bool CaptureEvicted(std::string_view key);
  // `keys` were evicted while client `self` ran a command on this thread:
  // every client that read one is told (NOLOOP counts the eviction as
  // self's change, as Redis's current client), and self's own message is
  // delivered at once, in place, so that it precedes the reply the session
  // writes next. BCAST messages are posted as usual (Redis broadcasts them
  // after the reply). REQUIRES: on self's worker; no engine stripe held.
  void InvalidateEvicted(std::span<const std::string> keys, uint64_t self);

  // Every key went away (FLUSHALL, FLUSHDB, memcached flush_all): every
  // tracking client, BCAST or not, gets one null message; the table empties.
  void InvalidateAll() EXCLUDES(clients_mu_);

  // tracking-table-max-keys (0: no limit); lowering it evicts at once.
  void SetMaxKeys(size_t n);
  size_t max_keys() const { return max_keys_.load(std::memory_order_relaxed); }

  size_t total_keys() const { return total_keys_.load(std::memory_order_relaxed); }
  size_t total_items() const { return total_items_.load(std::memory_order_relaxed); }
  size_t total_prefixes() const EXCLUDES(prefix_mu_);
  // An estimate of the table's bytes (INFO memory mem_tracking_table).
  size_t memory_bytes() const;

 private:
  static constexpr size_t kShards = 32;
  struct Shard {
    mutable Mutex mu{LockRank::kLeaf};
    // key -> the clients that read it (a handful: a vector, searched).
    std::unordered_map<std::string, std::vector<uint64_t>> keys GUARDED_BY(mu);
    size_t key_bytes GUARDED_BY(mu) = 0;
  };
  using Batch = std::vector<std::pair<uint64_t, std::shared_ptr<const TrackingMessage>>>;

  Shard& ShardOf(std::string_view key);
  // Takes `key` out of its shard; appends one message to `out` per client.
  void TakeKey(std::string_view key, uint64_t modifier, Batch* out);
  void EnforceLimitSlow();
  // The messages for `keys`: the readers' (modifier `modifier`) and the
  // BCAST prefixes' (modifier `bcast_modifier`).
  void Collect(std::span<const std::string_view> keys, uint64_t modifier, uint64_t bcast_modifier,
               Batch* out) EXCLUDES(prefix_mu_);
  // Posts each (client, message) to the client's worker; a default-mode
  // message for client `in_place` (0: none) is delivered here instead.
  void Send(Batch& batch, uint64_t in_place = 0);

  const DeliverFn deliver_;
  net::WorkerGroup* group_ = nullptr;
  ActiveFn active_fn_;
  std::atomic<bool> active_{false};
  std::atomic<size_t> max_keys_{kDefaultMaxKeys};
  std::atomic<size_t> total_keys_{0};
  std::atomic<size_t> total_items_{0};
  std::atomic<size_t> evict_cursor_{0};  // the shard the next eviction starts at
  Shard shards_[kShards];

  mutable Mutex clients_mu_{LockRank::kLeaf};
  std::set<uint64_t> clients_ GUARDED_BY(clients_mu_);

  mutable Mutex prefix_mu_{LockRank::kLeaf};
  std::atomic<size_t> num_prefixes_{0};  // prefixes_.size(), read without the lock
  std::map<std::string, std::set<uint64_t>, std::less<>> prefixes_ GUARDED_BY(prefix_mu_);
};

}  // namespace trove::resp
