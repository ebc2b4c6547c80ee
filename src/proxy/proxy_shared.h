// What every proxy thread shares: the event log, the process-wide proxy
// counters and the per-label count of bad backends (`stats proxybe`).
// Thread safety: counters are relaxed atomics; the label map has its mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "net/log_hub.h"
#include "net/tls_context.h"

namespace trove::proxy {

struct ProxyCounters {
  std::atomic<uint64_t> config_reloads{0};
  std::atomic<uint64_t> config_reload_fails{0};
  std::atomic<uint64_t> config_cron_runs{0};
  std::atomic<uint64_t> config_cron_fails{0};
  std::atomic<uint64_t> request_failed_depth{0};
  std::atomic<uint64_t> backend_total{0};
  std::atomic<uint64_t> backend_marked_bad{0};
  std::atomic<uint64_t> backend_failed{0};
};

class ProxyShared {
 public:
  explicit ProxyShared(net::LogHub* log) : log_(log) {}
  net::LogHub* log() const { return log_; }
  ProxyCounters& counters() { return counters_; }
  // "type=proxy_*" lines for `watch proxyevents` / `proxyuser`.
  void Log(net::LogType t, std::string_view body) {
    if (log_ != nullptr) log_->Log(t, body);
  }
  bool Watching(net::LogType t) const { return log_ != nullptr && log_->Wants(t); }
  // A backend connection of `label` became bad (+1) or healthy again (-1).
  void BadDelta(const std::string& label, int d) {
    MutexLock l(&mu_);
    int64_t& v = bad_[label];
    v += d;
    if (v <= 0) bad_.erase(label);
  }
  std::vector<std::pair<std::string, int64_t>> BadLabels() const {
    MutexLock l(&mu_);
    return {bad_.begin(), bad_.end()};
  }
  // mcp.init_tls(): the backends' client context, made once and kept for
  // the process (reloads reuse it). Backends read it at each connect.
  bool InitClientTls(std::string* err) {
    MutexLock l(&mu_);
    if (client_tls_ != nullptr) return true;
    client_tls_ = net::TlsContext::BuildClient(err);
    return client_tls_ != nullptr;
  }
  std::shared_ptr<const net::TlsContext> client_tls() const {
    MutexLock l(&mu_);
    return client_tls_;
  }

 private:
  net::LogHub* const log_;
  ProxyCounters counters_;
  mutable Mutex mu_{LockRank::kLeaf};
  std::map<std::string, int64_t> bad_ GUARDED_BY(mu_);
  std::shared_ptr<const net::TlsContext> client_tls_ GUARDED_BY(mu_);
};

}  // namespace trove::proxy
