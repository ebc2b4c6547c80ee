// RateBuckets: the shared token buckets of one user. Any thread.
#include "protocol/resp/services/rate_limit.h"

#include <algorithm>

namespace trove::resp::acl {

void RateBuckets::Refill(uint64_t cps, uint64_t bps, int64_t now_ns) {
  if (!started_) {  // full at first use
    cmd_tokens_ = static_cast<double>(cps);
    byte_tokens_ = static_cast<double>(bps);
    last_ns_ = now_ns;
    started_ = true;
    return;
  }
  const double dt = now_ns > last_ns_ ? static_cast<double>(now_ns - last_ns_) / 1e9 : 0.0;
  last_ns_ = std::max(last_ns_, now_ns);
  cmd_tokens_ = std::min(static_cast<double>(cps), cmd_tokens_ + dt * static_cast<double>(cps));
  byte_tokens_ =
      std::min(static_cast<double>(bps), byte_tokens_ + dt * static_cast<double>(bps));
}

RateResult RateBuckets::Acquire(uint64_t cmds, uint64_t bytes, uint64_t cps, uint64_t bps,
                                int64_t now_ns, uint64_t lease_cmds, uint64_t lease_bytes,
                                uint64_t* got_cmds, uint64_t* got_bytes) {
  *got_cmds = *got_bytes = 0;
  MutexLock l(&mu_);
  Refill(cps, bps, now_ns);
  if (cps > 0 && cmd_tokens_ < static_cast<double>(cmds)) {
    rejected_cps.fetch_add(1, std::memory_order_relaxed);
    return RateResult::kCommands;
  }
  if (bps > 0 && byte_tokens_ < static_cast<double>(bytes)) {
    rejected_bps.fetch_add(1, std::memory_order_relaxed);
    return RateResult::kBytes;
  }
  if (cps > 0) {
    cmd_tokens_ -= static_cast<double>(cmds);
    const double extra = std::min(static_cast<double>(lease_cmds), cmd_tokens_);
    *got_cmds = extra >= 1 ? static_cast<uint64_t>(extra) : 0;
    cmd_tokens_ -= static_cast<double>(*got_cmds);
  }
  if (bps > 0) {
    byte_tokens_ -= static_cast<double>(bytes);
    const double extra = std::min(static_cast<double>(lease_bytes), byte_tokens_);
    *got_bytes = extra >= 1 ? static_cast<uint64_t>(extra) : 0;
    byte_tokens_ -= static_cast<double>(*got_bytes);
  }
  return RateResult::kOk;
}

void RateBuckets::Release(uint64_t cmds, uint64_t bytes, uint64_t cps, uint64_t bps) {
  MutexLock l(&mu_);
  cmd_tokens_ = std::min(static_cast<double>(cps), cmd_tokens_ + static_cast<double>(cmds));
  byte_tokens_ = std::min(static_cast<double>(bps), byte_tokens_ + static_cast<double>(bytes));
}

void RateLease::Release(const std::shared_ptr<RateBuckets>& current, uint64_t cps, uint64_t bps) {
  if (from_ != nullptr && (cmds_ > 0 || bytes_ > 0) && current == from_) {
    from_->Release(cmds_, bytes_, cps, bps);
  }
  cmds_ = 0;
  bytes_ = 0;
  from_.reset();
}

RateResult RateLease::Take(const std::shared_ptr<RateBuckets>& buckets, uint64_t cps,
                           uint64_t bps, uint64_t cmds, uint64_t bytes, int64_t now_ns) {
  if (from_ != buckets) Release(buckets, cps, bps);  // from other buckets: dropped
  const bool cmd_ok = cps == 0 || cmds_ >= cmds;
  const bool byte_ok = bps == 0 || bytes_ >= bytes;
  if (cmd_ok && byte_ok) {  // the common case at high rates: no lock
    if (cps > 0) cmds_ -= cmds;
    if (bps > 0) bytes_ -= bytes;
    return RateResult::kOk;
  }
  uint64_t got_cmds = 0, got_bytes = 0;
  const RateResult r = buckets->Acquire(cmds, bytes, cps, bps, now_ns, LeaseSize(cps),
                                        LeaseSize(bps), &got_cmds, &got_bytes);
  if (r == RateResult::kOk) {
    from_ = buckets;
    cmds_ += got_cmds;
    bytes_ += got_bytes;
  }
  return r;
}

}  // namespace trove::resp::acl
