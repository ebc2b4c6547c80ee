// A worker's TLS connections (docs/adr/0008-tls.md): the non-blocking
// handshake driven by the connection's events, and the read and flush
// that stand in for recv and sendmsg afterwards, so protocol handlers
// never know a connection is encrypted. Worker thread only.
#include <sys/epoll.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "net/worker.h"

namespace trove::net {
namespace {

// One Write call's most for a large piece referenced in place: other
// connections of the worker get their turn between.
constexpr size_t kTlsMaxWrite = 256 * 1024;

}  // namespace

void Worker::ContinueHandshake(Connection* c) {
  switch (c->tls->Handshake()) {
    case TlsConn::Step::kDone:
      if (!c->tls->session_reused() && c->tls->context().settings().session_cache)
        counters_->ssl_new_sessions.fetch_add(1, std::memory_order_relaxed);
      c->last_active_ns = TurnNow();
      if (Adopt(c, c->pending_factory)) SetMask(c, EPOLLIN);
      return;
    case TlsConn::Step::kWantRead:
      SetMask(c, EPOLLIN);
      return;
    case TlsConn::Step::kWantWrite:
      SetMask(c, EPOLLOUT);
      return;
    case TlsConn::Step::kFailed:
      counters_->ssl_handshake_errors.fetch_add(1, std::memory_order_relaxed);
      c->close_reason = Connection::CloseReason::kError;
      Close(c);
      return;
  }
}

ssize_t Worker::RecvTls(Connection* c) {
  // A read that needs the socket writable (a TLS 1.3 key update reply
  // behind a full send buffer) is simply retried on the next event or
  // flush: OpenSSL keeps the pending record and sends it on the next call.
  bool want_write = false;
  const ssize_t n = c->tls->Read(c->in.write_ptr(), c->in.writable(), &want_write);
  if (n <= 0) {
    if (n < 0 && errno == EPROTO) counters_->ssl_proto_errors.fetch_add(1, std::memory_order_relaxed);
    return n;
  }
  c->in.Commit(static_cast<size_t>(n));
  size_t total = static_cast<size_t>(n);
  // tls_conn.h invariant 2: the rest of a decrypted record is taken now,
  // since no epoll event would announce it.
  while (c->tls->pending() > 0) {
    c->in.Reserve(c->tls->pending());
    const ssize_t m = c->tls->Read(c->in.write_ptr(), c->in.writable(), &want_write);
    if (m <= 0) break;  // an error shows again on the next read
    c->in.Commit(static_cast<size_t>(m));
    total += static_cast<size_t>(m);
  }
  return static_cast<ssize_t>(total);  // committed already (ReadOnce does not)
}

int64_t Worker::FlushTls(Connection* c) {
  int64_t total = 0;
  iovec iov[32];
  while (!c->out.empty()) {
    const int n = c->out.PendingIov(iov, 32);
    const char* p;
    size_t len;
    // Pieces smaller than half the staging buffer (ssl_wbuf_size) are
    // gathered into one copy, so many small replies make one TLS record
    // instead of one record each.
    const size_t stage = opts_.tls_wbuf_size;
    if (n == 1 || iov[0].iov_len >= stage / 2) {
      p = static_cast<const char*>(iov[0].iov_base);
      len = std::min(iov[0].iov_len, kTlsMaxWrite);
    } else {
      // tls_conn.h invariant 3: the head only grows between calls, so a
      // retry gathers at least what the blocked call gathered.
      if (!tls_stage_) tls_stage_ = std::make_unique<char[]>(stage);
      len = 0;
      for (int i = 0; i < n && len < stage; ++i) {
        const size_t take = std::min(iov[i].iov_len, stage - len);
        std::memcpy(tls_stage_.get() + len, iov[i].iov_base, take);
        len += take;
      }
      p = tls_stage_.get();
    }
    // A write that needs to read first (TLS 1.2 only; renegotiation is
    // refused) waits like a full socket: the next readable event reads.
    bool want_read = false;
    const ssize_t w = c->tls->Write(p, len, &want_read);
    if (w < 0) {
      if (errno == EAGAIN) break;
      if (errno == EPROTO) counters_->ssl_proto_errors.fetch_add(1, std::memory_order_relaxed);
      return -1;
    }
    c->out.Advance(static_cast<size_t>(w));
    total += w;
  }
  return total;
}

}  // namespace trove::net
