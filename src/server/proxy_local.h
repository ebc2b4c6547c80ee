// ProxyLocal: the proxy's LocalServer (proxy/internal.h) over Trove's own
// cache: memcache protocol handlers with no connection behind them, for
// mcp.internal / mcp.internal_handler (one per worker) and for
// mcp.server_stats (the config VM's). Made by Server::Create with -o
// proxy_config; owned by the proxy runtime.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "net/io_buffer.h"
#include "net/protocol_handler.h"
#include "protocol/memcache/dispatch.h"
#include "protocol/memcache/memcache_protocol.h"
#include "proxy/internal.h"

namespace trove::server {

// Thread safety: NewHandler from any worker thread (it reads only what the
// constructor set); Stats one call at a time, which the proxy guarantees by
// calling it from its config VM only (the config thread, or the main thread
// before the config thread starts).
class ProxyLocal final : public proxy::LocalServer {
 public:
  // Everything passed outlives this object. `opts` are the memcached port's;
  // the internal handlers drop what concerns a client connection (-Y
  // authentication, per-user ACLs, the read_buf_mem_limit budget).
  ProxyLocal(engine::Engine* engine, net::ServerServices* services, net::LogHub* log,
             protocol::CommandLog* cmd_log, protocol::KeyEventSink* key_events,
             const memcache::ProtocolOptions& opts, int num_workers);
  ~ProxyLocal() override;

  std::unique_ptr<net::ProtocolHandler> NewHandler(int worker_id) override;
  bool Stats(std::string_view sub, std::vector<std::pair<std::string, std::string>>* out) override;

 private:
  // Internal requests: the worker's SLOWLOG sink and keyspace events, as a
  // client's request on that worker would have.
  memcache::HandlerContext ctx_;
  // mcp.server_stats: no command log, no key events.
  memcache::HandlerContext stats_ctx_;
  // One engine counter set per worker (each written by its worker only) and
  // one for the stats handler; made up front, so NewHandler takes no lock.
  std::vector<engine::ThreadStats*> worker_stats_;
  engine::ThreadStats* stats_ts_ = nullptr;
  std::unique_ptr<memcache::MemcacheHandler> stats_handler_;  // made on first use
  net::OutputBuffer stats_out_;
};

}  // namespace trove::server
