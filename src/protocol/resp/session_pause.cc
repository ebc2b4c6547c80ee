// CLIENT PAUSE and UNPAUSE: which commands wait, and how a waiting
// connection is held and let go (resp-modes-requirements.md 1.5).
//
// A held command is not consumed: the connection is suspended with the
// command still in its input buffer and parsed again when its timer (the
// pause's end) fires or CLIENT UNPAUSE wakes it; if the pause was extended
// meanwhile, it waits again.
#include <algorithm>

#include "net/worker.h"
#include "net/worker_group.h"
#include "protocol/resp/command_table.h"
#include "protocol/resp/session.h"

namespace trove::resp {
namespace {

// Redis's CMD_WRITE | CMD_MAY_REPLICATE.
bool MayReplicate(const CommandSpec& spec) {
  if (spec.flags & kCmdWrite) return true;
  const std::string_view n = spec.name;
  return n == "publish" || n == "spublish" || n == "pfcount" || n == "eval" || n == "evalsha" ||
         n == "fcall";
}

}  // namespace

void RespServer::Pause(int mode, int64_t end_ns) {
  MutexLock l(&mu_);
  const int64_t now = engine_->clock()->MonoNanos();
  int old = pause_mode.load(std::memory_order_relaxed);
  int64_t old_end = pause_end_ns.load(std::memory_order_relaxed);
  if (old_end <= now) old = kPauseNone;
  pause_end_ns.store(std::max(old_end, end_ns), std::memory_order_relaxed);
  pause_mode.store(std::max(old, mode), std::memory_order_relaxed);
}

void RespServer::Unpause() {
  MutexLock l(&mu_);
  pause_mode.store(kPauseNone, std::memory_order_relaxed);
  pause_end_ns.store(0, std::memory_order_relaxed);
}

bool Session::PauseHolds(std::span<const std::string_view> argv) {
  if (control_ == nullptr) return false;
  const int mode = server_->pause_mode.load(std::memory_order_relaxed);
  if (mode == RespServer::kPauseNone) return false;
  if (server_->engine()->clock()->MonoNanos() >=
      server_->pause_end_ns.load(std::memory_order_relaxed)) {
    return false;
  }
  const CommandSpec* spec = CommandTable::Get().Find(argv[0]);
  if (spec == nullptr) return false;  // its error comes at once
  const int argc = static_cast<int>(argv.size());
  if ((spec->arity > 0 && argc != spec->arity) || argc < -spec->arity) return false;
  if (!conn_.identity().authenticated() && (spec->flags & kCmdNoAuth) == 0) return false;
  if (mode == RespServer::kPauseAll) return true;
  if (MayReplicate(*spec)) return true;
  if (std::string_view(spec->name) == "exec" && conn_.txn().active()) {
    for (const auto& q : conn_.txn().queued()) {
      const CommandSpec* s = CommandTable::Get().Find(q[0]);
      if (s != nullptr && MayReplicate(*s)) return true;
    }
  }
  return false;
}

void Session::PostponeForPause() {
  if (!pause_waiting_) {
    pause_waiting_ = true;
    stats_->paused_conns.push_back(conn_.identity().id());
    server_->paused_clients.fetch_add(1, std::memory_order_relaxed);
  }
  control_->Suspend();
  const int64_t left = server_->pause_end_ns.load(std::memory_order_relaxed) -
                       server_->engine()->clock()->MonoNanos();
  control_->loop().ArmAfter(&pause_timer_, std::max<int64_t>(1, left / 1000000 + 1));
}

void Session::LeavePause() {
  pause_waiting_ = false;
  auto& v = stats_->paused_conns;
  v.erase(std::remove(v.begin(), v.end(), conn_.identity().id()), v.end());
  server_->paused_clients.fetch_sub(1, std::memory_order_relaxed);
  if (pause_timer_.armed() && control_ != nullptr) control_->loop().Cancel(&pause_timer_);
}

void Session::WakePaused(RespServer* server) {
  net::Worker* self = net::Worker::Current();
  if (self == nullptr) return;
  WorkerStats* ws = server->StatsFor(self->id());
  const std::vector<uint64_t> ids = ws->paused_conns;
  for (uint64_t id : ids) {
    net::Connection* c = self->Find(id);
    if (c != nullptr) c->Resume();
  }
}

}  // namespace trove::resp
