// AclStore as the memcached port's UserAccess: a memcached command is its
// "memcache|<cmd>" slot (categories in acl_categories.cc) and its key is
// checked against the user's key patterns. Any thread.
#include "protocol/resp/services/acl_categories.h"
#include "protocol/resp/services/acl_store.h"
#include "protocol/resp/services/latency_histogram.h"

#include <chrono>

namespace trove::resp::acl {
namespace {
int64_t SteadyNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

std::shared_ptr<const void> AclStore::FindUser(std::string_view name, bool* unrestricted) const {
  std::shared_ptr<const User> u = Get(name);
  if (u == nullptr || !u->enabled()) return nullptr;
  *unrestricted = u->unrestricted() && !u->rate_limited();
  return u;
}

std::string AclStore::CheckMemcache(const void* user, protocol::McCmd c, std::string_view key,
                                    uint8_t need) const {
  const User& u = *static_cast<const User*>(user);
  const HistogramSlots& slots = HistogramSlots::Get();
  const size_t slot = static_cast<size_t>(slots.MemcacheSlot(c));
  bool cmd_ok = false;
  for (const Selector& s : u.selectors()) {
    if (!s.all_commands() && !s.SlotAllowed(slot)) continue;
    cmd_ok = true;
    if (key.empty() || s.KeyAllowed(key, need)) return "";
  }
  if (!cmd_ok) {
    return "User " + u.name() + " has no permissions to run the '" + slots.name(slot) +
           "' command";
  }
  return "No permissions to access a key";
}

std::string AclStore::ChargeMemcache(const void* user, uint64_t bytes) const {
  const User& u = *static_cast<const User*>(user);
  if (!u.rate_limited()) return "";
  // No lease on this port: every request of a limited user visits the
  // buckets (its leaf lock), so the limit is exact.
  uint64_t got_c = 0, got_b = 0;
  const RateResult r = u.buckets()->Acquire(1, bytes, u.cps(), u.bps(), SteadyNanos(), 0, 0,
                                            &got_c, &got_b);
  if (r == RateResult::kOk) return "";
  return r == RateResult::kCommands ? "rate limit exceeded: commands per second"
                                    : "rate limit exceeded: bytes per second";
}

void AclStore::RateRejectedStats(std::vector<std::pair<std::string, std::string>>* out) const {
  for (const RateRejections& r : RateRejected()) {
    out->emplace_back("ratelimit_rejected_" + r.user + "_cps", std::to_string(r.cps));
    out->emplace_back("ratelimit_rejected_" + r.user + "_bps", std::to_string(r.bps));
  }
}

void AclStore::AddMemcacheUser(std::string_view name, std::string_view password_sha256) {
  if (Get(name) != nullptr) return;  // defined by the ACL file: its rules stand
  const std::string pw = "#" + std::string(password_sha256);
  std::vector<std::string_view> rules = {"on", pw, "~*", "&*", "+@all"};
  SetUser(name, rules);
}

}  // namespace trove::resp::acl
