// TlsContext: one immutable server-side TLS configuration (an OpenSSL
// SSL_CTX built from TlsSettings), and TlsContextHolder, the current one
// of a listener family, swapped whole on reload. Design and the peers'
// behaviour: docs/adr/0008-tls.md. Not yet wired to a listener (issue 40).
//
// Thread safety: a TlsContext is immutable after Build and may be used by
// any thread (OpenSSL's SSL_CTX is safe for concurrent SSL_new once no
// longer modified); TlsContextHolder's methods take its mutex (a leaf).
#pragma once

#include <memory>
#include <string>

#include "common/mutex.h"

struct ssl_ctx_st;  // OpenSSL's SSL_CTX

namespace trove::net {

// memcached's -o ssl_* options, as plain values (their defaults).
struct TlsSettings {
  std::string chain_cert;  // ssl_chain_cert: PEM certificate chain
  std::string key;         // ssl_key: private key (empty: in the chain file)
  int keyformat = 1;       // ssl_keyformat: 1 PEM, 2 DER (OpenSSL's SSL_FILETYPE_*)
  int verify_mode = 0;     // ssl_verify_mode: 0 none, 1 request, 2 require, 3 once
  std::string ca_cert;     // ssl_ca_cert: PEM file of accepted client CAs
  std::string ciphers;     // ssl_ciphers: OpenSSL cipher list (empty: OpenSSL's)
  int min_version = 2;     // ssl_min_version: 0-3 = TLS 1.0-1.3
  bool session_cache = false;  // ssl_session_cache: server-side resumption
  bool kernel_tls = false;     // ssl_kernel_tls: SSL_OP_ENABLE_KTLS
  // Redis's further settings (the defaults leave memcached's behaviour).
  std::string key_pass;        // tls-key-file-pass: the key file's passphrase
  std::string ca_dir;          // tls-ca-cert-dir: a hashed CA directory
  // tls-protocols: bit v set = TLS 1.v allowed (bit 0 TLS 1.0); 0 = every
  // version from min_version up.
  int protocols = 0;
  std::string ciphersuites;    // tls-ciphersuites (TLS 1.3)
  bool prefer_server_ciphers = false;
  int64_t session_cache_size = -1;     // -1: OpenSSL's (20480)
  int64_t session_cache_timeout = -1;  // seconds; -1: OpenSSL's (300)
  std::string dh_params;       // tls-dh-params-file (empty: OpenSSL's automatic groups)
  bool send_ca_list = true;    // memcached names its CAs to clients; Redis does not
};

// memcached's names for ssl_min_version 0-3 ("tlsv1.2"), "unknown" else.
const char* TlsVersionName(int min_version);
// OpenSSL's SSL_VERIFY_* flags for ssl_verify_mode 0-3 (0 for others).
int TlsVerifyFlags(int verify_mode);

class TlsContext {
 public:
  // A server context for s: certificate chain, key, key check, CA list,
  // verify mode, minimum version, ciphers, session cache, no
  // renegotiation. Null with *err in memcached's words ("Error loading the
  // key: <file> : <OpenSSL's reason>") when any step fails.
  static std::shared_ptr<const TlsContext> Build(const TlsSettings& s, std::string* err);
  // A client context for the proxy's backends, as memcached's
  // mcp.init_tls(): TLS 1.3 at least, no certificate checks (backends are
  // named by address), idle buffers released.
  static std::shared_ptr<const TlsContext> BuildClient(std::string* err);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  ssl_ctx_st* ctx() const { return ctx_; }
  const TlsSettings& settings() const { return settings_; }

 private:
  TlsContext(ssl_ctx_st* ctx, TlsSettings s) : ctx_(ctx), settings_(std::move(s)) {}
  ssl_ctx_st* ctx_;
  TlsSettings settings_;
};

// The context new connections of a listener family take. A reload builds
// a complete new context and swaps it in, or keeps the old one and
// returns the error: never a half-loaded listener; connections keep the
// context they were accepted with.
class TlsContextHolder {
 public:
  std::shared_ptr<const TlsContext> current() const EXCLUDES(mu_);
  // Builds from s; false with *err (the current context stays).
  bool Reload(const TlsSettings& s, std::string* err) EXCLUDES(mu_);
  // The monotonic second of the last successful (re)load, 0 never.
  int64_t loaded_at() const EXCLUDES(mu_);

 private:
  mutable Mutex mu_{LockRank::kLeaf};
  std::shared_ptr<const TlsContext> current_ GUARDED_BY(mu_);
  int64_t loaded_at_ GUARDED_BY(mu_) = 0;
};

}  // namespace trove::net
