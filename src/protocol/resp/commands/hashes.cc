// Hash commands; run on the connection's worker with the keys' stripes held.
// Fields with a TTL (hash_field_expiry.cc) are handled as Redis 7.4 does: a
// read that meets a passed field deletes it (lazy expiry: HGET HMGET HEXISTS
// HSTRLEN HSETNX HINCRBY HINCRBYFLOAT, and HRANDFIELD all of them), listings
// (HGETALL HKEYS HVALS HSCAN) skip passed fields, and HLEN counts every field
// not yet deleted. A hash without field TTLs pays one pointer test.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "common/str_append.h"
#include "protocol/resp/commands/collection_commands.h"
#include "protocol/resp/commands/random_pick.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/core/scan_util.h"
#include "protocol/resp/services/hash_field_expiry.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/types/keyspace.h"

namespace trove::resp {
namespace {

void Finish(CommandContext& ctx, const std::string& key, HashValue* v, size_t before) {
  v->CheckEncoding(ctx.server->hash_max_listpack_entries.load(std::memory_order_relaxed),
                   ctx.server->hash_max_listpack_value.load(std::memory_order_relaxed));
  FinishUpdate(ctx, key, v, before);
}

// Lazy expiry of field f (Redis's HFE_LAZY_EXPIRE): when its TTL has
// passed, deletes it with its effects and returns true, with *v set to null
// if that emptied (and deleted) the hash. False when nothing was done.
bool ExpireFieldLazily(CommandContext& ctx, std::string_view key, HashValue** v,
                       std::string_view f) {
  HashValue* h = *v;
  if (h == nullptr || h->field_ttls() == nullptr) return false;
  const size_t before = h->MemoryUsage();
  if (!ErasePassedField(h, f, ctx.server->NowMs())) return false;
  if (FinishFieldExpiry(ctx, key, h, before, 1)) *v = nullptr;
  return true;
}

// True when v has a field whose TTL passed at now_ms (listings then filter).
bool HasPassedFields(const HashValue* v, int64_t now_ms) {
  return v != nullptr && v->field_ttls() != nullptr &&
         FieldTtlPassed(v->field_ttls()->earliest(), now_ms);
}

void HSetGeneric(CommandContext& ctx, bool hmset) {
  if (ctx.argc() % 2 != 0) {
    ctx.WrongArity();
    return;
  }
  std::string key = ctx.Key(1);
  HashValue* v = LoadOrCreate<HashValue>(ctx, key);
  if (v == nullptr) return;
  size_t before = v->MemoryUsage();
  int64_t added = 0;
  for (size_t i = 2; i + 1 < ctx.argc(); i += 2) {
    if (v->Set(ctx.argv[i], ctx.argv[i + 1])) ++added;
  }
  Finish(ctx, key, v, before);
  if (hmset)
    ctx.w->Ok();
  else
    ctx.w->Integer(added);
}
void CmdHSet(CommandContext& ctx) { HSetGeneric(ctx, false); }
void CmdHMSet(CommandContext& ctx) { HSetGeneric(ctx, true); }

void CmdHSetNx(CommandContext& ctx) {
  std::string key = ctx.Key(1);
  HashValue* v = LoadOrCreate<HashValue>(ctx, key);
  if (v == nullptr) return;
  // A passed field is deleted first (and the hash with it if it was the
  // last), then set anew, as Redis's hsetnx.
  if (ExpireFieldLazily(ctx, key, &v, ctx.argv[2]) && v == nullptr &&
      (v = LoadOrCreate<HashValue>(ctx, key)) == nullptr)
    return;
  if (v->Find(ctx.argv[2]).has_value()) {
    ctx.w->Integer(0);
    return;
  }
  size_t before = v->MemoryUsage();
  v->Set(ctx.argv[2], ctx.argv[3]);
  Finish(ctx, key, v, before);
  ctx.w->Integer(1);
}

// A field's value, or Null when it (or the key) is missing.
void ReplyField(CommandContext& ctx, const HashValue* v, std::string_view field) {
  std::optional<std::string_view> f = v ? v->Find(field) : std::nullopt;
  if (!f)
    ctx.w->Null();
  else
    ctx.w->Bulk(*f);
}

void CmdHGet(CommandContext& ctx) {
  const std::string key = ctx.Key(1);
  HashValue* v;
  if (!ReadCollection(ctx, key, &v)) return;
  if (ExpireFieldLazily(ctx, key, &v, ctx.argv[2])) {
    ctx.w->Null();
    return;
  }
  ReplyField(ctx, v, ctx.argv[2]);
}

// Each passed field is deleted as it is met; one hexpired event (and del if
// the hash emptied) for the call, as Redis's hmget.
void CmdHMGet(CommandContext& ctx) {
  const std::string key = ctx.Key(1);
  HashValue* v;
  if (!ReadCollection(ctx, key, &v)) return;
  const bool ttls = v != nullptr && v->field_ttls() != nullptr;
  const int64_t now = ttls ? ctx.server->NowMs() : 0;
  const size_t before = ttls ? v->MemoryUsage() : 0;
  size_t expired = 0;
  ctx.w->ArrayHeader(ctx.argc() - 2);
  for (size_t i = 2; i < ctx.argc(); ++i) {
    if (ttls && ErasePassedField(v, ctx.argv[i], now)) {
      ++expired;
      ctx.w->Null();
      continue;
    }
    ReplyField(ctx, v, ctx.argv[i]);
  }
  if (expired > 0) FinishFieldExpiry(ctx, key, v, before, expired);
}

void CmdHDel(CommandContext& ctx) { RemoveMembers<HashValue, &HashValue::Erase>(ctx); }

void CmdHExists(CommandContext& ctx) {
  const std::string key = ctx.Key(1);
  HashValue* v;
  if (!ReadCollection(ctx, key, &v)) return;
  if (ExpireFieldLazily(ctx, key, &v, ctx.argv[2])) v = nullptr;
  ctx.w->Integer(v && v->Find(ctx.argv[2]).has_value() ? 1 : 0);
}

// Counts fields whose TTL passed but that are not deleted yet, as Redis does
// (hashTypeLength(o, 0); its test "HLEN does count expired fields").
void CmdHLen(CommandContext& ctx) {
  HashValue* v;
  if (!ReadCollection(ctx, ctx.Key(1), &v)) return;
  ctx.w->Integer(v ? static_cast<int64_t>(v->size()) : 0);
}

void CmdHStrlen(CommandContext& ctx) {
  const std::string key = ctx.Key(1);
  HashValue* v;
  if (!ReadCollection(ctx, key, &v)) return;
  if (ExpireFieldLazily(ctx, key, &v, ctx.argv[2])) v = nullptr;
  std::optional<std::string_view> f = v ? v->Find(ctx.argv[2]) : std::nullopt;
  ctx.w->Integer(f ? static_cast<int64_t>(f->size()) : 0);
}

// mode: 0 keys, 1 values, 2 both. Passed fields are left out, not deleted.
void ListGeneric(CommandContext& ctx, int mode) {
  HashValue* v;
  if (!ReadExisting(ctx, ctx.Key(1), &v, [&] {
        if (mode == 2)
          ctx.w->MapHeader(0);
        else
          ctx.w->ArrayHeader(0);
      }))
    return;
  auto entries = v->Entries();
  const int64_t now = v->field_ttls() != nullptr ? ctx.server->NowMs() : 0;
  if (HasPassedFields(v, now)) {
    entries.erase(std::remove_if(entries.begin(), entries.end(),
                                 [&](const auto& e) { return v->FieldPassed(e.first, now); }),
                  entries.end());
  }
  if (mode == 2)
    ctx.w->MapHeader(entries.size());
  else
    ctx.w->ArrayHeader(entries.size());
  for (const auto& [f, val] : entries) {
    if (mode != 1) ctx.w->Bulk(f);
    if (mode != 0) ctx.w->Bulk(val);
  }
}
void CmdHKeys(CommandContext& ctx) { ListGeneric(ctx, 0); }
void CmdHVals(CommandContext& ctx) { ListGeneric(ctx, 1); }
void CmdHGetAll(CommandContext& ctx) { ListGeneric(ctx, 2); }

void CmdHIncrBy(CommandContext& ctx) {
  int64_t incr;
  if (!ArgInt(ctx, ctx.argv[3], &incr)) return;
  std::string key = ctx.Key(1);
  HashValue* v;
  if (!ReadCollection(ctx, key, &v)) return;
  ExpireFieldLazily(ctx, key, &v, ctx.argv[2]);  // a passed field counts from 0
  int64_t cur = 0;
  std::optional<std::string_view> f = v ? v->Find(ctx.argv[2]) : std::nullopt;
  if (f && !ParseStrictInt64(*f, &cur)) {
    ctx.Error("ERR hash value is not an integer");
    return;
  }
  if (!AddIncrement(ctx, &cur, incr)) return;
  v = LoadOrCreate<HashValue>(ctx, key);
  if (v == nullptr) return;
  size_t before = v->MemoryUsage();
  std::string s;
  AppendI64(s, cur);
  v->Set(ctx.argv[2], s, /*keep_ttl=*/true);  // Redis's HASH_SET_KEEP_TTL
  Finish(ctx, key, v, before);
  ctx.w->Integer(cur);
}

void CmdHIncrByFloat(CommandContext& ctx) {
  long double incr, cur = 0;
  if (!ParseLongDouble(ctx.argv[3], &incr)) {
    ctx.NotFloat();
    return;
  }
  if (std::isnan(incr) || std::isinf(incr)) {  // Redis 7.2: refused before the key is read
    ctx.Error("ERR value is NaN or Infinity");
    return;
  }
  std::string key = ctx.Key(1);
  HashValue* v;
  if (!ReadCollection(ctx, key, &v)) return;
  ExpireFieldLazily(ctx, key, &v, ctx.argv[2]);  // a passed field counts from 0
  std::optional<std::string_view> f = v ? v->Find(ctx.argv[2]) : std::nullopt;
  if (f && !ParseLongDouble(*f, &cur)) {
    ctx.Error("ERR hash value is not a float");
    return;
  }
  cur += incr;
  if (std::isnan(cur) || std::isinf(cur)) {
    ctx.Error("ERR increment would produce NaN or Infinity");
    return;
  }
  v = LoadOrCreate<HashValue>(ctx, key);
  if (v == nullptr) return;
  size_t before = v->MemoryUsage();
  std::string s = FormatLongDouble(cur);
  v->Set(ctx.argv[2], s, /*keep_ttl=*/true);
  Finish(ctx, key, v, before);
  ctx.w->Bulk(s);
}

void CmdHRandField(CommandContext& ctx) {
  bool has_count, withvalues;
  int64_t count = 1;
  HashValue* v;
  if (!ReadRandomSource(ctx, "withvalues", &has_count, &count, &withvalues, &v)) return;
  // Every passed field is deleted first (Redis's hashTypeExpireIfNeeded);
  // when that deletes the hash the reply is a missing key's.
  if (v->field_ttls() != nullptr) {
    const size_t before = v->MemoryUsage();
    const size_t n = ErasePassedFields(v, ctx.server->NowMs(), SIZE_MAX);
    if (n > 0 && FinishFieldExpiry(ctx, ctx.Key(1), v, before, n)) {
      if (has_count)
        ctx.w->ArrayHeader(0);
      else
        ctx.w->Null();
      return;
    }
  }
  auto all = v->Entries();
  if (!has_count) {
    ctx.w->Bulk(all[CommandRng()() % all.size()].first);
    return;
  }
  bool resp3_pairs = withvalues && ctx.w->proto() == 3;
  if (count < 0 && count >= -(INT64_MAX / 2)) {  // repeats: written as they are picked
    const uint64_t n = static_cast<uint64_t>(-count);
    ctx.w->ArrayHeader(withvalues && !resp3_pairs ? n * 2 : n);
    WriteRandomRepeats(ctx, all, n, [&](const auto& e) {
      if (resp3_pairs) ctx.w->ArrayHeader(2);
      ctx.w->Bulk(e.first);
      if (withvalues) ctx.w->Bulk(e.second);
    });
    return;
  }
  decltype(all) pick;
  if (!PickRandom(ctx, std::move(all), count, &pick)) return;
  ctx.w->ArrayHeader(withvalues && !resp3_pairs ? pick.size() * 2 : pick.size());
  for (const auto& e : pick) {
    if (resp3_pairs) ctx.w->ArrayHeader(2);
    ctx.w->Bulk(e.first);
    if (withvalues) ctx.w->Bulk(e.second);
  }
}

void CmdHScan(CommandContext& ctx) {
  ScanOptions o;
  if (!ParseScanArgs(ctx, 2, &o)) return;
  HashValue* v;
  if (!ReadCollection(ctx, ctx.Key(1), &v)) return;
  std::vector<std::pair<std::string_view, std::string_view>> out;
  uint64_t next = 0;
  // Passed fields are skipped (not deleted): a page may come back empty.
  const int64_t now = v != nullptr && v->field_ttls() != nullptr ? ctx.server->NowMs() : 0;
  const bool skip = HasPassedFields(v, now);
  if (v != nullptr && v->compact()) {
    for (const auto& [f, val] : v->Entries()) {
      if (skip && v->FieldPassed(f, now)) continue;
      if (!o.has_pattern || GlobMatch(o.pattern, f)) out.emplace_back(f, val);
    }
  } else if (v != nullptr) {
    next = ScanLargeCollection(*v, o, [&](const ScanOrder::Ref& r) {
      if (!skip || !v->FieldPassed(r.member, now)) out.emplace_back(r.member, r.value);
    });
  }
  WriteScanReply(ctx, next, out, 2, [&](const auto& field_value) {
    ctx.w->Bulk(field_value.first);
    ctx.w->Bulk(field_value.second);
  });
}

}  // namespace

void RegisterHashCommands(std::vector<CommandSpec>* t) {
  const uint32_t w = kCmdWrite | kCmdDenyOom;
  const uint32_t r = kCmdReadonly;
  const CommandAdder add{t, "hash"};
  add("hset", -4, w | kCmdFast, 1, 1, CmdHSet,
      "Creates or modifies the value of a field in a hash.", "2.0.0");
  add("hsetnx", 4, w | kCmdFast, 1, 1, CmdHSetNx,
      "Sets the value of a field in a hash only when the field doesn't exist.", "2.0.0");
  add("hget", 3, r | kCmdFast, 1, 1, CmdHGet, "Returns the value of a field in a hash.", "2.0.0");
  add("hmset", -4, w | kCmdFast, 1, 1, CmdHMSet, "Sets the values of multiple fields.", "2.0.0");
  add("hmget", -3, r | kCmdFast, 1, 1, CmdHMGet, "Returns the values of all fields in a hash.",
      "2.0.0");
  add("hdel", -3, kCmdWrite | kCmdFast, 1, 1, CmdHDel,
      "Deletes one or more fields and their values from a hash. Deletes the hash if no fields "
      "remain.",
      "2.0.0");
  add("hexists", 3, r | kCmdFast, 1, 1, CmdHExists, "Determines whether a field exists in a hash.",
      "2.0.0");
  add("hlen", 2, r | kCmdFast, 1, 1, CmdHLen, "Returns the number of fields in a hash.", "2.0.0");
  add("hstrlen", 3, r | kCmdFast, 1, 1, CmdHStrlen, "Returns the length of the value of a field.",
      "3.2.0");
  add("hkeys", 2, r, 1, 1, CmdHKeys, "Returns all fields in a hash.", "2.0.0");
  add("hvals", 2, r, 1, 1, CmdHVals, "Returns all values in a hash.", "2.0.0");
  add("hgetall", 2, r, 1, 1, CmdHGetAll, "Returns all fields and values in a hash.", "2.0.0");
  add("hincrby", 4, w | kCmdFast, 1, 1, CmdHIncrBy,
      "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if "
      "the field doesn't exist.",
      "2.0.0");
  add("hincrbyfloat", 4, w | kCmdFast, 1, 1, CmdHIncrByFloat,
      "Increments the floating point value of a field by a number. Uses 0 as initial value if the "
      "field doesn't exist.",
      "2.6.0");
  add("hrandfield", -2, r, 1, 1, CmdHRandField, "Returns one or more random fields from a hash.",
      "6.2.0");
  add("hscan", -3, r, 1, 1, CmdHScan, "Iterates over fields and values of a hash.", "2.8.0");
}

}  // namespace trove::resp
