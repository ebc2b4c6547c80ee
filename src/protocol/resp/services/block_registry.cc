// BlockRegistry (block_registry.h).
#include "protocol/resp/services/block_registry.h"

#include <algorithm>

namespace trove::resp {

void BlockRegistry::Add(std::shared_ptr<Waiter> w) {
  if (!ordered_by_arrival.load(std::memory_order_relaxed))
    ordered_by_arrival.store(true, std::memory_order_relaxed);
  MutexLock l(&mu_);
  w->state = Waiter::State::kWaiting;
  w->cancel = Waiter::Cancel::kNone;
  for (size_t i = 0; i < w->wait_keys.size(); ++i) {
    const std::string& k = w->wait_keys[i];
    // A key named twice ("BLPOP k k 0") queues the client once.
    if (std::find(w->wait_keys.begin(), w->wait_keys.begin() + i, k) != w->wait_keys.begin() + i)
      continue;
    auto& q = by_key_[k];
    // In order of arrival: a client whose command reached another worker
    // first may register second (almost always it goes at the back).
    auto pos = q.end();
    while (pos != q.begin() && (*(pos - 1))->arrival_ns > w->arrival_ns) --pos;
    q.insert(pos, w);
  }
  by_conn_[w->conn_id] = w;
  blocked_.fetch_add(1, std::memory_order_relaxed);
  if (w->timed) timed_.fetch_add(1, std::memory_order_relaxed);
}

std::shared_ptr<Waiter> BlockRegistry::ClaimHead(std::string_view ekey) {
  MutexLock l(&mu_);
  auto it = by_key_.find(std::string(ekey));
  if (it == by_key_.end()) return nullptr;  // no empty queue is kept
  const std::shared_ptr<Waiter>& w = it->second.front();
  if (w->state == Waiter::State::kServing) {
    // Skipping it would let a later client take the data first (and the
    // first, finding none, block for ever): its server serves the key next.
    if (std::find(w->recheck.begin(), w->recheck.end(), ekey) == w->recheck.end())
      w->recheck.emplace_back(ekey);
    return nullptr;
  }
  w->state = Waiter::State::kServing;
  return w;
}

void BlockRegistry::RemoveLocked(const std::shared_ptr<Waiter>& w) {
  for (const std::string& k : w->wait_keys) {
    auto it = by_key_.find(k);
    if (it == by_key_.end()) continue;
    auto& q = it->second;
    q.erase(std::remove(q.begin(), q.end(), w), q.end());
    if (q.empty()) by_key_.erase(it);
  }
  auto c = by_conn_.find(w->conn_id);
  if (c != by_conn_.end() && c->second == w) by_conn_.erase(c);
  w->state = Waiter::State::kDone;
  blocked_.fetch_sub(1, std::memory_order_relaxed);
  if (w->timed) timed_.fetch_sub(1, std::memory_order_relaxed);
}

Waiter::Cancel BlockRegistry::FinishServe(const std::shared_ptr<Waiter>& w, bool served,
                                          std::vector<std::string>* recheck) {
  MutexLock l(&mu_);
  if (w->state != Waiter::State::kServing) return Waiter::Cancel::kGone;  // not ours
  for (std::string& k : w->recheck) recheck->push_back(std::move(k));
  w->recheck.clear();
  const Waiter::Cancel why = w->cancel;
  if (served) {
    RemoveLocked(w);
    return why == Waiter::Cancel::kGone ? why : Waiter::Cancel::kNone;
  }
  if (why == Waiter::Cancel::kNone) {
    w->state = Waiter::State::kWaiting;
    return why;
  }
  RemoveLocked(w);
  return why;
}

BlockRegistry::CancelResult BlockRegistry::CancelWaiter(const std::shared_ptr<Waiter>& w,
                                                        Waiter::Cancel why) {
  MutexLock l(&mu_);
  switch (w->state) {
    case Waiter::State::kWaiting:
      RemoveLocked(w);
      return CancelResult::kEnded;
    case Waiter::State::kServing:
      // The client leaving overrides a time-out or an unblock.
      if (w->cancel != Waiter::Cancel::kGone) w->cancel = why;
      return CancelResult::kDeferred;
    case Waiter::State::kDone:
      break;
  }
  return CancelResult::kNotBlocked;
}

bool BlockRegistry::HasWaiters(std::string_view ekey) const {
  MutexLock l(&mu_);
  return by_key_.find(std::string(ekey)) != by_key_.end();  // no empty queue is kept
}

std::shared_ptr<Waiter> BlockRegistry::Find(uint64_t conn_id) const {
  MutexLock l(&mu_);
  auto it = by_conn_.find(conn_id);
  return it == by_conn_.end() ? nullptr : it->second;
}

int64_t BlockRegistry::blocking_keys() const {
  MutexLock l(&mu_);
  return static_cast<int64_t>(by_key_.size());
}

}  // namespace trove::resp
