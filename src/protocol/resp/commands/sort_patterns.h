// SORT's BY and GET patterns (commands/sort.cc): what a pattern names for
// an element, and the stripes of those keys, which the command did not name
// and so the seam did not lock. Runs on the connection's worker inside the
// SORT handler, with the stripes of SORT's own keys held.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "protocol/resp/core/command.h"
#include "protocol/resp/types/collections.h"

namespace trove::resp {

// A BY or GET argument, split once: "#" is the element itself; without '*'
// it names no key (GET gives nil, BY means "do not sort"); otherwise the
// first '*' is replaced by the element, and "->field" after it (with a
// non-empty field) reads that field of a hash instead of a string.
struct SortPattern {
  explicit SortPattern(std::string_view text);
  bool self = false;        // "#"
  bool names_keys = false;  // has a '*' (and is not "#")
  std::string_view prefix;  // before the '*'
  std::string_view suffix;  // after the '*', up to "->"
  std::string_view field;   // after "->"; empty: a string key
};

// The stripes a SORT holds for the keys its patterns name, beyond those of
// its own keys (held by the seam, EXEC or a script).
//
// Invariants (why SORT never deadlocks and never reads a key unlocked):
//  1. No pattern key is read before Acquire(key) returned true: its stripe
//     is then held by this thread (try-locked here, or already held).
//  2. Acquire never waits while holding a stripe against the lock order: it
//     try-locks. With the seam behind it (ctx.can_go_exclusive), a busy
//     stripe, or more than kMaxHeld of them, makes the command ask to run
//     again holding every stripe (ctx.want_exclusive; the seam takes them
//     in ascending order holding none). Under EXEC or a script, which hold
//     stripes the seam cannot let go, it retries for up to 100 ms in all
//     (kWait) and then gives up with an error: a cycle with another waiter
//     is broken by time, never a hang.
//  TSan's deadlock detector keeps at most 64 held mutexes per thread, and
//  a SORT may hold kMaxHeld (or, rerun, all 8,192): tests that run SORT
//  with patterns turn it off (tests/integration/resp/CMakeLists.txt).
//  3. Every stripe taken stays held until the object dies, after the reply
//     or the store: the command reads a snapshot, as Redis's SORT does.
//  4. The handler changes nothing and writes no reply before its last
//     Acquire, so a rerun repeats only lookups.
// Thread safety: owner thread only; lives on the handler's stack.
class SortKeyLocks {
 public:
  explicit SortKeyLocks(CommandContext& ctx) : ctx_(ctx) {}
  ~SortKeyLocks();
  SortKeyLocks(const SortKeyLocks&) = delete;
  SortKeyLocks& operator=(const SortKeyLocks&) = delete;

  // Makes sure ekey's stripe is held. False when it cannot be: the handler
  // must then return at once, replying error() if it is not empty (else the
  // seam runs the command again: ctx.want_exclusive is set).
  bool Acquire(std::string_view ekey);
  const std::string& error() const { return error_; }

  // Past this many stripes of its own a SORT run by the seam goes
  // exclusive: each try-lock scans the stripes this thread holds, and a
  // busy one grows likely; LockAll costs about 0.2 ms.
  static constexpr size_t kMaxHeld = 256;

 private:
  CommandContext& ctx_;
  std::unordered_set<uint32_t> seen_;  // stripes known held (taken here or before)
  std::vector<std::string> taken_;     // one key per stripe taken here, to unlock
  std::string error_;
  // When the first busy stripe was met under EXEC or a script: waiting for
  // busy stripes ends kWait after it (sort_patterns.cc).
  std::chrono::steady_clock::time_point wait_until_{};
};

// Looks up what `p` names for element `elem` (a string value, or a hash
// field) into *out, holding its stripe through `locks`, with Redis's
// lookupKeyByPattern rules: a missing key, a key of another type or a
// missing field is "none". Compact hashes are decoded into `scratch`, not
// the command's, which is cleared after each lookup so a SORT over many
// hashes stays linear.
enum class PatternValue : uint8_t { kFound, kNone, kLockFailed };
PatternValue LookupPattern(CommandContext& ctx, SortKeyLocks& locks, const SortPattern& p,
                           std::string_view elem, std::vector<ScratchEntry>* scratch,
                           std::string* key_buf, std::string* out);

}  // namespace trove::resp
