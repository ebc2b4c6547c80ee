// CLIENT PAUSE and UNPAUSE on a connection: how a waiting connection is
// held and let go (docs/resp_modes.md section 8, "CLIENT PAUSE"; which
// commands wait: services/pause_rules.h).
//
// A held command is not consumed: the connection is suspended with the
// command still in its input buffer and parsed again when its timer (the
// pause's end) fires or CLIENT UNPAUSE wakes it; if the pause was extended
// meanwhile, it waits again.
#include <algorithm>

#include "net/worker.h"
#include "net/worker_group.h"
#include "protocol/resp/connection/session.h"
#include "protocol/resp/services/pause_rules.h"

namespace trove::resp {

bool Session::PauseHolds(std::span<const std::string_view> argv) {
  if (control_ == nullptr) return false;
  const int mode = server_->pause().ModeAt(server_->engine()->clock()->MonoNanos());
  return PauseHoldsCommand(mode, conn_, argv);
}

void Session::PostponeForPause() {
  if (!pause_waiting_) {
    pause_waiting_ = true;
    server_->pause().HeldOn(worker_id_).push_back(conn_.identity().id());
    server_->pause().held.fetch_add(1, std::memory_order_relaxed);
  }
  control_->Suspend();
  const int64_t left = server_->pause().end_ns() - server_->engine()->clock()->MonoNanos();
  // At most a day ahead (a "forever" pause must not overflow the timer);
  // a waiter woken before the end simply waits again.
  if (pause_timer_ == nullptr)
    pause_timer_ = std::make_unique<net::Timer>([this] { control_->Resume(); });
  control_->loop().ArmAfter(pause_timer_.get(),
                            std::clamp<int64_t>(left / 1000000 + 1, 1, 86400 * 1000));
}

void Session::LeavePause() {
  pause_waiting_ = false;
  auto& v = server_->pause().HeldOn(worker_id_);
  v.erase(std::remove(v.begin(), v.end(), conn_.identity().id()), v.end());
  server_->pause().held.fetch_sub(1, std::memory_order_relaxed);
  if (pause_timer_ != nullptr && pause_timer_->armed() && control_ != nullptr)
    control_->loop().Cancel(pause_timer_.get());
}

void WakePaused(protocol::ClientPause* pause) {
  net::Worker* self = net::Worker::Current();
  if (self == nullptr) return;
  const std::vector<uint64_t> ids = pause->HeldOn(self->id());
  for (uint64_t id : ids) {
    net::Connection* c = self->Find(id);
    if (c != nullptr) c->Resume();
  }
}

}  // namespace trove::resp
