// Session's ACL side: the per-command permission check, the re-read of the
// connection's user after an ACL change, and the revocation check run on
// every worker after ACL SETUSER / DELUSER / LOAD. Connection's worker.
#include <string>

#include "net/worker.h"
#include "protocol/resp/services/acl_store.h"
#include "protocol/resp/commands/server_commands.h"
#include "protocol/resp/connection/session.h"

namespace trove::resp {

void Session::ResetToDefaultUser() {
  acl::AclStore& store = server_->acl();
  const uint64_t epoch = store.epoch();  // before the read: a later change re-reads
  conn_.identity().Deauthenticate(store.Get("default"), epoch, store.default_open());
}

void Session::AuthenticateByCertificate(const std::string& cn) {
  acl::AclStore& store = server_->acl();
  const uint64_t epoch = store.epoch();
  std::shared_ptr<const acl::User> u = store.Get(cn);
  if (u != nullptr && u->enabled()) {
    // As AUTH without a password: its permissions, limits and revocation
    // (AclRevoked) follow.
    conn_.identity().Authenticate(std::move(u), epoch);
    return;
  }
  // As Redis 8: the connection stays the default user; ACL LOG says why.
  store.AddLog(acl::Denied::kTlsCert, "toplevel", cn, cn, ClientInfoLine(), server_->NowMs());
}

bool Session::AclRevoked() {
  acl::AclStore& store = server_->acl();
  Identity& who = conn_.identity();
  const uint64_t epoch = store.epoch();
  std::shared_ptr<const acl::User> u = store.Get(who.user());
  if (u == nullptr || (!u->enabled() && who.authenticated() && who.user() != "default")) {
    return true;
  }
  who.SetAclUser(u, epoch);
  if (!conn_.in_pubsub() || who.unrestricted()) return false;
  // Redis's ACLShouldKillPubsubClient: any subscription the user may no
  // longer make ends the connection.
  const PubSubState& ps = conn_.pubsub();
  for (PubSubState::Kind k : {PubSubState::kChannel, PubSubState::kShard, PubSubState::kPattern}) {
    for (const std::string& c : ps.set(k))
      if (!u->ChannelAllowed(c, k == PubSubState::kPattern)) return true;
  }
  return false;
}

bool Session::RefreshAclUser() {
  if (!AclRevoked()) return true;
  close_ = true;
  return false;
}

std::string Session::ClientInfoLine() {
  net::ClientInfo ci;
  net::Worker* w = net::Worker::Current();
  net::Connection* c = (w != nullptr && control_ != nullptr) ? w->Find(control_->id()) : nullptr;
  if (c != nullptr) {
    ci = w->ClientInfoOf(*c);
  } else {
    ci.id = conn_.identity().id();
    ci.addr = conn_.identity().addr();
    DescribeClient(&ci);
  }
  std::string line;
  AppendClientLine(&line, ci);
  if (!line.empty() && line.back() == '\n') line.pop_back();
  return line;
}

void Session::ReleaseLease() {
  const std::shared_ptr<const acl::User>& u = conn_.identity().acl_user();
  if (u != nullptr && conn_.identity().has_rate_lease())
    conn_.identity().rate_lease().Release(u->buckets(), u->cps(), u->bps());
}

bool Session::RateAllows(uint64_t cmds, uint64_t bytes, RespWriter* w) {
  const acl::User& u = *conn_.identity().acl_user();
  const acl::RateResult r = conn_.identity().rate_lease().Take(
      u.buckets(), u.cps(), u.bps(), cmds, bytes, server_->engine()->clock()->MonoNanos());
  if (r == acl::RateResult::kOk) return true;
  w->Error(r == acl::RateResult::kCommands ? "ERR rate limit exceeded: commands per second"
                                           : "ERR rate limit exceeded: bytes per second");
  return false;
}

std::string AclDeniedMessage(acl::Denied d, const std::string& user, std::string_view cmd,
                             std::string_view object, bool verbose) {
  switch (d) {
    case acl::Denied::kCmd:
      return "User " + user + " has no permissions to run the '" + std::string(cmd) +
             "' command";
    case acl::Denied::kKey:
      if (verbose)
        return "User " + user + " has no permissions to access the '" + std::string(object) +
               "' key";
      return "No permissions to access a key";
    case acl::Denied::kChannel:
      if (verbose)
        return "User " + user + " has no permissions to access the '" + std::string(object) +
               "' channel";
      return "No permissions to access a channel";
    default:
      return "No permissions";
  }
}

bool Session::AclAllows(const CommandSpec& spec, int slot, std::span<const std::string_view> argv,
                        RespWriter* w, bool in_exec) {
  const std::shared_ptr<const acl::User>& u = conn_.identity().acl_user();
  size_t pos = 0;
  const acl::Denied d = u->Check(spec, slot, argv, &pos);
  if (d == acl::Denied::kOk) return true;
  const HistogramSlots& slots = HistogramSlots::Get();
  const std::string_view full =
      slot >= 0 ? std::string_view(slots.name(static_cast<size_t>(slot))) : spec.name;
  std::string_view object = d == acl::Denied::kCmd ? full : argv[pos];
  const bool multi = in_exec || conn_.txn().active();
  server_->acl().AddLog(d, multi ? "multi" : "toplevel", object, u->name(), ClientInfoLine(),
                        server_->NowMs());
  stats_->cmds[static_cast<size_t>(spec.id)].rejected.fetch_add(1, std::memory_order_relaxed);
  if (in_exec) {
    const char* reason = d == acl::Denied::kCmd   ? "no permission to execute the command or "
                                                    "subcommand"
                         : d == acl::Denied::kKey ? "no permission to touch the specified keys"
                                                  : "no permission to access one of the "
                                                    "channels used as arguments";
    w->Error(std::string("NOPERM ACLs rules changed between the moment the transaction was "
                         "accumulated and the EXEC call. This command is no longer allowed "
                         "for the following reason: ") +
             reason);
    return false;
  }
  w->Error("NOPERM " + AclDeniedMessage(d, u->name(), full, object, false));
  return false;
}

}  // namespace trove::resp
