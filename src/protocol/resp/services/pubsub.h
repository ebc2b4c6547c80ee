// PubSubHub: every subscription of the server (channels, patterns, shard
// channels), and PUBLISH's fan-out to the subscribers' workers. Any worker.
#pragma once

#include <cstddef>
#include <cstdint>
#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "net/worker_group.h"
#include "protocol/resp/core/conn_state.h"

namespace trove::resp {

// One published message as its receivers' workers see it (shared, never
// copied per receiver).
struct PublishedMessage {
  std::string channel;
  std::string payload;
  bool shard = false;
  std::vector<std::string> patterns;  // the patterns that matched, by index
};

// What a worker delivers: to connection conn_id, the message, through
// pattern `pattern` (-1: a channel subscription).
struct Delivery {
  uint64_t conn_id;
  int pattern;
};

// Thread safety: all methods are thread-safe (one mutex, a leaf: it is never
// held while posting to a worker or touching a connection).
//
// Invariants:
//  1. A (name, connection) pair is in the hub iff that connection's
//     PubSubState holds the name (the owner session adds and removes both,
//     and drops all of its own on close).
//  2. Publish delivers to the subscribers present when it takes the lock;
//     messages from one publisher thread reach each subscriber in publishing
//     order (one task per target worker, and inboxes are FIFO per sender).
class PubSubHub {
 public:
  using Kind = PubSubState::Kind;
  // The sessions' delivery hook, run on the subscriber's worker. The message
  // is shared by every receiver: a receiver may keep a reference to it (its
  // payload, referenced in place by the output buffer) until written.
  using DeliverFn = void (*)(uint64_t conn_id, const std::shared_ptr<const PublishedMessage>& m,
                             int pattern);

  explicit PubSubHub(DeliverFn deliver) : deliver_(deliver) {}

  void Add(Kind k, std::string_view name, uint64_t conn_id) EXCLUDES(mu_);
  void Remove(Kind k, std::string_view name, uint64_t conn_id) EXCLUDES(mu_);

  // The connection's side (invariant 1), run on its worker: a name added to
  // or removed from the connection's PubSubState `ps` is added to or
  // removed from the hub with it, and `clients` (its worker's count of
  // connections with a subscription) follows ps.active().
  void Subscribe(PubSubState& ps, uint64_t conn_id, std::atomic<int64_t>& clients, Kind k,
                 std::string_view name) EXCLUDES(mu_);
  void Unsubscribe(PubSubState& ps, uint64_t conn_id, std::atomic<int64_t>& clients, Kind k,
                   std::string_view name) EXCLUDES(mu_);
  void UnsubscribeAll(PubSubState& ps, uint64_t conn_id, std::atomic<int64_t>& clients)
      EXCLUDES(mu_);

  // PUBLISH / SPUBLISH: the number of receivers (each channel subscription
  // and each matching pattern counts once), delivered through `group`.
  size_t Publish(std::string_view channel, std::string_view payload, bool shard,
                 net::WorkerGroup* group) EXCLUDES(mu_);

  // PUBSUB CHANNELS / SHARDCHANNELS [pattern] (empty pattern: all).
  std::vector<std::string> Channels(bool shard, std::string_view pattern) const EXCLUDES(mu_);
  size_t NumSub(bool shard, std::string_view channel) const EXCLUDES(mu_);
  size_t NumPat() const EXCLUDES(mu_);

 private:
  using Subs = std::set<uint64_t>;  // connection ids
  const DeliverFn deliver_;
  mutable Mutex mu_{LockRank::kLeaf};
  std::unordered_map<std::string, Subs> channels_ GUARDED_BY(mu_);
  std::unordered_map<std::string, Subs> shard_ GUARDED_BY(mu_);
  std::map<std::string, Subs> patterns_ GUARDED_BY(mu_);
};

}  // namespace trove::resp
