// TlsConn (tls_conn.h).
#include "net/tls_conn.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cerrno>

namespace trove::net {

std::unique_ptr<TlsConn> TlsConn::Accept(std::shared_ptr<const TlsContext> ctx, int fd,
                                         int verify) {
  SSL* ssl = SSL_new(ctx->ctx());
  if (ssl == nullptr) {
    ERR_clear_error();
    return nullptr;
  }
  if (SSL_set_fd(ssl, fd) != 1) {
    SSL_free(ssl);
    ERR_clear_error();
    return nullptr;
  }
  if (verify >= 0) SSL_set_verify(ssl, TlsVerifyFlags(verify), nullptr);
  // Partial writes: Write returns after each record, the output buffer
  // advances by what went out; its head may move between retries.
  SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_set_accept_state(ssl);
  std::unique_ptr<TlsConn> conn(new TlsConn(std::move(ctx), ssl));
  SSL_set_app_data(ssl, conn.get());
  SSL_set_info_callback(ssl, &TlsConn::OnInfo);
  return conn;
}

std::unique_ptr<TlsConn> TlsConn::Connect(std::shared_ptr<const TlsContext> ctx, int fd) {
  SSL* ssl = SSL_new(ctx->ctx());
  if (ssl == nullptr || SSL_set_fd(ssl, fd) != 1) {
    if (ssl != nullptr) SSL_free(ssl);
    ERR_clear_error();
    return nullptr;
  }
  SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_set_connect_state(ssl);
  return std::unique_ptr<TlsConn>(new TlsConn(std::move(ctx), ssl));
}

void TlsConn::OnInfo(const SSL* ssl, int where, int /*ret*/) {
  // The context refuses renegotiation (SSL_OP_NO_RENEGOTIATION) with a
  // warning alert a client may ignore; memcached closes such a connection,
  // and so does Trove. In TLS 1.3 HANDSHAKE_START also marks tickets and
  // key updates, which are no renegotiation.
  if ((where & SSL_CB_HANDSHAKE_START) == 0) return;
  auto* self = static_cast<TlsConn*>(SSL_get_app_data(ssl));
  if (self != nullptr && !self->handshaking_ && SSL_version(ssl) < TLS1_3_VERSION)
    self->renegotiation_ = true;
}

TlsConn::~TlsConn() {
  // No close_notify: memcached and Redis close TLS connections without
  // one too, and a write here could block or fail on a dead peer.
  SSL_free(ssl_);
}

TlsConn::Step TlsConn::Handshake() {
  ERR_clear_error();
  const int r = SSL_do_handshake(ssl_);
  if (r == 1) {
    handshaking_ = false;
    return Step::kDone;
  }
  switch (SSL_get_error(ssl_, r)) {
    case SSL_ERROR_WANT_READ:
      return Step::kWantRead;
    case SSL_ERROR_WANT_WRITE:
      return Step::kWantWrite;
    default:
      ERR_clear_error();
      return Step::kFailed;
  }
}

ssize_t TlsConn::Read(char* buf, size_t n, bool* want_write) {
  *want_write = false;
  if (renegotiation_) {
    errno = EPROTO;
    return -1;
  }
  ERR_clear_error();
  size_t r = 0;
  const int ok = SSL_read_ex(ssl_, buf, n, &r);
  if (renegotiation_) {  // the connection closes; what came with it is dropped
    ERR_clear_error();
    errno = EPROTO;
    return -1;
  }
  if (ok == 1) return static_cast<ssize_t>(r);
  {
    switch (SSL_get_error(ssl_, ok)) {
      case SSL_ERROR_WANT_READ:
        errno = EAGAIN;
        return -1;
      case SSL_ERROR_WANT_WRITE:
        *want_write = true;
        errno = EAGAIN;
        return -1;
      case SSL_ERROR_ZERO_RETURN:
        return 0;
      case SSL_ERROR_SYSCALL:
        ERR_clear_error();
        if (errno == 0) return 0;  // EOF without close_notify
        return -1;
      default:
        ERR_clear_error();
        errno = EPROTO;
        return -1;
    }
  }
}

ssize_t TlsConn::Write(const char* buf, size_t n, bool* want_read) {
  *want_read = false;
  ERR_clear_error();
  size_t w = 0;
  const int ok = SSL_write_ex(ssl_, buf, n, &w);
  if (ok == 1) return static_cast<ssize_t>(w);
  switch (SSL_get_error(ssl_, ok)) {
    case SSL_ERROR_WANT_WRITE:
      errno = EAGAIN;
      return -1;
    case SSL_ERROR_WANT_READ:
      *want_read = true;
      errno = EAGAIN;
      return -1;
    case SSL_ERROR_SYSCALL:
      ERR_clear_error();
      if (errno == 0) errno = EPIPE;
      return -1;
    default:
      ERR_clear_error();
      errno = EPROTO;
      return -1;
  }
}

size_t TlsConn::pending() const {
  const int p = SSL_pending(ssl_);
  return p > 0 ? static_cast<size_t>(p) : 0;
}

bool TlsConn::peer_verified() const {
  X509* cert = SSL_get0_peer_certificate(ssl_);
  return cert != nullptr && SSL_get_verify_result(ssl_) == X509_V_OK;
}

std::string TlsConn::PeerCommonName() const {
  X509* cert = SSL_get0_peer_certificate(ssl_);
  if (cert == nullptr) return {};
  X509_NAME* subject = X509_get_subject_name(cert);
  const int i = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (i < 0) return {};
  ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i));
  const unsigned char* p = ASN1_STRING_get0_data(data);
  return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(ASN1_STRING_length(data)));
}

bool TlsConn::session_reused() const { return SSL_session_reused(ssl_) == 1; }

const char* TlsConn::version() const { return SSL_get_version(ssl_); }

}  // namespace trove::net
