// The memcached port's per-user checks (-Y users as ACL users): resolving
// the user and the slow path of Permit. Connection's worker.
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

}  // namespace trove::memcache
