// AclStore as the memcached port's UserAccess: a memcached command is its
// "memcache|<cmd>" slot (categories in acl_categories.cc) and its key is
// checked against the user's key patterns. Any thread.
#include "protocol/resp/acl_categories.h"
#include "protocol/resp/acl_store.h"
#include "protocol/resp/latency_histogram.h"

namespace trove::resp::acl {

std::shared_ptr<const void> AclStore::FindUser(std::string_view name, bool* unrestricted) const {
  std::shared_ptr<const User> u = Get(name);
  if (u == nullptr || !u->enabled()) return nullptr;
  *unrestricted = u->unrestricted();
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

void AclStore::AddMemcacheUser(std::string_view name, std::string_view password) {
  if (Get(name) != nullptr) return;  // defined by the ACL file: its rules stand
  std::string pw = ">";
  pw.append(password);
  std::vector<std::string_view> rules = {"on", pw, "~*", "&*", "+@all"};
  SetUser(name, rules);
  std::fill(pw.begin(), pw.end(), '\0');
}

}  // namespace trove::resp::acl
