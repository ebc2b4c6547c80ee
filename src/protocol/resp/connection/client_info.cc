// CLIENT LIST / CLIENT INFO fields that only the RESP connection knows.

#include "net/protocol_handler.h"
#include "protocol/resp/connection/session.h"

namespace trove::resp {

void Session::DescribeClient(net::ClientInfo* info) const {
  const Identity& id = conn_.identity();
  const PubSubState& ps = conn_.pubsub();
  info->resp = true;
  info->name = id.name();
  std::string flags;
  if (monitor_id_ != 0) flags += 'O';
  if (ps.active()) flags += 'P';
  if (conn_.in_transaction()) flags += 'x';
  if (conn_.blocked().blocked()) flags += 'b';
  const TrackingState& tr = conn_.tracking();
  if (tr.on) flags += 't';
  if (tr.broken_redirect) flags += 'R';
  if (tr.bcast) flags += 'B';
  if (id.no_evict()) flags += 'e';
  if (id.no_touch()) flags += 'T';
  info->flags = flags.empty() ? "N" : flags;
  info->db = id.db();
  info->sub = static_cast<int64_t>(ps.set(PubSubState::kChannel).size());
  info->psub = static_cast<int64_t>(ps.set(PubSubState::kPattern).size());
  info->ssub = static_cast<int64_t>(ps.set(PubSubState::kShard).size());
  info->multi = conn_.in_transaction() ? static_cast<int64_t>(conn_.txn().queued().size()) : -1;
  info->watch = static_cast<int64_t>(conn_.txn().watched().size());
  info->cmd = id.last_cmd();
  info->user = id.user();
  info->resp_version = id.proto();
  info->lib_name = id.lib_name();
  info->lib_ver = id.lib_ver();
  info->redir = tr.on ? static_cast<int64_t>(tr.redirect) : -1;
  if (cur_qbuf_ != 0) {
    // Asked about itself while a command runs: Redis counts the command
    // being executed (and the rest of the batch) as its query buffer.
    info->qbuf = cur_qbuf_;
    info->argv_mem = 0;
    for (std::string_view a : parser_.args()) info->argv_mem += a.size();
  }
}

}  // namespace trove::resp
