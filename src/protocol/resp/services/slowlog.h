// SlowLog: the bounded log of commands slower than slowlog-log-slower-than
// (SLOWLOG GET/LEN/RESET). Owned by RespServer; any worker thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/mutex.h"
#include "common/thread_annotations.h"

namespace trove::resp {

// One logged command, as SLOWLOG GET shows it.
struct SlowLogEntry {
  int64_t id = 0;                 // assigned by SlowLog::Push, never reused (RESET keeps counting)
  int64_t unix_time = 0;          // when the command ended
  int64_t usec = 0;               // its duration
  std::vector<std::string> argv;  // as SlowLogArgv made it
  std::string addr;               // client "ip:port"
  std::string name;               // client name ("" if none), as it was when the command ended
};

// The argv Redis logs: secrets replaced by "(redacted)" (AUTH's arguments,
// HELLO's AUTH user and password, CONFIG SET's value of a sensitive
// parameter); at most limits::kSlowLogMaxArgc arguments, the last of them
// then "... (N more arguments)"; each argument cut to
// limits::kSlowLogMaxArgLen bytes plus "... (N more bytes)".
std::vector<std::string> SlowLogArgv(std::span<const std::string_view> argv);

// Newest entry first, at most max_len entries.
//
// Thread safety: every method takes mu_, a leaf lock. Workers take it only
// for a command slower than the threshold (RespServer::RecordCommand), so
// the common path never touches it; entries are built before the lock and
// dropped ones freed after it.
// Invariants:
//  1. entries_ is ordered by id, highest (newest) first.
//  2. After Push(e, m) or Trim(m), entries_.size() <= m.
class SlowLog {
 public:
  // Assigns e's id and adds it, then drops the oldest entries beyond
  // max_len (with max_len 0 nothing is kept, but the id is still used, as
  // Redis).
  void Push(SlowLogEntry e, size_t max_len) EXCLUDES(mu_);
  // Drops the oldest entries beyond max_len (CONFIG SET slowlog-max-len).
  void Trim(size_t max_len) EXCLUDES(mu_);
  // Copies of the newest `count` entries, newest first.
  std::vector<SlowLogEntry> Newest(size_t count) const EXCLUDES(mu_);
  size_t Len() const EXCLUDES(mu_);
  void Reset() EXCLUDES(mu_);

 private:
  // Moves the entries beyond max_len into *dropped (freed by the caller
  // after unlocking).
  void TrimLocked(size_t max_len, std::deque<SlowLogEntry>* dropped) REQUIRES(mu_);

  mutable Mutex mu_{LockRank::kLeaf};
  std::deque<SlowLogEntry> entries_ GUARDED_BY(mu_);
  int64_t next_id_ GUARDED_BY(mu_) = 0;
};

}  // namespace trove::resp
