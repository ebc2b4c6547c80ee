// AclStore: the server's ACL users, the ACL LOG and the ACL file; one per
// server, shared by every worker and both protocols.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "protocol/user_access.h"
#include "protocol/resp/services/acl_user.h"

namespace trove::resp::acl {

// One ACL LOG entry (Redis's ACLLogEntry).
struct LogEntry {
  uint64_t count = 1;
  Denied reason = Denied::kCmd;
  std::string context;  // "toplevel", "multi", "lua"
  std::string object;
  std::string username;
  std::string client_info;
  int64_t entry_id = 0;
  int64_t created_ms = 0;
  int64_t updated_ms = 0;
};

// Thread safety: users_ and the log are guarded by mu_ (a leaf lock, never
// held while calling out). Users are published as immutable shared_ptrs: a
// connection keeps the User it authenticated as and, when epoch() moves
// (any change of any user), looks its user up again by name. epoch() and
// default_open() are relaxed atomics written under mu_: a command racing an
// ACL change may run under either version, as in Redis where the change
// lands between two commands.
// Invariants: 1. "default" always exists. 2. every user name is free of
// spaces and NULs. 3. epoch_ grows on every change that can alter a check.
class AclStore final : public protocol::UserAccess {
 public:
  AclStore();

  // protocol::UserAccess, for the memcached port (acl_memcache.cc).
  uint64_t epoch() const override { return epoch_.load(std::memory_order_relaxed); }
  std::shared_ptr<const void> FindUser(std::string_view name, bool* unrestricted) const override;
  std::string CheckMemcache(const void* user, protocol::McCmd c, std::string_view key,
                            uint8_t need) const override;
  std::string ChargeMemcache(const void* user, uint64_t bytes) const override;
  void RateRejectedStats(std::vector<std::pair<std::string, std::string>>* out) const override;
  // memcached -Y: each authfile user becomes an ACL user of the same name
  // and password (given as its hex SHA-256) with every permission, unless
  // the ACL already has it.
  void AddMemcacheUser(std::string_view name, std::string_view password_sha256) EXCLUDES(mu_);

  std::shared_ptr<const User> Get(std::string_view name) const EXCLUDES(mu_);
  std::vector<std::shared_ptr<const User>> All() const EXCLUDES(mu_);  // by name
  // New connections start authenticated (the default user is on and nopass).
  bool default_open() const { return default_open_.load(std::memory_order_relaxed); }
  // The default user has no password (nopass), on or off: Redis's test for
  // protected mode (protected_mode.h).
  bool default_nopass() const { return default_nopass_.load(std::memory_order_relaxed); }

  // ACL SETUSER: every rule or none (Redis stages on a copy). "" or the error.
  std::string SetUser(std::string_view name, std::span<const std::string_view> rules)
      EXCLUDES(mu_);
  // ACL DELUSER; the default user cannot be removed (checked by the caller).
  size_t DelUsers(std::span<const std::string_view> names) EXCLUDES(mu_);
  // AUTH: the user when it exists, is on and the password matches.
  std::shared_ptr<const User> Authenticate(std::string_view name, std::string_view pass) const
      EXCLUDES(mu_);

  // requirepass: the default user's only password, or nopass when empty.
  void SetRequirepass(std::string_view pass) EXCLUDES(mu_);
  // acl-pubsub-default: new users (and `reset`) get allchannels when true.
  bool pubsub_default_all() const { return pubsub_all_.load(std::memory_order_relaxed); }
  void set_pubsub_default_all(bool on) { pubsub_all_.store(on, std::memory_order_relaxed); }

  // The ACL file (aclfile; empty = none). LoadFile replaces every user at
  // once or nothing, and returns "" or Redis's error text; SaveFile writes
  // a temporary file and renames it.
  void set_aclfile(std::string path) EXCLUDES(mu_);
  std::string aclfile() const EXCLUDES(mu_);
  std::string LoadFile() EXCLUDES(mu_);
  bool SaveFile() const EXCLUDES(mu_);
  // Parses ACL file text into users (Redis's rules, "user <name> <rules>"
  // per line); "" or the errors.
  std::string ParseFile(std::string_view text, std::map<std::string, std::shared_ptr<User>>* out)
      const;

  // ACL LOG.
  void AddLog(Denied reason, std::string_view context, std::string_view object,
              std::string_view username, std::string client_info, int64_t now_ms) EXCLUDES(mu_);
  std::vector<LogEntry> LogEntries(size_t count) const EXCLUDES(mu_);
  void ResetLog() EXCLUDES(mu_);
  void set_log_max_len(int64_t n) EXCLUDES(mu_);
  int64_t log_max_len() const { return log_max_.load(std::memory_order_relaxed); }
  // INFO: the rate-limit rejections of each user that has counted any.
  struct RateRejections {
    std::string user;
    uint64_t cps = 0, bps = 0;
  };
  std::vector<RateRejections> RateRejected() const EXCLUDES(mu_);
  // INFO acl_access_denied_{auth,cmd,key,channel}.
  uint64_t denied(Denied d) const {
    return denied_[static_cast<size_t>(d)].load(std::memory_order_relaxed);
  }

 private:
  void Publish(std::string name, std::shared_ptr<User> u) REQUIRES(mu_);
  // Gives a rate-limited user its buckets (kept by name across changes).
  void AttachBuckets(const std::string& name, User* u) REQUIRES(mu_);
  void Changed() REQUIRES(mu_);

  mutable Mutex mu_{LockRank::kLeaf};
  std::map<std::string, std::shared_ptr<const User>, std::less<>> users_ GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<RateBuckets>, std::less<>> buckets_ GUARDED_BY(mu_);
  std::string aclfile_ GUARDED_BY(mu_);
  std::vector<LogEntry> log_ GUARDED_BY(mu_);  // newest first
  int64_t next_entry_id_ GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> epoch_{1};
  std::atomic<bool> default_open_{true};
  std::atomic<bool> default_nopass_{true};
  std::atomic<bool> pubsub_all_{false};
  std::atomic<int64_t> log_max_{128};
  std::atomic<uint64_t> denied_[6] = {};
};

}  // namespace trove::resp::acl
