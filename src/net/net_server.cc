// NetServer: starts and stops the acceptor and workers; cross-worker requests.
// Start/Stop on the main thread; Connections/CloseConnection on any thread.
#include "net/net_server.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

namespace trove::net {

NetServer::NetServer(const NetServerOptions& opts) : opts_(opts), verbosity_(opts.verbosity) {
  if (opts_.num_workers < 1) opts_.num_workers = 1;
}

NetServer::~NetServer() { Stop(); }

void NetServer::AddListeners(std::vector<Listener> ls, ProtocolFactory* factory,
                             std::string reject_reply, PortLimit* own_limit,
                             AcceptGate* gate, ListenerTls tls) {
  for (Listener& l : ls) {
    ServerServices::ConnInfo li;
    li.id = 0;
    li.fd = l.fd;
    li.addr = l.name;
    li.state = "conn_listening";
    li.secs_since_last_cmd = 0;
    listening_.push_back(std::move(li));
    BoundListener b;
    b.listener = std::move(l);
    b.factory = factory;
    b.reject_reply = reject_reply;
    b.own_limit = own_limit;
    b.gate = gate;
    b.tls = tls;
    pending_listeners_.push_back(std::move(b));
  }
  if (std::find(factories_.begin(), factories_.end(), factory) == factories_.end()) {
    factories_.push_back(factory);
  }
}

Status NetServer::Start() {
  CHECK(!started_);
  started_ = true;
  // A peer that vanishes must not kill the process: socket writes pass
  // MSG_NOSIGNAL, and SIGPIPE is ignored for any write that does not.
  ::signal(SIGPIPE, SIG_IGN);
  for (int i = 0; i < opts_.num_workers; ++i) {
    WorkerOptions wo;
    wo.id = i;
    wo.idle_timeout_s = opts_.idle_timeout_s;
    wo.clock = opts_.clock;
    wo.counters = &counters_;
    wo.verbosity = &verbosity_;
    wo.factories = factories_;
    wo.group = &group_;
    wo.log = opts_.log;
    wo.tls_handshake_timeout_ms = opts_.tls_handshake_timeout_ms;
    wo.tls_wbuf_size = opts_.tls_wbuf_size;
    // acceptor_ is set below, before the acceptor thread exists: no
    // connection (and so no close) reaches a worker before then.
    wo.release_slot = [this] {
      if (acceptor_) {
        acceptor_->ReleaseSlot();
      } else {
        counters_.curr_connections.fetch_sub(1, std::memory_order_seq_cst);
      }
    };
    workers_.push_back(std::make_unique<Worker>(wo));
    group_.Add(workers_.back().get());
    Status s = workers_.back()->Start();
    if (!s.ok()) return s;
  }
  AcceptorOptions ao;
  ao.max_connections = opts_.max_connections;
  ao.reject_when_full = opts_.maxconns_fast;
  ao.counters = &counters_;
  ao.clock = opts_.clock;
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

namespace {

// A caller that is not a loop waits for n answers from the workers.
struct SyncWait {
  Mutex mu{LockRank::kLeaf};
  CondVar cv{&mu};
  size_t left GUARDED_BY(mu) = 0;
  bool found GUARDED_BY(mu) = false;
  std::vector<ServerServices::ConnInfo> conns GUARDED_BY(mu);
  void Done() {
    MutexLock l(&mu);
    if (--left == 0) cv.SignalAll();
  }
  void Wait() {
    MutexLock l(&mu);
    while (left > 0) cv.Wait();
  }
};

}  // namespace

std::vector<ServerServices::ConnInfo> NetServer::Connections() {
  CHECK(Worker::Current() == nullptr);  // a worker must not block on the others
  auto r = std::make_shared<SyncWait>();
  {
    MutexLock l(&r->mu);
    r->left = workers_.size();
  }
  for (auto& w : workers_) {
    Worker* wp = w.get();
    wp->Post([r, wp] {
      std::vector<ServerServices::ConnInfo> mine = wp->DescribeAll();
      {
        MutexLock l(&r->mu);
        for (auto& ci : mine) r->conns.push_back(std::move(ci));
      }
      r->Done();
    });
  }
  r->Wait();
  MutexLock l(&r->mu);
  std::vector<ServerServices::ConnInfo> out = std::move(r->conns);
  std::sort(out.begin(), out.end(),
            [](const ServerServices::ConnInfo& a, const ServerServices::ConnInfo& b) {
              return a.id < b.id;
            });
  return out;
}

bool NetServer::CloseConnection(uint64_t id) {
  CHECK(Worker::Current() == nullptr);
  if (workers_.empty() || id == 0) return false;
  auto r = std::make_shared<SyncWait>();
  {
    MutexLock l(&r->mu);
    r->left = 1;
  }
  Worker* w = workers_[Acceptor::WorkerIndexFor(id, workers_.size())].get();
  w->Post([r, w, id] {
    bool found = w->RequestClose(id);
    {
      MutexLock l(&r->mu);
      r->found = found;
    }
    r->Done();
  });
  r->Wait();
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
    Worker* wp = w.get();
    wp->Post([wp] { wp->RunIdleCheckNow(); });
  }
}

}  // namespace trove::net
