// Delivery of published messages as pushes on the subscriber's worker (the
// subscriptions themselves: PubSubHub::Subscribe, services/pubsub.h).

#include "net/worker.h"
#include "protocol/resp/connection/session.h"
#include "protocol/resp/connection/lazy_session.h"

namespace trove::resp {

using Kind = PubSubState::Kind;

namespace {
// A payload at least this long is referenced in the subscriber's output, not
// copied: one copy per receiver was what a stuck subscriber cost its worker
// (and the page faults of fresh output blocks), and the shared message lives
// anyway until every receiver's task has run. Shorter ones are copied, which
// costs less than the reference (an allocation and two atomic updates).
constexpr size_t kSharedPayloadMin = 4096;

void ReleaseMessage(void* /*ctx*/, void* obj) {
  delete static_cast<std::shared_ptr<const PublishedMessage>*>(obj);
}
}  // namespace

void Session::DeliverPubSub(uint64_t conn_id, const std::shared_ptr<const PublishedMessage>& msg,
                            int pattern) {
  // Once per receiver of every message: a static_cast, not OnThisWorker's
  // dynamic_cast, since only Sessions subscribe (hub invariant 1) and every
  // RESP connection's handler is a LazySession, whose Session a subscriber
  // has made.
  net::Worker* self = net::Worker::Current();
  if (self == nullptr) return;
  net::Connection* c = self->Find(conn_id);
  if (c == nullptr || c->close_requested) return;
  Session* s = static_cast<LazySession*>(c->handler.get())->made();
  if (s == nullptr) return;
  if (s->obuf_.killed()) return;  // being closed for its limit: nothing more goes out
  const PublishedMessage& m = *msg;
  net::OutputBuffer& out = c->output();
  RespWriter w(&out, s->conn_.identity().proto());
  if (pattern >= 0) {
    w.PushHeader(4);
    w.Bulk("pmessage");
    w.Bulk(m.patterns[static_cast<size_t>(pattern)]);
  } else {
    w.PushHeader(3);
    w.Bulk(m.shard ? "smessage" : "message");
  }
  w.Bulk(m.channel);
  if (m.payload.size() < kSharedPayloadMin) {
    w.Bulk(m.payload);
  } else {
    net::Releaser rel;
    rel.fn = &ReleaseMessage;
    rel.obj = new std::shared_ptr<const PublishedMessage>(msg);
    w.BulkShared(m.payload, rel);
  }
  // client-output-buffer-limit pubsub: a subscriber that does not read is
  // cut off, so a publisher can never grow a worker's memory without bound.
  if (s->EnforceOutputLimit(out)) return;
  c->OutputAdded();
}

void DeliverPubSubMessage(uint64_t conn_id, const std::shared_ptr<const PublishedMessage>& m,
                          int pattern) {
  Session::DeliverPubSub(conn_id, m, pattern);
}

}  // namespace trove::resp
