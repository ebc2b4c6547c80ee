// Client: the connection a command runs for, as command families see it.
// Commands never include the connection handler (connection/session.h);
// they ask their caller for connection services through this interface,
// which the RESP connection (Session) implements. A caller with no socket
// behind it (a unit test, later a script) leaves CommandContext::client
// null or returns a null control(); every command copes with both.
// Runs on the connection's worker only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "net/protocol_handler.h"
#include "protocol/resp/core/conn_state.h"

namespace trove::protocol {
class ClientPause;
}

namespace trove::net {
class ConnControl;
class OutputBuffer;
class WorkerGroup;
struct ClientInfo;
}  // namespace trove::net

namespace trove::resp {

struct CommandContext;
class RespServer;
struct PublishedMessage;
struct TrackingMessage;

class Client {
 public:
  // The connection's socket control; null when no socket is behind the call.
  virtual net::ConnControl* control() = 0;

  // MULTI/EXEC: runs the queued transaction through the command seam.
  virtual void Exec(CommandContext& ctx) = 0;
  // Blocking commands: suspends the connection in ctx's command with its
  // stripes still held (block_registry.h); 0: no time-out.
  virtual void Block(CommandContext& ctx, int64_t timeout_ms,
                     std::span<const size_t> wait_idx) = 0;
  // Pub/sub membership (services/pubsub.h keeps the server's side in step).
  virtual void Subscribe(PubSubState::Kind k, std::string_view name) = 0;
  virtual void Unsubscribe(PubSubState::Kind k, std::string_view name) = 0;
  virtual void UnsubscribeAll() = 0;
  // MONITOR.
  virtual void StartMonitor(CommandContext& ctx) = 0;
  virtual void StopMonitor() = 0;
  // CLIENT TRACKING OFF and RESET.
  virtual void DisableTracking() = 0;
  // After an ACL change made by this connection: true when it must close.
  virtual bool AclRevoked() = 0;
  // This connection's CLIENT LIST line, without the newline (ACL LOG).
  virtual std::string ClientInfoLine() = 0;
  // CLIENT INFO's protocol fields.
  virtual void DescribeClient(net::ClientInfo* info) const = 0;
  // client-output-buffer-limit, for commands that write very long replies.
  virtual bool OutputOverLimit(const net::OutputBuffer& out, size_t extra) = 0;
  virtual void KillForOutputLimit(net::OutputBuffer& out) = 0;

 protected:
  ~Client() = default;
};

// The RESP connection behind a worker's connection handler; null when the
// handler is another protocol's, or a RESP connection that has not needed
// its Session yet (an idle one: connection/lazy_session.h), which is a new
// connection of the default user in every respect. Not for hot paths (a
// dynamic_cast). Defined in connection/lazy_session.cc.
Client* ClientOfHandler(net::ProtocolHandler* h);

// Entry points that the connection layer (connection/) provides to the
// layers below it, which never include it: each runs on the worker named.
//
// A blocked client's reply for block `token` (served, timed out or
// unblocked elsewhere), run on its worker; ends the block
// (connection/session_block.cc; services/blocked_serve.h posts it).
void DeliverBlockedReply(uint64_t conn_id, uint64_t token, std::string reply);
// The pub/sub hub's and the tracking table's delivery hooks, run on the
// receiving connection's worker (connection/session_pubsub.cc,
// connection/session_tracking.cc).
void DeliverPubSubMessage(uint64_t conn_id, const std::shared_ptr<const PublishedMessage>& m,
                          int pattern);
void DeliverTrackingMessage(uint64_t conn_id, const std::shared_ptr<const TrackingMessage>& m);
// CLIENT UNPAUSE, run on each worker: its held connections (both protocols)
// parse their held command again (connection/session_pause.cc).
void WakePaused(protocol::ClientPause* pause);

}  // namespace trove::resp
