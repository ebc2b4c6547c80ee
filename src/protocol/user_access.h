// UserAccess: per-user permissions for the memcached port, answered by the
// RESP side's ACL users (resp/acl_store.h), so that a memcached -Y user is
// also an ACL user whose categories and key patterns apply to memcached
// commands. An interface so that the memcached protocol does not link the
// RESP front. Any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/command_log.h"

namespace trove::protocol {

class UserAccess {
 public:
  virtual ~UserAccess() = default;
  // Moves on every change of any user (re-resolve the user when it does).
  virtual uint64_t epoch() const = 0;
  // The enabled user `name` as an opaque handle, or null; *unrestricted is
  // set when the user may run anything on any key (no check needed).
  virtual std::shared_ptr<const void> FindUser(std::string_view name,
                                               bool* unrestricted) const = 0;
  // "" when `user` may run memcached command c on `key` (empty: no key)
  // with permission `need` (1 read, 2 write, 3 both, 0 either); else the
  // text after "NOPERM ".
  virtual std::string CheckMemcache(const void* user, McCmd c, std::string_view key,
                                    uint8_t need) const = 0;
  // The user's rate limits: charges one request of `bytes` bytes; "" or the
  // text after "SERVER_ERROR " (nothing is consumed then).
  virtual std::string ChargeMemcache(const void* user, uint64_t bytes) const = 0;
  // `stats`: ("ratelimit_rejected_<user>_cps" / "..._bps", count) for every
  // user with refusals (both ports counted).
  virtual void RateRejectedStats(std::vector<std::pair<std::string, std::string>>* out) const = 0;
};

}  // namespace trove::protocol
