// Session's part of the blocking commands: blocking, serving blocked clients
// after a write, time-outs, CLIENT UNBLOCK and the reply's way back to the
// blocked client's worker (block_registry.h explains the model).
#include <sys/uio.h>

#include <algorithm>

#include "net/worker.h"
#include "net/worker_group.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/connection/session.h"

namespace trove::resp {
namespace {

// A block longer than this (about 31 years) has no timer: it is "forever".
constexpr int64_t kForeverMs = int64_t{1000000000000};  // ms*1e6 stays far from overflow

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

// The reply of a block that ended without data (time-out, CLIENT UNBLOCK):
// a null array for every blocking command, BLMOVE and BRPOPLPUSH included
// (Redis's replyToBlockedClientTimedOut), unlike their null bulk inside MULTI.
std::string NoDataReply(int proto) { return proto >= 3 ? "_\r\n" : "*-1\r\n"; }

constexpr char kUnblockedError[] = "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n";

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

// Sends `reply` to the blocked client's worker (posted even when that is this
// worker: the reply then follows this turn's own replies, as in Redis).
void PostReply(net::WorkerGroup* group, uint64_t conn_id, uint64_t token, std::string reply) {
  if (group == nullptr || group->size() == 0) {
    Session::DeliverBlocked(conn_id, token, std::move(reply));
    return;
  }
  group->loop(group->OwnerOf(conn_id)).Post([conn_id, token, r = std::move(reply)]() mutable {
    Session::DeliverBlocked(conn_id, token, std::move(r));
  });
}

}  // namespace

void Session::Block(CommandContext& ctx, int64_t timeout_ms, std::span<const size_t> wait_idx) {
  auto w = std::make_shared<Waiter>();
  w->conn_id = conn_.identity().id();
  w->token = ++block_token_;
  w->proto = conn_.identity().proto();
  w->db = conn_.identity().db();
  w->spec = ctx.spec;
  w->argv.assign(ctx.argv.begin(), ctx.argv.end());
  std::vector<size_t> idx;
  CommandTable::KeyIndexes(*ctx.spec, ctx.argv, &idx);
  for (size_t i : idx) w->lock_keys.push_back(ctx.Key(i));
  for (size_t i : wait_idx) w->wait_keys.push_back(ctx.Key(i));
  w->timed = timeout_ms > 0 && timeout_ms < kForeverMs;
  w->arrival_ns = control_ != nullptr ? control_->ArrivalNs() : 0;
  if (w->arrival_ns == 0) w->arrival_ns = server_->engine()->clock()->UnixMicros() * 1000;
  server_->blocks().Add(w);  // under the stripes (block_registry.h, step 1)
  block_ = std::move(w);
  block_slot_ = cur_slot_;
  just_blocked_ = true;
  conn_.blocked().Set();
  control_->Suspend();
  if (timeout_ms > 0 && timeout_ms < kForeverMs) control_->loop().ArmAfter(&block_timer_, timeout_ms);
}

void Session::ServeBlocked() {
  BlockRegistry& reg = server_->blocks();
  net::WorkerGroup* group = control_ != nullptr ? &control_->group() : nullptr;
  // Keys in the order they got data; serving a BLMOVE may add its destination.
  for (size_t i = 0; i < fx_.ready_keys.size(); ++i) {
    const std::string key = fx_.ready_keys[i];
    for (;;) {
      std::shared_ptr<Waiter> w = reg.ClaimHead(key);
      if (!w) break;
      std::string reply;
      const bool served = ServeOne(*w, &reply);
      const Waiter::Cancel why = reg.FinishServe(w, served);
      if (served) {
        if (why != Waiter::Cancel::kGone) PostReply(group, w->conn_id, w->token, std::move(reply));
        // After the reply: the served client made these changes (NOLOOP).
        if (!fx_.invalidations.empty()) FlushInvalidations(w->conn_id);
        continue;  // the next client in line, if the key still has data
      }
      // No data for the oldest client: none for the others either.
      if (why == Waiter::Cancel::kTimeout) {
        PostReply(group, w->conn_id, w->token, NoDataReply(w->proto));
      } else if (why == Waiter::Cancel::kError) {
        PostReply(group, w->conn_id, w->token, kUnblockedError);
      }
      break;
    }
  }
  fx_.ready_keys.clear();
  if (!fx_.key_events.empty()) PublishKeyEvents();
}

void Session::FenceThenServe() {
  const bool fencing = !fenced_keys_.empty();  // an EXEC's inner drain: one fence serves all
  fenced_keys_.insert(fenced_keys_.end(), std::make_move_iterator(fx_.ready_keys.begin()),
                      std::make_move_iterator(fx_.ready_keys.end()));
  fx_.ready_keys.clear();
  if (fencing) return;
  control_->Suspend();
  const uint64_t id = conn_.identity().id();
  control_->group().Fence([id] {
    net::Connection* c;
    Session* s = OnThisWorker(id, &c, /*even_closing=*/true);
    if (s != nullptr && !s->fenced_keys_.empty()) s->AfterFence();  // else ~Session served them
  });
}

void Session::AfterFence() {
  fx_.ready_keys = std::move(fenced_keys_);
  fenced_keys_.clear();
  ServeBlocked();
  if (!block_) control_->Resume();  // a client that queued behind others stays blocked
}

bool Session::ServeOne(const Waiter& w, std::string* reply) {
  net::OutputBuffer out;
  RespWriter rw(&out, w.proto);
  ConnState cs;  // the blocked client's database and protocol
  cs.identity().SelectDb(w.db);
  cs.identity().SetProto(w.proto);
  std::vector<std::string_view> argv(w.argv.begin(), w.argv.end());
  std::vector<ScratchEntry> scratch;
  bool write_failed = false;
  bool would_block = false;
  // The blocked client's command runs through the command seam with the
  // writer's effects record: key events and ready keys (a BLMOVE's
  // destination) are carried out here, on the writer's worker.
  CommandContext ctx;
  ctx.server = server_;
  ctx.stats = stats_;
  ctx.fx = &fx_;
  ctx.engine = server_->engine();
  ctx.ts = ts_;
  ctx.conn = &cs;
  ctx.w = &rw;
  ctx.push = &rw;
  ctx.argv = argv;
  ctx.spec = w.spec;
  ctx.scratch = &scratch;
  ctx.write_failed = &write_failed;
  ctx.would_block = &would_block;
  ctx.notify = server_->key_events().enabled();
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
  CountServedDirty(stats_, ctx, write_failed, rw.errors() != 0);
  return true;
}

void Session::OnBlockTimeout() {
  if (!block_) return;
  if (server_->blocks().CancelWaiter(block_, Waiter::Cancel::kTimeout) !=
      BlockRegistry::CancelResult::kEnded) {
    return;  // a serve is running: its outcome (or this time-out) arrives by DeliverBlocked
  }
  control_->output().Append(NoDataReply(block_->proto));
  EndBlock();
  control_->OutputAdded();
}

void Session::EndBlock() {
  std::shared_ptr<Waiter> w = std::move(block_);
  block_.reset();
  if (block_timer_.armed()) control_->loop().Cancel(&block_timer_);
  conn_.blocked().Clear();
  const CommandSpec& spec = *w->spec;
  std::vector<std::string_view> argv(w->argv.begin(), w->argv.end());
  CommandCounters& c = stats_->cmds[static_cast<size_t>(spec.id)];
  c.calls.fetch_add(1, std::memory_order_relaxed);
  stats_->total_commands.fetch_add(1, std::memory_order_relaxed);
  server_->RecordCommand(stats_, spec, block_slot_, argv, conn_.identity(), 0,
                         /*monitored=*/true);
  cmd_clock_ns_ = server_->engine()->clock()->MonoNanos();
  if (fenced_keys_.empty()) control_->Resume();  // else AfterFence resumes
}

void Session::DeliverBlocked(uint64_t conn_id, uint64_t token, std::string reply) {
  net::Connection* c;
  Session* s = OnThisWorker(conn_id, &c, /*even_closing=*/true);
  if (s == nullptr) return;
  if (s == nullptr || !s->block_ || s->block_->token != token) return;
  net::OutputBuffer& out = s->control_->output();
  out.Append(reply);
  s->EndBlock();
  if (s->EnforceOutputLimit(out)) return;
  s->control_->OutputAdded();
}

int UnblockClient(RespServer* server, net::WorkerGroup* group, uint64_t conn_id, bool error) {
  std::shared_ptr<Waiter> w = server->blocks().Find(conn_id);
  if (!w) return 0;
  switch (server->blocks().CancelWaiter(w, error ? Waiter::Cancel::kError : Waiter::Cancel::kTimeout)) {
    case BlockRegistry::CancelResult::kEnded:
      PostReply(group, conn_id, w->token,
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
