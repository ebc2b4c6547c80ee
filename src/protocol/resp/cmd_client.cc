// CLIENT and its subcommands, across workers.
// Runs on the connection's worker.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/str_append.h"
#include "net/worker.h"
#include "protocol/resp/collections.h"
#include "protocol/resp/command_table.h"
#include "protocol/resp/keyspace.h"
#include "protocol/resp/keyspace_walk.h"
#include "protocol/resp/resp_parser.h"
#include "protocol/resp/resp_server.h"
#include "protocol/resp/server_commands.h"
#include "protocol/resp/session.h"

namespace trove::resp {
namespace {

using engine::ItemRef;

// CLIENT KILL of a connection that may live on another worker: ask its
// owner, answer when the owner replies. Nothing waits.
void KillAsync(CommandContext& ctx, net::ConnControl* self, uint64_t target, bool new_form) {
  const uint64_t me = self->id();
  if (target == me) {  // as Redis: the reply goes out, then the close
    ctx.w->Integer(1);
    self->CloseSoon();
    return;
  }
  const int proto = ctx.conn->identity().proto();
  net::WorkerGroup& group = self->group();
  self->Suspend();
  net::Worker& owner = group.worker(group.OwnerOf(target));
  net::Worker* asker = net::Worker::Current();
  owner.Post([&owner, asker, me, target, new_form, proto] {
    const bool found = owner.RequestClose(target);
    asker->Post([asker, me, found, new_form, proto] {
      net::Connection* c = asker->Find(me);
      if (c == nullptr) return;
      RespWriter w(&c->output(), proto);
      if (found) {
        w.Integer(1);
      } else if (new_form) {
        w.Integer(0);
      } else {
        w.Error("ERR No such client");
      }
      c->OutputAdded();
      c->Resume();
    });
  });
}

void CmdClient(CommandContext& ctx) {
  std::string sub = ToLower(ctx.argv[1]);
  Identity& id = ctx.conn->identity();
  if (sub == "id" && ctx.argc() == 2) {
    ctx.w->Integer(static_cast<int64_t>(id.id()));
  } else if (sub == "setname" && ctx.argc() == 3) {
    for (char c : ctx.argv[2]) {
      if (c < '!' || c > '~') {
        ctx.Error("ERR Client names cannot contain spaces, newlines or special characters.");
        return;
      }
    }
    id.SetName(ctx.argv[2]);
    ctx.w->Ok();
  } else if (sub == "getname" && ctx.argc() == 2) {
    if (id.name().empty())
      ctx.w->Null();
    else
      ctx.w->Bulk(id.name());
  } else if ((sub == "info" && ctx.argc() == 2) || (sub == "list" && ctx.argc() >= 2)) {
    std::string line = "id=";
    AppendU64(line, id.id());
    line += " addr=" + id.addr() + " laddr= fd=0 name=" + id.name() + " age=";
    AppendI64(line, ctx.engine->clock()->UnixSeconds() - ctx.session->created_unix());
    line += " idle=0 flags=";
    line += ctx.conn->in_transaction() ? "x" : "N";
    line += " db=";
    AppendI64(line, id.db());
    line += " sub=0 psub=0 ssub=0 multi=";
    AppendI64(line, ctx.conn->in_transaction()
                        ? static_cast<int64_t>(ctx.conn->txn().queued().size())
                        : -1);
    line +=
        " qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 "
        "tot-mem=0 events=r cmd=client|" +
        sub + " user=" + id.user() + " redir=-1 resp=";
    AppendI64(line, id.proto());
    line += "\n";
    ctx.w->Verbatim(line);
  } else if ((sub == "setinfo" && ctx.argc() == 4) || (sub == "no-evict" && ctx.argc() == 3) ||
             (sub == "no-touch" && ctx.argc() == 3)) {
    ctx.w->Ok();
  } else if (sub == "kill" && ctx.argc() >= 3) {
    int64_t target = -1;
    if (ctx.argc() == 4 && EqualsIgnoreCase(ctx.argv[2], "id"))
      ParseStrictInt64(ctx.argv[3], &target);
    net::ConnControl* self = ctx.session->control();
    if (target > 0 && self != nullptr) {
      KillAsync(ctx, self, static_cast<uint64_t>(target), ctx.argc() == 4);
      return;
    }
    net::ServerServices* sv = ctx.server->services();
    if (target > 0 && sv != nullptr && sv->CloseConnection(static_cast<uint64_t>(target))) {
      ctx.w->Integer(1);
    } else if (ctx.argc() == 4) {
      ctx.w->Integer(0);
    } else {
      ctx.Error("ERR No such client");
    }
  } else if (sub == "id" || sub == "setname" || sub == "getname" || sub == "info" ||
             sub == "setinfo" || sub == "no-evict" || sub == "no-touch" || sub == "kill") {
    SubArity(ctx);
  } else {
    UnknownSubcommand(ctx);
  }
}

}  // namespace

void RegisterClientCommands(std::vector<CommandSpec>* t) {
  auto add = [t](const char* n, int ar, uint32_t f, CommandFn fn, const char* group,
                 const char* sum, const char* since) {
    t->push_back({n, ar, f, 0, 0, 0, fn, nullptr, group, sum, since});
  };
  add("client", -2, kCmdLoading | kCmdStale, CmdClient, "connection",
      "A container for client connection commands.", "2.4.0");
}

}  // namespace trove::resp
