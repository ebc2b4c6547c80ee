// TlsContext and TlsContextHolder (tls_context.h).
#include "net/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "common/clock.h"


namespace trove::net {
namespace {

// The oldest queued OpenSSL error, as text; the queue is emptied.
std::string OpenSslError() {
  const unsigned long e = ERR_get_error();  // NOLINT(runtime/int): OpenSSL's type
  std::string s;
  if (e != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    s = buf;
  }
  ERR_clear_error();
  return s;
}

// memcached's ssl_verify_mode 0-3 as OpenSSL's flags: none, request,
// require, once.
constexpr int kVerifyFlags[] = {
    SSL_VERIFY_NONE, SSL_VERIFY_PEER, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
    SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT | SSL_VERIFY_CLIENT_ONCE};

// memcached's ssl_min_version 0-3: OpenSSL's version and the name stats print.
struct TlsVersion {
  int openssl;
  const char* name;
};
constexpr TlsVersion kVersions[] = {{TLS1_VERSION, "tlsv1.0"},
                                    {TLS1_1_VERSION, "tlsv1.1"},
                                    {TLS1_2_VERSION, "tlsv1.2"},
                                    {TLS1_3_VERSION, "tlsv1.3"}};

// Loads chain, key, key check and CA into ctx, in memcached's order and words.
bool LoadCertificates(SSL_CTX* ctx, const TlsSettings& s, std::string* err) {
  if (SSL_CTX_use_certificate_chain_file(ctx, s.chain_cert.c_str()) != 1) {
    *err = "Error loading the certificate chain: " + s.chain_cert + " : " + OpenSslError();
    return false;
  }
  // OpenSSL serves an expired certificate without a word; every client
  // would then fail. Refused here, as a clear start-up or reload error.
  X509* leaf = SSL_CTX_get0_certificate(ctx);
  if (leaf != nullptr && X509_cmp_current_time(X509_get0_notAfter(leaf)) < 0) {
    *err = "Error loading the certificate chain: " + s.chain_cert + " : the certificate has expired";
    return false;
  }
  const std::string& key = s.key.empty() ? s.chain_cert : s.key;
  // The passphrase is needed while the key loads only; OpenSSL keeps the
  // pointer, so it is cleared again right after.
  SSL_CTX_set_default_passwd_cb_userdata(ctx, const_cast<char*>(s.key_pass.c_str()));
  const bool key_ok = SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), s.keyformat) == 1;
  SSL_CTX_set_default_passwd_cb_userdata(ctx, nullptr);
  if (!key_ok) {
    *err = "Error loading the key: " + key + " : " + OpenSslError();
    return false;
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    *err = "Error validating the certificate: " + OpenSslError();
    return false;
  }
  if (!s.ca_cert.empty() || !s.ca_dir.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, s.ca_cert.empty() ? nullptr : s.ca_cert.c_str(),
                                      s.ca_dir.empty() ? nullptr : s.ca_dir.c_str()) != 1) {
      *err = "Error loading the CA certificate: " + (s.ca_cert.empty() ? s.ca_dir : s.ca_cert) +
             " : " + OpenSslError();
      return false;
    }
    if (s.send_ca_list && !s.ca_cert.empty())
      SSL_CTX_set_client_CA_list(ctx, SSL_load_client_CA_file(s.ca_cert.c_str()));
  }
  if (!s.dh_params.empty()) {
    BIO* bio = BIO_new_file(s.dh_params.c_str(), "r");
    EVP_PKEY* dh = bio != nullptr ? PEM_read_bio_Parameters(bio, nullptr) : nullptr;
    if (bio != nullptr) BIO_free(bio);
    if (dh == nullptr || SSL_CTX_set0_tmp_dh_pkey(ctx, dh) != 1) {
      if (dh != nullptr) EVP_PKEY_free(dh);
      *err = "Error loading the DH parameters: " + s.dh_params + " : " + OpenSslError();
      return false;
    }
  } else {
    SSL_CTX_set_dh_auto(ctx, 1);
  }
  return true;
}

}  // namespace

int TlsVerifyFlags(int verify_mode) {
  return verify_mode >= 0 && verify_mode < 4 ? kVerifyFlags[verify_mode] : SSL_VERIFY_NONE;
}

const char* TlsVersionName(int min_version) {
  return min_version >= 0 && min_version < 4 ? kVersions[min_version].name : "unknown";
}

std::shared_ptr<const TlsContext> TlsContext::Build(const TlsSettings& s, std::string* err) {
  if (s.verify_mode < 0 || s.verify_mode > 3) {
    *err = "Invalid ssl_verify_mode";
    return nullptr;
  }
  if (s.min_version < 0 || s.min_version > 3) {
    *err = "Invalid ssl_min_version";
    return nullptr;
  }
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) {
    *err = "Error creating the TLS context: " + OpenSslError();
    return nullptr;
  }
  bool ok = SSL_CTX_set_min_proto_version(ctx, kVersions[s.min_version].openssl) == 1;
  if (!ok) *err = "Error setting the minimum TLS version: " + OpenSslError();
  if (ok && s.protocols != 0) {
    // Redis's tls-protocols: the versions not named are switched off.
    constexpr uint64_t kNo[] = {SSL_OP_NO_TLSv1, SSL_OP_NO_TLSv1_1, SSL_OP_NO_TLSv1_2,
                                SSL_OP_NO_TLSv1_3};
    uint64_t off = 0;
    for (int v = 0; v < 4; ++v)
      if ((s.protocols & (1 << v)) == 0) off |= kNo[v];
    SSL_CTX_set_min_proto_version(ctx, TLS1_VERSION);
    SSL_CTX_set_options(ctx, off);
  }
  if (ok && !s.ciphersuites.empty() && SSL_CTX_set_ciphersuites(ctx, s.ciphersuites.c_str()) != 1) {
    *err = "Error setting the cipher suites: " + s.ciphersuites + " : " + OpenSslError();
    ok = false;
  }
  if (ok && !s.ciphers.empty() && SSL_CTX_set_cipher_list(ctx, s.ciphers.c_str()) != 1) {
    *err = "Error setting the cipher list: " + s.ciphers + " : " + OpenSslError();
    ok = false;
  }
  ok = ok && LoadCertificates(ctx, s, err);
  if (!ok) {
    SSL_CTX_free(ctx);
    return nullptr;
  }
  SSL_CTX_set_verify(ctx, kVerifyFlags[s.verify_mode], nullptr);
  if (s.session_cache) {
    static const unsigned char kId[] = "trove";
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
    SSL_CTX_set_session_id_context(ctx, kId, sizeof kId - 1);
    if (s.session_cache_size >= 0) SSL_CTX_sess_set_cache_size(ctx, s.session_cache_size);
    if (s.session_cache_timeout >= 0) SSL_CTX_set_timeout(ctx, s.session_cache_timeout);
  } else {
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  }
  // A client that closes without close_notify (most do) is an EOF, not a
  // TLS error: requests and replies are framed by the protocol above.
  uint64_t opts = SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF;
  if (s.kernel_tls) opts |= SSL_OP_ENABLE_KTLS;
  if (s.prefer_server_ciphers) opts |= SSL_OP_CIPHER_SERVER_PREFERENCE;
  SSL_CTX_set_options(ctx, opts);
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);  // idle connections hold no record buffers
  return std::shared_ptr<const TlsContext>(new TlsContext(ctx, s));
}

std::shared_ptr<const TlsContext> TlsContext::BuildClient(std::string* err) {
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) {
    *err = "Error creating the TLS context: " + OpenSslError();
    return nullptr;
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  TlsSettings s;
  s.min_version = 3;
  return std::shared_ptr<const TlsContext>(new TlsContext(ctx, std::move(s)));
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

std::shared_ptr<const TlsContext> TlsContextHolder::current() const {
  MutexLock l(&mu_);
  return current_;
}

bool TlsContextHolder::Reload(const TlsSettings& s, std::string* err) {
  std::shared_ptr<const TlsContext> next = TlsContext::Build(s, err);  // outside the lock
  if (!next) return false;
  const int64_t now_s = SystemClock::Default()->MonoNanos() / 1000000000;
  MutexLock l(&mu_);
  current_ = std::move(next);
  loaded_at_ = now_s;
  return true;
}

int64_t TlsContextHolder::loaded_at() const {
  MutexLock l(&mu_);
  return loaded_at_;
}

}  // namespace trove::net
