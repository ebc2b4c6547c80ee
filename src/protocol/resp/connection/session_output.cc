// client-output-buffer-limit enforced on a RESP connection (the rule and
// its CONFIG syntax: services/output_limits.h), and the connection's
// housekeeping. Runs on the connection's worker.
#include "net/connection.h"
#include "protocol/resp/connection/session.h"

namespace trove::resp {


bool Session::OutputOverLimit(const net::OutputBuffer& out, size_t extra) {
  if (obuf_killed_) return true;
  const ClientClass cls = conn_.in_pubsub() ? ClientClass::kPubSub : ClientClass::kNormal;
  const ObufLimit l = server_->obuf_limits().Get(cls);
  if (l.hard == 0 && l.soft == 0) return false;  // the default for normal clients
  const uint64_t used = out.pending_bytes() + extra;
  if ((l.hard == 0 || used < static_cast<uint64_t>(l.hard)) &&
      (l.soft == 0 || used < static_cast<uint64_t>(l.soft))) {
    obuf_soft_.reached = false;  // below both: no clock read on this common path
    return false;
  }
  return ObufOverLimit(l, used, server_->engine()->clock()->MonoNanos(), &obuf_soft_);
}

void Session::KillForOutputLimit(net::OutputBuffer& out) {
  if (obuf_killed_) return;
  obuf_killed_ = true;
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
  if (control_ == nullptr || obuf_killed_) return;
  if (EnforceOutputLimit(control_->output())) return;
  const int64_t t = server_->timeout_s.load(std::memory_order_relaxed);
  if (t > 0 && control_->IdleNs() / 1000000000 > t && !TimeoutExempt()) {
    close_ = true;  // Redis closes it without a reply
    control_->CloseSoon();
  }
}

}  // namespace trove::resp
