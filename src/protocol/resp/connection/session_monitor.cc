// MONITOR on a connection: it becomes a watcher of the server's LogHub.

#include "net/log_hub.h"
#include "protocol/resp/connection/session.h"

namespace trove::resp {

void Session::StartMonitor(CommandContext& ctx) {
  if (monitor_id_ != 0) return;  // Redis ignores a second MONITOR (no reply)
  net::LogHub* log = server_->log();
  if (log == nullptr || control_ == nullptr) {
    ctx.Error("ERR MONITOR is not available on this connection");
    return;
  }
  uint64_t id = 0;
  if (log->AddWatcher(control_->id(), net::kLogMonitor, &id) != net::LogHub::AddResult::kOk) {
    ctx.Error("ERR max number of monitors reached");
    return;
  }
  monitor_id_ = id;
  ctx.w->Ok();
}

void Session::StopMonitor() {
  if (monitor_id_ == 0) return;
  server_->log()->RemoveWatcher(monitor_id_);
  monitor_id_ = 0;
}

}  // namespace trove::resp
