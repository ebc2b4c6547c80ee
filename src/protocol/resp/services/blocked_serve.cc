// Serving blocked clients on the writer's worker (blocked_serve.h).
#include "protocol/resp/services/blocked_serve.h"

#include <sys/uio.h>

#include <vector>

#include "net/io_buffer.h"
#include "net/worker_group.h"
#include "protocol/resp/core/client.h"
#include "protocol/resp/core/command.h"
#include "protocol/resp/core/effects.h"
#include "protocol/resp/core/execute.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/core/resp_writer.h"
#include "protocol/resp/services/block_registry.h"
#include "protocol/resp/types/collections.h"

namespace trove::resp {
namespace {

constexpr char kUnblockedError[] = "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n";

std::string TakeBytes(net::OutputBuffer& out) {
  std::string s;
  iovec iov[64];
  for (;;) {
    const int n = out.PendingIov(iov, 64);
    if (n <= 0) break;
    size_t total = 0;
    for (int i = 0; i < n; ++i) {
      s.append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
      total += iov[i].iov_len;
    }
    out.Advance(total);
  }
  return s;
}

// A served blocked command counts its changes on the writer's worker, as
// Redis 7.2+ counts a served BLPOP or BLMOVE in server.dirty (7.0 did not);
// the same rule as Session::Run.
void CountServedDirty(WorkerStats* stats, const CommandContext& ctx, bool write_failed,
                      bool errored) {
  uint64_t n = 0;
  if (ctx.dirty != CommandContext::kDirtyUnknown)
    n = static_cast<uint64_t>(ctx.dirty);
  else if (!errored)
    n = 1;
  if (n > 0 && !write_failed) stats->dirty.fetch_add(n, std::memory_order_relaxed);
}

// Runs waiter w's command again on this (the writer's) worker, through the
// command seam over a stand-in ConnState (the waiter's database and
// protocol) with the writer's effects record; false if it still finds no data.
bool ServeOne(const BlockServer& bs, Effects* fx, const Waiter& w, std::string* reply) {
  net::OutputBuffer out;
  RespWriter rw(&out, w.proto);
  rw.set_error_sink(bs.stats);
  ConnState cs;
  cs.identity().SelectDb(w.db);
  cs.identity().SetProto(w.proto);
  std::vector<std::string_view> argv(w.argv.begin(), w.argv.end());
  std::vector<ScratchEntry> scratch;
  bool write_failed = false;
  bool would_block = false;
  CommandContext ctx;
  ctx.Bind(bs.server, bs.stats, bs.ts, fx, &cs, &rw, w.spec, argv);
  ctx.scratch = &scratch;
  ctx.write_failed = &write_failed;
  ctx.would_block = &would_block;
  ctx.notify = bs.server->key_events().enabled();
  {
    std::vector<std::string_view> keys(w.lock_keys.begin(), w.lock_keys.end());
    engine::KeyLockSet lock(ctx.engine, keys);
    ctx.locked = true;
    ExecBuffers buf;
    ExecuteCommand(ctx, &buf);
  }
  if (would_block) return false;
  *reply = write_failed ? std::string("-OOM command not allowed when used memory > 'maxmemory'.\r\n")
                        : TakeBytes(out);
  CountServedDirty(bs.stats, ctx, write_failed, rw.errors() != 0);
  return true;
}

}  // namespace

std::string NoDataReply(int proto) { return proto >= 3 ? "_\r\n" : "*-1\r\n"; }

void PostBlockedReply(net::WorkerGroup* group, uint64_t conn_id, uint64_t token,
                      std::string reply) {
  if (group == nullptr || group->size() == 0) {
    DeliverBlockedReply(conn_id, token, std::move(reply));
    return;
  }
  group->loop(group->OwnerOf(conn_id)).Post([conn_id, token, r = std::move(reply)]() mutable {
    DeliverBlockedReply(conn_id, token, std::move(r));
  });
}

void PublishKeyEvents(RespServer* server, Effects* fx) {
  KeyEvents& ke = server->key_events();
  for (const Effects::KeyEvent& e : fx->key_events) ke.Notify(e.cls, e.event, e.ekey);
  fx->key_events.clear();
}

void ServeReadyKeys(const BlockServer& bs, Effects* fx) {
  BlockRegistry& reg = bs.server->blocks();
  // Keys in the order they got data; serving a BLMOVE may add its destination.
  for (size_t i = 0; i < fx->ready_keys.size(); ++i) {
    const std::string key = fx->ready_keys[i];
    for (;;) {
      std::shared_ptr<Waiter> w = reg.ClaimHead(key);
      if (!w) break;
      std::string reply;
      const bool served = ServeOne(bs, fx, *w, &reply);
      // Keys whose queues found w first while it was served here are served
      // after this one (ClaimHead): appended, so the outer loop reaches them.
      const Waiter::Cancel why = reg.FinishServe(w, served, &fx->ready_keys);
      if (served) {
        if (why != Waiter::Cancel::kGone)
          PostBlockedReply(bs.group, w->conn_id, w->token, std::move(reply));
        // After the reply: the served client made these changes (NOLOOP).
        if (!fx->invalidations.empty())
          bs.server->tracking().InvalidateEngineKeys(&fx->invalidations, w->conn_id);
        continue;  // the next client in line, if the key still has data
      }
      // No data for the oldest client: none for the others either.
      if (why == Waiter::Cancel::kTimeout) {
        PostBlockedReply(bs.group, w->conn_id, w->token, NoDataReply(w->proto));
      } else if (why == Waiter::Cancel::kError) {
        PostBlockedReply(bs.group, w->conn_id, w->token, kUnblockedError);
      }
      break;
    }
  }
  fx->ready_keys.clear();
  if (!fx->key_events.empty()) PublishKeyEvents(bs.server, fx);
}

int UnblockClient(RespServer* server, net::WorkerGroup* group, uint64_t conn_id, bool error) {
  std::shared_ptr<Waiter> w = server->blocks().Find(conn_id);
  if (!w) return 0;
  switch (server->blocks().CancelWaiter(w, error ? Waiter::Cancel::kError : Waiter::Cancel::kTimeout)) {
    case BlockRegistry::CancelResult::kEnded:
      PostBlockedReply(group, conn_id, w->token,
                       error ? std::string(kUnblockedError) : NoDataReply(w->proto));
      return 1;
    case BlockRegistry::CancelResult::kDeferred:
      return 1;  // a serve is running: it answers, with data or this reason
    case BlockRegistry::CancelResult::kNotBlocked:
      break;
  }
  return 0;
}

}  // namespace trove::resp
