// Entry point of the Redis-compatible RESP2/RESP3 front: a ProtocolFactory that
// server/ attaches to the RESP port. Handlers run on workers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "protocol/client_pause.h"
#include "engine/engine.h"
#include "net/connection.h"
#include "net/log_hub.h"
#include "net/protocol_handler.h"
#include "protocol/command_log.h"
#include "protocol/resp/core/resp_server.h"

namespace trove::resp {


std::unique_ptr<net::ProtocolFactory> NewRespFactory(engine::Engine* engine,
                                                     net::ServerServices* services,
                                                     const RespOptions& opts,
                                                     net::LogHub* log = nullptr);
// The SLOWLOG / LATENCY HISTOGRAM recorder of a factory NewRespFactory made,
// for the memcached port's commands.
protocol::CommandLog* CommandLogOf(net::ProtocolFactory* resp_factory);
// The keyspace notifications of that factory: the memcached port's writes
// go to it, and the engine's expired / evicted removals (an ItemObserver).
// `scan` asks the engine to look for expired items (see KeyEvents).
class KeyEvents;
KeyEvents* KeyEventsOf(net::ProtocolFactory* resp_factory);
// The RESP port's own connection limit (maxclients), for its listeners.
net::PortLimit* PortLimitOf(net::ProtocolFactory* resp_factory);
// CLIENT PAUSE's state, for the memcached port to obey.
protocol::ClientPause* ClientPauseOf(net::ProtocolFactory* resp_factory);
// The ACL users shared by both ports (acl_store.h).
namespace acl {
class AclStore;
}
acl::AclStore* AclStoreOf(net::ProtocolFactory* resp_factory);
// Redis's tls-* settings and the TLS port's context (tls_settings.h).
class RespTls;
RespTls* TlsOf(net::ProtocolFactory* resp_factory);
// protected-mode's accept gate, for every RESP listener (admin port included).
net::AcceptGate* AcceptGateOf(net::ProtocolFactory* resp_factory);
void SetExpiryScan(net::ProtocolFactory* resp_factory, std::function<void()> scan);
// The RESP port actually bound (an ephemeral --resp-port 0 included), for
// CONFIG GET port and INFO tcp_port. Before the workers start.
void SetBoundPort(net::ProtocolFactory* resp_factory, int port);
// Server stop: every running script stops at its next hook, killable or not
// (as SHUTDOWN NOSAVE stops a busy script in Redis), so its worker can end.
void StopScripts(net::ProtocolFactory* resp_factory);
// Server stop: the hash-field reaper thread ends (before the workers stop,
// as it publishes through them; and before a warm restart's save, which
// must be the engine's only user).
void StopHashFieldExpiry(net::ProtocolFactory* resp_factory);

}  // namespace trove::resp
