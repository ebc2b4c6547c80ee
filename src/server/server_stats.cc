// The server's part of memcached's `stats` and `stats settings` (the lines
// memcached's server_stats and process_stat_settings print, TLS's
// included), in memcached 1.6.45's order. Any thread (net::ServerServices).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/str_append.h"
#include "protocol/memcache/memcache_protocol.h"
#include "server/server.h"

namespace trove::server {
namespace {

std::string Num(uint64_t v) {
  std::string s;
  AppendU64(s, v);
  return s;
}

std::string Rusage(const timeval& tv) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%ld.%06ld", static_cast<long>(tv.tv_sec),
                static_cast<long>(tv.tv_usec));
  return buf;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> Server::ServerStats() {
  const net::NetCounters& c = net_->counters();
  int64_t now = clock_->UnixSeconds();
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  std::vector<std::pair<std::string, std::string>> s;
  s.reserve(20);
  s.emplace_back("pid", Num(static_cast<uint64_t>(::getpid())));
  s.emplace_back("uptime", Num(static_cast<uint64_t>(now - started_unix_)));
  s.emplace_back("time", Num(static_cast<uint64_t>(now)));
  s.emplace_back("version", kVersion);
  s.emplace_back("libevent", "none");
  s.emplace_back("pointer_size", Num(sizeof(void*) * 8));
  s.emplace_back("rusage_user", Rusage(ru.ru_utime));
  s.emplace_back("rusage_system", Rusage(ru.ru_stime));
  s.emplace_back("max_connections", Num(static_cast<uint64_t>(MaxConnections())));
  s.emplace_back("curr_connections", Num(c.curr_connections.load(std::memory_order_relaxed)));
  s.emplace_back("total_connections", Num(c.total_connections.load(std::memory_order_relaxed)));
  if (cfg_.maxconns_fast) {  // memcached prints it only then
    s.emplace_back("rejected_connections",
                   Num(c.rejected_connections.load(std::memory_order_relaxed)));
  }
  s.emplace_back("connection_structures",
                 Num(c.connection_structures.load(std::memory_order_relaxed)));
  // memcached's response objects: with -o read_buf_mem_limit, the replies
  // in flight that the limit counts (ResponseBudget); without it Trove keeps
  // none. The read-buffer pool: each connection owns its input buffer, so
  // nothing is counted there.
  const uint64_t live = responses_ != nullptr ? responses_->live() : 0;
  s.emplace_back("response_obj_oom", Num(responses_ != nullptr ? responses_->oom() : 0));
  s.emplace_back("response_obj_count", Num(live));
  s.emplace_back("response_obj_bytes",
                 Num(live * static_cast<uint64_t>(memcache::ResponseBudget::kResponseCost)));
  for (const char* k : {"read_buf_count", "read_buf_bytes", "read_buf_bytes_free",
                        "read_buf_oom"}) {
    s.emplace_back(k, "0");
  }
  // memcached reserves a few fds for itself; ours: listeners, epoll and
  // eventfds, a handful per worker.
  s.emplace_back("reserved_fds", Num(static_cast<uint64_t>(5 + 3 * cfg_.num_threads)));
  if (proxy_ != nullptr) {
    for (auto& kv : proxy_->GeneralStats()) s.push_back(std::move(kv));
  }
  s.emplace_back("threads", Num(static_cast<uint64_t>(cfg_.num_threads)));
  s.emplace_back("conn_yields", Num(c.conn_yields.load(std::memory_order_relaxed)));
  s.emplace_back("bytes_read", Num(net_->BytesRead()));
  s.emplace_back("bytes_written", Num(net_->BytesWritten()));
  s.emplace_back("accepting_conns", started_ && !stopped_ ? "1" : "0");
  s.emplace_back("listen_disabled_num", Num(c.listen_disabled.load(std::memory_order_relaxed)));
  // Summed when accepting resumes (Acceptor::TryResume).
  s.emplace_back("time_in_listen_disabled_us",
                 Num(c.listen_disabled_us.load(std::memory_order_relaxed)));
  if (cfg_.idle_timeout_s > 0) {  // memcached prints it only with -o idle_timeout
    s.emplace_back("idle_kicks", Num(c.idle_kicks.load(std::memory_order_relaxed)));
  }
  s.emplace_back("auth_cmds", "0");    // no SASL / ascii auth
  s.emplace_back("auth_errors", "0");
  // memcached counts these for NAPI-ID worker selection, which Trove does not do.
  if (cfg_.ssl_enabled) {  // memcached's TLS counters, only with -Z
    if (cfg_.ssl.session_cache)
      s.emplace_back("ssl_new_sessions", Num(c.ssl_new_sessions.load(std::memory_order_relaxed)));
    s.emplace_back("ssl_handshake_errors", Num(c.ssl_handshake_errors.load(std::memory_order_relaxed)));
    s.emplace_back("ssl_proto_errors", Num(c.ssl_proto_errors.load(std::memory_order_relaxed)));
    const int64_t now_s = SystemClock::Default()->MonoNanos() / 1000000000;
    s.emplace_back("time_since_server_cert_refresh",
                   Num(static_cast<uint64_t>(std::max<int64_t>(0, now_s - mc_tls_.loaded_at()))));
  }
  s.emplace_back("unexpected_napi_ids", "0");
  s.emplace_back("round_robin_fallback", "0");
  return s;
}

std::vector<std::pair<std::string, std::string>> Server::SettingsStats() {
  std::vector<std::pair<std::string, std::string>> s;
  auto yn = [](bool b) { return std::string(b ? "yes" : "no"); };
  s.emplace_back("maxconns", Num(static_cast<uint64_t>(MaxConnections())));
  s.emplace_back("tcpport", Num(static_cast<uint64_t>(mc_port_ >= 0 ? mc_port_ : 0)));
  s.emplace_back("udpport", Num(static_cast<uint64_t>(cfg_.udp_port)));
  std::string inter;
  for (const std::string& l : cfg_.listen) {
    if (!inter.empty()) inter += ',';
    inter += l;
  }
  s.emplace_back("inter", inter.empty() ? "NULL" : inter);
  s.emplace_back("verbosity", Num(static_cast<uint64_t>(verbosity())));
  s.emplace_back("oldest", "0");
  s.emplace_back("domain_socket", cfg_.unix_socket.empty() ? "NULL" : cfg_.unix_socket);
  char mask[8];
  std::snprintf(mask, sizeof(mask), "%o", cfg_.unix_mask);
  s.emplace_back("umask", mask);
  s.emplace_back("shutdown_command", yn(cfg_.enable_shutdown));
  s.emplace_back("num_threads", Num(static_cast<uint64_t>(cfg_.num_threads)));
  s.emplace_back("num_threads_per_udp", Num(static_cast<uint64_t>(cfg_.num_threads)));
  s.emplace_back("stat_key_prefix", std::string(1, cfg_.prefix_delimiter));
  s.emplace_back("detail_enabled", yn(cfg_.detail_enabled));
  s.emplace_back("reqs_per_event", Num(static_cast<uint64_t>(cfg_.reqs_per_event)));
  s.emplace_back("cas_enabled", yn(cfg_.use_cas));
  s.emplace_back("tcp_backlog", Num(static_cast<uint64_t>(cfg_.backlog)));
  s.emplace_back("binding_protocol", cfg_.protocol == "ascii" ? "ascii" : "auto-negotiate");
  s.emplace_back("auth_enabled_sasl", "no");
  s.emplace_back("auth_enabled_ascii", "no");
  s.emplace_back("item_size_max", Num(cfg_.item_size_max));
  s.emplace_back("maxconns_fast", yn(cfg_.maxconns_fast));
  s.emplace_back("hash_algorithm", cfg_.hash_algorithm);
  s.emplace_back("tail_repair_time", Num(static_cast<uint64_t>(cfg_.tail_repair_time)));
  s.emplace_back("flush_enabled", yn(!cfg_.disable_flush_all));
  s.emplace_back("dump_enabled", yn(!cfg_.disable_dumping));
  s.emplace_back("idle_timeout", Num(static_cast<uint64_t>(cfg_.idle_timeout_s)));
  s.emplace_back("watcher_logbuf_size", Num(cfg_.watcher_logbuf_kb * 1024));
  s.emplace_back("worker_logbuf_size", Num(cfg_.worker_logbuf_kb * 1024));
  s.emplace_back("read_buf_mem_limit", Num(cfg_.read_buf_mem_limit));
  s.emplace_back("lru_segmented", yn(cfg_.lru_segmented));
  s.emplace_back("resp_port", Num(static_cast<uint64_t>(resp_port_ >= 0 ? resp_port_ : 0)));
  // on | off | off_default_port_in_use (the default port was taken at start).
  s.emplace_back("resp_status", resp_status_);
  // memcached (a TLS build) prints its TLS settings with or without -Z.
  auto or_null = [](const std::string& v, const char* none) { return v.empty() ? std::string(none) : v; };
  s.emplace_back("ssl_enabled", yn(cfg_.ssl_enabled));
  s.emplace_back("ssl_chain_cert", or_null(cfg_.ssl.chain_cert, "(null)"));
  s.emplace_back("ssl_key", or_null(cfg_.ssl.key, "(null)"));
  s.emplace_back("ssl_verify_mode", Num(static_cast<uint64_t>(net::TlsVerifyFlags(cfg_.ssl.verify_mode))));
  s.emplace_back("ssl_keyformat", std::to_string(cfg_.ssl.keyformat));
  s.emplace_back("ssl_ciphers", or_null(cfg_.ssl.ciphers, "NULL"));
  s.emplace_back("ssl_ca_cert", or_null(cfg_.ssl.ca_cert, "NULL"));
  s.emplace_back("ssl_wbuf_size", Num(cfg_.ssl_wbuf_size));
  s.emplace_back("ssl_session_cache", yn(cfg_.ssl.session_cache));
  s.emplace_back("ssl_kernel_tls", yn(cfg_.ssl.kernel_tls));
  s.emplace_back("ssl_min_version", net::TlsVersionName(cfg_.ssl.min_version));
  // memcached (a proxy build) prints these just before memory_file;
  // Trove refuses -o proxy_uring.
  s.emplace_back("proxy_enabled", yn(proxy_ != nullptr));
  s.emplace_back("proxy_uring_enabled", "no");
  // memcached prints a NULL string through printf: "(null)" without -e.
  s.emplace_back("memory_file", cfg_.memory_file.empty() ? "(null)" : cfg_.memory_file);
  return s;
}

}  // namespace trove::server
