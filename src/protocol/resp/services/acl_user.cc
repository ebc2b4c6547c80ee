// User rules, descriptions and checks (Redis 7 acl.c semantics; a
// user's selectors: acl_selector.cc). Pure values: any thread, no locks.
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
constexpr const char* kErrNoSuchPassword =
    "The password you are trying to remove from the user does not exist";
constexpr const char* kErrBadHash =
    "The password hash must be exactly 64 characters and contain only lowercase hexadecimal "
    "characters";

bool ValidHash(std::string_view h) {
  if (h.size() != 64) return false;
  for (char c : h)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}




}  // namespace

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

bool HasSpaces(std::string_view s) {
  for (char c : s)
    if (c == 0 || std::isspace(static_cast<unsigned char>(c))) return true;
  return false;
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

bool User::AllowsWithEveryKey(const CommandSpec& spec, int slot,
                              std::span<const std::string_view> argv, uint8_t need) const {
  std::vector<size_t> idx;
  std::vector<uint8_t> perms;
  CommandTable::KeyIndexes(spec, argv, &idx);
  KeyPerms(spec, argv, idx, &perms);
  for (const Selector& s : selectors_) {
    size_t p = 0;
    if (s.EveryKeyAllowed(need) && s.Check(spec, slot, argv, idx, perms, &p) == Denied::kOk)
      return true;
  }
  return false;
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
