// Plain data shared by the proxy's config thread, its workers and its IO
// thread: backend and pool descriptions made by the config VM, the global
// rate limiter, the value copied from the config VM into each worker VM,
// and the proxy's settings. Immutable once published, except GlobalTbf
// (its own mutex) and the counters (atomics).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/mutex.h"
#include "protocol/memcache/request_classify.h"
#include "proxy/hash_dist.h"

namespace trove::proxy {

// memcached's CMD_* numbers and the request classifier live with the
// memcached parsers (protocol/memcache/request_classify.h).
using namespace memcache::cmd;  // NOLINT: kCmd* and CmdOf read as one vocabulary here

// Lamping and Veach's jump consistent hash, as memcached's proxy uses it
// over XXH3-64 of the key (seed 0): the bucket in [0, buckets).
inline int32_t JumpHash(uint64_t key, int32_t buckets) {
  int64_t b = -1, j = 0;
  while (j < buckets) {
    b = j;
    key = key * 2862933555777941757ULL + 1;
    j = static_cast<int64_t>(static_cast<double>(b + 1) *
                             (static_cast<double>(int64_t{1} << 31) /
                              static_cast<double>((key >> 33) + 1)));
  }
  return static_cast<int32_t>(b);
}

// Backend tunables (memcached's struct proxy_tunables for one backend).
struct BackendOptions {
  double connect_timeout = 5;
  double retry_waittime = 3;
  double read_timeout = 3;
  double flap_time = 0;
  double flap_backoff_ramp = 1.5;
  uint32_t flap_backoff_max = 3600;
  int failure_limit = 3;
  int depth_limit = 0;
  int connections = 1;
  bool down = false;
  bool tcp_keepalive = false;
  bool tls = false;  // tls=true / mcp.backend_use_tls(true): TLS to this backend
  // log={...}
  bool log = false;
  int log_rate = 0;
  bool log_errors = false;
  int64_t log_deadline_ms = 0;
  std::string log_tag;
  bool operator==(const BackendOptions&) const = default;
};

// One mcp.backend(): immutable once the config VM made it.
struct BackendSpec {
  std::string label, host, port;
  BackendOptions opts;
  // A pool's `beprefix`: part of Key() only, so that a pool with one gets
  // sockets of its own (memcached's backend cache label); logs and stats
  // keep the label.
  std::string key_prefix;
  // Equal keys denote the same backend (reused across reloads).
  std::string Key() const;
};

// One mcp.pool(): its backends in order (the distribution's indexes) and
// how a key picks one (hash_dist.h).
struct PoolSpec {
  std::vector<std::shared_ptr<const BackendSpec>> backends;
  bool use_iothread = false;
  KeySelector selector;
};

// mcp.ratelim_global_tbf: one bucket for every worker.
// Thread safety: Take from any thread (mu_).
class GlobalTbf {
 public:
  GlobalTbf(int64_t limit, int64_t fillrate, int64_t tickrate_ms, int64_t now_ms)
      : limit_(limit), fill_(fillrate), tick_(tickrate_ms), bucket_(limit), last_(now_ms) {}
  bool Take(int64_t n, int64_t now_ms) {
    MutexLock l(&mu_);
    return TbfTake(&bucket_, &last_, limit_, fill_, tick_, n, now_ms);
  }
  // memcached's token bucket arithmetic (proxy_ratelim.c): whole ticks only,
  // and a request passes only while the bucket holds more than it costs.
  static bool TbfTake(int64_t* bucket, int64_t* last, int64_t limit, int64_t fill, int64_t tick,
                      int64_t n, int64_t now_ms) {
    const int64_t delta = now_ms - *last;
    if (tick > 0 && delta > tick) {
      const int64_t ticks = delta / tick;
      *bucket += ticks * fill;
      if (*bucket > limit) *bucket = limit;
      *last += ticks * tick;
    }
    if (*bucket > n) {
      *bucket -= n;
      return true;
    }
    return false;
  }

 private:
  const int64_t limit_, fill_, tick_;
  Mutex mu_{LockRank::kLeaf};
  int64_t bucket_ GUARDED_BY(mu_);
  int64_t last_ GUARDED_BY(mu_);
};

// A Lua value copied out of the config VM (what mcp_config_pools returned),
// rebuilt in each worker VM for mcp_config_routes.
struct CopiedValue {
  // Special members out of line (proxy_types.cc): `table` holds pairs of
  // this type, which is complete only there (clang checks it here).
  CopiedValue();
  CopiedValue(const CopiedValue&);
  CopiedValue(CopiedValue&&) noexcept;
  CopiedValue& operator=(const CopiedValue&);
  CopiedValue& operator=(CopiedValue&&) noexcept;
  ~CopiedValue();

  enum Kind : uint8_t { kNil, kBool, kInt, kNum, kStr, kTable, kPool, kGlobalTbf } kind = kNil;
  bool b = false;
  int64_t i = 0;
  double d = 0;
  std::string s;
  std::vector<std::pair<CopiedValue, CopiedValue>> table;  // key, value
  std::shared_ptr<const PoolSpec> pool;
  std::shared_ptr<GlobalTbf> tbf;
};

// Process-wide proxy settings the config VM sets (global mcp.* setters).
struct ProxySettings {
  BackendOptions backend_defaults;  // backend_*_timeout, failure_limit, depth_limit, ...
  bool use_iothread = false;        // mcp.backend_use_iothread: the pools' default
  int64_t active_req_limit = 0;
  int64_t buffer_memory_limit_kb = 0;  // mcp.buffer_memory_limit; 0: none
  // mcp.luagc_ratio: how far a worker VM may grow past its size after its
  // last major collection before the next one (memcached's default 2.0,
  // at least 1.1).
  double gc_ratio = 2.0;
  // mcp.stat_limit: the highest index mcp.add_stat accepts.
  int64_t max_ustats = 1024;
};

// User stats names (mcp.add_stat): index 1..max_ustats -> name ("" =
// unused). kMaxUstats is memcached's default limit; mcp.stat_limit may
// raise it up to kMaxUstatsCap, the size of each worker's counter array
// (fixed, so that the stats thread reads it without a lock).
inline constexpr int kMaxUstats = 1024;
inline constexpr int kMaxUstatsCap = 8192;
inline constexpr size_t kMaxUstatName = 122;

// What the config thread hands to each worker on a (re)load.
struct ConfigGeneration {
  uint64_t gen = 0;
  std::vector<std::pair<std::string, std::string>> chunks;  // (name, source)
  CopiedValue pools;  // mcp_config_pools' result
  ProxySettings settings;
  std::vector<std::string> ustat_names;  // index 0 unused
};

}  // namespace trove::proxy
