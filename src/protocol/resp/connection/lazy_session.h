// LazySession: a RESP connection's handler until its first command; the
// Session is made then (or when anything else needs it), so a connection
// that stays idle costs a few dozen bytes instead of a Session (issue 42:
// at most 1 KiB of RSS per idle connection; docs/benchmarks.md).
//
// What a client can observe of a connection is the same as with a Session
// made at accept: it is counted and registered as a client at once
// (connected_clients, total_connections, live_clients for tracking
// redirects), the default user's state is taken at accept (SessionStart),
// CLIENT LIST describes it as a new Session would, and Redis's `timeout`
// closes it when idle too long. Anything that needs the Session itself (a command,
// a CLIENT KILL, a message for it) makes it first: Get().
//
// Thread safety: owned by the connection's worker, like a Session.
// Invariants:
//  1. The registration is done exactly once per connection: here, never by
//     the Session (made with a SessionStart).
//  2. session_ is never reset once made: the connection keeps it until it
//     closes (its state must survive between commands).
#pragma once

#include <memory>

#include "net/protocol_handler.h"
#include "protocol/resp/connection/session.h"

namespace trove::resp {

class LazySession final : public net::ProtocolHandler {
 public:
  // conn.tls connections make their Session at once (the certificate's
  // user is known now); others on their first use.
  LazySession(RespServer* server, int worker_id, const net::ConnInfoView& conn);
  ~LazySession() override;

  // The Session, made now if it was not yet.
  Session* Get();
  // The Session if made, else null.
  Session* made() const { return session_.get(); }

  size_t OnData(const char* data, size_t len, net::OutputBuffer& out) override {
    return Get()->OnData(data, len, out);
  }
  bool WantsClose() const override { return session_ ? session_->WantsClose() : timed_out_; }
  bool CloseIsError() const override { return session_ && session_->CloseIsError(); }
  bool ServesWhileBusy() const override { return true; }  // as Session
  size_t BytesWanted() const override { return session_ ? session_->BytesWanted() : 0; }
  bool IdleExempt() const override { return true; }  // `timeout` is OnHousekeeping's
  void OnOutputDrained() override {
    if (session_) session_->OnOutputDrained();
  }
  void DescribeClient(net::ClientInfo* info) const override;
  void OnHousekeeping() override;

 private:
  net::ConnInfoView View() const;

  RespServer* const server_;
  net::ConnControl* const control_;
  WorkerStats* const stats_;
  std::unique_ptr<Session> session_;
  SessionStart start_;
  const uint64_t id_;  // the connection's id: registered at accept, removed at close
  const int worker_id_;
  const bool privileged_;
  bool timed_out_ = false;
};

// The Session behind a RESP connection's handler, made if it was not yet;
// null for another protocol's handler.
Session* SessionOfHandler(net::ProtocolHandler* h);

}  // namespace trove::resp
