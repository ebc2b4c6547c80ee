// The blocked connection's half of the blocking commands: blocking, its
// time-out, taking the reply posted by the serving worker, and a writer's
// wait for the input fence before its ready keys are served. The state is
// ConnState::blocked() (core/conn_state.h); serving the ready keys is
// services/blocked_serve.h; block_registry.h explains the model.
#include <algorithm>

#include "net/worker.h"
#include "net/worker_group.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/connection/session.h"
#include "protocol/resp/services/blocked_serve.h"

namespace trove::resp {
namespace {

// A block longer than this (about 31 years) has no timer: it is "forever".
constexpr int64_t kForeverMs = int64_t{1000000000000};  // ms*1e6 stays far from overflow

}  // namespace

void Session::Block(CommandContext& ctx, int64_t timeout_ms, std::span<const size_t> wait_idx) {
  BlockedState& b = conn_.blocked();
  auto w = std::make_shared<Waiter>();
  w->conn_id = conn_.identity().id();
  w->token = ++b.last_token;
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
  b.waiter = std::move(w);
  b.slot = cur_slot_;
  b.just_blocked = true;
  control_->Suspend();
  if (timeout_ms > 0 && timeout_ms < kForeverMs) {
    if (block_timer_ == nullptr)
      block_timer_ = std::make_unique<net::Timer>([this] { OnBlockTimeout(); });
    control_->loop().ArmAfter(block_timer_.get(), timeout_ms);
  }
}

void Session::ServeBlocked() {
  ServeReadyKeys(BlockServer{server_, stats_, ts_, control_ != nullptr ? &control_->group() : nullptr},
                 &fx_);
}

void Session::FenceThenServe() {
  BlockedState& b = conn_.blocked();
  const bool fencing = b.fencing();  // an EXEC's inner drain: one fence serves all
  b.fenced_keys.insert(b.fenced_keys.end(), std::make_move_iterator(fx_.ready_keys.begin()),
                       std::make_move_iterator(fx_.ready_keys.end()));
  fx_.ready_keys.clear();
  if (fencing) return;
  control_->Suspend();
  const uint64_t id = conn_.identity().id();
  control_->group().Fence([id] {
    net::Connection* c;
    Session* s = OnThisWorker(id, &c, /*even_closing=*/true);
    if (s != nullptr && s->conn_.blocked().fencing()) s->AfterFence();  // else ~Session served them
  });
}

void Session::AfterFence() {
  BlockedState& b = conn_.blocked();
  fx_.ready_keys = std::move(b.fenced_keys);
  b.fenced_keys.clear();
  ServeBlocked();
  if (!b.blocked()) control_->Resume();  // a client that queued behind others stays blocked
}

void Session::OnBlockTimeout() {
  BlockedState& b = conn_.blocked();
  if (!b.blocked()) return;
  if (server_->blocks().CancelWaiter(b.waiter, Waiter::Cancel::kTimeout) !=
      BlockRegistry::CancelResult::kEnded) {
    return;  // a serve is running: its outcome (or this time-out) arrives by DeliverBlockedReply
  }
  control_->output().Append(NoDataReply(b.waiter->proto));
  EndBlock();
  control_->OutputAdded();
}

void Session::EndBlock() {
  BlockedState& b = conn_.blocked();
  std::shared_ptr<Waiter> w = std::move(b.waiter);
  b.waiter.reset();
  if (block_timer_ != nullptr && block_timer_->armed())
    control_->loop().Cancel(block_timer_.get());
  const CommandSpec& spec = *w->spec;
  std::vector<std::string_view> argv(w->argv.begin(), w->argv.end());
  CommandCounters& c = stats_->cmds[static_cast<size_t>(spec.id)];
  c.calls.fetch_add(1, std::memory_order_relaxed);
  stats_->total_commands.fetch_add(1, std::memory_order_relaxed);
  server_->RecordCommand(stats_, spec, b.slot, argv, conn_.identity(), 0,
                         /*monitored=*/true);
  cmd_clock_ns_ = server_->engine()->clock()->MonoNanos();
  if (!b.fencing()) control_->Resume();  // else AfterFence resumes
}

void DeliverBlockedReply(uint64_t conn_id, uint64_t token, std::string reply) {
  net::Connection* c;
  Session* s = Session::OnThisWorker(conn_id, &c, /*even_closing=*/true);
  if (s != nullptr) s->TakeBlockedReply(token, std::move(reply));
}

void Session::TakeBlockedReply(uint64_t token, std::string reply) {
  const BlockedState& b = conn_.blocked();
  if (!b.blocked() || b.waiter->token != token) return;  // a stale reply
  net::OutputBuffer& out = control_->output();
  out.Append(reply);
  EndBlock();
  if (EnforceOutputLimit(out)) return;
  control_->OutputAdded();
}

}  // namespace trove::resp
