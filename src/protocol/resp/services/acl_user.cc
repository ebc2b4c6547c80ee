// Selector and User rules, descriptions and checks (Redis 7 acl.c
// semantics). Pure values: any thread, no locks.
#include "protocol/resp/services/acl_user.h"

#include <algorithm>
#include <cctype>

#include "common/glob.h"
#include "common/sha256.h"
#include "protocol/resp/services/acl_categories.h"
#include "protocol/resp/core/command.h"
#include "protocol/resp/core/command_table.h"

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
constexpr const char* kErrNoSuchPassword =
    "The password you are trying to remove from the user does not exist";
constexpr const char* kErrBadHash =
    "The password hash must be exactly 64 characters and contain only lowercase hexadecimal "
    "characters";
constexpr const char* kErrFirstArgOfSub = "Allowing first-arg of a subcommand is not supported";

bool ValidHash(std::string_view h) {
  if (h.size() != 64) return false;
  for (char c : h)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::string PatternString(const KeyPattern& p) {
  std::string s = p.perms == kPermAll ? "~" : p.perms == kPermRead ? "%R~" : "%W~";
  return s + p.pattern;
}

// Splits "(a b c)"'s inside on spaces.
std::vector<std::string_view> SplitSpaces(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    size_t j = i;
    while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
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

bool HasSpaces(std::string_view s) {
  for (char c : s)
    if (c == 0 || std::isspace(static_cast<unsigned char>(c))) return true;
  return false;
}

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
    bool same = body == rule ||
                (body.size() > rule.size() && body.substr(0, rule.size()) == rule &&
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
    std::string_view name = op.substr(1);
    int slot = cc.Find(name);
    if (slot >= 0) {
      ChangePerm(static_cast<size_t>(slot), false);
    } else if (RedisOnlyCommand(name) == RedisOnly::kNone) {
      return kErrUnknown;
    }
    UpdateRules(name, false);
  } else if (op.size() >= 2 && op[0] == '+') {
    std::string_view name = op.substr(1);
    size_t bar = name.rfind('|');
    if (bar == std::string_view::npos) {
      int slot = cc.Find(name);
      if (slot >= 0) {
        ChangePerm(static_cast<size_t>(slot), true);
      } else if (RedisOnlyCommand(name) == RedisOnly::kNone) {
        return kErrUnknown;
      }
      UpdateRules(name, true);
      return "";
    }
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

// --- User ---

User::User(std::string name, bool all_channels_default) : name_(std::move(name)) {
  selectors_.emplace_back(all_channels_default);
}

std::vector<std::string_view> User::Flags() const {
  std::vector<std::string_view> f;
  f.push_back(enabled_ ? "on" : "off");
  if (nopass_) f.push_back("nopass");
  f.push_back(skip_sanitize_ ? "skip-sanitize-payload" : "sanitize-payload");
  return f;
}

std::string User::Apply(std::string_view op, bool all_channels_default) {
  if (op.empty()) return "";
  if (EqualsIgnoreCase(op, "on")) {
    enabled_ = true;
  } else if (EqualsIgnoreCase(op, "off")) {
    enabled_ = false;
  } else if (EqualsIgnoreCase(op, "skip-sanitize-payload")) {
    skip_sanitize_ = true;
  } else if (EqualsIgnoreCase(op, "sanitize-payload")) {
    skip_sanitize_ = false;
  } else if (EqualsIgnoreCase(op, "nopass")) {
    nopass_ = true;
    passwords_.clear();
  } else if (EqualsIgnoreCase(op, "resetpass")) {
    nopass_ = false;
    passwords_.clear();
  } else if (op[0] == '>' || op[0] == '#' || op[0] == '<' || op[0] == '!') {
    // > and < name a clear password, # and ! its hex SHA-256.
    std::string h;
    if (op[0] == '>' || op[0] == '<') {
      h = Sha256Hex(op.substr(1));
    } else {
      if (!ValidHash(op.substr(1))) return kErrBadHash;
      h.assign(op.substr(1));
    }
    auto it = std::find(passwords_.begin(), passwords_.end(), h);
    if (op[0] == '>' || op[0] == '#') {
      if (it == passwords_.end()) passwords_.push_back(std::move(h));
      nopass_ = false;
      return "";
    }
    if (it == passwords_.end()) return kErrNoSuchPassword;
    passwords_.erase(it);
  } else if (op[0] == '(' && op.back() == ')') {
    Selector s(all_channels_default);
    for (std::string_view o : SplitSpaces(op.substr(1, op.size() - 2))) {
      std::string err = s.Apply(o);
      if (!err.empty()) return err;
    }
    selectors_.push_back(std::move(s));
  } else if (EqualsIgnoreCase(op, "resetratelimit")) {
    cps_ = bps_ = 0;
  } else if (op.size() > 14 && EqualsIgnoreCase(op.substr(0, 10), "ratelimit:") &&
             (EqualsIgnoreCase(op.substr(10, 4), "cps=") ||
              EqualsIgnoreCase(op.substr(10, 4), "bps="))) {
    // Trove's (FrogDB's) rule; 0 removes that limit.
    uint64_t v = 0;
    for (char c : op.substr(14)) {
      if (c < '0' || c > '9' || v > UINT64_MAX / 10 - 10) return kErrSyntax;
      v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    (EqualsIgnoreCase(op.substr(10, 1), "c") ? cps_ : bps_) = v;
  } else if (EqualsIgnoreCase(op, "clearselectors")) {
    selectors_.resize(1, Selector(all_channels_default));
  } else if (EqualsIgnoreCase(op, "reset")) {
    Apply("resetpass", all_channels_default);
    Apply("resetkeys", all_channels_default);
    Apply("resetchannels", all_channels_default);
    if (all_channels_default) Apply("allchannels", all_channels_default);
    Apply("off", all_channels_default);
    Apply("sanitize-payload", all_channels_default);
    Apply("clearselectors", all_channels_default);
    Apply("-@all", all_channels_default);
    Apply("resetratelimit", all_channels_default);
  } else {
    return selectors_[0].Apply(op);
  }
  return "";
}

std::string User::Describe() const {
  std::string s;
  for (std::string_view f : Flags()) {
    s.append(f);
    s += ' ';
  }
  for (const std::string& h : passwords_) s += "#" + h + " ";
  if (cps_ > 0) s += "ratelimit:cps=" + std::to_string(cps_) + " ";
  if (bps_ > 0) s += "ratelimit:bps=" + std::to_string(bps_) + " ";
  s += selectors_[0].Describe();
  for (size_t i = 1; i < selectors_.size(); ++i) s += " (" + selectors_[i].Describe() + ")";
  return s;
}

bool User::PasswordMatches(std::string_view password) const {
  if (nopass_) return true;
  const std::string h = Sha256Hex(password);
  bool ok = false;
  for (const std::string& p : passwords_) ok |= ConstantTimeEqual(h, p);
  return ok;
}

bool User::unrestricted() const {
  const Selector& r = selectors_[0];
  return r.all_commands() && r.all_keys() && r.all_channels();
}

Denied User::Check(const CommandSpec& spec, int slot, std::span<const std::string_view> argv,
                   size_t* pos) const {
  // Reused per thread: the check allocates nothing once warm.
  thread_local std::vector<size_t> idx;
  thread_local std::vector<uint8_t> perms;
  idx.clear();
  perms.clear();
  bool have_keys = false;
  Denied worst = Denied::kCmd;
  size_t worst_pos = 0;
  for (const Selector& s : selectors_) {
    if (!have_keys && !s.all_keys()) {
      CommandTable::KeyIndexes(spec, argv, &idx);
      KeyPerms(spec, argv, idx, &perms);
      have_keys = true;
    }
    size_t p = 0;
    Denied d = s.Check(spec, slot, argv, idx, perms, &p);
    if (d == Denied::kOk) return d;
    if (d > worst || (d == worst && p > worst_pos)) {
      worst = d;
      worst_pos = p;
    }
  }
  *pos = worst_pos;
  return worst;
}

bool User::ChannelAllowed(std::string_view ch, bool is_pattern) const {
  for (const Selector& s : selectors_)
    if (s.ChannelAllowed(ch, is_pattern)) return true;
  return false;
}

void ChannelArgs(const CommandSpec& spec, std::span<const std::string_view> argv,
                 std::vector<size_t>* idx, bool* patterns) {
  std::string_view n = spec.name;
  *patterns = n == "psubscribe";
  if (n == "publish" || n == "spublish") {
    if (argv.size() > 1) idx->push_back(1);
  } else if (n == "subscribe" || n == "ssubscribe" || n == "psubscribe") {
    for (size_t i = 1; i < argv.size(); ++i) idx->push_back(i);
  }
}

}  // namespace trove::resp::acl
