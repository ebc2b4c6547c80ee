// The server-wide script bodies (script_cache.h). Any worker.
#include "protocol/resp/services/script_cache.h"

#include <cctype>

namespace trove::resp {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

void ScriptCache::Add(const std::string& sha, std::string_view body) {
  MutexLock l(&mu_);
  auto [it, added] = scripts_.try_emplace(sha, body);
  if (added) bytes_ += it->second.size();
}

bool ScriptCache::Get(std::string_view sha, std::string* body) const {
  const std::string key = Lower(sha);
  MutexLock l(&mu_);
  auto it = scripts_.find(key);
  if (it == scripts_.end()) return false;
  *body = it->second;
  return true;
}

bool ScriptCache::Exists(std::string_view sha) const {
  const std::string key = Lower(sha);
  MutexLock l(&mu_);
  return scripts_.count(key) != 0;
}

void ScriptCache::Flush() {
  MutexLock l(&mu_);
  scripts_.clear();
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
