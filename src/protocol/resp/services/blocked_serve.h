// The writer's half of the blocking commands: serving the blocked clients of
// the keys a command made ready, CLIENT UNBLOCK, and the way a blocked
// client's reply goes back to its worker. The model (who serves whom, in
// which order, under which locks) is in block_registry.h; the blocked
// connection's half (blocking, its time-out, taking the reply) is
// connection/session_block.cc over ConnState::blocked().
//
// Thread safety: every function runs on a worker thread with no item-lock
// stripe held (they take the waiters' stripes themselves).
#pragma once

#include <cstdint>
#include <string>

namespace trove::engine {
struct ThreadStats;
}

namespace trove::net {
class WorkerGroup;
}

namespace trove::resp {

class RespServer;
struct Effects;
struct WorkerStats;

// The worker that serves: the writer's, with its counters.
struct BlockServer {
  RespServer* server;
  WorkerStats* stats;       // dirty is counted on the writer's worker
  engine::ThreadStats* ts;
  net::WorkerGroup* group;  // null (tests without workers): replies are delivered at once
};

// Serves the blocked clients of fx->ready_keys, key by key in the order the
// keys got data, each key's clients in arrival order while it has data: each
// waiter's command runs again through the command seam under its own
// stripes, with fx as its effects record (a BLMOVE's destination becomes
// ready in the same pass). A served client's invalidations are flushed
// after its reply (it is their modifier); key events after all. Clears
// fx->ready_keys.
void ServeReadyKeys(const BlockServer& bs, Effects* fx);

// Publishes fx->key_events as keyspace notifications, in order, and clears them.
void PublishKeyEvents(RespServer* server, Effects* fx);

// The reply of a block that ended without data (time-out, CLIENT UNBLOCK ...
// TIMEOUT): a null array for every blocking command, BLMOVE and BRPOPLPUSH
// included (Redis's replyToBlockedClientTimedOut), unlike their null bulk
// inside MULTI.
std::string NoDataReply(int proto);

// Sends `reply` for block `token` to client conn_id's worker, posted even
// when that is this worker (the reply then follows this turn's own replies,
// as in Redis); DeliverBlockedReply (core/client.h) takes it there.
void PostBlockedReply(net::WorkerGroup* group, uint64_t conn_id, uint64_t token,
                      std::string reply);

// CLIENT UNBLOCK id TIMEOUT|ERROR from any worker: 1 if that client was blocked.
int UnblockClient(RespServer* server, net::WorkerGroup* group, uint64_t conn_id, bool error);

}  // namespace trove::resp
