// WatchRegistry: which keys the server's clients WATCH (INFO clients
// watching_clients / total_watched_keys). Any worker thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/mutex.h"
#include "common/thread_annotations.h"

namespace trove::resp {

// Counts, over every connection of the server, the distinct watched keys (a
// key is an engine key, so the database is part of it, as Redis counts per
// database) and the clients that watch at least one. Only WATCH, UNWATCH,
// EXEC/DISCARD and RESET of a client that has watches, and the close of such
// a client, come here: a connection that watches nothing never takes the lock.
//
// Why a shared table and not per-worker counters: two clients on different
// workers may watch the same key, which Redis counts once.
//
// Thread safety: all methods are thread-safe. mu_ is a leaf (kLeaf): it may be
// taken with key stripes held (WATCH runs under its KeyLockSet) and never
// takes another lock.
// Invariants:
//  1. keys_[k] is the number of connections whose TransactionState holds k
//     (never 0: such entries are erased).
//  2. clients_ is the number of connections with a non-empty watch list.
class WatchRegistry {
 public:
  // A connection starts watching `key` (first_of_client: its first key).
  void Add(std::string_view key, bool first_of_client) EXCLUDES(mu_);
  // A connection drops all its watches: keys[0..n).
  template <typename It>
  void RemoveClient(It begin, It end) EXCLUDES(mu_) {
    MutexLock l(&mu_);
    for (It it = begin; it != end; ++it) RemoveLocked(it->key);
    --clients_;
  }

  size_t watching_clients() const EXCLUDES(mu_);
  size_t total_watched_keys() const EXCLUDES(mu_);

 private:
  void RemoveLocked(const std::string& key) REQUIRES(mu_);

  mutable Mutex mu_{LockRank::kLeaf};
  std::unordered_map<std::string, uint32_t> keys_ GUARDED_BY(mu_);
  size_t clients_ GUARDED_BY(mu_) = 0;
};

}  // namespace trove::resp
