// SlowLog and the argv it records; any worker thread.
#include "protocol/resp/services/slowlog.h"

#include <utility>

#include "common/limits.h"
#include "common/str_append.h"
#include "protocol/resp/core/command_table.h"

namespace trove::resp {
namespace {

constexpr std::string_view kRedacted = "(redacted)";

// Redis's SENSITIVE_CONFIG parameters (config.c), whose CONFIG SET value is
// redacted even when the parameter is unknown here or the SET fails.
bool SensitiveConfig(std::string_view name) {
  static constexpr std::string_view kNames[] = {"requirepass", "masterauth", "masteruser",
                                                "tls-key-file-pass", "tls-client-key-file-pass"};
  for (std::string_view n : kNames)
    if (EqualsIgnoreCase(name, n)) return true;
  return false;
}

// Marks the arguments Redis redacts (redactClientCommandArgument callers).
void MarkRedacted(std::span<const std::string_view> argv, std::vector<bool>* red) {
  const std::string_view cmd = argv[0];
  if (EqualsIgnoreCase(cmd, "auth")) {
    for (size_t i = 1; i < argv.size(); ++i) (*red)[i] = true;
  } else if (EqualsIgnoreCase(cmd, "hello")) {
    // HELLO [protover [AUTH user pass] [SETNAME name]]: Redis redacts as it
    // parses the options and stops at the first bad one.
    for (size_t j = 2; j < argv.size(); ++j) {
      const size_t more = argv.size() - 1 - j;
      if (EqualsIgnoreCase(argv[j], "auth") && more >= 2) {
        (*red)[j + 1] = (*red)[j + 2] = true;
        j += 2;
      } else if (EqualsIgnoreCase(argv[j], "setname") && more >= 1) {
        ++j;
      } else {
        break;
      }
    }
  } else if (EqualsIgnoreCase(cmd, "acl") && argv.size() >= 3 &&
             (EqualsIgnoreCase(argv[1], "setuser") || EqualsIgnoreCase(argv[1], "deluser") ||
              EqualsIgnoreCase(argv[1], "getuser"))) {
    // Redis redacts the user names and rules (passwords among them).
    for (size_t i = 2; i < argv.size(); ++i) (*red)[i] = true;
  } else if (EqualsIgnoreCase(cmd, "config") && argv.size() >= 2 &&
             EqualsIgnoreCase(argv[1], "set")) {
    for (size_t i = 2; i + 1 < argv.size(); i += 2)
      if (SensitiveConfig(argv[i])) (*red)[i + 1] = true;
  }
}

std::string TrimmedArg(std::string_view a) {
  if (a.size() <= limits::kSlowLogMaxArgLen) return std::string(a);
  std::string s(a.substr(0, limits::kSlowLogMaxArgLen));
  s += "... (";
  AppendU64(s, a.size() - limits::kSlowLogMaxArgLen);
  s += " more bytes)";
  return s;
}

}  // namespace

std::vector<std::string> SlowLogArgv(std::span<const std::string_view> argv) {
  std::vector<std::string> out;
  if (argv.empty()) return out;
  std::vector<bool> red(argv.size(), false);
  MarkRedacted(argv, &red);
  const size_t n = argv.size() > limits::kSlowLogMaxArgc ? limits::kSlowLogMaxArgc : argv.size();
  out.reserve(n);
  for (size_t j = 0; j < n; ++j) {
    if (n != argv.size() && j == n - 1) {
      std::string s = "... (";
      AppendU64(s, argv.size() - n + 1);
      s += " more arguments)";
      out.push_back(std::move(s));
    } else {
      out.push_back(red[j] ? std::string(kRedacted) : TrimmedArg(argv[j]));
    }
  }
  return out;
}

void SlowLog::Push(SlowLogEntry e, size_t max_len) {
  std::deque<SlowLogEntry> dropped;
  {
    MutexLock l(&mu_);
    e.id = next_id_++;
    if (max_len > 0) entries_.push_front(std::move(e));
    TrimLocked(max_len, &dropped);
  }
}

void SlowLog::Trim(size_t max_len) {
  std::deque<SlowLogEntry> dropped;
  MutexLock l(&mu_);
  TrimLocked(max_len, &dropped);
}

void SlowLog::TrimLocked(size_t max_len, std::deque<SlowLogEntry>* dropped) {
  mu_.AssertHeld();
  while (entries_.size() > max_len) {
    dropped->push_back(std::move(entries_.back()));
    entries_.pop_back();
  }
}

std::vector<SlowLogEntry> SlowLog::Newest(size_t count) const {
  MutexLock l(&mu_);
  const size_t n = count < entries_.size() ? count : entries_.size();
  return std::vector<SlowLogEntry>(entries_.begin(),
                                   entries_.begin() + static_cast<std::ptrdiff_t>(n));
}

size_t SlowLog::Len() const {
  MutexLock l(&mu_);
  return entries_.size();
}

void SlowLog::Reset() {
  std::deque<SlowLogEntry> dropped;
  MutexLock l(&mu_);
  dropped.swap(entries_);
}

}  // namespace trove::resp
