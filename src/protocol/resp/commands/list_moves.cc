// LMOVE, RPOPLPUSH and LMPOP, with the bodies their blocking forms run too
// (blocking_ops.h). Run on the connection's worker with the keys' stripes held.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/resp/commands/blocking_ops.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/types/keyspace.h"

namespace trove::resp {

bool ParseSide(std::string_view s, bool* left) {
  if (EqualsIgnoreCase(s, "left")) {
    *left = true;
    return true;
  }
  if (EqualsIgnoreCase(s, "right")) {
    *left = false;
    return true;
  }
  return false;
}

void ListMove(CommandContext& ctx, bool from_left, bool to_left) {
  std::string src = ctx.Key(1), dst = ctx.Key(2);
  ListValue* s;
  if (!ReadCollection(ctx, src, &s)) return;
  if (s == nullptr) {
    ctx.w->Null();
    return;
  }
  ListValue* d;
  if (!ReadCollection(ctx, dst, &d)) return;
  size_t sb = s->MemoryUsage();
  std::string elem = from_left ? s->PopFront() : s->PopBack();
  auto push = [&elem, to_left](ListValue* l) {
    if (to_left)
      l->PushFront(elem);
    else
      l->PushBack(elem);
  };
  if (src == dst) {
    push(s);
    FinishUpdate(ctx, src, s, sb);
    ctx.w->Bulk(elem);
    return;
  }
  FinishUpdate(ctx, src, s, sb);
  d = LoadOrCreate<ListValue>(ctx, dst);
  if (d == nullptr) return;
  size_t db = d->MemoryUsage();
  push(d);
  FinishUpdate(ctx, dst, d, db);
  ctx.w->Bulk(elem);
}

namespace {
void MoveGeneric(CommandContext& ctx, bool from_left, bool to_left) {
  ListMove(ctx, from_left, to_left);
}

void CmdLMove(CommandContext& ctx) {
  bool from, to;
  if (!ParseSide(ctx.argv[3], &from) || !ParseSide(ctx.argv[4], &to)) {
    ctx.SyntaxError();
    return;
  }
  MoveGeneric(ctx, from, to);
}
void CmdRPopLPush(CommandContext& ctx) { MoveGeneric(ctx, false, true); }

}  // namespace

bool ListMPop(CommandContext& ctx) {
  auto pop = [&](ListValue* v, bool left, size_t count) {
    const size_t take = std::min(count, v->size());
    ctx.w->ArrayHeader(take);
    for (size_t i = 0; i < take; ++i) ctx.w->Bulk(left ? v->PopFront() : v->PopBack());
  };
  return PopFromFirstNonEmpty<ListValue>(ctx, "left", "right", pop);
}

namespace {
void CmdLMPop(CommandContext& ctx) {
  if (!ListMPop(ctx)) ctx.w->NullArray();
}

}  // namespace

void RegisterListMoveCommands(std::vector<CommandSpec>* t) {
  const uint32_t w = kCmdWrite | kCmdDenyOom;
  const CommandAdder add{t, "list"};
  add("lmove", 5, w, 1, 2, 1, CmdLMove,
      "Returns an element after popping it from one list and pushing it to another. Deletes the "
      "list if the last element was moved.",
      "6.2.0");
  add("rpoplpush", 3, w, 1, 2, 1, CmdRPopLPush,
      "Returns the last element of a list after removing and pushing it to another list. Deletes "
      "the list if the last element was popped.",
      "1.2.0");
  add("lmpop", -4, kCmdWrite, 0, 0, 0, CmdLMPop,
      "Returns multiple elements from a list after removing them. Deletes the list if the last "
      "element was popped.",
      "7.0.0", NumKeysAt1);
}

}  // namespace trove::resp
