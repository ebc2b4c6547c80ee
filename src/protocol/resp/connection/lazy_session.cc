// LazySession: the Session made on first use (lazy_session.h).
#include "protocol/resp/connection/lazy_session.h"

#include "net/connection.h"
#include "protocol/resp/core/resp_server.h"

namespace trove::resp {

LazySession::LazySession(RespServer* server, int worker_id, const net::ConnInfoView& conn)
    : server_(server),
      control_(conn.control),
      stats_(server->StatsFor(worker_id)),
      id_(conn.id),
      worker_id_(worker_id),
      privileged_(conn.privileged) {
  acl::AclStore& store = server->acl();
  start_.acl_epoch = store.epoch();  // before default_open: a later change re-reads
  start_.default_open = store.default_open();
  Session::Register(server, stats_, id_);
  // A TLS connection's Session now: the certificate may name its user, and
  // the handshake has already cost more than a Session.
  if (conn.tls || control_ == nullptr) {
    session_ = std::make_unique<Session>(server, worker_id, conn, &start_);
  }
}

LazySession::~LazySession() {
  session_.reset();  // its teardown may still name the client (tracking, blocks)
  Session::Unregister(server_, stats_, id_);
}

net::ConnInfoView LazySession::View() const {
  // The connection itself is the ConnControl (net::Connection), which has
  // everything ConnInfoView holds.
  const auto* c = static_cast<const net::Connection*>(control_);
  net::ConnInfoView v;
  v.id = c->conn_id;
  v.worker_id = worker_id_;
  v.fd = c->fd;
  v.is_unix = c->is_unix;
  v.peer = c->peer;
  v.control = control_;
  v.privileged = privileged_;
  return v;
}

Session* LazySession::Get() {
  if (session_ == nullptr) {
    session_ = std::make_unique<Session>(server_, worker_id_, View(), &start_);
  }
  return session_.get();
}

void LazySession::DescribeClient(net::ClientInfo* info) const {
  if (session_ != nullptr) {
    session_->DescribeClient(info);
    return;
  }
  // As a new Session would describe itself: one is made for the answer and
  // dropped (CLIENT LIST is not a hot path; idle connections stay small).
  Session fresh(server_, worker_id_, View(), &start_);
  fresh.DescribeClient(info);
}

void LazySession::OnHousekeeping() {
  if (session_ != nullptr) {
    session_->OnHousekeeping();
    return;
  }
  // Session::OnHousekeeping for a connection that never sent a command: no
  // output to limit, not exempt from `timeout` (not blocked, subscribed,
  // paused or monitoring).
  const int64_t t = server_->timeout_s.load(std::memory_order_relaxed);
  if (control_ != nullptr && t > 0 && control_->IdleNs() / 1000000000 > t) {
    timed_out_ = true;  // Redis closes it without a reply
    control_->CloseSoon();
  }
}

Client* ClientOfHandler(net::ProtocolHandler* h) {
  if (auto* lazy = dynamic_cast<LazySession*>(h)) return lazy->made();
  return dynamic_cast<Client*>(h);
}

Session* SessionOfHandler(net::ProtocolHandler* h) {
  if (auto* lazy = dynamic_cast<LazySession*>(h)) return lazy->Get();
  return dynamic_cast<Session*>(h);
}

}  // namespace trove::resp
