// The server-wide script bodies (script_cache.h). Any worker.
#include "protocol/resp/services/script_cache.h"

#include "protocol/resp/core/command_table.h"

namespace trove::resp {

void ScriptCache::Add(const std::string& sha, std::string_view body, Origin origin) {
  MutexLock l(&mu_);
  auto [it, added] = scripts_.try_emplace(sha);
  Entry& e = it->second;
  if (added) {
    e.body.assign(body);
    bytes_ += e.body.size();
  }
  if (origin == Origin::kLoad) {
    if (e.evictable) eval_lru_.erase(e.lru);
    e.evictable = false;
    return;
  }
  if (!added && !e.evictable) return;  // SCRIPT LOADed: permanent
  if (e.evictable) eval_lru_.erase(e.lru);
  eval_lru_.push_front(sha);
  e.lru = eval_lru_.begin();
  e.evictable = true;
  if (eval_lru_.size() <= kMaxEvalScripts) return;
  auto victim = scripts_.find(eval_lru_.back());
  bytes_ -= victim->second.body.size();
  scripts_.erase(victim);
  eval_lru_.pop_back();
  evicted_.fetch_add(1, std::memory_order_relaxed);
  epoch_.fetch_add(1, std::memory_order_relaxed);
}

bool ScriptCache::Get(std::string_view sha, std::string* body) const {
  const std::string key = ToLower(sha);
  MutexLock l(&mu_);
  auto it = scripts_.find(key);
  if (it == scripts_.end()) return false;
  *body = it->second.body;
  return true;
}

bool ScriptCache::Exists(std::string_view sha) const {
  const std::string key = ToLower(sha);
  MutexLock l(&mu_);
  return scripts_.count(key) != 0;
}

void ScriptCache::Flush() {
  MutexLock l(&mu_);
  scripts_.clear();
  eval_lru_.clear();
  bytes_ = 0;
  epoch_.fetch_add(1, std::memory_order_relaxed);
}

size_t ScriptCache::count() const {
  MutexLock l(&mu_);
  return scripts_.size();
}

size_t ScriptCache::bytes() const {
  MutexLock l(&mu_);
  return bytes_;
}

}  // namespace trove::resp
