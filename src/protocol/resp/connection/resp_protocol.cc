// NewRespFactory: creates a LazySession (a Session on first use) per RESP
// connection on its worker.
#include "protocol/resp/connection/resp_protocol.h"

#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/connection/lazy_session.h"

namespace trove::resp {
namespace {

// Thread safety: Create/InitWorker run on workers; the RespServer they share
// is thread-safe.
class RespFactory final : public net::ProtocolFactory {
 public:
  RespFactory(engine::Engine* engine, net::ServerServices* services, const RespOptions& opts,
              net::LogHub* log)
      : server_(engine, services, opts) {
    server_.set_log(log);
    (void)CommandTable::Get();  // build the table before any worker races for it
  }
  std::unique_ptr<net::ProtocolHandler> Create(int worker_id,
                                               const net::ConnInfoView& conn) override {
    // The Session itself comes with the connection's first command (an idle
    // connection costs only the LazySession: lazy_session.h).
    return std::make_unique<LazySession>(&server_, worker_id, conn);
  }
  void InitWorker(int worker_id) override {
    (void)server_.ThreadStatsFor(worker_id);
    (void)server_.StatsFor(worker_id);
  }
  // Blocked clients are served in order of arrival (block_registry.h):
  // stamps from the first blocking command on.
  const std::atomic<bool>* ArrivalStampsFlag() const override {
    return &server_.blocks().ordered_by_arrival;
  }
  RespServer* server() { return &server_; }

 private:
  RespServer server_;
};

}  // namespace

protocol::CommandLog* CommandLogOf(net::ProtocolFactory* resp_factory) {
  return static_cast<RespFactory*>(resp_factory)->server();
}

KeyEvents* KeyEventsOf(net::ProtocolFactory* resp_factory) {
  return &static_cast<RespFactory*>(resp_factory)->server()->key_events();
}

acl::AclStore* AclStoreOf(net::ProtocolFactory* resp_factory) {
  return &static_cast<RespFactory*>(resp_factory)->server()->acl();
}

net::AcceptGate* AcceptGateOf(net::ProtocolFactory* resp_factory) {
  return &static_cast<RespFactory*>(resp_factory)->server()->protected_mode();
}

void StopScripts(net::ProtocolFactory* resp_factory) {
  static_cast<RespFactory*>(resp_factory)->server()->busy_scripts().KillAll();
}

void StopHashFieldExpiry(net::ProtocolFactory* resp_factory) {
  static_cast<RespFactory*>(resp_factory)->server()->hash_field_expiry().Stop();
}

void SetBoundPort(net::ProtocolFactory* resp_factory, int port) {
  static_cast<RespFactory*>(resp_factory)->server()->set_bound_port(port);
}

net::PortLimit* PortLimitOf(net::ProtocolFactory* resp_factory) {
  return &static_cast<RespFactory*>(resp_factory)->server()->port_limit();
}

RespTls* TlsOf(net::ProtocolFactory* resp_factory) {
  return &static_cast<RespFactory*>(resp_factory)->server()->tls();
}

protocol::ClientPause* ClientPauseOf(net::ProtocolFactory* resp_factory) {
  return &static_cast<RespFactory*>(resp_factory)->server()->pause();
}

void SetExpiryScan(net::ProtocolFactory* resp_factory, std::function<void()> scan) {
  RespServer* s = static_cast<RespFactory*>(resp_factory)->server();
  s->key_events().set_expiry_scan(std::move(scan), &s->active_expire);
}

std::unique_ptr<net::ProtocolFactory> NewRespFactory(engine::Engine* engine,
                                                     net::ServerServices* services,
                                                     const RespOptions& opts,
                                                     net::LogHub* log) {
  return std::make_unique<RespFactory>(engine, services, opts, log);
}

}  // namespace trove::resp
