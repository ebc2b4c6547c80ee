// PubSubHub: the subscription tables and PUBLISH's per-worker fan-out.
#include "protocol/resp/services/pubsub.h"

#include "common/glob.h"
#include "net/worker.h"

namespace trove::resp {

void PubSubHub::Add(Kind k, std::string_view name, uint64_t conn_id) {
  MutexLock l(&mu_);
  std::string key(name);
  if (k == Kind::kChannel) {
    channels_[key].insert(conn_id);
  } else if (k == Kind::kShard) {
    shard_[key].insert(conn_id);
  } else {
    patterns_[key].insert(conn_id);
  }
}

void PubSubHub::Remove(Kind k, std::string_view name, uint64_t conn_id) {
  MutexLock l(&mu_);
  std::string key(name);
  auto drop = [&](auto& table) {
    auto it = table.find(key);
    if (it == table.end()) return;
    it->second.erase(conn_id);
    if (it->second.empty()) table.erase(it);
  };
  if (k == Kind::kChannel) {
    drop(channels_);
  } else if (k == Kind::kShard) {
    drop(shard_);
  } else {
    drop(patterns_);
  }
}

size_t PubSubHub::Publish(std::string_view channel, std::string_view payload, bool shard,
                          net::WorkerGroup* group) {
  const size_t nworkers = group != nullptr && group->size() > 0 ? group->size() : 1;
  std::vector<std::vector<Delivery>> per_worker(nworkers);
  auto msg = std::make_shared<PublishedMessage>();
  size_t receivers = 0;
  {
    MutexLock l(&mu_);
    const auto& table = shard ? shard_ : channels_;
    auto it = table.find(std::string(channel));
    if (it != table.end()) {
      for (uint64_t id : it->second) {
        per_worker[id % nworkers].push_back({id, -1});
        ++receivers;
      }
    }
    if (!shard) {
      for (const auto& [pattern, subs] : patterns_) {
        if (!GlobMatch(pattern, channel)) continue;
        int idx = static_cast<int>(msg->patterns.size());
        msg->patterns.push_back(pattern);
        for (uint64_t id : subs) {
          per_worker[id % nworkers].push_back({id, idx});
          ++receivers;
        }
      }
    }
  }
  if (receivers == 0) return 0;
  msg->channel.assign(channel);
  msg->payload.assign(payload);
  msg->shard = shard;
  DeliverFn deliver = deliver_;
  for (size_t w = 0; w < nworkers; ++w) {
    if (per_worker[w].empty()) continue;
    std::shared_ptr<const PublishedMessage> shared = msg;
    auto run = [deliver, shared, list = std::move(per_worker[w])] {
      for (const Delivery& d : list) deliver(d.conn_id, shared, d.pattern);
    };
    if (group == nullptr || group->size() == 0) {
      run();  // tests without workers: deliver in place
    } else {
      // Also for this worker's own subscribers: a client publishing to
      // itself then gets the PUBLISH reply before the message, as Redis 7.2.
      group->loop(w).Post(std::move(run));
    }
  }
  return receivers;
}

std::vector<std::string> PubSubHub::Channels(bool shard, std::string_view pattern) const {
  MutexLock l(&mu_);
  std::vector<std::string> out;
  for (const auto& [name, subs] : shard ? shard_ : channels_) {
    if (pattern.empty() || GlobMatch(pattern, name)) out.push_back(name);
  }
  return out;
}

size_t PubSubHub::NumSub(bool shard, std::string_view channel) const {
  MutexLock l(&mu_);
  const auto& table = shard ? shard_ : channels_;
  auto it = table.find(std::string(channel));
  return it == table.end() ? 0 : it->second.size();
}

size_t PubSubHub::NumPat() const {
  MutexLock l(&mu_);
  return patterns_.size();
}

void PubSubHub::Subscribe(PubSubState& ps, uint64_t conn_id, std::atomic<int64_t>& clients,
                          Kind k, std::string_view name) {
  const bool was = ps.active();
  if (ps.Add(k, name)) Add(k, name, conn_id);
  if (!was && ps.active()) clients.fetch_add(1, std::memory_order_relaxed);
}

void PubSubHub::Unsubscribe(PubSubState& ps, uint64_t conn_id, std::atomic<int64_t>& clients,
                            Kind k, std::string_view name) {
  if (!ps.Remove(k, name)) return;
  Remove(k, name, conn_id);
  if (!ps.active()) clients.fetch_sub(1, std::memory_order_relaxed);
}

void PubSubHub::UnsubscribeAll(PubSubState& ps, uint64_t conn_id, std::atomic<int64_t>& clients) {
  if (ps.active()) clients.fetch_sub(1, std::memory_order_relaxed);
  for (Kind k : {Kind::kChannel, Kind::kPattern, Kind::kShard}) {
    for (const std::string& n : ps.set(k)) Remove(k, n, conn_id);
  }
  ps.Clear();
}

}  // namespace trove::resp
