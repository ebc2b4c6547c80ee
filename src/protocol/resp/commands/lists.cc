// List commands; LMOVE, RPOPLPUSH and LMPOP are list_moves.cc. Run on the
// connection's worker with the keys' stripes held.
#include <string>

#include "common/str_append.h"
#include "protocol/resp/commands/collection_commands.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/types/keyspace.h"

namespace trove::resp {
namespace {

void PushGeneric(CommandContext& ctx, bool left, bool only_existing) {
  std::string key = ctx.Key(1);
  ListValue* v = nullptr;
  if (only_existing) {
    if (!ReadExisting(ctx, key, &v, [&] {
          ctx.dirty = 0;
          ctx.w->Integer(0);
        }))
      return;
  } else {
    v = LoadOrCreate<ListValue>(ctx, key);
    if (v == nullptr) return;
  }
  size_t before = v->MemoryUsage();
  for (size_t i = 2; i < ctx.argc(); ++i) {
    if (left)
      v->PushFront(ctx.argv[i]);
    else
      v->PushBack(ctx.argv[i]);
  }
  int64_t n = static_cast<int64_t>(v->size());
  FinishUpdate(ctx, key, v, before);
  ctx.dirty = static_cast<int64_t>(ctx.argc() - 2);  // Redis: one per element pushed
  ctx.w->Integer(n);
}
void CmdLPush(CommandContext& ctx) { PushGeneric(ctx, true, false); }
void CmdRPush(CommandContext& ctx) { PushGeneric(ctx, false, false); }
void CmdLPushX(CommandContext& ctx) { PushGeneric(ctx, true, true); }
void CmdRPushX(CommandContext& ctx) { PushGeneric(ctx, false, true); }

// A list index (negative counts from the end) as a position among len
// items; false when it falls outside.
bool ListPosition(int64_t idx, size_t len, size_t* pos) {
  const int64_t n = static_cast<int64_t>(len);
  if (idx < 0) idx += n;
  if (idx < 0 || idx >= n) return false;
  *pos = static_cast<size_t>(idx);
  return true;
}

void PopGeneric(CommandContext& ctx, bool left) {
  int64_t count = -1;
  std::string key = ctx.Key(1);
  ListValue* v;
  auto empty = [&] { ctx.w->NullArray(); };
  if (!ReadPopTarget(ctx, &CommandContext::WrongArity, key, &v, &count, empty)) return;
  size_t before = v->MemoryUsage();
  if (count < 0) {
    std::string s = left ? v->PopFront() : v->PopBack();
    FinishUpdate(ctx, key, v, before);
    ctx.w->Bulk(s);
    return;
  }
  size_t n = std::min(static_cast<size_t>(count), v->size());
  ctx.w->ArrayHeader(n);
  for (size_t i = 0; i < n; ++i) ctx.w->Bulk(left ? v->PopFront() : v->PopBack());
  FinishUpdate(ctx, key, v, before);
}
void CmdLPop(CommandContext& ctx) { PopGeneric(ctx, true); }
void CmdRPop(CommandContext& ctx) { PopGeneric(ctx, false); }

void CmdLLen(CommandContext& ctx) {
  ListValue* v;
  if (!ReadCollection(ctx, ctx.Key(1), &v)) return;
  ctx.w->Integer(v ? static_cast<int64_t>(v->size()) : 0);
}

// Redis range normalisation: returns false if the range is empty.
bool NormalizeRange(int64_t len, int64_t* start, int64_t* end) {
  if (*start < 0) *start += len;
  if (*end < 0) *end += len;
  if (*start < 0) *start = 0;
  if (*start > *end || *start >= len) return false;
  if (*end >= len) *end = len - 1;
  return true;
}

void CmdLRange(CommandContext& ctx) {
  int64_t start, end;
  if (!ArgInt(ctx, ctx.argv[2], &start) || !ArgInt(ctx, ctx.argv[3], &end)) return;
  ListValue* v;
  if (!ReadCollection(ctx, ctx.Key(1), &v)) return;
  if (v == nullptr || !NormalizeRange(static_cast<int64_t>(v->size()), &start, &end)) {
    ctx.w->ArrayHeader(0);
    return;
  }
  ctx.w->ArrayHeader(static_cast<size_t>(end - start + 1));
  for (int64_t i = start; i <= end; ++i) ctx.w->Bulk(v->items()[static_cast<size_t>(i)]);
}

void CmdLIndex(CommandContext& ctx) {
  ListValue* v;
  if (!ReadExisting(ctx, ctx.Key(1), &v, [&] { ctx.w->Null(); })) return;
  int64_t idx;
  if (!ArgInt(ctx, ctx.argv[2], &idx)) return;
  size_t pos;
  if (!ListPosition(idx, v->size(), &pos)) {
    ctx.w->Null();
    return;
  }
  ctx.w->Bulk(v->items()[pos]);
}

void CmdLSet(CommandContext& ctx) {
  std::string key = ctx.Key(1);
  ListValue* v;
  if (!ReadExisting(ctx, key, &v, [&] { ctx.Error("ERR no such key"); })) return;
  int64_t idx;
  if (!ArgInt(ctx, ctx.argv[2], &idx)) return;
  size_t pos;
  if (!ListPosition(idx, v->size(), &pos)) {
    ctx.Error("ERR index out of range");
    return;
  }
  size_t before = v->MemoryUsage();
  v->Set(pos, ctx.argv[3]);
  FinishUpdate(ctx, key, v, before);
  ctx.w->Ok();
}

void CmdLInsert(CommandContext& ctx) {
  bool after;
  if (EqualsIgnoreCase(ctx.argv[2], "after"))
    after = true;
  else if (EqualsIgnoreCase(ctx.argv[2], "before"))
    after = false;
  else {
    ctx.SyntaxError();
    return;
  }
  std::string key = ctx.Key(1);
  ListValue* v;
  if (!ReadExisting(ctx, key, &v, [&] { ctx.w->Integer(0); })) return;
  const auto& d = v->items();
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i] == ctx.argv[3]) {
      size_t before = v->MemoryUsage();
      v->Insert(after ? i + 1 : i, ctx.argv[4]);
      int64_t n = static_cast<int64_t>(v->size());
      FinishUpdate(ctx, key, v, before);
      ctx.w->Integer(n);
      return;
    }
  }
  ctx.w->Integer(-1);
}

void CmdLRem(CommandContext& ctx) {
  int64_t count;
  if (!ArgInt(ctx, ctx.argv[2], &count)) return;
  std::string key = ctx.Key(1);
  ListValue* v;
  if (!ReadExisting(ctx, key, &v, [&] { ctx.w->Integer(0); })) return;
  size_t before = v->MemoryUsage();
  int64_t removed = 0;
  std::string_view elem = ctx.argv[3];
  if (count >= 0) {
    for (size_t i = 0; i < v->size();) {
      if (v->items()[i] == elem && (count == 0 || removed < count)) {
        v->Erase(i);
        ++removed;
      } else {
        ++i;
      }
    }
  } else {
    for (size_t i = v->size(); i-- > 0;) {
      if (v->items()[i] == elem && removed < -count) {
        v->Erase(i);
        ++removed;
      }
    }
  }
  if (removed > 0) FinishUpdate(ctx, key, v, before);  // nothing removed: untouched
  ctx.w->Integer(removed);
}

void CmdLTrim(CommandContext& ctx) {
  int64_t start, end;
  if (!ArgInt(ctx, ctx.argv[2], &start) || !ArgInt(ctx, ctx.argv[3], &end)) return;
  std::string key = ctx.Key(1);
  ListValue* v;
  if (!ReadExisting(ctx, key, &v, [&] { ctx.w->Ok(); })) return;
  size_t before = v->MemoryUsage();
  if (!NormalizeRange(static_cast<int64_t>(v->size()), &start, &end))
    v->Clear();
  else
    v->Trim(static_cast<size_t>(start), static_cast<size_t>(end));
  FinishUpdate(ctx, key, v, before);
  ctx.w->Ok();
}

void CmdLPos(CommandContext& ctx) {
  int64_t rank = 1, count = -1, maxlen = 0;
  for (size_t i = 3; i < ctx.argc(); ++i) {
    std::string_view o = ctx.argv[i];
    if (i + 1 >= ctx.argc()) {
      ctx.SyntaxError();
      return;
    }
    if (EqualsIgnoreCase(o, "rank")) {
      if (!ArgInt(ctx, ctx.argv[++i], &rank)) return;
      if (rank == 0) {
        ctx.Error(
            "ERR RANK can't be zero: use 1 to start from the first match, 2 from the "
            "second ... or use negative to start from the end of the list");
        return;
      }
      if (rank == INT64_MIN) {
        ctx.Error("ERR value is out of range");
        return;
      }
    } else if (EqualsIgnoreCase(o, "count")) {
      if (!ArgInt(ctx, ctx.argv[++i], &count)) return;
      if (count < 0) {
        ctx.Error("ERR COUNT can't be negative");
        return;
      }
    } else if (EqualsIgnoreCase(o, "maxlen")) {
      if (!ArgInt(ctx, ctx.argv[++i], &maxlen)) return;
      if (maxlen < 0) {
        ctx.Error("ERR MAXLEN can't be negative");
        return;
      }
    } else {
      ctx.SyntaxError();
      return;
    }
  }
  ListValue* v;
  if (!ReadExisting(ctx, ctx.Key(1), &v, [&] {
        if (count >= 0)
          ctx.w->ArrayHeader(0);
        else
          ctx.w->Null();
      }))
    return;
  std::vector<int64_t> found;
  int64_t len = static_cast<int64_t>(v->size());
  int64_t skip = (rank > 0 ? rank : -rank) - 1;
  int64_t want = count < 0 ? 1 : (count == 0 ? len : count);
  int64_t scanned = 0;
  for (int64_t k = 0; k < len && static_cast<int64_t>(found.size()) < want; ++k) {
    if (maxlen != 0 && scanned >= maxlen) break;
    ++scanned;
    int64_t idx = rank > 0 ? k : len - 1 - k;
    if (v->items()[static_cast<size_t>(idx)] == ctx.argv[2]) {
      if (skip > 0) {
        --skip;
        continue;
      }
      found.push_back(idx);
    }
  }
  if (count < 0) {
    if (found.empty())
      ctx.w->Null();
    else
      ctx.w->Integer(found[0]);
    return;
  }
  ctx.w->ArrayHeader(found.size());
  for (int64_t f : found) ctx.w->Integer(f);
}

}  // namespace

// Appends LMOVE, RPOPLPUSH and LMPOP (commands/list_moves.cc).
void RegisterListMoveCommands(std::vector<CommandSpec>* t);

void RegisterListCommands(std::vector<CommandSpec>* t) {
  const uint32_t w = kCmdWrite | kCmdDenyOom;
  const uint32_t r = kCmdReadonly;
  const CommandAdder add{t, "list"};
  add("lpush", -3, w | kCmdFast, 1, 1, 1, CmdLPush,
      "Prepends one or more elements to a list. Creates the key if it doesn't exist.", "1.0.0");
  add("rpush", -3, w | kCmdFast, 1, 1, 1, CmdRPush,
      "Appends one or more elements to a list. Creates the key if it doesn't exist.", "1.0.0");
  add("lpushx", -3, w | kCmdFast, 1, 1, 1, CmdLPushX,
      "Prepends one or more elements to a list only when the list exists.", "2.2.0");
  add("rpushx", -3, w | kCmdFast, 1, 1, 1, CmdRPushX,
      "Appends an element to a list only when the list exists.", "2.2.0");
  add("lpop", -2, kCmdWrite | kCmdFast, 1, 1, 1, CmdLPop,
      "Returns the first elements in a list after removing it. Deletes the list if the last "
      "element was popped.",
      "1.0.0");
  add("rpop", -2, kCmdWrite | kCmdFast, 1, 1, 1, CmdRPop,
      "Returns and removes the last elements of a list. Deletes the list if the last element was "
      "popped.",
      "1.0.0");
  add("llen", 2, r | kCmdFast, 1, 1, 1, CmdLLen, "Returns the length of a list.", "1.0.0");
  add("lrange", 4, r, 1, 1, 1, CmdLRange, "Returns a range of elements from a list.", "1.0.0");
  add("lindex", 3, r, 1, 1, 1, CmdLIndex, "Returns an element from a list by its index.", "1.0.0");
  add("lset", 4, w, 1, 1, 1, CmdLSet, "Sets the value of an element in a list by its index.",
      "1.0.0");
  add("linsert", 5, w, 1, 1, 1, CmdLInsert,
      "Inserts an element before or after another element in a list.", "2.2.0");
  add("lrem", 4, kCmdWrite, 1, 1, 1, CmdLRem,
      "Removes elements from a list. Deletes the list if the last element was removed.", "1.0.0");
  add("ltrim", 4, kCmdWrite, 1, 1, 1, CmdLTrim,
      "Removes elements from both ends a list. Deletes the list if all elements were trimmed.",
      "1.0.0");
  add("lpos", -3, r, 1, 1, 1, CmdLPos, "Returns the index of matching elements in a list.",
      "6.0.6");
  RegisterListMoveCommands(t);  // commands/list_moves.cc, in table order
}

}  // namespace trove::resp
