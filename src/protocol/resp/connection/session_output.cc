// client-output-buffer-limit enforced on a RESP connection (the rule and
// its CONFIG syntax: services/output_limits.h), and the connection's
// housekeeping. Runs on the connection's worker.
#include "net/connection.h"
#include "protocol/resp/connection/session.h"

namespace trove::resp {

bool Session::OutputOverLimit(const net::OutputBuffer& out, size_t extra) {
  const ClientClass cls = conn_.in_pubsub() ? ClientClass::kPubSub : ClientClass::kNormal;
  const Clock* clock = server_->engine()->clock();
  return obuf_.Over(server_->obuf_limits(), cls, out.pending_bytes() + extra,
                    [clock] { return clock->MonoNanos(); });
}

void Session::KillForOutputLimit(net::OutputBuffer& out) {
  if (obuf_.killed()) return;
  obuf_.MarkKilled();
  close_ = true;
  // Redis frees the client with whatever it had not sent: nothing more of
  // it goes out, not even the part of a reply that fitted.
  out.Clear();
  server_->obuf_limit_disconnections.fetch_add(1, std::memory_order_relaxed);
  if (control_ != nullptr) control_->CloseSoon();
}

bool Session::EnforceOutputLimitSlow(net::OutputBuffer& out) {
  if (!OutputOverLimit(out, 0)) return false;
  KillForOutputLimit(out);
  return true;
}

void Session::OnHousekeeping() {
  if (control_ == nullptr || obuf_.killed()) return;
  if (EnforceOutputLimit(control_->output())) return;
  const int64_t t = server_->timeout_s.load(std::memory_order_relaxed);
  if (t > 0 && control_->IdleNs() / 1000000000 > t && !TimeoutExempt()) {
    close_ = true;  // Redis closes it without a reply
    control_->CloseSoon();
  }
}

}  // namespace trove::resp
