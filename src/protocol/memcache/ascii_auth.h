// memcached's ASCII authentication (-Y <authfile>): the file's "user:pass"
// lines, and the check a connection's first `set` makes. Any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace trove::memcache {

// Thread safety: the entries are immutable after Load; the counters are
// relaxed atomics (statistics).
class AuthTable {
 public:
  // Reads `path` as memcached's authfile_load does: one "user:password" per
  // line (a last line without a newline is fine; CR is trimmed); a line
  // without ':' is an error. The messages are memcached's.
  static Result<std::shared_ptr<AuthTable>> Load(const std::string& path);

  // Constant-time comparison of every entry (memcached's safe_memcmp), of
  // the candidate password's digest.
  bool Check(std::string_view user, std::string_view pass) const;
  // The entries as (user, hex SHA-256 of the password): only digests are
  // kept. Start-up reads them to make the ACL users.
  const std::vector<std::pair<std::string, std::string>>& entries() const { return entries_; }

  std::atomic<uint64_t> auth_cmds{0};    // stats auth_cmds
  std::atomic<uint64_t> auth_errors{0};  // stats auth_errors

 private:
  std::vector<std::pair<std::string, std::string>> entries_;
};

}  // namespace trove::memcache
