// Hash-field expiry (Redis 7.4's HEXPIRE family), the server-wide half: the
// registry of the keys whose hashes have field TTLs, each with (at most) its
// earliest field expiry; the reaper thread that expires those fields with
// nobody reading them (Redis's active expire cycle); and the one routine that
// deletes passed fields with their effects, shared by the reaper and the hash
// commands' lazy expiry. The per-hash data is types/hash_field_ttl.h; the
// commands are commands/hash_field_expiry.cc.
//
// Lock order: a key's item stripe, then this registry's leaf mutex. Commands
// (and the stores in collection_access.cc) call Note with the key's stripe
// held; the reaper takes keys out of the registry with no stripe held, then
// takes each key's stripe like any command (an engine::KeyLockSet), and may
// Note again under it. The registry mutex is never held while a stripe is
// taken, a key event is published or a worker is posted to.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/non_copyable.h"
#include "common/thread_annotations.h"
#include "engine/engine.h"

namespace trove::resp {

class RespServer;
class HashValue;
struct CommandContext;

// Owned by RespServer (one per RESP front); thread-safe.
//
// Thread safety: the registry (by_key_, by_time_, sweep_from_) and the thread
// handle are guarded by mu_, a leaf lock. The counters are relaxed atomics
// (statistics). The reaper thread runs RunCycle every kCycleMs from the first
// Note until Stop.
//
// Invariants:
//  1. by_time_ holds one (time, key) pair per by_key_ entry, its view
//     pointing at that entry's key.
//  2. A key whose hash has a field TTL is registered with a time no later
//     than its earliest field expiry (Note keeps the earlier of two times),
//     except while the reaper handles that key (it took it out and registers
//     it again under the key's stripe). An entry may be stale -- the key
//     deleted, renamed, its TTL fields gone -- and is then dropped when its
//     time comes or the sweep reaches it.
class HashFieldExpiry : private NonCopyable {
 public:
  // Redis's activeExpireCycle runs at hz 10.
  static constexpr int64_t kCycleMs = 100;
  // Fields one visit deletes from one hash; the rest wait for the next cycle
  // (the key stays due), so a hash of a million passed fields cannot hold
  // its stripe for long.
  static constexpr size_t kFieldsPerVisit = 1000;
  // A cycle stops taking keys after this long; the rest stay due.
  static constexpr int64_t kCycleBudgetUs = 25000;
  // Entries that are not due, checked per cycle for staleness (a hash
  // deleted with a far TTL must not stay registered for years).
  static constexpr size_t kSweepPerCycle = 16;

  explicit HashFieldExpiry(RespServer* server) : server_(server) {}
  ~HashFieldExpiry();

  // The hash at ekey has a field expiring at at_ms (> 0; its earliest, or
  // any time before it). Starts the reaper on first use.
  // REQUIRES: the stripe of ekey held (so no reaper visit of it races).
  void Note(std::string_view ekey, int64_t at_ms) EXCLUDES(mu_);
  // Stops the reaper for good (server shutdown; the destructor too).
  // REQUIRES: no stripe held.
  void Stop() EXCLUDES(mu_);

  // One active expiry cycle at the server's clock: the due keys, then the
  // sweep. Returns the fields deleted. The reaper's step; tests call it.
  // REQUIRES: no stripe held; ts is the calling thread's engine stats.
  size_t RunCycle(engine::ThreadStats* ts) EXCLUDES(mu_);

  // Registered keys and the time of ekey (0 when not registered), for tests
  // and INFO.
  size_t registered() const EXCLUDES(mu_);
  int64_t RegisteredAt(std::string_view ekey) const EXCLUDES(mu_);

  // INFO expired_subkeys: fields deleted by expiry (lazy, active, or HEXPIRE
  // with a time in the past), since start or CONFIG RESETSTAT.
  void CountExpired(uint64_t n) { expired_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t expired_fields() const {
    return expired_.load(std::memory_order_relaxed) - expired_base_.load(std::memory_order_relaxed);
  }
  void ResetStats() {
    expired_base_.store(expired_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  }

 private:
  // Takes out up to max keys due at now_ms, earliest first.
  void TakeDue(int64_t now_ms, size_t max, std::vector<std::string>* out) EXCLUDES(mu_);
  // Up to max registered keys from the sweep's cursor on (left registered).
  void SweepSample(size_t max, std::vector<std::string>* out) EXCLUDES(mu_);
  // REQUIRES: ekey's stripe held.
  void Forget(std::string_view ekey) EXCLUDES(mu_);
  // Visits one key: deletes its passed fields (sweep: only checks it is
  // still a hash with field TTLs). Returns the fields deleted.
  size_t Visit(const std::string& ekey, int64_t now_ms, bool sweep, engine::ThreadStats* ts);
  void StartThreadLocked() REQUIRES(mu_);
  void Loop();

  RespServer* const server_;
  std::atomic<uint64_t> expired_{0};
  std::atomic<uint64_t> expired_base_{0};

  mutable Mutex mu_{LockRank::kLeaf};
  CondVar cv_{&mu_};
  std::map<std::string, int64_t, std::less<>> by_key_ GUARDED_BY(mu_);
  std::set<std::pair<int64_t, std::string_view>> by_time_ GUARDED_BY(mu_);
  std::string sweep_from_ GUARDED_BY(mu_);  // the sweep resumes after this key
  // Not a common::BackgroundThread: that one starts and stops from one
  // control thread and may start again, while this thread starts on the
  // first Note from any worker (under mu_) and never after Stop.
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_ GUARDED_BY(mu_);
};

// The deletion of passed fields, for the hash commands' lazy expiry and for
// the reaper. Run on the command's (or the reaper's) thread with the key's
// stripe held (ctx.locked).

// Deletes field f of v when its TTL has passed at now_ms; true if it did.
// Only the hash changes: the caller then calls FinishFieldExpiry.
bool ErasePassedField(HashValue* v, std::string_view f, int64_t now_ms);
// Deletes up to max fields of v whose TTL has passed, earliest first;
// returns how many. The caller then calls FinishFieldExpiry.
size_t ErasePassedFields(HashValue* v, int64_t now_ms, size_t max);
// After n > 0 fields of v (at ekey, MemoryUsage() bytes_before before the
// first was deleted) were deleted for expiry: stores the hash back, or
// deletes the key when it is empty (FinishUpdate, which also registers the
// remaining TTLs), counts expired_subkeys, and appends to ctx.fx the
// `hexpired` event, `del` when the key went, and the key's invalidation (the
// key changed, as Redis's signalModifiedKey: WATCH sees it too). True when
// the key was deleted: v must not be used after that.
bool FinishFieldExpiry(CommandContext& ctx, std::string_view ekey, HashValue* v,
                       size_t bytes_before, size_t n);

}  // namespace trove::resp
