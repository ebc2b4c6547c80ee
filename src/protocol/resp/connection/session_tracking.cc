// Session's side of client tracking (services/tracking.h holds the table):
// remembering read keys, sending invalidations after a command, and writing
// them on the tracking (or redirect) client's worker.

#include "net/connection.h"
#include "net/worker.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/connection/session.h"
#include "protocol/resp/types/keyspace.h"

namespace trove::resp {

void Session::TrackAfterCommand(const CommandSpec& spec, std::span<const std::string_view> argv,
                                bool in_exec, bool script, bool script_read) {
  TrackingState& t = conn_.tracking();
  const bool reads = script ? script_read : (spec.flags & kCmdReadonly) != 0;
  if (reads && (spec.flags & kCmdPubsub) == 0 && !t.bcast &&
      !((t.optin && !t.caching) || (t.optout && t.caching))) {
    ExecBuffersLease buf;
    std::vector<size_t>& idx = buf->idx;
    CommandTable::KeyIndexes(spec, argv, &idx);
    Tracking& table = server_->tracking();
    const uint64_t me = conn_.identity().id();
    for (size_t i : idx) table.Remember(argv[i], me);
  }
  // Not inside EXEC: its stripes are held, and evicting posts messages.
  if (!in_exec) server_->tracking().EnforceLimit();
  // Redis's resetClient: CLIENT CACHING lasts for the next command, or for a
  // whole transaction started right after it.
  if (t.caching && !in_exec && !conn_.txn().active() && std::string_view(spec.name) != "client") {
    t.caching = false;
  }
}

void Session::DeliverTracking(uint64_t conn_id, const std::shared_ptr<const TrackingMessage>& msg) {
  net::Connection* c;
  Session* s = OnThisWorker(conn_id, &c);
  if (s == nullptr) return;
  TrackingState& t = s->conn_.tracking();
  const TrackingMessage& m = *msg;
  if (!t.on) return;
  if (!m.flush) {
    // A read remembered before the client switched to BCAST, or a prefix's
    // message that crossed a switch back: Redis sends neither.
    if (m.bcast != t.bcast) return;
    if (t.noloop && m.modifier == conn_id) return;
  }
  if (t.redirect == 0) {
    s->WriteInvalidation(c, m, /*redirected=*/false);
    return;
  }
  if (!s->server_->live_clients().Contains(t.redirect)) {
    t.broken_redirect = true;
    if (s->conn_.identity().proto() >= 3 && !s->obuf_.killed()) {
      RespWriter w(&c->output(), 3);
      w.PushHeader(2);
      w.Bulk("tracking-redir-broken");
      w.Integer(static_cast<int64_t>(t.redirect));
      if (s->EnforceOutputLimit(c->output())) return;
      c->OutputAdded();
    }
    return;
  }
  if (t.redirect == conn_id) {
    s->WriteInvalidation(c, m, /*redirected=*/true);
    return;
  }
  net::ConnControl* ctl = s->control_;
  if (ctl == nullptr) return;
  net::WorkerGroup& g = ctl->group();
  const uint64_t target = t.redirect;
  g.loop(g.OwnerOf(target)).Post([target, msg] { DeliverRedirected(target, msg); });
}

void Session::DeliverRedirected(uint64_t conn_id, const std::shared_ptr<const TrackingMessage>& msg) {
  net::Connection* c;
  Session* s = OnThisWorker(conn_id, &c);
  if (s == nullptr) return;
  s->WriteInvalidation(c, *msg, /*redirected=*/true);
}

void Session::WriteInvalidation(net::Connection* c, const TrackingMessage& m, bool redirected) {
  if (obuf_.killed()) return;
  const int proto = conn_.identity().proto();
  net::OutputBuffer& out = c->output();
  RespWriter w(&out, proto);
  if (proto >= 3) {
    w.PushHeader(2);
    w.Bulk("invalidate");
  } else if (redirected && conn_.in_pubsub()) {
    w.PushHeader(3);
    w.Bulk("message");
    w.Bulk("__redis__:invalidate");
  } else {
    return;  // RESP2 has no way to push on a connection that is not subscribed
  }
  if (m.flush) {
    w.Null();
  } else {
    w.ArrayHeader(m.keys.size());
    for (const std::string& k : m.keys) w.Bulk(k);
  }
  if (EnforceOutputLimit(out)) return;
  c->OutputAdded();
}

void DeliverTrackingMessage(uint64_t conn_id, const std::shared_ptr<const TrackingMessage>& m) {
  Session::DeliverTracking(conn_id, m);
}

}  // namespace trove::resp
