// Per-user rate limits (docs/resp_modes.md section 11): two token buckets per ACL user,
// commands per second and request bytes per second, shared by every
// connection of that user on every worker and on both protocols.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "common/mutex.h"
#include "common/thread_annotations.h"

namespace trove::resp::acl {

enum class RateResult : uint8_t { kOk, kCommands, kBytes };

// The buckets of one user. Each starts full with one second's worth,
// refills in proportion to the time elapsed and is capped at one second's
// worth. A rate of 0 means no limit on that bucket.
// Thread safety: mu_ (a leaf lock) guards the tokens.
class RateBuckets {
 public:
  // Takes `cmds` and `bytes` (both or neither: a refused request consumes
  // nothing; the commands bucket is checked first) and, when there are
  // more, up to `lease_cmds` / `lease_bytes` extra tokens for the caller to
  // spend without coming back (*got_* receive the extras).
  RateResult Acquire(uint64_t cmds, uint64_t bytes, uint64_t cps, uint64_t bps, int64_t now_ns,
                     uint64_t lease_cmds, uint64_t lease_bytes, uint64_t* got_cmds,
                     uint64_t* got_bytes) EXCLUDES(mu_);
  // Gives back unspent leased tokens (a connection closing), capped at one
  // second's worth.
  void Release(uint64_t cmds, uint64_t bytes, uint64_t cps, uint64_t bps) EXCLUDES(mu_);

  // Refusals, per bucket (INFO; relaxed: statistics).
  std::atomic<uint64_t> rejected_cps{0};
  std::atomic<uint64_t> rejected_bps{0};

 private:
  void Refill(uint64_t cps, uint64_t bps, int64_t now_ns) REQUIRES(mu_);

  Mutex mu_{LockRank::kLeaf};
  double cmd_tokens_ GUARDED_BY(mu_) = 0;
  double byte_tokens_ GUARDED_BY(mu_) = 0;
  int64_t last_ns_ GUARDED_BY(mu_) = 0;
  bool started_ GUARDED_BY(mu_) = false;
};

// One connection's lease of tokens from its user's buckets: the common
// case (tokens left in the lease) touches no lock and no shared line.
// Owner thread only (it lives in the connection's Identity).
class RateLease {
 public:
  // Takes `cmds` commands and `bytes` request bytes for a user with these
  // buckets and rates: from the lease when it holds enough, else from the
  // buckets, leasing LeaseSize more. A lease from other buckets (the
  // connection's user changed) is given back first. kOk, or the bucket that
  // refused (then nothing is consumed).
  RateResult Take(const std::shared_ptr<RateBuckets>& buckets, uint64_t cps, uint64_t bps,
                  uint64_t cmds, uint64_t bytes, int64_t now_ns);
  // Gives the unspent tokens back (connection closing, user changed) if the
  // user's buckets are still those they came from; the lease is then empty.
  void Release(const std::shared_ptr<RateBuckets>& current, uint64_t cps, uint64_t bps);

 private:
  uint64_t cmds_ = 0;
  uint64_t bytes_ = 0;
  std::shared_ptr<RateBuckets> from_;  // the buckets the tokens came from
};

// The lease a connection takes when it has to visit the buckets: 1/64 of
// the rate (so at most that is ever held idle by one connection), none at
// low rates, where every command visits the buckets and the limit is exact.
inline uint64_t LeaseSize(uint64_t rate) { return rate / 64; }

}  // namespace trove::resp::acl
