// HashFieldExpiry: the registry of hashes with field TTLs, the reaper thread's
// active expiry cycle, and the deletion of passed fields with their effects
// (shared with the hash commands' lazy expiry). The registry runs on any
// thread; a cycle runs on the reaper thread, or on a test's.
#include "protocol/resp/services/hash_field_expiry.h"

#include <vector>

#include "common/check.h"
#include "protocol/client_pause.h"
#include "protocol/key_events.h"
#include "protocol/resp/core/effects.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/services/blocked_serve.h"
#include "protocol/resp/types/collections.h"

namespace trove::resp {

HashFieldExpiry::~HashFieldExpiry() { Stop(); }

void HashFieldExpiry::Note(std::string_view ekey, int64_t at_ms) {
  DCHECK(at_ms > 0);
  MutexLock l(&mu_);
  auto it = by_key_.find(ekey);
  if (it == by_key_.end()) {
    it = by_key_.emplace(std::string(ekey), at_ms).first;
  } else {
    if (it->second <= at_ms) return;  // invariant 2: the earlier time stays
    by_time_.erase({it->second, it->first});
    it->second = at_ms;
  }
  by_time_.emplace(at_ms, it->first);
  StartThreadLocked();
}

void HashFieldExpiry::Forget(std::string_view ekey) {
  MutexLock l(&mu_);
  auto it = by_key_.find(ekey);
  if (it == by_key_.end()) return;
  by_time_.erase({it->second, it->first});
  by_key_.erase(it);
}

void HashFieldExpiry::TakeDue(int64_t now_ms, size_t max, std::vector<std::string>* out) {
  MutexLock l(&mu_);
  while (max-- > 0 && !by_time_.empty() && by_time_.begin()->first <= now_ms) {
    auto key = by_key_.find(by_time_.begin()->second);
    out->push_back(key->first);
    by_time_.erase(by_time_.begin());
    by_key_.erase(key);
  }
}

void HashFieldExpiry::SweepSample(size_t max, std::vector<std::string>* out) {
  MutexLock l(&mu_);
  auto it = by_key_.upper_bound(sweep_from_);
  for (; max > 0 && it != by_key_.end(); ++it, --max) out->push_back(it->first);
  // Past the last key the next sweep starts over.
  sweep_from_ = it == by_key_.end() ? std::string() : out->back();
}

size_t HashFieldExpiry::registered() const {
  MutexLock l(&mu_);
  return by_key_.size();
}

int64_t HashFieldExpiry::RegisteredAt(std::string_view ekey) const {
  MutexLock l(&mu_);
  auto it = by_key_.find(ekey);
  return it == by_key_.end() ? 0 : it->second;
}

size_t HashFieldExpiry::Visit(const std::string& ekey, int64_t now_ms, bool sweep,
                              engine::ThreadStats* ts) {
  // A command's context without a connection: the seam's rules (stripe
  // held, effects appended, drained with no stripe) apply as to any command.
  Effects fx;
  std::vector<ScratchEntry> scratch;
  CommandContext ctx;
  ctx.server = server_;
  ctx.engine = server_->engine();
  ctx.ts = ts;
  ctx.fx = &fx;
  ctx.scratch = &scratch;
  ctx.locked = true;
  ctx.no_touch = true;  // expiry is no access: the LRU is left alone
  ctx.notify = server_->key_events().enabled();
  size_t n = 0;
  {
    engine::KeyLockSet lock(ctx.engine, ekey);
    HashValue* v = nullptr;
    const bool has_ttls = LoadCollection<HashValue>(ctx, ekey, &v) == LoadStatus::kOk &&
                          v->next_field_expiry() != 0;
    if (!has_ttls) {
      if (sweep) Forget(ekey);  // stale: deleted, replaced, or its TTLs gone
    } else if (!sweep) {
      const size_t before = v->MemoryUsage();
      n = ErasePassedFields(v, now_ms, kFieldsPerVisit);
      if (n > 0)
        FinishFieldExpiry(ctx, ekey, v, before, n);  // registers what is left
      else
        Note(ekey, v->next_field_expiry());  // registered early (an HPERSIST, an HDEL)
    }
  }
  scratch.clear();
  // No stripe held now: publishing posts to the subscribers' workers.
  if (!fx.key_events.empty()) PublishKeyEvents(server_, &fx);
  if (!fx.invalidations.empty()) server_->tracking().InvalidateEngineKeys(&fx.invalidations, 0);
  return n;
}

size_t HashFieldExpiry::RunCycle(engine::ThreadStats* ts) {
  // DEBUG SET-ACTIVE-EXPIRE 0 stops it, as it stops Redis's whole cycle; so
  // does a CLIENT PAUSE (Redis expires nothing while writes are paused).
  if (!server_->active_expire.load(std::memory_order_relaxed)) return 0;
  const Clock* clock = server_->engine()->clock();
  if (server_->pause().ModeAt(clock->MonoNanos()) != protocol::ClientPause::kNone) return 0;
  const int64_t start_ns = clock->MonoNanos();
  const int64_t now_ms = server_->NowMs();
  size_t deleted = 0;
  std::vector<std::string> keys;
  for (;;) {
    keys.clear();
    TakeDue(now_ms, 64, &keys);
    if (keys.empty()) break;
    for (const std::string& k : keys) deleted += Visit(k, now_ms, false, ts);
    if (clock->MonoNanos() - start_ns > kCycleBudgetUs * 1000) break;  // the rest stay due
  }
  keys.clear();
  SweepSample(kSweepPerCycle, &keys);
  for (const std::string& k : keys) Visit(k, now_ms, true, ts);
  return deleted;
}

void HashFieldExpiry::Stop() {
  std::thread t;
  {
    MutexLock l(&mu_);
    stop_ = true;
    t = std::move(thread_);
  }
  cv_.SignalAll();
  if (t.joinable()) t.join();
}

void HashFieldExpiry::StartThreadLocked() {
  if (thread_.joinable() || stop_) return;
  thread_ = std::thread([this] { Loop(); });
}

void HashFieldExpiry::Loop() {
  engine::ThreadStats* ts = server_->engine()->NewThreadStats();
  for (;;) {
    {
      MutexLock l(&mu_);
      if (!stop_) cv_.WaitFor(kCycleMs);
      if (stop_) return;
    }
    RunCycle(ts);
  }
}

bool ErasePassedField(HashValue* v, std::string_view f, int64_t now_ms) {
  if (!v->FieldPassed(f, now_ms)) return false;
  v->Erase(f);
  return true;
}

size_t ErasePassedFields(HashValue* v, int64_t now_ms, size_t max) {
  const FieldTtls* t = v->field_ttls();
  if (t == nullptr || !FieldTtlPassed(t->earliest(), now_ms)) return 0;
  std::vector<std::string> fields;
  t->CollectPassed(now_ms, max, &fields);
  for (const std::string& f : fields) v->Erase(f);
  return fields.size();
}

bool FinishFieldExpiry(CommandContext& ctx, std::string_view ekey, HashValue* v,
                       size_t bytes_before, size_t n) {
  const bool key_gone = v->size() == 0;
  FinishUpdate(ctx, ekey, v, bytes_before);
  if (ctx.server != nullptr) ctx.server->hash_field_expiry().CountExpired(n);
  // Redis raises one hexpired per hash and call, however many fields went.
  if ((ctx.notify & protocol::kKeClassHash) != 0)
    ctx.fx->AddKeyEvent(protocol::kKeClassHash, "hexpired", ekey);
  if (key_gone && (ctx.notify & protocol::kKeClassGeneric) != 0)
    ctx.fx->AddKeyEvent(protocol::kKeClassGeneric, "del", ekey);
  if ((ctx.notify & protocol::kKeTracking) != 0) ctx.fx->AddInvalidation(ekey);
  return key_gone;
}

}  // namespace trove::resp
