// RespTls (tls_settings.h): Redis's tls-* settings, checked in Redis's
// words, and the context built from them.
#include "protocol/resp/services/tls_settings.h"

#include <cctype>
#include <cstdlib>

namespace trove::resp {
namespace {

std::string Lower(std::string_view v) {
  std::string s(v);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool ParseInt(std::string_view v, int64_t lo, int64_t hi, int64_t* out, std::string* err) {
  if (v.empty() || v.size() > 20) {
    *err = "argument couldn't be parsed into an integer";
    return false;
  }
  std::string s(v);
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(s.c_str(), &end, 10);  // NOLINT(runtime/int)
  if (errno != 0 || end != s.c_str() + s.size()) {
    *err = "argument couldn't be parsed into an integer";
    return false;
  }
  if (n < lo || n > hi) {
    *err = "argument must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
           " inclusive";
    return false;
  }
  *out = n;
  return true;
}

bool ParseBool(std::string_view v, bool* out, std::string* err) {
  const std::string s = Lower(v);
  if (s != "yes" && s != "no") {
    *err = "argument must be 'yes' or 'no'";
    return false;
  }
  *out = s == "yes";
  return true;
}

// Redis's tls-protocols: space-separated TLSv1, TLSv1.1, TLSv1.2, TLSv1.3
// in any case; empty: TLSv1.2 and TLSv1.3.
bool ParseProtocols(std::string_view v, int* mask, std::string* err) {
  if (v.empty()) {
    *mask = (1 << 2) | (1 << 3);
    return true;
  }
  int m = 0;
  size_t start = 0;
  while (start <= v.size()) {
    const size_t sp = v.find(' ', start);
    const std::string tok = Lower(v.substr(start, sp == std::string_view::npos ? v.npos : sp - start));
    if (tok == "tlsv1") {
      m |= 1 << 0;
    } else if (tok == "tlsv1.1") {
      m |= 1 << 1;
    } else if (tok == "tlsv1.2") {
      m |= 1 << 2;
    } else if (tok == "tlsv1.3") {
      m |= 1 << 3;
    } else {
      *err = "Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', "
             "'TLSv1.2' and 'TLSv1.3'.";
      return false;
    }
    if (sp == std::string_view::npos) break;
    start = sp + 1;
  }
  *mask = m;
  return true;
}

// The settings a context is built from; the others (tls-auth-clients,
// tls-auth-clients-user) apply per connection, and those naming features
// Trove lacks (replication, cluster, outgoing TLS) only accept "off".
bool RebuildsContext(std::string_view n) {
  return n != "tls-port" && n != "tls-auth-clients" && n != "tls-auth-clients-user" &&
         n != "tls-replication" && n != "tls-cluster" && n.rfind("tls-client-", 0) != 0;
}

// File names load again when set to the same value (a renewed certificate).
bool IsFile(std::string_view n) {
  return n == "tls-cert-file" || n == "tls-key-file" || n == "tls-ca-cert-file" ||
         n == "tls-ca-cert-dir" || n == "tls-dh-params-file";
}

constexpr const char* kAuthClients[] = {"no", "yes", "optional"};

}  // namespace

RespTls::RespTls(RespTlsConfig cfg)
    : cfg_(std::move(cfg)), verify_(0), auth_user_cn_(false) {
  MutexLock l(&mu_);
  // tls-auth-clients as memcached's verify modes: none, require, request.
  static constexpr int kVerify[] = {0, 2, 1};
  verify_.store(kVerify[cfg_.auth_clients], std::memory_order_relaxed);
  auth_user_cn_.store(cfg_.auth_user_cn, std::memory_order_relaxed);
}

const std::vector<std::string_view>& RespTls::Names() {
  static const std::vector<std::string_view> kNames = {
      "tls-port", "tls-cert-file", "tls-key-file", "tls-key-file-pass",
      "tls-client-cert-file", "tls-client-key-file", "tls-client-key-file-pass",
      "tls-dh-params-file", "tls-ca-cert-file", "tls-ca-cert-dir", "tls-protocols",
      "tls-ciphers", "tls-ciphersuites", "tls-prefer-server-ciphers", "tls-session-caching",
      "tls-session-cache-size", "tls-session-cache-timeout", "tls-auth-clients",
      "tls-auth-clients-user", "tls-replication", "tls-cluster"};
  return kNames;
}

bool RespTls::IsName(std::string_view name) {
  for (std::string_view n : Names())
    if (n == name) return true;
  return false;
}

bool RespTls::ToSettings(const RespTlsConfig& c, net::TlsSettings* s, std::string* err) {
  if (c.cert_file.empty()) {
    *err = "No tls-cert-file configured!";
    return false;
  }
  if (c.key_file.empty()) {
    *err = "No tls-key-file configured!";
    return false;
  }
  if (c.auth_clients != 0 && c.ca_cert_file.empty() && c.ca_cert_dir.empty()) {
    *err = "Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, "
           "tls-replication or tls-auth-clients are enabled!";
    return false;
  }
  net::TlsSettings t;
  if (!ParseProtocols(c.protocols, &t.protocols, err)) return false;
  t.chain_cert = c.cert_file;
  t.key = c.key_file;
  t.key_pass = c.key_file_pass;
  t.ca_cert = c.ca_cert_file;
  t.ca_dir = c.ca_cert_dir;
  t.send_ca_list = false;  // Redis names no CAs to its clients
  t.verify_mode = 2;       // each connection sets its own (tls-auth-clients)
  t.ciphers = c.ciphers;
  t.ciphersuites = c.ciphersuites;
  t.prefer_server_ciphers = c.prefer_server_ciphers;
  t.session_cache = c.session_caching;
  t.session_cache_size = c.session_cache_size;
  t.session_cache_timeout = c.session_cache_timeout;
  t.dh_params = c.dh_params_file;
  *s = std::move(t);
  return true;
}

bool RespTls::Start(std::string* err) {
  MutexLock l(&mu_);
  net::TlsSettings s;
  return ToSettings(cfg_, &s, err) && holder_.Reload(s, err);
}

bool RespTls::ParseOption(RespTlsConfig* c, std::string_view name, std::string_view value,
                          std::string* err) {
  if (name == "tls-port") {
    int64_t port = 0;
    if (!ParseInt(value, 0, 65535, &port, err)) return false;
    c->port = static_cast<int>(port);
    return true;
  }
  return Apply(c, name, value, err);
}

bool RespTls::Apply(RespTlsConfig* c, std::string_view n, std::string_view v, std::string* err) {
  int64_t num = 0;
  bool on = false;
  std::string* str = n == "tls-cert-file"        ? &c->cert_file
                     : n == "tls-key-file"       ? &c->key_file
                     : n == "tls-key-file-pass"  ? &c->key_file_pass
                     : n == "tls-ca-cert-file"   ? &c->ca_cert_file
                     : n == "tls-ca-cert-dir"    ? &c->ca_cert_dir
                     : n == "tls-protocols"      ? &c->protocols
                     : n == "tls-ciphers"        ? &c->ciphers
                     : n == "tls-ciphersuites"   ? &c->ciphersuites
                     : n == "tls-dh-params-file" ? &c->dh_params_file
                                                 : nullptr;
  if (str != nullptr) {
    *str = std::string(v);
  } else if (n == "tls-port") {
    if (!ParseInt(v, 0, 65535, &num, err)) return false;
    if (num != c->port) {
      *err = "can't set immutable config";
      return false;
    }
  } else if (n.rfind("tls-client-", 0) == 0) {
    if (!v.empty()) {
      *err = "Trove makes no outgoing TLS connections; only \"\" is accepted";
      return false;
    }
  } else if (n == "tls-replication" || n == "tls-cluster") {
    if (!ParseBool(v, &on, err)) return false;
    if (on) {
      *err = n == "tls-cluster" ? "Trove has no cluster bus; only 'no' is accepted"
                                : "Trove has no replication; only 'no' is accepted";
      return false;
    }
  } else if (n == "tls-prefer-server-ciphers" || n == "tls-session-caching") {
    if (!ParseBool(v, &on, err)) return false;
    (n == "tls-session-caching" ? c->session_caching : c->prefer_server_ciphers) = on;
  } else if (n == "tls-session-cache-size" || n == "tls-session-cache-timeout") {
    if (!ParseInt(v, 0, INT32_MAX, &num, err)) return false;
    (n == "tls-session-cache-size" ? c->session_cache_size : c->session_cache_timeout) = num;
  } else if (n == "tls-auth-clients") {
    const std::string s = Lower(v);
    int mode = -1;
    for (int i = 0; i < 3; ++i)
      if (s == kAuthClients[i]) mode = i;
    if (mode < 0) {
      *err = "argument(s) must be one of the following: no, yes, optional";
      return false;
    }
    c->auth_clients = mode;
  } else if (n == "tls-auth-clients-user") {
    const std::string s = Lower(v);
    if (s != "off" && s != "cn") {
      *err = "argument(s) must be one of the following: off, CN";
      return false;
    }
    c->auth_user_cn = s == "cn";
  } else {
    *err = "unknown TLS setting";
    return false;
  }
  return true;
}

bool RespTls::Set(const std::vector<std::pair<std::string, std::string>>& changes,
                  std::string* bad_name, std::string* err, bool* build_failed) {
  *build_failed = false;
  MutexLock l(&mu_);
  RespTlsConfig next = cfg_;
  bool rebuild = false;
  for (const auto& [name, value] : changes) {
    const std::string before = ValueOf(cfg_, name);
    if (!Apply(&next, name, value, err)) {
      *bad_name = name;
      return false;
    }
    if (RebuildsContext(name) && (IsFile(name) || value != before)) rebuild = true;
  }
  // As Redis: with the TLS port off nothing is built, the values are kept.
  if (rebuild && next.port != 0) {
    net::TlsSettings s;
    if (!ToSettings(next, &s, err) || !holder_.Reload(s, err)) {
      *bad_name = changes.front().first;
      *build_failed = true;
      return false;
    }
  }
  cfg_ = std::move(next);
  static constexpr int kVerify[] = {0, 2, 1};
  verify_.store(kVerify[cfg_.auth_clients], std::memory_order_relaxed);
  auth_user_cn_.store(cfg_.auth_user_cn, std::memory_order_relaxed);
  return true;
}

std::string RespTls::Get(std::string_view n) const {
  MutexLock l(&mu_);
  return ValueOf(cfg_, n);
}

std::string RespTls::ValueOf(const RespTlsConfig& c, std::string_view n) {
  auto yn = [](bool b) { return std::string(b ? "yes" : "no"); };
  if (n == "tls-port") return std::to_string(c.port);
  if (n == "tls-cert-file") return c.cert_file;
  if (n == "tls-key-file") return c.key_file;
  if (n == "tls-key-file-pass") return c.key_file_pass;
  if (n == "tls-ca-cert-file") return c.ca_cert_file;
  if (n == "tls-ca-cert-dir") return c.ca_cert_dir;
  if (n == "tls-protocols") return c.protocols;
  if (n == "tls-ciphers") return c.ciphers;
  if (n == "tls-ciphersuites") return c.ciphersuites;
  if (n == "tls-dh-params-file") return c.dh_params_file;
  if (n == "tls-prefer-server-ciphers") return yn(c.prefer_server_ciphers);
  if (n == "tls-session-caching") return yn(c.session_caching);
  if (n == "tls-session-cache-size") return std::to_string(c.session_cache_size);
  if (n == "tls-session-cache-timeout") return std::to_string(c.session_cache_timeout);
  if (n == "tls-auth-clients") return kAuthClients[c.auth_clients];
  if (n == "tls-auth-clients-user") return c.auth_user_cn ? "CN" : "off";
  if (n == "tls-replication" || n == "tls-cluster") return "no";
  return "";  // tls-client-*: never set
}

int RespTls::port() const {
  MutexLock l(&mu_);
  return cfg_.port;
}

void RespTls::set_bound_port(int port) {
  MutexLock l(&mu_);
  cfg_.port = port;
}

}  // namespace trove::resp
