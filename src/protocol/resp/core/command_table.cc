// CommandTable construction and key extraction; any thread.
#include "protocol/resp/core/command_table.h"

#include "protocol/resp/core/resp_parser.h"

namespace trove::resp {
namespace {
void LowerAscii(std::string* s) {
  for (char& c : *s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
}
}  // namespace

std::string ToLower(std::string_view s) {
  std::string r(s);
  LowerAscii(&r);
  return r;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

CommandTable::CommandTable() {
  RegisterCommandFamilies(&specs_);
  for (size_t i = 0; i < specs_.size(); ++i) {
    CommandSpec& s = specs_[i];
    s.id = static_cast<int>(i);
    std::string_view group = s.group;
    s.stages_reply = (s.flags & kCmdWrite) != 0 && (group == "list" || group == "hash" ||
                                                    group == "set" || group == "sorted-set" ||
                                                    group == "geo");
    static constexpr std::string_view kReadsKeys[] = {
        "getset", "getdel", "getex", "copy", "sinterstore", "sunionstore", "sdiffstore",
        "zunionstore", "zinterstore", "zdiffstore", "zrangestore", "bitop", "sort",
        "georadius", "georadiusbymember", "geosearchstore", "pfmerge"};
    for (std::string_view n : kReadsKeys) {
      if (n == s.name) s.reads_keys = true;
    }
    static constexpr std::string_view kRateExempt[] = {"auth",  "hello", "ping",   "quit",
                                                       "reset", "multi", "exec", "discard"};
    for (std::string_view n : kRateExempt) {
      if (n == s.name) s.flags |= kCmdRateExempt;
    }
    by_name_.emplace(s.name, i);
  }
}

const CommandTable& CommandTable::Get() {
  static const CommandTable* table = new CommandTable();
  return *table;
}

const CommandSpec* CommandTable::Find(std::string_view name) const {
  if (name.size() > 64) return nullptr;
  // Lower-cased into a reused per-thread buffer: names like
  // "zremrangebyscore" pass the small-string size and would allocate per call.
  thread_local std::string lower;
  lower.assign(name);
  LowerAscii(&lower);
  auto it = by_name_.find(lower);
  return it == by_name_.end() ? nullptr : &specs_[it->second];
}

void NumKeysAt(size_t at, std::span<const std::string_view> argv, std::vector<size_t>* out) {
  int64_t n;
  if (argv.size() <= at || !ParseStrictInt64(argv[at], &n) || n <= 0) return;
  for (int64_t i = 0; i < n && at + 1 + static_cast<size_t>(i) < argv.size(); ++i) {
    out->push_back(at + 1 + static_cast<size_t>(i));
  }
}
void NumKeysAt1(std::span<const std::string_view> argv, std::vector<size_t>* out) {
  NumKeysAt(1, argv, out);
}
void NumKeysAt2(std::span<const std::string_view> argv, std::vector<size_t>* out) {
  NumKeysAt(2, argv, out);
}
int KeyCountAt(const CommandSpec& spec) {
  if (spec.keys == NumKeysAt1) return 1;
  if (spec.keys == NumKeysAt2 || spec.keys == DestAndNumKeysAt2) return 2;
  return -1;
}
void DestAndNumKeysAt2(std::span<const std::string_view> argv, std::vector<size_t>* out) {
  out->push_back(1);
  NumKeysAt(2, argv, out);
}

void CommandTable::KeyIndexes(const CommandSpec& spec, std::span<const std::string_view> argv,
                              std::vector<size_t>* out) {
  out->clear();
  if (spec.keys != nullptr) {
    spec.keys(argv, out);
    return;
  }
  if (spec.first_key <= 0) return;
  int argc = static_cast<int>(argv.size());
  int last = spec.last_key < 0 ? argc + spec.last_key : spec.last_key;
  int step = spec.step > 0 ? spec.step : 1;
  for (int i = spec.first_key; i <= last && i < argc; i += step) {
    out->push_back(static_cast<size_t>(i));
  }
}

}  // namespace trove::resp
