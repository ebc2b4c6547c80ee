// GatherReply: runs a function on every worker and writes the caller's
// reply from the results on the caller's worker (CLIENT LIST / KILL, ACL).
#pragma once

#include <functional>
#include <vector>

#include "net/worker.h"
#include "protocol/resp/core/command.h"
#include "protocol/resp/core/resp_writer.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/core/client.h"

namespace trove::resp {

// Runs on this connection's worker once the others have answered, or at
// once when there is no connection (tests).
template <typename T>
void GatherReply(CommandContext& ctx, std::function<T(net::Worker&)> each,
           std::function<void(std::vector<T>, RespWriter&)> done) {
  net::ConnControl* self = ctx.client->control();
  if (self == nullptr || net::Worker::Current() == nullptr || ctx.in_exec) {
    std::vector<T> one;
    if (net::Worker* w = net::Worker::Current()) one.push_back(each(*w));
    done(std::move(one), *ctx.w);
    return;
  }
  const uint64_t me = self->id();
  const int proto = ctx.w->proto();
  self->Suspend();
  self->group().Gather<T>(std::move(each), [me, proto, done = std::move(done)](std::vector<T> all) {
    net::Connection* c = net::Worker::Current()->Find(me);
    if (c == nullptr) return;
    RespWriter w(&c->output(), proto);
    done(std::move(all), w);
    c->OutputAdded();
    c->Resume();
  });
}

}  // namespace trove::resp
