// Entry point of the memcached text + meta protocol: a ProtocolFactory that
// server/ attaches to the memcached listening ports. Handlers run on workers.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "engine/engine.h"
#include "net/log_hub.h"
#include "net/protocol_handler.h"
#include "protocol/client_pause.h"
#include "protocol/command_log.h"
#include "protocol/user_access.h"
#include "protocol/key_events.h"
#include "protocol/memcache/ascii_auth.h"
#include "protocol/memcache/response_budget.h"

namespace trove::memcache {

struct ProtocolOptions {
  // With -Y: the ACL users whose permissions apply once a connection has
  // authenticated (resp::acl::AclStore); null = no per-user checks.
  protocol::UserAccess* access = nullptr;
  std::string version = "1.6.45-trove";   // "version" reply and stats version
  int reqs_per_event = 20;                 // -R: requests handled per read event
  bool cas_enabled = true;                 // -C turns off
  size_t item_size_max = 1u << 20;         // -I, for "object too large" checks
  bool binary_refused = true;              // -B ascii/auto: binary gets an error
  bool flush_enabled = true;               // -F turns flush_all off
  bool watch_enabled = true;               // -W turns `watch` off
  bool dump_enabled = true;                // -X turns cachedump / metadump / mgdump off
  // -Y: connections must authenticate first (memcached's ASCII auth).
  std::shared_ptr<AuthTable> auth;
  // -o ssl_auth_user_cn (Trove's): a connection whose verified client
  // certificate's CN names an enabled ACL user runs as that user (its
  // permissions and rate limits; no -Y login needed). Needs `access`.
  bool tls_user_cn = false;
  // -o read_buf_mem_limit: the replies in flight per worker; null = no limit.
  std::shared_ptr<ResponseBudget> responses;
  // CLIENT PAUSE of the RESP front: a WRITE pause holds this port's writes
  // too, an ALL pause every command; null = never paused.
  protocol::ClientPause* pause = nullptr;
};

// engine and services outlive the factory and every handler it creates.
std::unique_ptr<net::ProtocolFactory> NewMemcacheFactory(engine::Engine* engine,
                                                         net::ServerServices* services,
                                                         const ProtocolOptions& opts,
                                                         net::LogHub* log = nullptr,
                                                         protocol::CommandLog* cmd_log = nullptr,
                                                         protocol::KeyEventSink* key_events = nullptr);

}  // namespace trove::memcache
