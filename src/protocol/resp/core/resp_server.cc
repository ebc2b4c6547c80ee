// RespServer: shared RESP state; any worker thread.
#include "protocol/resp/core/resp_server.h"

#include <cstring>

#include <string_view>

#include "common/sha256.h"
#include "common/str_split.h"
#include "protocol/resp/core/client.h"
#include "protocol/resp/core/command_table.h"

namespace trove::resp {

RespServer::RespServer(engine::Engine* engine, net::ServerServices* services,
                       const RespOptions& opts)
    : engine_(engine),
      services_(services),
      opts_(opts),
      pubsub_(&DeliverPubSubMessage),
      tracking_(&DeliverTrackingMessage),
      slots_(&HistogramSlots::Get()) {
  tracking_.set_active_fn([this] { key_events_.TrackingChanged(); });
  start_unix_ = engine_->clock()->UnixSeconds();
  set_requirepass(opts.requirepass);
  acl_->set_aclfile(opts.aclfile);
  opts_.requirepass.assign(opts_.requirepass.size(), '\0');  // not kept in clear
  opts_.requirepass.clear();
  timeout_s.store(opts.idle_timeout_s, std::memory_order_relaxed);
  protected_mode_.set_enabled(opts.protected_mode);
  ConfigChanged();
}

void RespServer::ConfigChanged() {
  const int64_t slower = slowlog_log_slower_than.load(std::memory_order_relaxed);
  const int64_t lat_ms = latency_monitor_threshold.load(std::memory_order_relaxed);
  uint64_t above = static_cast<uint64_t>(slower);  // -1: never
  if (lat_ms > 0) {
    const uint64_t lat_us = static_cast<uint64_t>(lat_ms) > UINT64_MAX / 1000
                                ? UINT64_MAX
                                : static_cast<uint64_t>(lat_ms) * 1000;
    if (lat_us < above) above = lat_us;
  }
  {
    // Serialises concurrent CONFIG SETs so the last one's values win.
    MutexLock l(&mu_);
    record_above_us_.store(above, std::memory_order_relaxed);
  }
  if (slower >= 0) {
    slowlog_.Trim(static_cast<size_t>(slowlog_max_len.load(std::memory_order_relaxed)));
  }
}

bool RespServer::SampleSlow(const char* event, int64_t usec, int64_t now) {
  const int64_t lat_ms = latency_monitor_threshold.load(std::memory_order_relaxed);
  if (lat_ms > 0 && usec / 1000 >= lat_ms) latency_.AddSample(event, usec / 1000, now);
  const int64_t slower = slowlog_log_slower_than.load(std::memory_order_relaxed);
  return slower >= 0 && usec >= slower;
}

void RespServer::PushSlowEntry(std::span<const std::string_view> argv, std::string_view addr,
                               std::string_view name, int64_t usec, int64_t now) {
  SlowLogEntry e;
  e.unix_time = now;
  e.usec = usec;
  e.argv = SlowLogArgv(argv);
  e.addr.assign(addr);
  e.name.assign(name);
  slowlog_.Push(std::move(e), static_cast<size_t>(slowlog_max_len.load(std::memory_order_relaxed)));
}

void RespServer::RecordSlow(const CommandSpec& spec, std::span<const std::string_view> argv,
                            const Identity& who, int64_t usec) {
  const int64_t now = engine_->clock()->UnixSeconds();
  const bool log = SampleSlow((spec.flags & kCmdFast) != 0 ? "fast-command" : "command", usec, now);
  // EXEC is Redis's one skip_slowlog command here; its commands are logged.
  if (!log || std::string_view(spec.name) == "exec") return;
  PushSlowEntry(argv, who.addr(), who.name(), usec, now);
}

protocol::CommandLog::Sink* RespServer::SinkFor(int worker_id) {
  WorkerStats* ws = StatsFor(worker_id);
  MutexLock l(&mu_);
  const size_t w = static_cast<size_t>(worker_id < 0 ? 0 : worker_id);
  if (mc_sinks_.size() <= w) mc_sinks_.resize(w + 1);
  // The memcache|<cmd> histograms are contiguous slots of ws->latency.
  LatencyHistogram* hist =
      &ws->latency[static_cast<size_t>(slots_->MemcacheSlot(protocol::kMcGet))];
  if (!mc_sinks_[w]) {
    mc_sinks_[w] = std::make_unique<Sink>(this, hist, &latency_tracking, &record_above_us_);
  }
  return mc_sinks_[w].get();
}

void RespServer::RecordSlowMemcache(std::string_view line, std::string_view addr, int64_t usec) {
  const int64_t now = engine_->clock()->UnixSeconds();
  if (!SampleSlow("command", usec, now)) return;
  // The request line's words are its argv, as memcached tokenizes it.
  const std::vector<std::string_view> words = SplitSpaces(line);
  // The client name "memcache" marks the protocol (memcached clients have none).
  PushSlowEntry(words, addr, "memcache", usec, now);
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
  if (!stats_[w])
    stats_[w] = std::make_unique<WorkerStats>(CommandTable::Get().size(), slots_->size());
  return stats_[w].get();
}

void RespServer::ForEachWorkerStats(const std::function<void(const WorkerStats&)>& fn) const {
  MutexLock l(&mu_);
  for (const auto& s : stats_)
    if (s) fn(*s);
}

void ErrorCodes::Count(std::string_view code) {
  const size_t have = n.load(std::memory_order_relaxed);  // the owner is the only writer
  for (size_t i = 0; i < have; ++i) {
    if (slots[i].name() == code) {
      slots[i].count.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  if (have == kMax || code.size() > kCodeMax) return;
  Slot& s = slots[have];
  std::memcpy(s.code, code.data(), code.size());
  s.len = static_cast<uint8_t>(code.size());
  s.count.store(1, std::memory_order_relaxed);
  n.store(have + 1, std::memory_order_release);
}

void WorkerStats::CountError(std::string_view msg) {
  error_replies.fetch_add(1, std::memory_order_relaxed);
  // Redis's rule: the code is the text before the first space within the
  // first 32 bytes; "ERR" when there is none.
  const size_t sp = msg.substr(0, ErrorCodes::kCodeMax).find(' ');
  error_codes.Count(sp == std::string_view::npos ? std::string_view("ERR") : msg.substr(0, sp));
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
    for (auto& h : s->latency)
      for (auto& b : h.buckets) b.store(0, std::memory_order_relaxed);
    s->keyspace_hits.store(0, std::memory_order_relaxed);
    s->keyspace_misses.store(0, std::memory_order_relaxed);
    s->total_commands.store(0, std::memory_order_relaxed);
    s->expired_keys.store(0, std::memory_order_relaxed);
    s->error_replies.store(0, std::memory_order_relaxed);
    const size_t codes = s->error_codes.n.load(std::memory_order_acquire);
    for (size_t i = 0; i < codes; ++i)
      s->error_codes.slots[i].count.store(0, std::memory_order_relaxed);
  }
  expired_keys_base.store(engine_->ExpiredTotal(), std::memory_order_relaxed);
  hash_field_expiry_.ResetStats();
}

}  // namespace trove::resp
