// ACL users and selectors with Redis 7's rules (acl.c): what a user may run,
// which keys it may read or write, which channels it may use. A User is a
// value: the store (acl_store.h) publishes immutable copies, so the checks
// here run on any worker without a lock.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/resp/services/rate_limit.h"

namespace trove::resp {
struct CommandSpec;  // command.h (which includes this header through conn_state.h)
}

namespace trove::resp::acl {

enum KeyPerm : uint8_t { kPermRead = 1, kPermWrite = 2, kPermAll = 3 };

struct KeyPattern {
  std::string pattern;
  uint8_t perms = kPermAll;
};

// Why a check failed; the order is Redis's (a later kind wins when several
// selectors fail, ACLCheckAllUserCommandPerm).
// kTlsCert: a verified client certificate named no usable user
// (tls-auth-clients-user CN; Redis 8's "tls-cert").
enum class Denied : uint8_t { kOk = 0, kCmd = 1, kKey = 2, kAuth = 3, kChannel = 4, kTlsCert = 5 };

// One selector: the root one of a user, or a "(...)" one.
// Invariant: bits_ has one bit per CommandCategories slot; all_commands_
// implies every bit is set (a cleared bit clears it), future_ is set only
// by +@all / allcommands and cleared by -@all / nocommands.
class Selector {
 public:
  explicit Selector(bool all_channels);

  // Applies one rule (acl.c ACLSetSelector); returns "" or the error text.
  std::string Apply(std::string_view op);

  bool all_keys() const { return all_keys_; }
  bool all_channels() const { return all_channels_; }
  bool all_commands() const { return all_commands_; }
  const std::vector<KeyPattern>& keys() const { return keys_; }
  const std::vector<std::string>& channels() const { return channels_; }

  // "+@all ..." / "-@all ...": the rules that rebuild the command bitmap.
  std::string DescribeCommands() const;
  // Keys, channels and commands as ACL LIST prints them.
  std::string Describe() const;
  // GETUSER's "keys" and "channels" strings.
  std::string DescribeKeys() const;
  std::string DescribeChannels() const;

  // Checks a call: command (slot), key arguments, channel arguments. On a
  // key or channel denial *pos is the argv index.
  Denied Check(const CommandSpec& spec, int slot, std::span<const std::string_view> argv,
               std::span<const size_t> key_idx, std::span<const uint8_t> key_perms,
               size_t* pos) const;
  bool SlotAllowed(size_t slot) const { return (bits_[slot >> 6] >> (slot & 63)) & 1; }
  bool KeyAllowed(std::string_view key, uint8_t need) const;
  // Every key is reachable with `need`: allkeys, or a "*" pattern granting
  // it (Redis's ACLSelectorHasUnrestrictedKeyAccess).
  bool EveryKeyAllowed(uint8_t need) const;
  bool ChannelAllowed(std::string_view ch, bool is_pattern) const;

 private:
  void SetSlot(size_t slot, bool on);
  // A command and, for a container, its subcommands (ACLChangeSelectorPerm).
  void ChangePerm(size_t slot, bool on);
  void SetCategory(uint32_t cat, bool on);
  void UpdateRules(std::string_view rule, bool allow);
  // "+name" (allow) or "-name" for a whole command: "" or the error.
  std::string SetCommand(std::string_view name, bool allow);

  std::vector<uint64_t> bits_;
  bool all_commands_ = false;
  bool future_ = false;
  bool all_keys_ = false;
  bool all_channels_ = false;
  std::vector<KeyPattern> keys_;
  std::vector<std::string> channels_;
  std::string rules_;  // Redis's command_rules: "+get -@hash ...", lower case
  // "+select|0": first arguments allowed for an otherwise denied command.
  std::map<size_t, std::vector<std::string>> first_args_;
};

class User {
 public:
  User(std::string name, bool all_channels_default);

  const std::string& name() const { return name_; }
  bool enabled() const { return enabled_; }
  bool nopass() const { return nopass_; }
  const std::vector<std::string>& password_hashes() const { return passwords_; }
  const std::vector<Selector>& selectors() const { return selectors_; }
  const Selector& root() const { return selectors_[0]; }
  // Flags in Redis's order: on|off, nopass, [skip-]sanitize-payload.
  std::vector<std::string_view> Flags() const;

  // Applies one rule (acl.c ACLSetUser); "" or the error text.
  // all_channels_default: acl-pubsub-default is allchannels (for reset).
  std::string Apply(std::string_view op, bool all_channels_default);
  // The rules after "user <name> " in ACL LIST and the ACL file.
  std::string Describe() const;

  // Constant-time comparison of the password's SHA-256 with each hash.
  bool PasswordMatches(std::string_view password) const;

  // May run anything on any key and channel (the default user's usual
  // state): the per-command check is then skipped.
  bool unrestricted() const;

  // ratelimit:cps=N / ratelimit:bps=N (0: none) and the user's buckets,
  // which the store keeps by name across SETUSER (set before publishing).
  uint64_t cps() const { return cps_; }
  uint64_t bps() const { return bps_; }
  bool rate_limited() const { return cps_ > 0 || bps_ > 0; }
  const std::shared_ptr<RateBuckets>& buckets() const { return buckets_; }
  void set_buckets(std::shared_ptr<RateBuckets> b) { buckets_ = std::move(b); }

  // Every selector is tried; the first that allows the call wins.
  Denied Check(const CommandSpec& spec, int slot, std::span<const std::string_view> argv,
               size_t* pos) const;
  // Some selector allows the call and reaches every key with `need`
  // (Redis's ACLUserCheckCmdWithUnrestrictedKeyAccess): what SORT's BY and
  // GET patterns require, since the keys they name are not known before
  // the command runs.
  bool AllowsWithEveryKey(const CommandSpec& spec, int slot,
                          std::span<const std::string_view> argv, uint8_t need) const;
  bool ChannelAllowed(std::string_view ch, bool is_pattern) const;

 private:
  std::string name_;
  bool enabled_ = false;
  bool nopass_ = false;
  bool skip_sanitize_ = false;
  std::vector<std::string> passwords_;  // lower-case hex SHA-256, no duplicates
  std::vector<Selector> selectors_;     // [0] is the root selector
  uint64_t cps_ = 0;
  uint64_t bps_ = 0;
  std::shared_ptr<RateBuckets> buckets_;  // null unless rate_limited()
};

// Redis's isspace-or-NUL rule for user names and patterns.
bool HasSpaces(std::string_view s);
// The words of s split at spaces (empty words dropped).
std::vector<std::string_view> SplitSpaces(std::string_view s);
// The argv indexes of the channels a call names that ACL checks (publish
// and subscribe ones, not unsubscribe), and whether they are patterns.
void ChannelArgs(const CommandSpec& spec, std::span<const std::string_view> argv,
                 std::vector<size_t>* idx, bool* patterns);
// The permission each key argument needs (kPermRead / kPermWrite, 0 = any),
// from Redis 7's key specs (acl_keys.cc).
void KeyPerms(const CommandSpec& spec, std::span<const std::string_view> argv,
              std::span<const size_t> idx, std::vector<uint8_t>* perms);

}  // namespace trove::resp::acl
