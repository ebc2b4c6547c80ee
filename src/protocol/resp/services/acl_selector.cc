// Selector rules, descriptions and checks (Redis 7 acl.c semantics): the
// commands, keys and channels one selector of a user allows. Pure values:
// any thread, no locks.
#include <algorithm>
#include <cctype>

#include "common/glob.h"
#include "protocol/resp/core/command.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/services/acl_categories.h"
#include "protocol/resp/services/acl_user.h"

namespace trove::resp::acl {
namespace {

constexpr const char* kErrSyntax = "Syntax error";
constexpr const char* kErrUnknown = "Unknown command or category name in ACL";
constexpr const char* kErrKeysAfterAll =
    "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not "
    "have any effect. Try 'resetkeys' to start with an empty list of patterns";
constexpr const char* kErrChannelsAfterAll =
    "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does "
    "not have any effect. Try 'resetchannels' to start with an empty list of channels";
constexpr const char* kErrFirstArgOfSub = "Allowing first-arg of a subcommand is not supported";

std::string PatternString(const KeyPattern& p) {
  std::string s = p.perms == kPermAll ? "~" : p.perms == kPermRead ? "%R~" : "%W~";
  return s + p.pattern;
}

// "+parent|sub" whose parent Trove lacks, checked as Redis checks it (a
// container's subcommand must exist, a subcommand takes no first argument);
// nullptr when Redis accepts it. Only the rule is kept: no Trove command
// is allowed by it.
const char* CheckRedisOnlyPair(std::string_view name, size_t bar) {
  const RedisOnly parent = RedisOnlyCommand(name.substr(0, bar));
  if (parent == RedisOnly::kNone) return kErrUnknown;
  if (parent == RedisOnly::kSubcommand) return kErrFirstArgOfSub;
  if (bar + 1 == name.size()) return kErrSyntax;
  if (parent == RedisOnly::kContainer && RedisOnlyCommand(name) == RedisOnly::kNone)
    return kErrUnknown;
  return nullptr;
}

}  // namespace

// --- Selector ---

Selector::Selector(bool all_channels) : all_channels_(all_channels) {
  bits_.assign((CommandCategories::Get().size() + 63) / 64, 0);
}

void Selector::SetSlot(size_t slot, bool on) {
  uint64_t bit = uint64_t{1} << (slot & 63);
  if (on) {
    bits_[slot >> 6] |= bit;
  } else {
    bits_[slot >> 6] &= ~bit;
    all_commands_ = false;
  }
}

void Selector::ChangePerm(size_t slot, bool on) {
  const CommandCategories& cc = CommandCategories::Get();
  SetSlot(slot, on);
  first_args_.erase(slot);
  for (size_t j = cc.sub_begin(slot); j < cc.sub_end(slot); ++j) SetSlot(j, on);
}

void Selector::SetCategory(uint32_t cat, bool on) {
  const CommandCategories& cc = CommandCategories::Get();
  for (size_t s = 0; s < cc.size(); ++s) {
    if (!(cc.of(s) & cat)) continue;
    if (cc.parent(s) < 0) {
      ChangePerm(s, on);
    } else {
      SetSlot(s, on);
    }
  }
}

// Redis's ACLUpdateCommandRules: drop an earlier mention of the same rule
// (or of one of its subcommands), then append.
void Selector::UpdateRules(std::string_view rule_in, bool allow) {
  std::string rule = ToLower(rule_in);
  std::vector<std::string_view> kept;
  std::string old = rules_;
  for (std::string_view r : SplitSpaces(old)) {
    std::string_view body = r.substr(1);
    bool same = body == rule || (body.size() > rule.size() && body.substr(0, rule.size()) == rule &&
                                 body[rule.size()] == '|');
    if (!same) kept.push_back(r);
  }
  rules_.clear();
  for (std::string_view r : kept) {
    rules_.append(r);
    rules_ += ' ';
  }
  rules_ += allow ? '+' : '-';
  rules_ += rule;
}

std::string Selector::Apply(std::string_view op) {
  const CommandCategories& cc = CommandCategories::Get();
  if (EqualsIgnoreCase(op, "allkeys") || op == "~*") {
    all_keys_ = true;
    keys_.clear();
  } else if (EqualsIgnoreCase(op, "resetkeys")) {
    all_keys_ = false;
    keys_.clear();
  } else if (EqualsIgnoreCase(op, "allchannels") || op == "&*") {
    all_channels_ = true;
    channels_.clear();
  } else if (EqualsIgnoreCase(op, "resetchannels")) {
    all_channels_ = false;
    channels_.clear();
  } else if (EqualsIgnoreCase(op, "allcommands") || EqualsIgnoreCase(op, "+@all")) {
    std::fill(bits_.begin(), bits_.end(), ~uint64_t{0});
    all_commands_ = future_ = true;
    rules_.clear();
    first_args_.clear();
  } else if (EqualsIgnoreCase(op, "nocommands") || EqualsIgnoreCase(op, "-@all")) {
    std::fill(bits_.begin(), bits_.end(), 0);
    all_commands_ = future_ = false;
    rules_.clear();
    first_args_.clear();
  } else if (!op.empty() && (op[0] == '~' || op[0] == '%')) {
    if (all_keys_) return kErrKeysAfterAll;
    uint8_t perms = 0;
    size_t off = 1;
    if (op[0] == '%') {
      bool closed = false;
      for (; off < op.size(); ++off) {
        char c = static_cast<char>(std::toupper(static_cast<unsigned char>(op[off])));
        if (c == 'R' && !(perms & kPermRead)) {
          perms |= kPermRead;
        } else if (c == 'W' && !(perms & kPermWrite)) {
          perms |= kPermWrite;
        } else if (op[off] == '~' && perms != 0) {
          ++off;
          closed = true;
          break;
        } else {
          return kErrSyntax;
        }
      }
      if (!closed) return kErrSyntax;
    } else {
      perms = kPermAll;
    }
    std::string_view pat = op.substr(off);
    if (HasSpaces(pat)) return kErrSyntax;
    auto it = std::find_if(keys_.begin(), keys_.end(),
                           [&](const KeyPattern& k) { return k.pattern == pat; });
    if (it == keys_.end()) {
      keys_.push_back({std::string(pat), perms});
    } else {
      it->perms |= perms;
    }
  } else if (!op.empty() && op[0] == '&') {
    if (all_channels_) return kErrChannelsAfterAll;
    std::string_view pat = op.substr(1);
    if (HasSpaces(pat)) return kErrSyntax;
    if (std::find(channels_.begin(), channels_.end(), pat) == channels_.end())
      channels_.emplace_back(pat);
  } else if (op.size() >= 2 && (op[0] == '+' || op[0] == '-') && op[1] == '@') {
    uint32_t cat = CategoryByName(op.substr(2));
    if (cat == 0) return kErrUnknown;
    UpdateRules(op.substr(1), op[0] == '+');
    SetCategory(cat, op[0] == '+');
  } else if (op.size() >= 2 && op[0] == '-') {
    return SetCommand(op.substr(1), false);
  } else if (op.size() >= 2 && op[0] == '+') {
    std::string_view name = op.substr(1);
    size_t bar = name.rfind('|');
    if (bar == std::string_view::npos) return SetCommand(name, true);
    int parent = cc.Find(name.substr(0, bar));
    if (parent < 0) {
      const char* err = CheckRedisOnlyPair(name, bar);
      if (err != nullptr) return err;
      UpdateRules(name, true);
      return "";
    }
    if (cc.parent(static_cast<size_t>(parent)) >= 0) return kErrFirstArgOfSub;
    std::string_view sub = name.substr(bar + 1);
    if (sub.empty()) return kErrSyntax;
    const size_t p = static_cast<size_t>(parent);
    if (cc.sub_end(p) > cc.sub_begin(p)) {
      int slot = cc.Find(name);
      if (slot < 0) return kErrUnknown;
      ChangePerm(static_cast<size_t>(slot), true);
    } else {
      std::vector<std::string>& args = first_args_[p];
      bool dup = std::any_of(args.begin(), args.end(),
                             [&](const std::string& a) { return EqualsIgnoreCase(a, sub); });
      if (!dup) args.emplace_back(sub);
    }
    UpdateRules(name, true);
  } else {
    return kErrSyntax;
  }
  return "";
}

std::string Selector::SetCommand(std::string_view name, bool allow) {
  int slot = CommandCategories::Get().Find(name);
  if (slot >= 0) {
    ChangePerm(static_cast<size_t>(slot), allow);
  } else if (RedisOnlyCommand(name) == RedisOnly::kNone) {
    return kErrUnknown;
  }
  UpdateRules(name, allow);
  return "";
}

std::string Selector::DescribeCommands() const {
  std::string s = future_ ? "+@all" : "-@all";
  if (!rules_.empty()) {
    s += ' ';
    s += rules_;
  }
  return s;
}

std::string Selector::DescribeKeys() const {
  if (all_keys_) return "~*";
  std::string s;
  for (const KeyPattern& k : keys_) {
    if (!s.empty()) s += ' ';
    s += PatternString(k);
  }
  return s;
}

std::string Selector::DescribeChannels() const {
  if (all_channels_) return "&*";
  std::string s;
  for (const std::string& c : channels_) {
    if (!s.empty()) s += ' ';
    s += '&';
    s += c;
  }
  return s;
}

std::string Selector::Describe() const {
  std::string s;
  if (all_keys_) {
    s += "~* ";
  } else {
    for (const KeyPattern& k : keys_) s += PatternString(k) + " ";
  }
  if (all_channels_) {
    s += "&* ";
  } else {
    s += "resetchannels ";
    for (const std::string& c : channels_) s += "&" + c + " ";
  }
  s += DescribeCommands();
  return s;
}

bool Selector::KeyAllowed(std::string_view key, uint8_t need) const {
  if (all_keys_) return true;
  for (const KeyPattern& p : keys_) {
    if ((p.perms & need) != need) continue;
    if (GlobMatch(p.pattern, key)) return true;
  }
  return false;
}

bool Selector::EveryKeyAllowed(uint8_t need) const {
  if (all_keys_) return true;
  for (const KeyPattern& p : keys_) {
    if ((p.perms & need) == need && p.pattern == "*") return true;
  }
  return false;
}

bool Selector::ChannelAllowed(std::string_view ch, bool is_pattern) const {
  if (all_channels_) return true;
  for (const std::string& p : channels_) {
    if (is_pattern ? p == ch : GlobMatch(p, ch)) return true;
  }
  return false;
}

Denied Selector::Check(const CommandSpec& spec, int slot, std::span<const std::string_view> argv,
                       std::span<const size_t> key_idx, std::span<const uint8_t> key_perms,
                       size_t* pos) const {
  if (!all_commands_ && !(spec.flags & kCmdNoAuth)) {
    const size_t s = slot >= 0 ? static_cast<size_t>(slot) : static_cast<size_t>(spec.id);
    if (!SlotAllowed(s)) {
      auto it = first_args_.find(s);
      if (it == first_args_.end() || argv.size() < 2) return Denied::kCmd;
      const int parent = CommandCategories::Get().parent(s);
      const size_t at = parent >= 0 ? 2 : 1;
      if (argv.size() <= at) return Denied::kCmd;
      bool ok = std::any_of(it->second.begin(), it->second.end(),
                            [&](const std::string& a) { return EqualsIgnoreCase(a, argv[at]); });
      if (!ok) return Denied::kCmd;
    }
  }
  if (!all_keys_) {
    for (size_t j = 0; j < key_idx.size(); ++j) {
      if (!KeyAllowed(argv[key_idx[j]], key_perms[j])) {
        *pos = key_idx[j];
        return Denied::kKey;
      }
    }
  }
  if (!all_channels_ && (spec.flags & kCmdPubsub)) {
    std::vector<size_t> ch;
    bool patterns = false;
    ChannelArgs(spec, argv, &ch, &patterns);
    for (size_t i : ch) {
      if (!ChannelAllowed(argv[i], patterns)) {
        *pos = i;
        return Denied::kChannel;
      }
    }
  }
  return Denied::kOk;
}

}  // namespace trove::resp::acl
