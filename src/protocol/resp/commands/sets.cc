// Set commands; run on the connection's worker with the keys' stripes held.
#include <algorithm>
#include <string>

#include "common/str_append.h"
#include "protocol/resp/commands/collection_commands.h"
#include "protocol/resp/commands/random_pick.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/core/scan_util.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/types/keyspace.h"

namespace trove::resp {
namespace {

void CheckSetEncoding(CommandContext& ctx, SetValue* v) {
  const RespServer& s = *ctx.server;
  v->CheckEncoding(s.set_max_intset_entries.load(std::memory_order_relaxed),
                   s.set_max_listpack_entries.load(std::memory_order_relaxed),
                   s.set_max_listpack_value.load(std::memory_order_relaxed));
}

void Finish(CommandContext& ctx, const std::string& key, SetValue* v, size_t before) {
  CheckSetEncoding(ctx, v);
  FinishUpdate(ctx, key, v, before);
}

void WriteMembers(CommandContext& ctx, const std::vector<std::string>& m) {
  ctx.w->SetHeader(m.size());
  for (const auto& s : m) ctx.w->Bulk(s);
}

void CmdSAdd(CommandContext& ctx) {
  std::string key = ctx.Key(1);
  SetValue* v = LoadOrCreate<SetValue>(ctx, key);
  if (v == nullptr) return;
  size_t before = v->MemoryUsage();
  int64_t n = 0;
  for (size_t i = 2; i < ctx.argc(); ++i)
    if (v->Add(ctx.argv[i])) ++n;
  if (n > 0) Finish(ctx, key, v, before);  // nothing added: the key is untouched
  ctx.w->Integer(n);
}

void CmdSRem(CommandContext& ctx) { RemoveMembers<SetValue, &SetValue::Remove>(ctx); }

void CmdSIsMember(CommandContext& ctx) {
  SetValue* v;
  if (!ReadCollection(ctx, ctx.Key(1), &v)) return;
  ctx.w->Integer(v && v->Contains(ctx.argv[2]) ? 1 : 0);
}

void CmdSMIsMember(CommandContext& ctx) {
  SetValue* v;
  if (!ReadCollection(ctx, ctx.Key(1), &v)) return;
  ctx.w->ArrayHeader(ctx.argc() - 2);
  for (size_t i = 2; i < ctx.argc(); ++i) ctx.w->Integer(v && v->Contains(ctx.argv[i]) ? 1 : 0);
}

void CmdSMembers(CommandContext& ctx) {
  SetValue* v;
  if (!ReadExisting(ctx, ctx.Key(1), &v, [&] { ctx.w->SetHeader(0); })) return;
  WriteMembers(ctx, v->Ordered());
}

void CmdSCard(CommandContext& ctx) {
  SetValue* v;
  if (!ReadCollection(ctx, ctx.Key(1), &v)) return;
  ctx.w->Integer(v ? static_cast<int64_t>(v->size()) : 0);
}

void CmdSPop(CommandContext& ctx) {
  int64_t count = -1;
  std::string key = ctx.Key(1);
  SetValue* v;
  auto empty = [&] { ctx.w->SetHeader(0); };
  if (!ReadPopTarget(ctx, &CommandContext::SyntaxError, key, &v, &count, empty)) return;
  std::vector<std::string> all(v->members().begin(), v->members().end());
  std::shuffle(all.begin(), all.end(), CommandRng());
  size_t n = count < 0 ? 1 : std::min(static_cast<size_t>(count), all.size());
  all.resize(n);
  size_t before = v->MemoryUsage();
  for (const auto& m : all) v->Remove(m);
  FinishUpdate(ctx, key, v, before);
  if (count < 0)
    ctx.w->Bulk(all[0]);
  else
    WriteMembers(ctx, all);
}

void CmdSRandMember(CommandContext& ctx) {
  int64_t count = 0;
  bool has_count, unused_with;
  SetValue* v;
  if (!ReadRandomSource(ctx, nullptr, &has_count, &count, &unused_with, &v)) return;
  std::vector<std::string> all(v->members().begin(), v->members().end());
  if (!has_count) {
    ctx.w->Bulk(all[CommandRng()() % all.size()]);
    return;
  }
  if (count < 0 && count >= -(INT64_MAX / 2)) {  // repeats: written as they are picked
    ctx.w->ArrayHeader(static_cast<uint64_t>(-count));
    WriteRandomRepeats(ctx, all, static_cast<uint64_t>(-count),
                       [&](const std::string& m) { ctx.w->Bulk(m); });
    return;
  }
  std::vector<std::string> pick;
  if (!PickRandom(ctx, std::move(all), count, &pick)) return;
  ctx.w->ArrayHeader(pick.size());
  for (const auto& m : pick) ctx.w->Bulk(m);
}

void CmdSMove(CommandContext& ctx) {
  std::string src = ctx.Key(1), dst = ctx.Key(2);
  SetValue *s, *d;
  if (!ReadCollection(ctx, src, &s) || !ReadCollection(ctx, dst, &d)) return;
  if (s == nullptr || !s->Contains(ctx.argv[3])) {
    ctx.w->Integer(0);
    return;
  }
  if (src == dst) {
    ctx.w->Integer(1);
    return;
  }
  size_t sb = s->MemoryUsage();
  s->Remove(ctx.argv[3]);
  FinishUpdate(ctx, src, s, sb);
  if (d != nullptr && d->Contains(ctx.argv[3])) {
    // Already there: the destination is not modified (no WATCH touch, no
    // event), as in Redis.
    ctx.w->Integer(1);
    return;
  }
  d = LoadOrCreate<SetValue>(ctx, dst);
  if (d == nullptr) return;
  size_t db = d->MemoryUsage();
  d->Add(ctx.argv[3]);
  Finish(ctx, dst, d, db);
  ctx.w->Integer(1);
}

enum class SetOp { kInter, kUnion, kDiff };

// Computes the operation over argv[first..]; false after WRONGTYPE.
bool Compute(CommandContext& ctx, SetOp op, size_t first, size_t last,
             std::vector<std::string>* out, int64_t limit = 0) {
  std::vector<SetValue*> sets;
  for (size_t i = first; i <= last; ++i) {
    SetValue* v;
    if (!ReadCollection(ctx, ctx.Key(i), &v)) return false;
    sets.push_back(v);
  }
  out->clear();
  if (op == SetOp::kInter) {
    for (SetValue* s : sets)
      if (s == nullptr) return true;
    std::vector<SetValue*> by_size = sets;
    std::sort(by_size.begin(), by_size.end(),
              [](SetValue* a, SetValue* b) { return a->size() < b->size(); });
    for (const auto& m : by_size[0]->members()) {
      bool all = true;
      for (size_t i = 1; i < by_size.size() && all; ++i) all = by_size[i]->Contains(m);
      if (all) {
        out->push_back(m);
        if (limit > 0 && static_cast<int64_t>(out->size()) >= limit) break;
      }
    }
  } else if (op == SetOp::kUnion) {
    std::unordered_set<std::string> u;
    for (SetValue* s : sets)
      if (s) u.insert(s->members().begin(), s->members().end());
    out->assign(u.begin(), u.end());
  } else {
    if (sets[0] == nullptr) return true;
    for (const auto& m : sets[0]->members()) {
      bool keep = true;
      for (size_t i = 1; i < sets.size() && keep; ++i) keep = !(sets[i] && sets[i]->Contains(m));
      if (keep) out->push_back(m);
    }
  }
  return true;
}

void OpGeneric(CommandContext& ctx, SetOp op) {
  std::vector<std::string> r;
  if (!Compute(ctx, op, 1, ctx.argc() - 1, &r)) return;
  // Redis builds the result as a new set, so an all-integer result comes out
  // in intset (ascending) order.
  SetValue tmp;
  for (const auto& m : r) tmp.Add(m);
  CheckSetEncoding(ctx, &tmp);
  WriteMembers(ctx, tmp.Ordered());
}
void CmdSInter(CommandContext& ctx) { OpGeneric(ctx, SetOp::kInter); }
void CmdSUnion(CommandContext& ctx) { OpGeneric(ctx, SetOp::kUnion); }
void CmdSDiff(CommandContext& ctx) { OpGeneric(ctx, SetOp::kDiff); }

void StoreGeneric(CommandContext& ctx, SetOp op) {
  std::vector<std::string> r;
  if (!Compute(ctx, op, 2, ctx.argc() - 1, &r)) return;
  std::string dst = ctx.Key(1);
  ctx.engine->UnlinkLocked(dst, ctx.ts);
  if (r.empty()) {
    ctx.w->Integer(0);
    return;
  }
  auto v = std::make_unique<SetValue>();
  for (const auto& m : r) v->Add(m);
  CheckSetEncoding(ctx, v.get());
  if (StoreNewCollection(ctx, dst, SetValue::kType, std::move(v)) == nullptr) return;
  ctx.w->Integer(static_cast<int64_t>(r.size()));
}
void CmdSInterStore(CommandContext& ctx) { StoreGeneric(ctx, SetOp::kInter); }
void CmdSUnionStore(CommandContext& ctx) { StoreGeneric(ctx, SetOp::kUnion); }
void CmdSDiffStore(CommandContext& ctx) { StoreGeneric(ctx, SetOp::kDiff); }

void CmdSInterCard(CommandContext& ctx) {
  int64_t n;
  // Redis answers the same for a non-integer as for a count below 1.
  if (!ParseStrictInt64(ctx.argv[1], &n) || n <= 0) {
    ctx.Error("ERR numkeys should be greater than 0");
    return;
  }
  if (static_cast<size_t>(n) + 2 > ctx.argc()) {
    ctx.Error("ERR Number of keys can't be greater than number of args");
    return;
  }
  int64_t limit = 0;
  size_t pos = 2 + static_cast<size_t>(n);
  for (size_t i = pos; i < ctx.argc(); ++i) {
    if (EqualsIgnoreCase(ctx.argv[i], "limit") && i + 1 < ctx.argc()) {
      if (!ParseStrictInt64(ctx.argv[++i], &limit) || limit < 0) {
        ctx.Error("ERR LIMIT can't be negative");
        return;
      }
    } else {
      ctx.SyntaxError();
      return;
    }
  }
  std::vector<std::string> r;
  if (!Compute(ctx, SetOp::kInter, 2, pos - 1, &r, limit)) return;
  ctx.w->Integer(static_cast<int64_t>(r.size()));
}

void CmdSScan(CommandContext& ctx) {
  ScanOptions o;
  if (!ParseScanArgs(ctx, 2, &o)) return;
  SetValue* v;
  if (!ReadCollection(ctx, ctx.Key(1), &v)) return;
  std::vector<std::string> out;
  uint64_t next = 0;
  if (v != nullptr && v->compact()) {
    for (const auto& m : v->Ordered()) {
      if (!o.has_pattern || GlobMatch(o.pattern, m)) out.push_back(m);
    }
  } else if (v != nullptr) {
    next = ScanLargeCollection(*v, o, [&](const ScanOrder::Ref& r) { out.emplace_back(r.member); });
  }
  WriteScanReply(ctx, next, out, 1, [&](const std::string& m) { ctx.w->Bulk(m); });
}

}  // namespace

void RegisterSetCommands(std::vector<CommandSpec>* t) {
  const uint32_t w = kCmdWrite | kCmdDenyOom;
  const uint32_t r = kCmdReadonly;
  const CommandAdder add{t, "set"};
  add("sadd", -3, w | kCmdFast, 1, 1, CmdSAdd,
      "Adds one or more members to a set. Creates the key if it doesn't exist.", "1.0.0");
  add("srem", -3, kCmdWrite | kCmdFast, 1, 1, CmdSRem,
      "Removes one or more members from a set. Deletes the set if the last member was removed.",
      "1.0.0");
  add("sismember", 3, r | kCmdFast, 1, 1, CmdSIsMember,
      "Determines whether a member belongs to a set.", "1.0.0");
  add("smismember", -3, r | kCmdFast, 1, 1, CmdSMIsMember,
      "Determines whether multiple members belong to a set.", "6.2.0");
  add("smembers", 2, r, 1, 1, CmdSMembers, "Returns all members of a set.", "1.0.0");
  add("scard", 2, r | kCmdFast, 1, 1, CmdSCard, "Returns the number of members in a set.", "1.0.0");
  add("spop", -2, kCmdWrite | kCmdFast, 1, 1, CmdSPop,
      "Returns one or more random members from a set after removing them. Deletes the set if the "
      "last member was popped.",
      "1.0.0");
  add("srandmember", -2, r, 1, 1, CmdSRandMember, "Get one or multiple random members from a set",
      "1.0.0");
  add("smove", 4, kCmdWrite | kCmdFast, 1, 2, CmdSMove, "Moves a member from one set to another.",
      "1.0.0");
  add("sinter", -2, r, 1, -1, CmdSInter, "Returns the intersect of multiple sets.", "1.0.0");
  add("sintercard", -3, r, 0, 0, CmdSInterCard,
      "Returns the number of members of the intersect of multiple sets.", "7.0.0", NumKeysAt1);
  add("sinterstore", -3, w, 1, -1, CmdSInterStore,
      "Stores the intersect of multiple sets in a key.", "1.0.0");
  add("sunion", -2, r, 1, -1, CmdSUnion, "Returns the union of multiple sets.", "1.0.0");
  add("sunionstore", -3, w, 1, -1, CmdSUnionStore, "Stores the union of multiple sets in a key.",
      "1.0.0");
  add("sdiff", -2, r, 1, -1, CmdSDiff, "Returns the difference of multiple sets.", "1.0.0");
  add("sdiffstore", -3, w, 1, -1, CmdSDiffStore, "Stores the difference of multiple sets in a key.",
      "1.0.0");
  add("sscan", -3, r, 1, 1, CmdSScan, "Iterates over members of a set.", "2.0.0");
}

}  // namespace trove::resp
