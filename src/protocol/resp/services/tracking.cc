// Tracking: the table of remembered reads, BCAST prefixes and the fan-out of
// invalidations (see tracking.h).
#include "protocol/resp/services/tracking.h"

#include <algorithm>

#include "engine/engine.h"
#include "net/event_loop.h"
#include "protocol/resp/types/keyspace.h"

namespace trove::resp {

void LiveClients::Add(uint64_t id) {
  Stripe& s = stripes_[id % kStripes];
  MutexLock l(&s.mu);
  s.ids.insert(id);
}

void LiveClients::Remove(uint64_t id) {
  Stripe& s = stripes_[id % kStripes];
  MutexLock l(&s.mu);
  s.ids.erase(id);
}

bool LiveClients::Contains(uint64_t id) const {
  const Stripe& s = stripes_[id % kStripes];
  MutexLock l(&s.mu);
  return s.ids.count(id) != 0;
}

void Tracking::ClientOn(uint64_t id) {
  bool first = false;
  {
    MutexLock l(&clients_mu_);
    if (!clients_.insert(id).second) return;
    first = clients_.size() == 1;
    active_.store(true, std::memory_order_relaxed);
  }
  if (first && active_fn_) active_fn_();
}

void Tracking::ClientOff(uint64_t id) {
  bool last = false;
  {
    MutexLock l(&clients_mu_);
    if (clients_.erase(id) == 0) return;
    last = clients_.empty();
    if (last) active_.store(false, std::memory_order_relaxed);
  }
  if (last && active_fn_) active_fn_();
}

size_t Tracking::clients() const {
  MutexLock l(&clients_mu_);
  return clients_.size();
}

Tracking::Shard& Tracking::ShardOf(std::string_view key) {
  return shards_[engine::Engine::KeyHash(key) % kShards];
}

void Tracking::Remember(std::string_view key, uint64_t id) {
  Shard& s = ShardOf(key);
  {
    MutexLock l(&s.mu);
    auto it = s.keys.find(std::string(key));
    if (it == s.keys.end()) {
      s.keys.emplace(std::string(key), std::vector<uint64_t>{id});
      s.key_bytes += key.size();
      total_keys_.fetch_add(1, std::memory_order_relaxed);
      total_items_.fetch_add(1, std::memory_order_relaxed);
    } else if (std::find(it->second.begin(), it->second.end(), id) == it->second.end()) {
      it->second.push_back(id);
      total_items_.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

void Tracking::AddPrefix(std::string_view prefix, uint64_t id) {
  MutexLock l(&prefix_mu_);
  auto it = prefixes_.find(prefix);
  if (it == prefixes_.end()) it = prefixes_.emplace(std::string(prefix), std::set<uint64_t>{}).first;
  it->second.insert(id);
  num_prefixes_.store(prefixes_.size(), std::memory_order_relaxed);
}

void Tracking::RemovePrefix(std::string_view prefix, uint64_t id) {
  MutexLock l(&prefix_mu_);
  auto it = prefixes_.find(prefix);
  if (it == prefixes_.end()) return;
  it->second.erase(id);
  if (it->second.empty()) prefixes_.erase(it);
  num_prefixes_.store(prefixes_.size(), std::memory_order_relaxed);
}

size_t Tracking::total_prefixes() const {
  MutexLock l(&prefix_mu_);
  return prefixes_.size();
}

void Tracking::TakeKey(std::string_view key, uint64_t modifier, Batch* out) {
  Shard& s = ShardOf(key);
  std::vector<uint64_t> ids;
  {
    MutexLock l(&s.mu);
    auto it = s.keys.find(std::string(key));
    if (it == s.keys.end()) return;
    ids = std::move(it->second);
    s.key_bytes -= key.size();
    s.keys.erase(it);
  }
  total_keys_.fetch_sub(1, std::memory_order_relaxed);
  total_items_.fetch_sub(ids.size(), std::memory_order_relaxed);
  auto m = std::make_shared<TrackingMessage>();
  m->keys.emplace_back(key);
  m->modifier = modifier;
  for (uint64_t id : ids) out->emplace_back(id, m);
}

void Tracking::Invalidate(std::span<const std::string_view> keys, uint64_t modifier) {
  if (keys.empty()) return;
  Batch batch;
  Collect(keys, modifier, modifier, &batch);
  if (!batch.empty()) Send(batch);
}

namespace {
// The innermost open capture of this thread (null: none).
thread_local Tracking::EvictionCapture* tls_capture = nullptr;
}  // namespace

Tracking::EvictionCapture::EvictionCapture() : outer_(tls_capture) { tls_capture = this; }

Tracking::EvictionCapture::~EvictionCapture() {
  if (open_) tls_capture = outer_;
}

std::vector<std::string> Tracking::EvictionCapture::Take() {
  if (open_) {
    open_ = false;
    tls_capture = outer_;
  }
  return std::move(keys_);
}

bool Tracking::CaptureEvicted(std::string_view key) {
  EvictionCapture* c = tls_capture;
  if (c == nullptr) return false;
  c->keys_.emplace_back(key);
  return true;
}

void Tracking::InvalidateEvicted(std::span<const std::string> keys, uint64_t self) {
  if (keys.empty()) return;
  std::vector<std::string_view> names(keys.begin(), keys.end());
  Batch batch;
  // Redis's trackingInvalidateKey: NOLOOP skips the current client for a
  // remembered read; a BCAST client is told whoever evicted the key.
  Collect(names, self, 0, &batch);
  if (!batch.empty()) Send(batch, self);
}

void Tracking::Collect(std::span<const std::string_view> keys, uint64_t modifier,
                       uint64_t bcast_modifier, Batch* out) {
  Batch& batch = *out;
  if (total_keys() != 0) {
    for (std::string_view k : keys) TakeKey(k, modifier, &batch);
  }
  if (num_prefixes_.load(std::memory_order_relaxed) != 0) {
    // One message per prefix and client, with every key of this call that
    // the prefix matches (Redis sends one per prefix too).
    MutexLock l(&prefix_mu_);
    for (const auto& [prefix, ids] : prefixes_) {
      std::shared_ptr<TrackingMessage> m;
      for (std::string_view k : keys) {
        if (k.substr(0, prefix.size()) != prefix) continue;
        if (!m) {
          m = std::make_shared<TrackingMessage>();
          m->bcast = true;
          m->modifier = bcast_modifier;
        }
        m->keys.emplace_back(k);
      }
      if (!m) continue;
      for (uint64_t id : ids) batch.emplace_back(id, m);
    }
  }
}

void Tracking::InvalidateAll() {
  for (Shard& s : shards_) {
    size_t n = 0, items = 0;
    {
      MutexLock l(&s.mu);
      n = s.keys.size();
      for (const auto& [k, ids] : s.keys) items += ids.size();
      s.keys.clear();
      s.key_bytes = 0;
    }
    total_keys_.fetch_sub(n, std::memory_order_relaxed);
    total_items_.fetch_sub(items, std::memory_order_relaxed);
  }
  auto m = std::make_shared<TrackingMessage>();
  m->flush = true;
  Batch batch;
  {
    MutexLock l(&clients_mu_);
    for (uint64_t id : clients_) batch.emplace_back(id, m);
  }
  if (!batch.empty()) Send(batch);
}

void Tracking::SetMaxKeys(size_t n) {
  max_keys_.store(n, std::memory_order_relaxed);
  if (n != 0 && total_keys() > n) EnforceLimitSlow();
}

void Tracking::EnforceLimitSlow() {
  // Evicts from one shard after another (the next call starts where this one
  // stopped), so no shard is emptied first every time.
  Batch batch;
  std::string victim;
  for (size_t tries = 0; tries < 4 * kShards; ++tries) {
    const size_t max = max_keys();
    if (max == 0 || total_keys() <= max) break;
    Shard& s = shards_[evict_cursor_.fetch_add(1, std::memory_order_relaxed) % kShards];
    for (;;) {
      {
        MutexLock l(&s.mu);
        if (s.keys.empty()) break;
        victim = s.keys.begin()->first;
      }
      TakeKey(victim, 0, &batch);
      if (total_keys() <= max) break;
    }
  }
  if (!batch.empty()) Send(batch);
}

size_t Tracking::memory_bytes() const {
  size_t bytes = 0;
  for (const Shard& s : shards_) {
    MutexLock l(&s.mu);
    // Each entry: its key bytes, the node and bucket (about 64 bytes), the
    // id vector's header and ids.
    bytes += s.key_bytes + s.keys.size() * 64;
  }
  return bytes + total_items() * sizeof(uint64_t);
}

void Tracking::Send(Batch& batch, uint64_t in_place) {
  if (group_ == nullptr || group_->size() == 0) {
    for (const auto& [id, m] : batch) deliver_(id, m);  // tests without workers
    return;
  }
  const size_t n = group_->size();
  std::vector<Batch> per_worker(n);
  for (auto& e : batch) {
    if (in_place != 0 && e.first == in_place && !e.second->bcast) {
      deliver_(e.first, e.second);  // the caller runs on its worker (InvalidateEvicted)
      continue;
    }
    per_worker[group_->OwnerOf(e.first)].push_back(std::move(e));
  }
  const DeliverFn deliver = deliver_;
  for (size_t w = 0; w < n; ++w) {
    if (per_worker[w].empty()) continue;
    group_->loop(w).Post([deliver, list = std::move(per_worker[w])] {
      for (const auto& [id, m] : list) deliver(id, m);
    });
  }
}

void Tracking::Disable(TrackingState& t, uint64_t id) {
  if (!t.on) return;
  for (const std::string& p : t.prefixes) RemovePrefix(p, id);
  ClientOff(id);
  t.Clear();
}

void Tracking::InvalidateEngineKeys(std::vector<std::string>* ekeys, uint64_t modifier) {
  if (ekeys->empty()) return;
  std::vector<std::string_view> names;
  names.reserve(ekeys->size());
  for (const std::string& ek : *ekeys) {
    int db = 0;
    std::string_view key;
    DecodeDbKey(ek, &db, &key);
    names.push_back(key);
  }
  Invalidate(names, modifier);
  ekeys->clear();
}

}  // namespace trove::resp
