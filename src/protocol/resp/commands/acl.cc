// ACL: SETUSER DELUSER GETUSER LIST USERS WHOAMI CAT LOG DRYRUN GENPASS LOAD
// SAVE HELP, with Redis 7's replies. Connection's worker; the user table is
// the server's AclStore. A change that can revoke something (SETUSER,
// DELUSER, LOAD) visits every worker before replying, so that when OK
// arrives the clients it revokes are already closing.
#include <sys/random.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "protocol/resp/services/acl_categories.h"
#include "protocol/resp/services/acl_store.h"
#include "protocol/resp/core/client.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/gather_reply.h"
#include "protocol/resp/types/keyspace.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/commands/server_commands.h"

namespace trove::resp {
namespace {

// Closes, on every worker, the RESP clients whose user changed in a way
// that revokes them (Session::AclRevoked), then replies with `reply`. The
// caller itself, when revoked, gets its reply first and closes after it.
void RevokeThenReply(CommandContext& ctx, std::function<void(RespWriter&)> reply) {
  net::ConnControl* self = ctx.client->control();
  const uint64_t me = self != nullptr ? self->id() : ctx.conn->identity().id();
  const bool self_revoked = ctx.client->AclRevoked();
  GatherReply<int>(
      ctx,
      [me](net::Worker& w) {
        int n = 0;
        for (const net::ClientInfo& ci : w.ClientInfos()) {
          if (!ci.resp || ci.id == me) continue;
          net::Connection* c = w.Find(ci.id);
          if (c == nullptr || c->close_requested) continue;
          if (Client* cl = ClientOfHandler(c->handler.get()); cl != nullptr && cl->AclRevoked()) {
            w.RequestClose(ci.id);
            ++n;
          }
        }
        return n;
      },
      [me, self_revoked, reply = std::move(reply)](std::vector<int>, RespWriter& w) {
        reply(w);
        if (self_revoked) {
          if (net::Worker* cur = net::Worker::Current()) {
            if (net::Connection* c = cur->Find(me)) c->CloseSoon();
          }
        }
      });
}

void SetUser(CommandContext& ctx) {
  std::string_view name = ctx.argv[2];
  if (acl::HasSpaces(name)) {
    ctx.Error("ERR Usernames can't contain spaces or null characters");
    return;
  }
  std::string err = ctx.server->acl().SetUser(name, ctx.argv.subspan(3));
  if (!err.empty()) {
    ctx.Error(err);
    return;
  }
  RevokeThenReply(ctx, [](RespWriter& w) { w.Ok(); });
}

void DelUser(CommandContext& ctx) {
  for (size_t i = 2; i < ctx.argc(); ++i) {
    if (ctx.argv[i] == "default") {
      ctx.Error("ERR The 'default' user cannot be removed");
      return;
    }
  }
  const int64_t n = static_cast<int64_t>(ctx.server->acl().DelUsers(ctx.argv.subspan(2)));
  RevokeThenReply(ctx, [n](RespWriter& w) { w.Integer(n); });
}

void DescribeSelector(RespWriter* w, const acl::Selector& s) {
  w->Bulk("commands");
  w->Bulk(s.DescribeCommands());
  w->Bulk("keys");
  w->Bulk(s.DescribeKeys());
  w->Bulk("channels");
  w->Bulk(s.DescribeChannels());
}

void GetUser(CommandContext& ctx) {
  std::shared_ptr<const acl::User> u = ctx.server->acl().Get(ctx.argv[2]);
  if (u == nullptr) {
    ctx.w->Null();
    return;
  }
  RespWriter* w = ctx.w;
  w->MapHeader(u->rate_limited() ? 7 : 6);
  w->Bulk("flags");
  std::vector<std::string_view> flags = u->Flags();
  w->SetHeader(flags.size());
  for (std::string_view f : flags) w->Bulk(f);
  w->Bulk("passwords");
  w->ArrayHeader(u->password_hashes().size());
  for (const std::string& h : u->password_hashes()) w->Bulk(h);
  if (u->rate_limited()) {  // Trove's: only for a user that has a limit
    w->Bulk("ratelimit");
    std::string r;
    if (u->cps() > 0) r += "ratelimit:cps=" + std::to_string(u->cps());
    if (u->bps() > 0) r += std::string(r.empty() ? "" : " ") + "ratelimit:bps=" + std::to_string(u->bps());
    w->Bulk(r);
  }
  DescribeSelector(w, u->root());
  w->Bulk("selectors");
  w->ArrayHeader(u->selectors().size() - 1);
  for (size_t i = 1; i < u->selectors().size(); ++i) {
    w->MapHeader(3);
    DescribeSelector(w, u->selectors()[i]);
  }
}

void ListUsers(CommandContext& ctx, bool names_only) {
  std::vector<std::shared_ptr<const acl::User>> all = ctx.server->acl().All();
  ctx.w->ArrayHeader(all.size());
  for (const auto& u : all) {
    if (names_only) {
      ctx.w->Bulk(u->name());
    } else {
      ctx.w->Bulk("user " + u->name() + " " + u->Describe());
    }
  }
}

void Cat(CommandContext& ctx) {
  if (ctx.argc() == 2) {
    ctx.w->ArrayHeader(acl::kCategoryCount);
    for (std::string_view c : acl::kCategoryNames) ctx.w->Bulk(c);
    return;
  }
  const uint32_t cat = acl::CategoryByName(ctx.argv[2]);
  if (cat == 0) {
    ctx.Error("ERR Unknown category '" + std::string(ctx.argv[2].substr(0, 128)) + "'");
    return;
  }
  const HistogramSlots& slots = HistogramSlots::Get();
  const acl::CommandCategories& cc = acl::CommandCategories::Get();
  std::vector<std::string_view> names;
  for (size_t s = 0; s < static_cast<size_t>(slots.mc_begin()); ++s)
    if (cc.of(s) & cat) names.push_back(slots.name(s));
  ctx.w->ArrayHeader(names.size());
  for (std::string_view n : names) ctx.w->Bulk(n);
}

void GenPass(CommandContext& ctx) {
  int64_t bits = 256;
  if (ctx.argc() == 3 && !ArgInt(ctx, ctx.argv[2], &bits)) return;
  if (bits <= 0 || bits > 4096) {
    ctx.Error(
        "ERR ACL GENPASS argument must be the number of bits for the output password, a "
        "positive number up to 4096");
    return;
  }
  const size_t chars = static_cast<size_t>((bits + 3) / 4);
  std::vector<unsigned char> raw((chars + 1) / 2);
  size_t got = 0;
  while (got < raw.size()) {
    ssize_t n = getrandom(raw.data() + got, raw.size() - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : raw) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  out.resize(chars);
  ctx.w->Bulk(out);
}

const char* ReasonName(acl::Denied d) {
  switch (d) {
    case acl::Denied::kCmd: return "command";
    case acl::Denied::kKey: return "key";
    case acl::Denied::kChannel: return "channel";
    case acl::Denied::kAuth: return "auth";
    case acl::Denied::kTlsCert: return "tls-cert";
    default: return "unknown";
  }
}

void Log(CommandContext& ctx) {
  acl::AclStore& store = ctx.server->acl();
  int64_t count = 10;
  if (ctx.argc() == 3) {
    if (EqualsIgnoreCase(ctx.argv[2], "reset")) {
      store.ResetLog();
      ctx.w->Ok();
      return;
    }
    if (!ArgInt(ctx, ctx.argv[2], &count)) return;
    if (count < 0) count = 0;
  }
  const int64_t now = ctx.server->NowMs();
  std::vector<acl::LogEntry> entries = store.LogEntries(static_cast<size_t>(count));
  ctx.w->ArrayHeader(entries.size());
  for (const acl::LogEntry& e : entries) {
    ctx.w->MapHeader(10);
    ctx.w->Bulk("count");
    ctx.w->Integer(static_cast<int64_t>(e.count));
    ctx.w->Bulk("reason");
    ctx.w->Bulk(ReasonName(e.reason));
    ctx.w->Bulk("context");
    ctx.w->Bulk(e.context);
    ctx.w->Bulk("object");
    ctx.w->Bulk(e.object);
    ctx.w->Bulk("username");
    ctx.w->Bulk(e.username);
    ctx.w->Bulk("age-seconds");
    ctx.w->Double(static_cast<double>(now - e.updated_ms) / 1000.0);
    ctx.w->Bulk("client-info");
    ctx.w->Bulk(e.client_info);
    ctx.w->Bulk("entry-id");
    ctx.w->Integer(e.entry_id);
    ctx.w->Bulk("timestamp-created");
    ctx.w->Integer(e.created_ms);
    ctx.w->Bulk("timestamp-last-updated");
    ctx.w->Integer(e.updated_ms);
  }
}

void DryRun(CommandContext& ctx) {
  std::shared_ptr<const acl::User> u = ctx.server->acl().Get(ctx.argv[2]);
  if (u == nullptr) {
    ctx.Error("ERR User '" + std::string(ctx.argv[2]) + "' not found");
    return;
  }
  std::span<const std::string_view> call = ctx.argv.subspan(3);
  const CommandSpec* spec = CommandTable::Get().Find(call[0]);
  const int slot = spec != nullptr ? HistogramSlots::Get().SlotOf(*spec, call) : -1;
  if (spec == nullptr || (slot < 0 && call.size() >= 2)) {
    ctx.Error("ERR Command '" + std::string(call[0]) + "' not found");
    return;
  }
  const std::string full = HistogramSlots::Get().name(static_cast<size_t>(slot));
  const int argc = static_cast<int>(call.size());
  if ((spec->arity > 0 && argc != spec->arity) || argc < -spec->arity) {
    ctx.Error("ERR wrong number of arguments for '" + full + "' command");
    return;
  }
  size_t pos = 0;
  acl::Denied d = u->Check(*spec, slot, call, &pos);
  if (d != acl::Denied::kOk) {
    ctx.w->Bulk(AclDeniedMessage(d, u->name(), full, call[pos], true));
    return;
  }
  ctx.w->Ok();
}

void Help(CommandContext& ctx) {
  static constexpr const char* kHelp[] = {
      "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
      "CAT [<category>]",
      "    List all commands that belong to <category>, or all command categories",
      "    when no category is specified.",
      "DELUSER <username> [<username> ...]",
      "    Delete a list of users.",
      "DRYRUN <username> <command> [<arg> ...]",
      ("    Returns whether the user can execute the given command without executing the "
       "command."),
      "GETUSER <username>",
      "    Get the user's details.",
      "GENPASS [<bits>]",
      "    Generate a secure 256-bit user password. The optional `bits` argument can",
      "    be used to specify a different size.",
      "LIST",
      "    Show users details in config file format.",
      "LOAD",
      "    Reload users from the ACL file.",
      "LOG [<count> | RESET]",
      "    Show the ACL log entries.",
      "SAVE",
      "    Save the current config to the ACL file.",
      "SETUSER <username> <attribute> [<attribute> ...]",
      "    Create or modify a user with the specified attributes.",
      "USERS",
      "    List all the registered usernames.",
      "WHOAMI",
      "    Return the current connection username.",
      "HELP",
      "    Print this help."};
  ctx.w->ArrayHeader(std::size(kHelp));
  for (const char* l : kHelp) ctx.w->Simple(l);
}

void CmdAcl(CommandContext& ctx) {
  const std::string sub = ToLower(ctx.argv[1]);
  const size_t n = ctx.argc();
  acl::AclStore& store = ctx.server->acl();
  if (sub == "setuser" && n >= 3) {
    SetUser(ctx);
  } else if (sub == "deluser" && n >= 3) {
    DelUser(ctx);
  } else if (sub == "getuser" && n == 3) {
    GetUser(ctx);
  } else if ((sub == "list" || sub == "users") && n == 2) {
    ListUsers(ctx, sub == "users");
  } else if (sub == "whoami" && n == 2) {
    ctx.w->Bulk(ctx.conn->identity().user());
  } else if ((sub == "load" || sub == "save") && store.aclfile().empty()) {
    ctx.Error(
        "ERR This Redis instance is not configured to use an ACL file. You may want to "
        "specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming "
        "you have a Redis configuration file set) in order to store users in the Redis "
        "configuration.");
  } else if (sub == "load" && n == 2) {
    std::string err = store.LoadFile();
    if (!err.empty()) {
      ctx.Error("ERR " + err);
      return;
    }
    RevokeThenReply(ctx, [](RespWriter& w) { w.Ok(); });
  } else if (sub == "save" && n == 2) {
    if (store.SaveFile()) {
      ctx.w->Ok();
    } else {
      ctx.Error(
          "ERR There was an error trying to save the ACLs. Please check the server logs for "
          "more information");
    }
  } else if (sub == "cat" && (n == 2 || n == 3)) {
    Cat(ctx);
  } else if (sub == "genpass" && (n == 2 || n == 3)) {
    GenPass(ctx);
  } else if (sub == "log" && (n == 2 || n == 3)) {
    Log(ctx);
  } else if (sub == "dryrun" && n >= 4) {
    DryRun(ctx);
  } else if (sub == "help" && n == 2) {
    Help(ctx);
  } else if (HistogramSlots::Get().SlotOf(*ctx.spec, ctx.argv) >= 0) {
    SubArity(ctx);  // a known subcommand with the wrong number of arguments
  } else {
    UnknownSubcommand(ctx);
  }
}

}  // namespace

void RegisterAclCommands(std::vector<CommandSpec>* t) {
  t->push_back({"acl", -2, kCmdLoading | kCmdStale, 0, 0, 0, CmdAcl, nullptr, "server",
                "A container for Access List Control commands.", "6.0.0"});
}

}  // namespace trove::resp
