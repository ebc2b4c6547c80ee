// TlsConn: the TLS state of one accepted connection (an OpenSSL SSL over
// its socket), driven by the worker that owns the connection: a
// non-blocking server handshake, then reads and writes that stand in for
// recv and sendmsg. Design: docs/adr/0008-tls.md.
//
// Thread safety: the owning worker thread only, like its Connection.
//
// Invariants:
//  1. The SSL holds a reference to the context it was made from (ctx_),
//     so a reload that swaps the listener's context leaves this one alone.
//  2. No read-ahead: OpenSSL reads the socket only for the record it
//     decrypts, so once pending() is 0 after a Read, epoll's readiness of
//     the socket is the whole truth about input (the worker reads until
//     pending() is 0).
//  3. Write may be called again with more bytes than a call that wanted
//     to write (the output buffer only grows at its end), never fewer
//     (OpenSSL's retry rule, relaxed by ACCEPT_MOVING_WRITE_BUFFER).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "net/tls_context.h"

struct ssl_st;  // OpenSSL's SSL

namespace trove::net {

class TlsConn {
 public:
  // A server-side SSL on fd from ctx; verify >= 0 overrides the context's
  // ssl_verify_mode (0-3, for btls:/mtls: listeners). Null if OpenSSL
  // cannot allocate it.
  static std::unique_ptr<TlsConn> Accept(std::shared_ptr<const TlsContext> ctx, int fd, int verify);
  // A client-side SSL on a connected fd (the proxy's backends).
  static std::unique_ptr<TlsConn> Connect(std::shared_ptr<const TlsContext> ctx, int fd);
  ~TlsConn();
  TlsConn(const TlsConn&) = delete;
  TlsConn& operator=(const TlsConn&) = delete;

  enum class Step { kDone, kWantRead, kWantWrite, kFailed };
  // Advances the handshake. kFailed: close the connection (a plaintext
  // request, random bytes, a refused or missing client certificate).
  Step Handshake();
  bool handshaking() const { return handshaking_; }

  // I/O after the handshake, as recv/send: > 0 bytes, 0 on the peer's
  // close_notify or EOF, -1 with errno EAGAIN when nothing can move now
  // (*want_write: the record layer needs the socket writable first), -1
  // with errno EPROTO on a TLS error (counted as a protocol error).
  ssize_t Read(char* buf, size_t n, bool* want_write);
  ssize_t Write(const char* buf, size_t n, bool* want_read);
  // Bytes of a record OpenSSL has decrypted and Read has not returned yet.
  size_t pending() const;

  // After the handshake: the client certificate verified (a certificate
  // was sent and the chain checked), and its subject CN (empty if none).
  bool peer_verified() const;
  std::string PeerCommonName() const;
  bool session_reused() const;
  const TlsContext& context() const { return *ctx_; }
  // "TLSv1.3" etc., for INFO/CLIENT LIST.
  const char* version() const;

 private:
  TlsConn(std::shared_ptr<const TlsContext> ctx, ssl_st* ssl) : ctx_(std::move(ctx)), ssl_(ssl) {}
  // OpenSSL's info callback: a TLS 1.2 client starting a second handshake
  // (renegotiation) marks the connection; its next read fails.
  static void OnInfo(const ssl_st* ssl, int where, int ret);
  std::shared_ptr<const TlsContext> ctx_;
  ssl_st* ssl_;
  bool handshaking_ = true;
  bool renegotiation_ = false;
};

// The verify mode a listener prefix asks for: btls: never verifies (0),
// mtls: requires a verified client (2); -1 keeps ssl_verify_mode.
constexpr int kTlsVerifyDefault = -1;
constexpr int kTlsVerifyNone = 0;
constexpr int kTlsVerifyRequire = 2;

}  // namespace trove::net
