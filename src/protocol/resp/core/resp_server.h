// RespServer: state shared by every RESP connection of one port (config,
// command statistics, the engine and server services). Any worker thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/mutex.h"
#include "engine/engine.h"
#include "net/connection.h"
#include "net/protocol_handler.h"
#include "protocol/command_log.h"
#include "protocol/client_pause.h"
#include "protocol/resp/services/acl_store.h"
#include "protocol/resp/services/block_registry.h"
#include "protocol/resp/services/busy_scripts.h"
#include "protocol/resp/core/command.h"
#include "protocol/resp/services/latency_histogram.h"
#include "protocol/resp/services/keyspace_events.h"
#include "protocol/resp/services/latency_monitor.h"
#include "net/log_hub.h"
#include "protocol/resp/services/output_limits.h"
#include "protocol/resp/core/protected_mode.h"
#include "protocol/resp/services/pubsub.h"
#include "protocol/resp/services/function_library.h"
#include "protocol/resp/services/hash_field_expiry.h"
#include "protocol/resp/services/script_cache.h"
#include "protocol/resp/services/slowlog.h"
#include "protocol/resp/services/tls_settings.h"
#include "protocol/resp/services/tracking.h"
#include "protocol/resp/services/watch_registry.h"

namespace trove::resp {

// Counters of one command on one worker.
struct CommandCounters {
  std::atomic<uint64_t> calls{0};  // relaxed: statistics only
  std::atomic<uint64_t> usec{0};
  std::atomic<uint64_t> rejected{0};
  std::atomic<uint64_t> failed{0};
};

// INFO errorstats: error replies by code (the reply's first word), at most
// kMax codes (later new codes go uncounted here, total_error_replies still
// counts them). Written by the owning worker only: a new code's slot is
// filled, then published by n's release store; any thread reads slots
// [0, n) after an acquire load of n. CONFIG RESETSTAT zeroes the counts.
struct ErrorCodes {
  static constexpr size_t kMax = 128;
  static constexpr size_t kCodeMax = 32;
  struct Slot {
    std::atomic<uint64_t> count{0};
    char code[kCodeMax] = {};
    uint8_t len = 0;
    std::string_view name() const { return {code, len}; }
  };
  void Count(std::string_view code);
  std::array<Slot, kMax> slots;
  std::atomic<size_t> n{0};
};

// Per-worker statistics; written by that worker, summed by INFO on any worker.
struct WorkerStats final : ErrorSink {
  WorkerStats(size_t ncmds, size_t nslots) : cmds(ncmds), latency(nslots) {}
  std::vector<CommandCounters> cmds;
  // LATENCY HISTOGRAM, indexed by HistogramSlots slot.
  std::vector<LatencyHistogram> latency;
  std::atomic<uint64_t> keyspace_hits{0};  // relaxed: statistics only
  std::atomic<uint64_t> keyspace_misses{0};
  std::atomic<uint64_t> total_commands{0};
  std::atomic<uint64_t> total_connections{0};
  std::atomic<int64_t> connected_clients{0};
  std::atomic<int64_t> pubsub_clients{0};  // connections with a subscription
  std::atomic<uint64_t> expired_keys{0};
  std::atomic<uint64_t> error_replies{0};
  ErrorCodes error_codes;
  std::atomic<uint64_t> net_input_bytes{0};
  // Changes to the keyspace made by this worker's commands (Redis's
  // server.dirty; CommandContext::dirty). Never reset: Trove never saves.
  std::atomic<uint64_t> dirty{0};

  // Counts an error reply (RespWriter::Error): total and by code.
  void CountError(std::string_view msg) override;
};

// Thread safety: the engine and services are thread-safe; config values are
// atomics (relaxed: each is read independently, no ordering with data);
// the worker-stats table is guarded by mu_; the slow log
// and latency monitor lock themselves (leaf locks, never held with mu_).
// The RESP front's start-up options (server/config.cc fills them).
struct RespOptions {
  int databases = 16;
  std::string requirepass;  // empty = default user without password
  int port = 6379;
  int64_t idle_timeout_s = 0;  // -o idle_timeout (CONFIG GET timeout)
  std::string aclfile;         // --aclfile: ACL users, loaded at start-up
  bool protected_mode = true;  // --protected-mode yes|no (protected_mode.h)
  RespTlsConfig tls;           // --tls-port and the other tls-* options
};

class RespServer final : public protocol::CommandLog {
 public:
  RespServer(engine::Engine* engine, net::ServerServices* services, const RespOptions& opts);

  engine::Engine* engine() const { return engine_; }
  net::ServerServices* services() const { return services_; }
  const RespOptions& options() const { return opts_; }
  int databases() const { return opts_.databases; }

  // Per-worker state, created on first use by that worker.
  engine::ThreadStats* ThreadStatsFor(int worker) EXCLUDES(mu_);
  WorkerStats* StatsFor(int worker) EXCLUDES(mu_);
  // Visits every worker's stats (INFO); fn must not call back into this.
  void ForEachWorkerStats(const std::function<void(const WorkerStats&)>& fn) const EXCLUDES(mu_);
  void ResetStats() EXCLUDES(mu_);

  // ACL users (acl_store.h); requirepass is the default user's password,
  // kept only as its SHA-256.
  acl::AclStore& acl() { return *acl_; }
  void set_requirepass(std::string_view p) { acl_->SetRequirepass(p); }
  bool auth_required() const { return !acl_->default_open(); }

  // Called by Session::Run after every command that ran, with its
  // duration (the one commandstats counts). The common path is a histogram
  // increment in the worker's own stats plus one comparison against the
  // lowest of the slowlog and latency-monitor thresholds; only a slower
  // command goes on to RecordSlow, which takes the slow log's or the latency
  // monitor's leaf lock.
  // `slot` is HistogramSlots::SlotOf(spec, argv), which the caller has.
  // `monitored`: MONITOR already saw it (a blocking command is shown when
  // it blocks, once, as Redis 7.2+ does; FeedMonitorsIfWatched).
  void RecordCommand(WorkerStats* ws, const CommandSpec& spec, int slot,
                     std::span<const std::string_view> argv, const Identity& who, int64_t usec,
                     bool monitored = false) {
    if (!monitored) FeedMonitorsIfWatched(spec, argv, who);
    if (slot < 0) return;  // unknown subcommand: Redis rejects it before it runs
    if (latency_tracking.load(std::memory_order_relaxed))
      ws->latency[static_cast<size_t>(slot)].Add(usec);
    if (static_cast<uint64_t>(usec) >= record_above_us_.load(std::memory_order_relaxed))
      RecordSlow(spec, argv, who, usec);
  }
  void FeedMonitorsIfWatched(const CommandSpec& spec, std::span<const std::string_view> argv,
                             const Identity& who) {
    if (log_ != nullptr && log_->Wants(net::kLogMonitor)) FeedMonitors(spec, argv, who);
  }
  // The same for a command a script runs: database db, client addr ("lua").
  void FeedMonitorsAs(const CommandSpec& spec, std::span<const std::string_view> argv, int db,
                      std::string_view addr) {
    if (log_ != nullptr && log_->Wants(net::kLogMonitor)) FeedMonitorLine(spec, argv, db, addr);
  }
  // protocol::CommandLog: memcached-port commands into this server's
  // LATENCY HISTOGRAM (memcache|<cmd>) and SLOWLOG (client name "memcache").
  Sink* SinkFor(int worker_id) override EXCLUDES(mu_);
  void RecordSlowMemcache(std::string_view line, std::string_view addr,
                          int64_t usec) override;

  // Applies a CONFIG SET of the slowlog / latency parameters: recomputes the
  // RecordCommand threshold and trims the slow log to slowlog-max-len
  // (Redis trims after the CONFIG SET itself runs, when the log is enabled).
  void ConfigChanged() EXCLUDES(mu_);

  SlowLog& slowlog() { return slowlog_; }
  LatencyMonitor& latency_monitor() { return latency_; }
  const HistogramSlots& histogram_slots() const { return *slots_; }

  int64_t start_unix() const { return start_unix_; }
  // The RESP port bound at start (options().port may be 0: ephemeral). Set
  // once before the workers start; read-only afterwards.
  int bound_port() const { return bound_port_ != 0 ? bound_port_ : options().port; }
  void set_bound_port(int port) { bound_port_ = port; }
  int64_t NowMs() const;
  int64_t NowUs() const;

  // Tunables that CONFIG GET/SET read and change (Redis's names and defaults).
  std::atomic<int64_t> list_max_listpack_size{-2};
  std::atomic<int64_t> hash_max_listpack_entries{512};
  std::atomic<int64_t> hash_max_listpack_value{64};
  std::atomic<int64_t> set_max_intset_entries{512};
  std::atomic<int64_t> set_max_listpack_entries{128};
  std::atomic<int64_t> set_max_listpack_value{64};
  // Kept for CONFIG GET/SET with Redis's range; Trove's list nodes are never
  // compressed, so it changes no reply and no memory (docs/resp.md).
  std::atomic<int64_t> list_compress_depth{0};
  // A client whose unparsed input passes this is closed (Redis's
  // client-query-buffer-limit, 1 GiB).
  std::atomic<int64_t> client_query_buffer_limit{1ll << 30};
  std::atomic<int64_t> zset_max_listpack_entries{128};
  std::atomic<int64_t> zset_max_listpack_value{64};
  std::atomic<int64_t> proto_max_bulk_len{512ll * 1024 * 1024};
  // The largest sparse HyperLogLog, header included, before it turns dense
  // (commands/hyperloglog.cc; Redis's default).
  std::atomic<int64_t> hll_sparse_max_bytes{3000};
  // The RESP port's own connection limit (maxclients) and its refusals
  // (INFO rejected_connections); the memcached port keeps -c. The server
  // sets max to -c at start and binds the RESP listeners with it.
  net::PortLimit& port_limit() { return port_limit_; }
  // protected-mode: the accept gate of every RESP listener (the admin port's
  // too); its refusals also count as INFO rejected_connections.
  ProtectedMode& protected_mode() { return protected_mode_; }
  RespTls& tls() { return tls_; }
  // Slow log and latency monitor (Redis's names, units and defaults): µs,
  // -1 disables, 0 logs everything; entries kept; ms, 0 disables. Written by
  // CONFIG SET, which then calls ConfigChanged().
  std::atomic<int64_t> slowlog_log_slower_than{10000};
  std::atomic<int64_t> slowlog_max_len{128};
  std::atomic<int64_t> latency_monitor_threshold{0};
  std::atomic<bool> latency_tracking{true};  // LATENCY HISTOGRAM recording
  std::atomic<bool> active_expire{true};
  // Redis's `timeout`: idle seconds before a RESP client is closed (0 never;
  // blocked, subscribed and MONITOR clients are spared). Starts at
  // -o idle_timeout; CONFIG SET changes the RESP port's only.
  std::atomic<int64_t> timeout_s{0};
  std::atomic<int64_t> next_client_id{1};
  // Clients closed for client-output-buffer-limit (INFO stats). Relaxed.
  std::atomic<uint64_t> obuf_limit_disconnections{0};
  // INFO expired_keys counts from here (CONFIG RESETSTAT).
  std::atomic<uint64_t> expired_keys_base{0};

  PubSubHub& pubsub() { return pubsub_; }
  // Keyspace notifications (notify-keyspace-events); thread-safe.
  KeyEvents& key_events() { return key_events_; }
  // client-output-buffer-limit (output_limits.h); thread-safe.
  ObufLimits& obuf_limits() { return obuf_limits_; }
  // Every connection's WATCHed keys, counted (INFO clients); thread-safe.
  WatchRegistry& watches() { return watches_; }
  // Clients blocked in BLPOP and friends (block_registry.h); thread-safe.
  BlockRegistry& blocks() { return blocks_; }
  const BlockRegistry& blocks() const { return blocks_; }
  // Client-side caching (tracking.h) and the open RESP connections' ids.
  Tracking& tracking() { return tracking_; }
  LiveClients& live_clients() { return live_clients_; }
  // The server-side scripts' bodies (EVAL, SCRIPT LOAD), shared by the workers.
  ScriptCache& scripts() { return scripts_; }
  FunctionLibraries& functions() { return functions_; }
  // Scripts past busy-reply-threshold (busy_scripts.h); thread-safe.
  BusyScripts& busy_scripts() { return busy_scripts_; }
  // busy-reply-threshold (alias lua-time-limit), ms; 0: a script is never busy.
  std::atomic<int64_t> busy_reply_threshold{5000};
  // busy-reply-scope: false ("worker", the default) holds up only the busy
  // script's own worker and the commands that need a stripe it holds; true
  // ("all") answers BUSY on every worker, as Redis does.
  std::atomic<bool> busy_reply_all{false};

  // CLIENT PAUSE (session_pause.cc), shared with the memcached port.
  protocol::ClientPause& pause() { return pause_; }

  // Hashes with field TTLs and their active expiry (hash_field_expiry.h);
  // thread-safe.
  HashFieldExpiry& hash_field_expiry() { return hash_field_expiry_; }

  // The event log MONITOR reads (set once by the factory, before workers run).
  void set_log(net::LogHub* log) {
    log_ = log;
    if (log != nullptr) {
      key_events_.set_group(log->group());
      tracking_.set_group(log->group());
    }
  }
  net::LogHub* log() const { return log_; }

 private:
  // MONITOR's line for a command that ran (commands/monitor.cc): Redis's format,
  // admin commands left out, AUTH/HELLO passwords redacted.
  void FeedMonitors(const CommandSpec& spec, std::span<const std::string_view> argv,
                    const Identity& who);
  void FeedMonitorLine(const CommandSpec& spec, std::span<const std::string_view> argv, int db,
                       std::string_view addr);
  // RecordCommand's slow path: the slow log entry and the latency sample.
  void RecordSlow(const CommandSpec& spec, std::span<const std::string_view> argv,
                  const Identity& who, int64_t usec);
  // The slow paths' shared part: a latency-monitor sample of `event` when
  // due; true when slowlog-log-slower-than wants the entry.
  bool SampleSlow(const char* event, int64_t usec, int64_t now);
  void PushSlowEntry(std::span<const std::string_view> argv, std::string_view addr,
                     std::string_view name, int64_t usec, int64_t now);

  engine::Engine* engine_;
  net::ServerServices* services_;
  RespOptions opts_;
  std::unique_ptr<acl::AclStore> acl_ = std::make_unique<acl::AclStore>();
  ProtectedMode protected_mode_{acl_.get()};
  int64_t start_unix_;
  PubSubHub pubsub_;
  Tracking tracking_;  // before key_events_, which reports to it
  KeyEvents key_events_{&pubsub_, &tracking_};
  LiveClients live_clients_;
  net::PortLimit port_limit_;
  RespTls tls_{opts_.tls};
  int bound_port_ = 0;
  net::LogHub* log_ = nullptr;
  ObufLimits obuf_limits_;
  WatchRegistry watches_;
  BlockRegistry blocks_;
  ScriptCache scripts_;
  FunctionLibraries functions_;
  BusyScripts busy_scripts_;
  protocol::ClientPause pause_;
  const HistogramSlots* slots_;
  SlowLog slowlog_;
  LatencyMonitor latency_;
  // min(slowlog-log-slower-than as unsigned, so -1 never matches;
  // latency-monitor-threshold in µs, or never when 0). Relaxed: a command
  // racing a CONFIG SET may use either value. Recomputed under mu_.
  std::atomic<uint64_t> record_above_us_{10000};
  mutable Mutex mu_{LockRank::kLeaf};
  std::vector<std::unique_ptr<WorkerStats>> stats_ GUARDED_BY(mu_);
  std::vector<engine::ThreadStats*> thread_stats_ GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Sink>> mc_sinks_ GUARDED_BY(mu_);
  // Last: destroyed first, so its reaper thread stops before the services it
  // publishes through (key events, tracking, pub/sub) go away.
  HashFieldExpiry hash_field_expiry_{this};
};

}  // namespace trove::resp
