// CommandRng and the shared argument parser of the random-member commands.
// Worker threads only (the generator is thread_local).
#include "protocol/resp/commands/random_pick.h"

#include "protocol/resp/core/client.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/types/keyspace.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"

namespace trove::resp {

std::mt19937_64& CommandRng() {
  static thread_local std::mt19937_64 rng(0x5eed);
  return rng;
}

bool ParseRandomArgs(CommandContext& ctx, const char* with_word, bool* has_count,
                     int64_t* count, bool* with) {
  const size_t max_args = with_word != nullptr ? 4 : 3;
  *has_count = ctx.argc() >= 3;
  *with = false;
  if (ctx.argc() > max_args) {
    ctx.SyntaxError();
    return false;
  }
  if (*has_count && !ArgInt(ctx, ctx.argv[2], count)) return false;
  if (ctx.argc() == 4) {
    if (!EqualsIgnoreCase(ctx.argv[3], with_word)) {
      ctx.SyntaxError();
      return false;
    }
    *with = true;
  }
  return true;
}

bool StoppedByOutputLimit(CommandContext& ctx) {
  if (ctx.in_exec || ctx.client == nullptr) return false;
  net::OutputBuffer& out = *ctx.w->out();
  if (!ctx.client->OutputOverLimit(out, 0)) return false;
  ctx.client->KillForOutputLimit(out);
  return true;
}

}  // namespace trove::resp
