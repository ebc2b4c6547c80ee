// WatchRegistry: the server-wide watched-key counts. Any worker thread.
#include "protocol/resp/services/watch_registry.h"

#include "common/check.h"

namespace trove::resp {

void WatchRegistry::Add(std::string_view key, bool first_of_client) {
  MutexLock l(&mu_);
  ++keys_[std::string(key)];
  if (first_of_client) ++clients_;
}

void WatchRegistry::RemoveLocked(const std::string& key) {
  auto it = keys_.find(key);
  DCHECK(it != keys_.end());
  if (it == keys_.end()) return;
  if (--it->second == 0) keys_.erase(it);
}

size_t WatchRegistry::watching_clients() const {
  MutexLock l(&mu_);
  return clients_;
}

size_t WatchRegistry::total_watched_keys() const {
  MutexLock l(&mu_);
  return keys_.size();
}

}  // namespace trove::resp
