// RespTls: Redis's tls-* settings of the RESP TLS port (tls-port) and the
// context its connections take. CONFIG SET of a file or setting builds a
// whole new context and swaps it for new connections, or fails and keeps
// the old one (docs/tls.md, docs/adr/0008-tls.md).
//
// Thread safety: every method may run on any thread. mu_ (rank kStats)
// orders CONFIG SETs and is held while a context builds; the holder's own
// leaf mutex is taken under it (net::TlsContextHolder). auth_clients and
// auth_user_cn are atomics read per accepted connection.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "net/tls_context.h"

namespace trove::resp {

// The values as Redis keeps them (CONFIG GET prints these).
struct RespTlsConfig {
  int port = 0;  // tls-port: 0 = no TLS listener
  std::string cert_file, key_file, key_file_pass, ca_cert_file, ca_cert_dir;
  std::string protocols, ciphers, ciphersuites, dh_params_file;
  bool prefer_server_ciphers = false;
  bool session_caching = true;
  int64_t session_cache_size = 20480;
  int64_t session_cache_timeout = 300;
  int auth_clients = 1;       // 0 no, 1 yes, 2 optional
  bool auth_user_cn = false;  // tls-auth-clients-user CN
};

class RespTls {
 public:
  explicit RespTls(RespTlsConfig cfg);

  // At start, with a TLS port: builds the first context. False with *err
  // (Redis's log words, or OpenSSL's reason naming the file).
  bool Start(std::string* err) EXCLUDES(mu_);

  // Redis's names of the settings (tls-port included), in CONFIG's order.
  static const std::vector<std::string_view>& Names();
  static bool IsName(std::string_view name);
  // A command-line --tls-* option into c (tls-port included); false with
  // *err in Redis's words.
  static bool ParseOption(RespTlsConfig* c, std::string_view name, std::string_view value,
                          std::string* err);
  // CONFIG GET's value of one of Names().
  std::string Get(std::string_view name) const EXCLUDES(mu_);

  // CONFIG SET of several tls-* settings together: each value is checked
  // (false, *bad_name and *err in Redis's words), then a context is built
  // from all of them at once if the TLS port is on and any setting it is
  // made from was given (a file name rebuilds even when unchanged: that is
  // how a renewed certificate is loaded). A failed build keeps everything
  // as it was: *build_failed, and *err holds OpenSSL's reason for the log.
  bool Set(const std::vector<std::pair<std::string, std::string>>& changes, std::string* bad_name,
           std::string* err, bool* build_failed) EXCLUDES(mu_);

  net::TlsContextHolder* holder() { return &holder_; }
  // The verify mode tls-auth-clients asks of each new connection (memcached's
  // 0 none, 1 request, 2 require), read per accept.
  const std::atomic<int>* verify_mode() const { return &verify_; }
  bool auth_user_cn() const { return auth_user_cn_.load(std::memory_order_relaxed); }
  int port() const EXCLUDES(mu_);
  void set_bound_port(int port) EXCLUDES(mu_);

 private:
  // Redis's checks and the settings a context is built from.
  static bool ToSettings(const RespTlsConfig& c, net::TlsSettings* s, std::string* err);
  static std::string ValueOf(const RespTlsConfig& c, std::string_view name);
  static bool Apply(RespTlsConfig* c, std::string_view name, std::string_view value,
                    std::string* err);

  mutable Mutex mu_{LockRank::kStats};
  RespTlsConfig cfg_ GUARDED_BY(mu_);
  net::TlsContextHolder holder_;
  std::atomic<int> verify_;
  std::atomic<bool> auth_user_cn_;
};

}  // namespace trove::resp
