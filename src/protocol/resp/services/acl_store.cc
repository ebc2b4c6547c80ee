// AclStore: users, AUTH, requirepass, the ACL file and the ACL LOG.
// Any thread; see acl_store.h for the locking.
#include "protocol/resp/services/acl_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace trove::resp::acl {
namespace {

std::shared_ptr<User> MakeDefaultUser() {
  auto u = std::make_shared<User>("default", true);
  for (std::string_view r : {"+@all", "~*", "&*", "on", "nopass"}) u->Apply(r, true);
  return u;
}

// Redis's ACLMergeSelectorArguments: a selector spread over several
// arguments ("(+get", "~k)") becomes one. False on an unmatched "(";
// *bad is then its index.
bool MergeSelectors(std::span<const std::string_view> in, std::vector<std::string>* out,
                    size_t* bad) {
  std::string sel;
  bool open = false;
  size_t start = 0;
  for (size_t j = 0; j < in.size(); ++j) {
    std::string_view op = in[j];
    if (!open && !op.empty() && op[0] == '(' && op.back() != ')') {
      sel.assign(op);
      open = true;
      start = j;
      continue;
    }
    if (open) {
      sel += ' ';
      sel.append(op);
      if (!op.empty() && op.back() == ')') {
        out->push_back(std::move(sel));
        sel.clear();
        open = false;
      }
      continue;
    }
    out->emplace_back(op);
  }
  if (open) *bad = start;
  return !open;
}

}  // namespace

AclStore::AclStore() {
  MutexLock l(&mu_);
  users_.emplace("default", MakeDefaultUser());
}

std::shared_ptr<const User> AclStore::Get(std::string_view name) const {
  MutexLock l(&mu_);
  auto it = users_.find(name);
  return it == users_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<const User>> AclStore::All() const {
  MutexLock l(&mu_);
  std::vector<std::shared_ptr<const User>> v;
  for (const auto& [n, u] : users_) v.push_back(u);
  return v;
}

void AclStore::Changed() {
  epoch_.fetch_add(1, std::memory_order_relaxed);
  const User& d = *users_.find("default")->second;
  default_open_.store(d.nopass() && d.enabled(), std::memory_order_relaxed);
  default_nopass_.store(d.nopass(), std::memory_order_relaxed);
}

void AclStore::AttachBuckets(const std::string& name, User* u) {
  if (!u->rate_limited()) return;
  std::shared_ptr<RateBuckets>& b = buckets_[name];
  if (b == nullptr) b = std::make_shared<RateBuckets>();
  u->set_buckets(b);
}

void AclStore::Publish(std::string name, std::shared_ptr<User> u) {
  AttachBuckets(name, u.get());
  users_[std::move(name)] = std::move(u);
  Changed();
}

std::vector<AclStore::RateRejections> AclStore::RateRejected() const {
  MutexLock l(&mu_);
  std::vector<RateRejections> v;
  for (const auto& [n, b] : buckets_) {
    RateRejections r{n, b->rejected_cps.load(std::memory_order_relaxed),
                     b->rejected_bps.load(std::memory_order_relaxed)};
    if (r.cps + r.bps > 0) v.push_back(std::move(r));
  }
  return v;
}

std::string AclStore::SetUser(std::string_view name, std::span<const std::string_view> rules) {
  std::vector<std::string> merged;
  size_t bad = 0;
  if (!MergeSelectors(rules, &merged, &bad)) {
    return "ERR Unmatched parenthesis in acl selector starting at '" + std::string(rules[bad]) +
           "'.";
  }
  const bool pubsub_all = pubsub_default_all();
  MutexLock l(&mu_);
  auto it = users_.find(name);
  User staged = it != users_.end() ? *it->second : User(std::string(name), pubsub_all);
  for (const std::string& r : merged) {
    std::string err = staged.Apply(r, pubsub_all);
    if (!err.empty()) return "ERR Error in ACL SETUSER modifier '" + r + "': " + err;
  }
  Publish(std::string(name), std::make_shared<User>(std::move(staged)));
  return "";
}

size_t AclStore::DelUsers(std::span<const std::string_view> names) {
  MutexLock l(&mu_);
  size_t n = 0;
  for (std::string_view name : names) {
    if (name == "default") continue;
    auto it = users_.find(name);
    if (it == users_.end()) continue;
    users_.erase(it);
    if (auto b = buckets_.find(name); b != buckets_.end()) buckets_.erase(b);
    ++n;
  }
  if (n > 0) Changed();
  return n;
}

std::shared_ptr<const User> AclStore::Authenticate(std::string_view name,
                                                   std::string_view pass) const {
  std::shared_ptr<const User> u = Get(name);
  if (u == nullptr || !u->enabled() || !u->PasswordMatches(pass)) return nullptr;
  return u;
}

void AclStore::SetRequirepass(std::string_view pass) {
  MutexLock l(&mu_);
  User d = *users_.find("default")->second;
  d.Apply("resetpass", true);
  if (pass.empty()) {
    d.Apply("nopass", true);
  } else {
    std::string op = ">";
    op.append(pass);
    d.Apply(op, true);
    std::fill(op.begin(), op.end(), '\0');  // the clear text does not linger
  }
  Publish("default", std::make_shared<User>(std::move(d)));
}

void AclStore::set_aclfile(std::string path) {
  MutexLock l(&mu_);
  aclfile_ = std::move(path);
}

std::string AclStore::aclfile() const {
  MutexLock l(&mu_);
  return aclfile_;
}

std::string AclStore::ParseFile(std::string_view text,
                                std::map<std::string, std::shared_ptr<User>>* out) const {
  const std::string file = aclfile();
  const bool pubsub_all = pubsub_default_all();
  std::string errors;
  size_t linenum = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++linenum;
    while (!line.empty() && std::strchr(" \t\r\n", line.front())) line.remove_prefix(1);
    while (!line.empty() && std::strchr(" \t\r\n", line.back())) line.remove_suffix(1);
    if (line.empty()) continue;
    std::vector<std::string_view> argv;
    size_t i = 0;
    while (i <= line.size()) {
      size_t sp = line.find(' ', i);
      if (sp == std::string_view::npos) sp = line.size();
      if (sp > i) argv.push_back(line.substr(i, sp - i));
      i = sp + 1;
    }
    const std::string where = file + ":" + std::to_string(linenum);
    if (argv.size() < 2 || argv[0] != "user") {
      errors += where + " should start with user keyword followed by the username. ";
      continue;
    }
    if (HasSpaces(argv[1])) {
      errors += "'" + where + ": username '" + std::string(argv[1]) +
                "' contains invalid characters. ";
      continue;
    }
    std::string name(argv[1]);
    if (out->count(name)) {
      errors += "WARNING: Duplicate user '" + name + "' found on line " +
                std::to_string(linenum) + ". ";
      continue;
    }
    auto u = std::make_shared<User>(name, pubsub_all);
    std::vector<std::string> merged;
    size_t bad = 0;
    if (!MergeSelectors(std::span(argv).subspan(2), &merged, &bad)) {
      errors += where + ": Unmatched parenthesis in selector definition.";
      continue;
    }
    bool syntax = false;
    for (const std::string& r : merged) {
      std::string err = u->Apply(r, pubsub_all);
      if (err.empty()) continue;
      if (err.rfind("Unknown command", 0) == 0) {
        errors += where + ": Error in applying operation '" + r + "': " + err + ". ";
      } else if (!syntax) {
        errors += where + ": " + err + ". ";
        syntax = true;
      }
    }
    (*out)[name] = std::move(u);
  }
  return errors;
}

std::string AclStore::LoadFile() {
  const std::string path = aclfile();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return "Error loading ACLs, opening file '" + path + "': " + std::strerror(errno);
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::map<std::string, std::shared_ptr<User>> users;
  std::string errors = ParseFile(ss.str(), &users);
  if (!errors.empty()) {
    return errors +
           "WARNING: ACL errors detected, no change to the previously active ACL rules was "
           "performed";
  }
  if (!users.count("default")) users["default"] = MakeDefaultUser();
  MutexLock l(&mu_);
  users_.clear();
  for (auto& [n, u] : users) {
    AttachBuckets(n, u.get());
    users_.emplace(n, std::move(u));
  }
  Changed();
  return "";
}

bool AclStore::SaveFile() const {
  std::string text;
  std::string path;
  {
    MutexLock l(&mu_);
    path = aclfile_;
    for (const auto& [n, u] : users_) text += "user " + n + " " + u->Describe() + "\n";
  }
  const std::string tmp = path + ".tmp-" + std::to_string(getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return false;
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
    off += static_cast<size_t>(n);
  }
  bool ok = ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

// --- ACL LOG ---

void AclStore::AddLog(Denied reason, std::string_view context, std::string_view object,
                      std::string_view username, std::string client_info, int64_t now_ms) {
  denied_[static_cast<size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
  const int64_t max = log_max_len();
  MutexLock l(&mu_);
  if (max == 0) {
    log_.clear();
    return;
  }
  // Redis merges an event into one of the 10 newest entries that has the
  // same reason, context, object and user and is at most 60 s old.
  for (size_t i = 0; i < log_.size() && i < 10; ++i) {
    LogEntry& e = log_[i];
    int64_t delta = now_ms - e.updated_ms;
    if (delta < 0) delta = -delta;
    if (e.reason == reason && e.context == context && e.object == object &&
        e.username == username && delta <= 60000) {
      e.client_info = std::move(client_info);
      e.updated_ms = now_ms;
      ++e.count;
      LogEntry moved = std::move(e);
      log_.erase(log_.begin() + static_cast<std::ptrdiff_t>(i));
      log_.insert(log_.begin(), std::move(moved));
      return;
    }
  }
  LogEntry e;
  e.reason = reason;
  e.context.assign(context);
  e.object.assign(object);
  e.username.assign(username);
  e.client_info = std::move(client_info);
  e.entry_id = next_entry_id_++;
  e.created_ms = e.updated_ms = now_ms;
  log_.insert(log_.begin(), std::move(e));
  while (static_cast<int64_t>(log_.size()) > max) log_.pop_back();
}

std::vector<LogEntry> AclStore::LogEntries(size_t count) const {
  MutexLock l(&mu_);
  return std::vector<LogEntry>(log_.begin(),
                               log_.begin() + static_cast<std::ptrdiff_t>(
                                                  std::min(count, log_.size())));
}

void AclStore::ResetLog() {
  MutexLock l(&mu_);
  log_.clear();
}

void AclStore::set_log_max_len(int64_t n) {
  log_max_.store(n, std::memory_order_relaxed);
  MutexLock l(&mu_);
  while (static_cast<int64_t>(log_.size()) > n) log_.pop_back();
}

}  // namespace trove::resp::acl
