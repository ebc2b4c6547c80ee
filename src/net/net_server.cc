// NetServer: starts and stops the acceptor and workers; cross-worker requests.
// Start/Stop on the main thread; Connections/CloseConnection on any thread.
#include "net/net_server.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

namespace trove::net {

NetServer::NetServer(const NetServerOptions& opts) : opts_(opts), verbosity_(opts.verbosity) {
  if (opts_.num_workers < 1) opts_.num_workers = 1;
}

NetServer::~NetServer() { Stop(); }

void NetServer::AddListeners(std::vector<Listener> ls, ProtocolFactory* factory,
                             std::string reject_reply) {
  for (Listener& l : ls) {
    BoundListener b;
    b.listener = std::move(l);
    b.factory = factory;
    b.reject_reply = reject_reply;
    pending_listeners_.push_back(std::move(b));
  }
  if (std::find(factories_.begin(), factories_.end(), factory) == factories_.end()) {
    factories_.push_back(factory);
  }
}

Status NetServer::Start() {
  CHECK(!started_);
  started_ = true;
  // A peer that vanishes must not kill the process in writev().
  ::signal(SIGPIPE, SIG_IGN);
  for (int i = 0; i < opts_.num_workers; ++i) {
    WorkerOptions wo;
    wo.id = i;
    wo.idle_timeout_s = opts_.idle_timeout_s;
    wo.clock = opts_.clock;
    wo.counters = &counters_;
    wo.verbosity = &verbosity_;
    wo.factories = factories_;
    workers_.push_back(std::make_unique<Worker>(wo));
    Status s = workers_.back()->Start();
    if (!s.ok()) return s;
  }
  AcceptorOptions ao;
  ao.max_connections = opts_.max_connections;
  ao.reject_when_full = opts_.maxconns_fast;
  ao.counters = &counters_;
  for (auto& w : workers_) ao.workers.push_back(w.get());
  acceptor_ = std::make_unique<Acceptor>(ao);
  for (BoundListener& b : pending_listeners_) acceptor_->AddListener(std::move(b));
  pending_listeners_.clear();
  return acceptor_->Start();
}

void NetServer::Stop() {
  if (acceptor_) acceptor_->Stop();  // invariant 1: no new connections first
  for (auto& w : workers_) w->Stop();
  for (BoundListener& b : pending_listeners_) ::close(b.listener.fd);
  pending_listeners_.clear();
}

void NetServer::Await(Rendezvous* r) {
  Worker* self = Worker::Current();
  for (;;) {
    {
      MutexLock l(&r->mu);
      if (r->pending <= 0) return;
    }
    if (self) self->ServeInboxNested();
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

std::vector<ServerServices::ConnInfo> NetServer::Connections() {
  auto r = std::make_shared<Rendezvous>();
  {
    MutexLock l(&r->mu);
    r->pending = static_cast<int>(workers_.size());
  }
  for (auto& w : workers_) {
    WorkerMsg m;
    m.kind = WorkerMsg::Kind::kCollectConns;
    m.reply = r;
    w->Post(std::move(m));
  }
  Await(r.get());
  MutexLock l(&r->mu);
  std::vector<ServerServices::ConnInfo> out = std::move(r->conns);
  std::sort(out.begin(), out.end(),
            [](const ServerServices::ConnInfo& a, const ServerServices::ConnInfo& b) {
              return a.id < b.id;
            });
  return out;
}

bool NetServer::CloseConnection(uint64_t id) {
  if (workers_.empty() || id == 0) return false;
  auto r = std::make_shared<Rendezvous>();
  {
    MutexLock l(&r->mu);
    r->pending = 1;
  }
  WorkerMsg m;
  m.kind = WorkerMsg::Kind::kCloseConn;
  m.conn_id = id;
  m.reply = r;
  workers_[Acceptor::WorkerIndexFor(id, workers_.size())]->Post(std::move(m));
  Await(r.get());
  MutexLock l(&r->mu);
  return r->found;
}

uint64_t NetServer::BytesRead() const {
  uint64_t n = 0;
  for (const auto& w : workers_) n += w->bytes_read();
  return n;
}

uint64_t NetServer::BytesWritten() const {
  uint64_t n = 0;
  for (const auto& w : workers_) n += w->bytes_written();
  return n;
}

void NetServer::WakeAll() {
  for (auto& w : workers_) {
    WorkerMsg m;
    m.kind = WorkerMsg::Kind::kWake;
    w->Post(std::move(m));
  }
}

}  // namespace trove::net
