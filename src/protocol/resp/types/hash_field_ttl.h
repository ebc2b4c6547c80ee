// FieldTtls: the expiry times of the fields of one hash that have one
// (HEXPIRE and its relatives, Redis 7.4). A HashValue grows this side table on
// its first field TTL, so a hash that never uses one pays a null pointer and
// nothing else. Used under the key's stripe, like the hash it belongs to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trove::resp {

// The latest absolute field expiry Redis accepts, in unix milliseconds:
// its ebuckets keep 48 bits of time and the API reserves two of them
// (HFE_MAX_ABS_TIME_MSEC = EB_EXPIRE_TIME_MAX >> 2 = 2^46 - 1, year 4199).
inline constexpr int64_t kMaxFieldExpiryMs = (int64_t{1} << 46) - 1;

// A field whose expiry is at or before now_ms is gone for every read (Redis's
// active expiry and HEXPIRE use the same <=). 0 means "no expiry".
inline bool FieldTtlPassed(int64_t at_ms, int64_t now_ms) { return at_ms != 0 && at_ms <= now_ms; }

// Thread safety: none of its own; the owning hash's rule (the key's stripe).
// Invariants:
//  1. by_time_ holds exactly one (expiry, field) pair per by_field_ entry,
//     its view pointing at that entry's key (std::map nodes never move).
//  2. Every expiry is in (0, kMaxFieldExpiryMs].
class FieldTtls {
 public:
  FieldTtls() = default;
  FieldTtls(const FieldTtls& o);
  FieldTtls& operator=(const FieldTtls&) = delete;

  // f's expiry (unix ms), or 0 when it has none.
  int64_t Get(std::string_view f) const;
  // Gives f the expiry at_ms (> 0), replacing any it had.
  void Set(std::string_view f, int64_t at_ms);
  // Removes f's expiry; false when it had none.
  bool Erase(std::string_view f);

  size_t size() const { return by_field_.size(); }
  bool empty() const { return by_field_.empty(); }
  // The earliest expiry, 0 when no field has one.
  int64_t earliest() const { return by_time_.empty() ? 0 : by_time_.begin()->first; }

  // Appends the fields whose expiry has passed at now_ms, earliest first, at
  // most max of them (copies: the caller erases them from the hash).
  void CollectPassed(int64_t now_ms, size_t max, std::vector<std::string>* out) const;
  // How many expiries have passed at now_ms.
  size_t CountPassed(int64_t now_ms) const;

  // f(field, at_ms) for each field with an expiry, earliest first.
  template <typename F>
  void ForEach(F&& f) const {
    for (const auto& [at, field] : by_time_) f(field, at);
  }

  // What one field's expiry costs in the hash's memory accounting: the
  // field's bytes (the map's own copy) plus a node in each of the two trees.
  static int64_t Cost(std::string_view f) { return static_cast<int64_t>(f.size()) + kNodeCost; }
  // The table itself, counted while it exists.
  static constexpr int64_t kTableCost = 96;

 private:
  static constexpr int64_t kNodeCost = 112;
  std::map<std::string, int64_t, std::less<>> by_field_;
  std::set<std::pair<int64_t, std::string_view>> by_time_;
};

}  // namespace trove::resp
