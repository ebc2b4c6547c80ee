// ScriptCache: the bodies of the server-side scripts (EVAL, SCRIPT LOAD) by
// their SHA-1, shared by every worker of a RESP port. Each worker compiles
// the bodies into its own Lua VM (commands/scripting_lua.cc); the epoch
// tells a VM that SCRIPT FLUSH (or an eviction) dropped what it compiled.
//
// Bounded as Redis 7.4 bounds it: bodies that came from EVAL are kept for
// the kMaxEvalScripts most recently added, the oldest evicted past that
// (INFO stats evicted_scripts); bodies from SCRIPT LOAD stay until SCRIPT
// FLUSH. An eviction raises the epoch, so every VM drops its compiled
// scripts and compiles again from the bodies still cached (EVALSHA of an
// evicted script answers NOSCRIPT everywhere); applications with a fixed
// set of scripts never evict.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <list>
#include <unordered_map>

#include "common/mutex.h"
#include "common/thread_annotations.h"

namespace trove::resp {

// Thread safety: every method may be called from any worker; the map is
// guarded by mu_ (a leaf: nothing is locked under it), the epoch is atomic.
// Invariants:
//  1. bytes_ is the sum of the sizes of the bodies in scripts_.
//  2. epoch_ only rises; it rises on every Flush and every eviction.
//  3. eval_lru_ lists exactly the scripts_ entries that came from EVAL and
//     were never SCRIPT LOADed, most recently added first; it holds at most
//     kMaxEvalScripts.
class ScriptCache {
 public:
  static constexpr size_t kMaxEvalScripts = 500;  // Redis 7.4's bound
  enum class Origin { kEval, kLoad };

  // Stores body under sha (40 lower-case hex digits); a body already there
  // stays (SCRIPT LOAD makes an EVAL body permanent; EVAL refreshes its
  // place among the evictable ones).
  void Add(const std::string& sha, std::string_view body, Origin origin = Origin::kLoad)
      EXCLUDES(mu_);
  // The body stored under sha (any case); false if none.
  bool Get(std::string_view sha, std::string* body) const EXCLUDES(mu_);
  bool Exists(std::string_view sha) const EXCLUDES(mu_);
  // Drops every body and raises the epoch.
  void Flush() EXCLUDES(mu_);

  // Relaxed: a VM that sees the new epoch a little late compiles from a
  // body it already had, which SCRIPT FLUSH allows (Redis flushes the VM
  // of the one thread it has; a script already loaded keeps running).
  uint64_t epoch() const { return epoch_.load(std::memory_order_relaxed); }
  size_t count() const EXCLUDES(mu_);
  size_t bytes() const EXCLUDES(mu_);
  uint64_t evicted() const { return evicted_.load(std::memory_order_relaxed); }

 private:
  struct Entry {
    std::string body;
    bool evictable = false;               // from EVAL, never SCRIPT LOADed
    std::list<std::string>::iterator lru;  // valid while evictable
  };
  mutable Mutex mu_{LockRank::kLeaf};
  std::unordered_map<std::string, Entry> scripts_ GUARDED_BY(mu_);
  std::list<std::string> eval_lru_ GUARDED_BY(mu_);
  std::atomic<uint64_t> evicted_{0};
  size_t bytes_ GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> epoch_{0};
};

}  // namespace trove::resp
