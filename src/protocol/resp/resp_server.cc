// RespServer: shared RESP state; any worker thread.
#include "protocol/resp/resp_server.h"

#include "protocol/resp/session.h"

#include "protocol/resp/command_table.h"

namespace trove::resp {

RespServer::RespServer(engine::Engine* engine, net::ServerServices* services,
                       const RespOptions& opts)
    : engine_(engine), services_(services), opts_(opts), pubsub_(&Session::DeliverPubSub) {
  start_unix_ = engine_->clock()->UnixSeconds();
  requirepass_ = opts.requirepass;
}

int64_t RespServer::NowMs() const { return engine_->clock()->UnixMicros() / 1000; }
int64_t RespServer::NowUs() const { return engine_->clock()->UnixMicros(); }

engine::ThreadStats* RespServer::ThreadStatsFor(int worker) {
  MutexLock l(&mu_);
  size_t w = static_cast<size_t>(worker < 0 ? 0 : worker);
  if (thread_stats_.size() <= w) thread_stats_.resize(w + 1, nullptr);
  if (thread_stats_[w] == nullptr) thread_stats_[w] = engine_->NewThreadStats();
  return thread_stats_[w];
}

WorkerStats* RespServer::StatsFor(int worker) {
  MutexLock l(&mu_);
  size_t w = static_cast<size_t>(worker < 0 ? 0 : worker);
  if (stats_.size() <= w) stats_.resize(w + 1);
  if (!stats_[w]) stats_[w] = std::make_unique<WorkerStats>(CommandTable::Get().size());
  return stats_[w].get();
}

void RespServer::ForEachWorkerStats(const std::function<void(const WorkerStats&)>& fn) const {
  MutexLock l(&mu_);
  for (const auto& s : stats_)
    if (s) fn(*s);
}

void RespServer::ResetStats() {
  MutexLock l(&mu_);
  for (auto& s : stats_) {
    if (!s) continue;
    for (auto& c : s->cmds) {
      c.calls.store(0, std::memory_order_relaxed);
      c.usec.store(0, std::memory_order_relaxed);
      c.rejected.store(0, std::memory_order_relaxed);
      c.failed.store(0, std::memory_order_relaxed);
    }
    s->keyspace_hits.store(0, std::memory_order_relaxed);
    s->keyspace_misses.store(0, std::memory_order_relaxed);
    s->total_commands.store(0, std::memory_order_relaxed);
    s->expired_keys.store(0, std::memory_order_relaxed);
    s->error_replies.store(0, std::memory_order_relaxed);
  }
}

std::string RespServer::requirepass() const {
  MutexLock l(&mu_);
  return requirepass_;
}

void RespServer::set_requirepass(std::string p) {
  MutexLock l(&mu_);
  requirepass_ = std::move(p);
}

}  // namespace trove::resp
