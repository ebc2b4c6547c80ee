// Who may run what on the memcached port: memcached's ASCII authentication
// (-Y), then the per-user checks (-Y users as ACL users): resolving the user
// and the slow path of Permit. Connection's worker.
#include <cstring>

#include "protocol/memcache/dispatch.h"

namespace trove::memcache {

void MemcacheHandler::SetAclUser(std::string_view name) {
  protocol::UserAccess* access = ctx_->opts.access;
  if (access == nullptr) return;
  acl_name_.assign(name);
  acl_epoch_ = access->epoch();
  bool unrestricted = false;
  acl_user_ = access->FindUser(name, &unrestricted);
  // An authfile user missing from the ACL (deleted there) may do nothing.
  acl_open_ = acl_user_ != nullptr && unrestricted;
  if (acl_user_ == nullptr) close_ = true;
}

void MemcacheHandler::AuthenticateByCertificate(const std::string& cn) {
  protocol::UserAccess* access = ctx_->opts.access;
  bool unrestricted = false;
  if (access == nullptr || access->FindUser(cn, &unrestricted) == nullptr) return;
  authed_ = true;
  SetAclUser(cn);
}

bool MemcacheHandler::PermitSlow(protocol::McCmd c, std::string_view key, uint8_t need,
                                 ReplyWriter& w) {
  protocol::UserAccess* access = ctx_->opts.access;
  if (access == nullptr) return true;
  if (access->epoch() != acl_epoch_) {
    SetAclUser(acl_name_);
    if (acl_user_ == nullptr) {  // deleted or disabled: the connection ends
      close_ = true;
      return false;
    }
    if (acl_open_) return true;
  }
  std::string err = access->CheckMemcache(acl_user_.get(), c, key, need);
  if (!err.empty()) {
    w.ServerError("NOPERM " + err);
    return false;
  }
  if (!acl_charged_) {  // once per request (a multiget checks every key)
    err = access->ChargeMemcache(acl_user_.get(), req_bytes_);
    if (!err.empty()) {
      w.ServerError(err);
      return false;
    }
    acl_charged_ = true;
  }
  return true;
}

// memcached's try_read_command_asciiauth: the first request must be
// "set <any> <any> <any> <n>\r\n<user> <pass>\r\n"; anything else is
// refused. Returns the bytes consumed (0: need more).
size_t MemcacheHandler::Authenticate(const char* data, size_t len, ReplyWriter& w) {
  size_t used = 0;
  if (auth_need_ == 0) {
    if (len < 3) return 0;
    const char* el = static_cast<const char*>(std::memchr(data, '\n', len));
    if (el == nullptr) {
      if (len > 2048) close_ = true;  // junk without a newline
      return close_ ? len : 0;
    }
    const size_t line_len = static_cast<size_t>(el - data);
    used = line_len + 1;
    if (line_len < 6) {  // memcached's MIN_AUTH_REQ_LEN: closed without a reply
      close_ = true;
      return len;
    }
    std::string_view line(data, line_len);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::string_view tok[6];
    size_t n = 0;
    for (size_t i = 0; i < line.size() && n < 6;) {
      while (i < line.size() && line[i] == ' ') ++i;
      size_t j = i;
      while (j < line.size() && line[j] != ' ') ++j;
      if (j > i) tok[n++] = line.substr(i, j - i);
      i = j;
    }
    uint32_t size = 0;
    if (n < 5 || line.substr(0, 3) != "set" || !ParseFlags(tok[4], &size)) {
      w.ClientError("unauthenticated");
      return used;
    }
    if (size > 16384) {  // MAX_AUTH_REQ_LEN
      w.ClientError("auth token too long");
      return used;
    }
    auth_need_ = size + 2;
  }
  if (len - used < auth_need_) return used;
  std::string_view token(data + used, auth_need_);
  used += auth_need_;
  auth_need_ = 0;
  if (token.substr(token.size() - 2) != "\r\n") {
    w.ClientError("bad command line termination");
    return used;
  }
  token.remove_suffix(2);
  const size_t sp = token.find(' ');
  if (sp == std::string_view::npos) {
    w.ClientError("bad authentication token format");
    return used;
  }
  AuthTable& auth = *ctx_->opts.auth;
  auth.auth_cmds.fetch_add(1, std::memory_order_relaxed);
  if (auth.Check(token.substr(0, sp), token.substr(sp + 1))) {
    authed_ = true;
    SetAclUser(token.substr(0, sp));
    w.Word("STORED");
  } else {
    auth.auth_errors.fetch_add(1, std::memory_order_relaxed);
    w.ClientError("authentication failure");
  }
  return used;
}

}  // namespace trove::memcache
