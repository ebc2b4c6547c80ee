// The blocking list and sorted-set commands: BLPOP, BRPOP, BRPOPLPUSH, BLMOVE,
// BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP. Each tries its non-blocking form with
// its keys' stripes held; with no data it blocks (Session::Block), and runs
// again when a key it waits on gets data (block_registry.h). Inside MULTI it
// never blocks: it answers as on a time-out.
#include <climits>
#include <cmath>
#include <string>
#include <vector>

#include "protocol/resp/commands/blocking_ops.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/core/client.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/types/keyspace.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/core/resp_parser.h"

namespace trove::resp {
namespace {

// Redis's timeout argument in seconds (timeout.c): a long double, times
// 1000, rounded up; false after the error reply.
bool ParseBlockTimeout(CommandContext& ctx, std::string_view arg, int64_t* ms) {
  long double v;
  if (!ParseLongDouble(arg, &v)) {
    ctx.Error("ERR timeout is not a float or out of range");
    return false;
  }
  v *= 1000.0L;
  if (v > static_cast<long double>(LLONG_MAX)) {
    ctx.Error("ERR timeout is out of range");
    return false;
  }
  if (v < -1e18L) {
    ctx.Error("ERR timeout is negative");
    return false;
  }
  const auto t = static_cast<int64_t>(std::ceil(v));
  if (t < 0) {
    ctx.Error("ERR timeout is negative");
    return false;
  }
  if (t > 0 && t > LLONG_MAX - ctx.server->NowMs()) {
    ctx.Error("ERR timeout is out of range");
    return false;
  }
  *ms = t;
  return true;
}

// No data: block, or (served again / inside MULTI) say so. Inside MULTI the
// reply is the non-blocking form's: null_array false for BLMOVE/BRPOPLPUSH.
void NoData(CommandContext& ctx, int64_t ms, bool null_array, std::span<const size_t> wait) {
  if (ctx.would_block != nullptr) {
    *ctx.would_block = true;
    return;
  }
  if (ctx.in_exec || ctx.client == nullptr || ctx.client->control() == nullptr) {
    if (null_array)
      ctx.w->NullArray();
    else
      ctx.w->Null();
    return;
  }
  ctx.client->Block(ctx, ms, wait);
}

// Data on `key` while clients still wait on it means a serve is pending: the
// writer waits for an input fence (block_registry.h, step 2), and this
// command reached the server before that write. Like Redis, which reads in
// arrival order, it queues behind them (by arrival) rather than take the
// data first; the key is marked ready so that a serve reaches it. True if
// it blocked.
bool QueueBehindWaiters(CommandContext& ctx, const std::string& key, int64_t ms,
                        std::span<const size_t> wait) {
  if (ctx.would_block != nullptr || ctx.in_exec || ctx.client == nullptr ||
      ctx.client->control() == nullptr || !ctx.server->blocks().any() ||
      !ctx.server->blocks().HasWaiters(key)) {
    return false;
  }
  ctx.fx->AddReadyKey(key);
  ctx.client->Block(ctx, ms, wait);
  return true;
}

std::vector<size_t> Range(size_t from, size_t to) {  // [from, to)
  std::vector<size_t> v;
  for (size_t i = from; i < to; ++i) v.push_back(i);
  return v;
}

// BLPOP / BRPOP / BZPOPMIN / BZPOPMAX key [key ...] timeout: the first key
// in argument order that holds a T is popped by `pop`, which writes the
// reply's elements after the key; WRONGTYPE stops at the first other type.
template <typename T, typename Pop>
void PopFirstNonEmpty(CommandContext& ctx, size_t reply_len, Pop pop) {
  int64_t ms;
  if (!ParseBlockTimeout(ctx, ctx.argv.back(), &ms)) return;
  const size_t last = ctx.argc() - 1;
  for (size_t i = 1; i < last; ++i) {
    std::string key = ctx.Key(i);
    T* v = nullptr;
    if (!ReadPopSource(ctx, key, &v)) return;
    if (v == nullptr) continue;
    if (QueueBehindWaiters(ctx, key, ms, Range(1, last))) return;
    ctx.w->ArrayHeader(reply_len);
    ctx.w->Bulk(ctx.argv[i]);
    const size_t before = v->MemoryUsage();
    pop(v);
    FinishUpdate(ctx, key, v, before);
    return;
  }
  NoData(ctx, ms, true, Range(1, last));
}

// -> [key, element]
void ListPop(CommandContext& ctx, bool left) {
  PopFirstNonEmpty<ListValue>(ctx, 2, [&](ListValue* v) {
    ctx.w->Bulk(left ? v->PopFront() : v->PopBack());
  });
}
void CmdBLPop(CommandContext& ctx) { ListPop(ctx, true); }
void CmdBRPop(CommandContext& ctx) { ListPop(ctx, false); }

// -> [key, member, score]
void ZPop(CommandContext& ctx, bool max) {
  PopFirstNonEmpty<ZsetValue>(ctx, 3, [&](ZsetValue* v) {
    ZsetValue::Entry e = max ? *v->ordered().rbegin() : *v->ordered().begin();
    v->Remove(e.second);
    ctx.w->Bulk(e.second);
    ctx.w->Double(e.first);
  });
}
void CmdBZPopMin(CommandContext& ctx) { ZPop(ctx, false); }
void CmdBZPopMax(CommandContext& ctx) { ZPop(ctx, true); }

void MoveBlocking(CommandContext& ctx, bool from_left, bool to_left, std::string_view timeout) {
  int64_t ms;
  if (!ParseBlockTimeout(ctx, timeout, &ms)) return;
  ListValue* v = nullptr;
  if (!ReadPopSource(ctx, ctx.Key(1), &v)) return;
  const size_t src[] = {1};
  if (v != nullptr) {
    if (QueueBehindWaiters(ctx, ctx.Key(1), ms, src)) return;
    ListMove(ctx, from_left, to_left);  // checks the destination's type first
    return;
  }
  NoData(ctx, ms, false, src);
}
// BLMOVE src dst LEFT|RIGHT LEFT|RIGHT timeout
void CmdBLMove(CommandContext& ctx) {
  bool from, to;
  if (!ParseSide(ctx.argv[3], &from) || !ParseSide(ctx.argv[4], &to)) {
    ctx.SyntaxError();
    return;
  }
  MoveBlocking(ctx, from, to, ctx.argv[5]);
}
// BRPOPLPUSH src dst timeout
void CmdBRPopLPush(CommandContext& ctx) { MoveBlocking(ctx, false, true, ctx.argv[3]); }

// BLMPOP / BZMPOP timeout numkeys key [key ...] <where> [COUNT n]: the
// non-blocking form on argv without the timeout.
template <typename T>
void MPopBlocking(CommandContext& ctx, bool (*mpop)(CommandContext&), const char* first,
                  const char* second) {
  int64_t ms;
  if (!ParseBlockTimeout(ctx, ctx.argv[1], &ms)) return;
  CommandContext sub = ctx;
  sub.argv = ctx.argv.subspan(1);
  std::vector<size_t> wait;
  NumKeysAt(2, ctx.argv, &wait);
  if (ctx.server->blocks().any()) {
    // Only well-formed: a malformed one gets mpop's error below. The probe's
    // writer is thrown away.
    net::OutputBuffer probe_out;
    RespWriter probe_w(&probe_out, 2);
    CommandContext probe = sub;
    probe.w = &probe_w;
    size_t pos;
    bool side;
    int64_t count;
    if (ParseMpopArgs(probe, first, second, &pos, &side, &count)) {
      for (size_t i : wait) {  // the first key with data, as mpop picks it
        std::string key = ctx.Key(i);
        T* v = nullptr;
        const LoadStatus st = LoadCollection<T>(ctx, key, &v);
        if (st == LoadStatus::kWrongType) break;
        if (v == nullptr) continue;
        if (QueueBehindWaiters(ctx, key, ms, wait)) return;
        break;
      }
    }
  }
  if (mpop(sub)) return;
  NoData(ctx, ms, true, wait);
}
void CmdBLMPop(CommandContext& ctx) { MPopBlocking<ListValue>(ctx, ListMPop, "left", "right"); }
void CmdBZMPop(CommandContext& ctx) { MPopBlocking<ZsetValue>(ctx, ZsetMPop, "min", "max"); }

}  // namespace

void RegisterBlockingCommands(std::vector<CommandSpec>* t) {
  const uint32_t w = kCmdWrite;
  const CommandAdder list{t, "list"};
  const CommandAdder zset{t, "sorted-set"};
  list("blpop", -3, w, 1, -2, 1, CmdBLPop,
      "Removes and returns the first element in a list. Blocks until an element is available "
      "otherwise. Deletes the list if the last element was popped.",
      "2.0.0");
  list("brpop", -3, w, 1, -2, 1, CmdBRPop,
      "Removes and returns the last element in a list. Blocks until an element is available "
      "otherwise. Deletes the list if the last element was popped.",
      "2.0.0");
  list("brpoplpush", 4, w | kCmdDenyOom, 1, 2, 1, CmdBRPopLPush,
      "Pops an element from a list, pushes it to another list and returns it. Block until an "
      "element is available otherwise. Deletes the list if the last element was popped.",
      "2.2.0");
  list("blmove", 6, w | kCmdDenyOom, 1, 2, 1, CmdBLMove,
      "Pops an element from a list, pushes it to another list and returns it. Blocks until an "
      "element is available otherwise. Deletes the list if the last element was moved.",
      "6.2.0");
  list("blmpop", -5, w, 0, 0, 0, CmdBLMPop,
      "Pops the first element from one of multiple lists. Blocks until an element is available "
      "otherwise. Deletes the list if the last element was popped.",
      "7.0.0", NumKeysAt2);
  zset("bzpopmin", -3, w | kCmdFast, 1, -2, 1, CmdBZPopMin,
      "Removes and returns the member with the lowest score from one or more sorted sets. "
      "Blocks until a member is available otherwise. Deletes the sorted set if the last element "
      "was popped.",
      "5.0.0");
  zset("bzpopmax", -3, w | kCmdFast, 1, -2, 1, CmdBZPopMax,
      "Removes and returns the member with the highest score from one or more sorted sets. "
      "Blocks until a member available otherwise.  Deletes the sorted set if the last element "
      "was popped.",
      "5.0.0");
  zset("bzmpop", -5, w, 0, 0, 0, CmdBZMPop,
      "Removes and returns a member by score from one or more sorted sets. Blocks until a member "
      "is available otherwise. Deletes the sorted set if the last element was popped.",
      "7.0.0", NumKeysAt2);
}

}  // namespace trove::resp
