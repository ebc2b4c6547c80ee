// Hash-field expiry commands (Redis 7.4): HEXPIRE HPEXPIRE HEXPIREAT
// HPEXPIREAT, HTTL HPTTL HEXPIRETIME HPEXPIRETIME, HPERSIST. Run on the
// connection's worker with the key's stripe held. The TTLs live in the hash
// (types/hash_field_ttl.h); their active expiry is services/hash_field_expiry.h.
//
// Keyspace events are the handlers' own (no rule in key_event_rules.cc), as
// the event depends on what happened: hexpire, or hdel when a time in the
// past deleted fields (then del too if the hash emptied); hpersist.
// Invalidations come from the seam, which sees the key's version change.
#include <cstdint>
#include <string>

#include "protocol/key_events.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/services/hash_field_expiry.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/types/keyspace.h"

namespace trove::resp {
namespace {

using protocol::kKeClassGeneric;
using protocol::kKeClassHash;

// HEXPIRE's numfields error; HTTL's family and HPERSIST have their own.
constexpr const char* kExpireCountErr = "ERR Parameter `numFields` should be greater than 0";
constexpr const char* kReadCountErr = "ERR Number of fields must be a positive integer";

// The per-field replies (Redis's names in comments).
constexpr int64_t kNoField = -2;   // HSETEX_NO_FIELD, HFE_GET_NO_FIELD
constexpr int64_t kNoTtl = -1;     // HFE_GET_NO_TTL, HFE_PERSIST_NO_TTL
constexpr int64_t kNotMet = 0;     // HSETEX_NO_CONDITION_MET
constexpr int64_t kDone = 1;       // HSETEX_OK, HFE_PERSIST_OK
constexpr int64_t kDeleted = 2;    // HSETEX_DELETED

// "FIELDS numfields field [field ...]" starting at argv[at] (the arity
// guarantees argv[at + 1] exists). Sets *first to the first field's index.
// False after the error reply, in Redis's order of checks.
bool ParseFieldsBlock(CommandContext& ctx, size_t at, const char* count_err, size_t* first) {
  if (!EqualsIgnoreCase(ctx.argv[at], "fields")) {
    ctx.Error("ERR Mandatory argument FIELDS is missing or not at the right position");
    return false;
  }
  int64_t n = 0;
  if (!ParseStrictInt64(ctx.argv[at + 1], &n) || n < 1) {
    ctx.Error(count_err);
    return false;
  }
  if (static_cast<uint64_t>(n) != ctx.argc() - at - 2) {
    ctx.Error("ERR The `numfields` parameter must match the number of arguments");
    return false;
  }
  *first = at + 2;
  return true;
}

// A missing key answers -2 for every field (it is an empty hash).
void ReplyAllMissing(CommandContext& ctx, size_t first) {
  ctx.w->ArrayHeader(ctx.argc() - first);
  for (size_t i = first; i < ctx.argc(); ++i) ctx.w->Integer(kNoField);
}

// "ERR invalid expire time in '<command>' command".
void InvalidExpireTime(CommandContext& ctx) {
  std::string err = "ERR invalid expire time in '";
  err += ctx.spec->name;
  err += "' command";
  ctx.Error(err);
}

// HEXPIRE / HPEXPIRE / HEXPIREAT / HPEXPIREAT key time [NX|XX|GT|LT] FIELDS
// numfields field [field ...].
void HExpireGeneric(CommandContext& ctx, bool ms, bool absolute) {
  const std::string key = ctx.Key(1);
  HashValue* v;
  if (!ReadCollection(ctx, key, &v)) return;  // WRONGTYPE before any argument error
  int64_t t;
  if (!ArgInt(ctx, ctx.argv[2], &t)) return;
  if (t < 0) {
    ctx.Error("ERR invalid expire time, must be >= 0");
    return;
  }
  if (!ms) {
    if (t > kMaxFieldExpiryMs / 1000) {
      InvalidExpireTime(ctx);
      return;
    }
    t *= 1000;
  }
  const int64_t now = ctx.server->NowMs();
  const int64_t base = absolute ? 0 : now;
  if (t > kMaxFieldExpiryMs - base) {  // the absolute time past Redis's ceiling
    InvalidExpireTime(ctx);
    return;
  }
  const int64_t at = t + base;
  // One condition at most: a second one sits where FIELDS must be.
  UpdateConds c;
  const size_t fields_at = c.Take(ctx.argv[3]) ? 4 : 3;
  size_t first;
  if (!ParseFieldsBlock(ctx, fields_at, kExpireCountErr, &first)) return;
  ctx.dirty = 0;
  if (v == nullptr) {
    ReplyAllMissing(ctx, first);
    return;
  }
  const size_t before = v->MemoryUsage();
  int64_t updated = 0, deleted = 0;
  ctx.w->ArrayHeader(ctx.argc() - first);
  for (size_t i = first; i < ctx.argc(); ++i) {
    const std::string_view f = ctx.argv[i];
    // A field whose TTL passed but that no read deleted yet still counts as
    // present here, as in Redis (hashTypeSetEx looks no further).
    if (!v->Find(f).has_value()) {
      ctx.w->Integer(kNoField);
      continue;
    }
    const int64_t prev = v->FieldExpiry(f);
    // Without a TTL only NX and LT hold (Redis: LT against "never" is met).
    const bool met = prev == 0 ? !(c.xx || c.gt)
                               : !(c.nx || (c.gt && prev >= at) || (c.lt && prev <= at));
    if (!met) {
      ctx.w->Integer(kNotMet);
      continue;
    }
    if (at <= now) {  // Redis's checkAlreadyExpired: the field goes at once
      v->Erase(f);
      ++deleted;
      ctx.w->Integer(kDeleted);
      continue;
    }
    v->SetFieldExpiry(f, at);
    ++updated;
    ctx.w->Integer(kDone);
  }
  if (updated + deleted == 0) return;
  ctx.dirty = updated + deleted;
  const bool gone = v->size() == 0;
  FinishUpdate(ctx, key, v, before);  // registers the new earliest expiry
  if (deleted > 0) ctx.server->hash_field_expiry().CountExpired(static_cast<uint64_t>(deleted));
  if ((ctx.notify & kKeClassHash) != 0)
    ctx.fx->AddKeyEvent(kKeClassHash, deleted > 0 ? "hdel" : "hexpire", key);
  if (gone && (ctx.notify & kKeClassGeneric) != 0) ctx.fx->AddKeyEvent(kKeClassGeneric, "del", key);
}
void CmdHExpire(CommandContext& ctx) { HExpireGeneric(ctx, false, false); }
void CmdHPExpire(CommandContext& ctx) { HExpireGeneric(ctx, true, false); }
void CmdHExpireAt(CommandContext& ctx) { HExpireGeneric(ctx, false, true); }
void CmdHPExpireAt(CommandContext& ctx) { HExpireGeneric(ctx, true, true); }

// HTTL / HPTTL / HEXPIRETIME / HPEXPIRETIME key FIELDS numfields field ...
// A field whose TTL passed answers -2 (it is gone for reads) without being
// deleted: these commands only read, as in Redis.
// What HTTL and HPERSIST see of field f: kNoField when it is missing or its
// TTL has passed, kNoTtl when it has none, else its expiry (unix ms, > 0).
int64_t LiveFieldExpiry(const HashValue& v, std::string_view f, int64_t now) {
  if (!v.Find(f).has_value()) return kNoField;
  const int64_t at = v.FieldExpiry(f);
  if (at == 0) return kNoTtl;
  return FieldTtlPassed(at, now) ? kNoField : at;
}

enum class TtlForm : uint8_t { kSeconds, kMillis, kUnixSeconds, kUnixMillis };
void HTtlGeneric(CommandContext& ctx, TtlForm form) {
  HashValue* v;
  if (!ReadCollection(ctx, ctx.Key(1), &v)) return;
  size_t first;
  if (!ParseFieldsBlock(ctx, 2, kReadCountErr, &first)) return;
  if (v == nullptr) {
    ReplyAllMissing(ctx, first);
    return;
  }
  const int64_t now = ctx.server->NowMs();
  ctx.w->ArrayHeader(ctx.argc() - first);
  for (size_t i = first; i < ctx.argc(); ++i) {
    const std::string_view f = ctx.argv[i];
    const int64_t at = LiveFieldExpiry(*v, f, now);
    if (at < 0) {  // kNoField or kNoTtl: the reply itself
      ctx.w->Integer(at);
      continue;
    }
    // Seconds round up, as Redis's (expire + 999 - base) / 1000.
    switch (form) {
      case TtlForm::kSeconds:
        ctx.w->Integer((at - now + 999) / 1000);
        break;
      case TtlForm::kMillis:
        ctx.w->Integer(at - now);
        break;
      case TtlForm::kUnixSeconds:
        ctx.w->Integer((at + 999) / 1000);
        break;
      case TtlForm::kUnixMillis:
        ctx.w->Integer(at);
        break;
    }
  }
}
void CmdHTtl(CommandContext& ctx) { HTtlGeneric(ctx, TtlForm::kSeconds); }
void CmdHPTtl(CommandContext& ctx) { HTtlGeneric(ctx, TtlForm::kMillis); }
void CmdHExpireTime(CommandContext& ctx) { HTtlGeneric(ctx, TtlForm::kUnixSeconds); }
void CmdHPExpireTime(CommandContext& ctx) { HTtlGeneric(ctx, TtlForm::kUnixMillis); }

// HPERSIST key FIELDS numfields field [field ...]: 1 per TTL removed, -1 for
// a field without one, -2 for a missing field (or one whose TTL passed).
void CmdHPersist(CommandContext& ctx) {
  const std::string key = ctx.Key(1);
  HashValue* v;
  if (!ReadCollection(ctx, key, &v)) return;
  size_t first;
  if (!ParseFieldsBlock(ctx, 2, kReadCountErr, &first)) return;
  ctx.dirty = 0;
  if (v == nullptr) {
    ReplyAllMissing(ctx, first);
    return;
  }
  const int64_t now = ctx.server->NowMs();
  const size_t before = v->MemoryUsage();
  bool changed = false;
  ctx.w->ArrayHeader(ctx.argc() - first);
  for (size_t i = first; i < ctx.argc(); ++i) {
    const std::string_view f = ctx.argv[i];
    const int64_t at = LiveFieldExpiry(*v, f, now);
    if (at < 0) {  // kNoField or kNoTtl: the reply itself
      ctx.w->Integer(at);
      continue;
    }
    v->PersistField(f);
    changed = true;
    ctx.w->Integer(kDone);
  }
  if (!changed) return;
  ctx.dirty = 1;  // Redis counts one change per call
  FinishUpdate(ctx, key, v, before);
  if ((ctx.notify & kKeClassHash) != 0) ctx.fx->AddKeyEvent(kKeClassHash, "hpersist", key);
}

}  // namespace

void RegisterHashFieldExpiryCommands(std::vector<CommandSpec>* t) {
  const uint32_t w = kCmdWrite | kCmdDenyOom | kCmdFast;
  const uint32_t r = kCmdReadonly | kCmdFast;
  const CommandAdder add{t, "hash"};
  add("hexpire", -6, w, 1, 1, CmdHExpire,
      "Set expiry for hash field using relative time to expire (seconds)", "7.4.0");
  add("hpexpire", -6, w, 1, 1, CmdHPExpire,
      "Set expiry for hash field using relative time to expire (milliseconds)", "7.4.0");
  add("hexpireat", -6, w, 1, 1, CmdHExpireAt,
      "Set expiry for hash field using an absolute Unix timestamp (seconds)", "7.4.0");
  add("hpexpireat", -6, w, 1, 1, CmdHPExpireAt,
      "Set expiry for hash field using an absolute Unix timestamp (milliseconds)", "7.4.0");
  add("httl", -5, r, 1, 1, CmdHTtl, "Returns the TTL in seconds of a hash field.", "7.4.0");
  add("hpttl", -5, r, 1, 1, CmdHPTtl, "Returns the TTL in milliseconds of a hash field.",
      "7.4.0");
  add("hexpiretime", -5, r, 1, 1, CmdHExpireTime,
      "Returns the expiration time of a hash field as a Unix timestamp, in seconds.", "7.4.0");
  add("hpexpiretime", -5, r, 1, 1, CmdHPExpireTime,
      "Returns the expiration time of a hash field as a Unix timestamp, in msec.", "7.4.0");
  add("hpersist", -5, kCmdWrite | kCmdFast, 1, 1, CmdHPersist,
      "Removes the expiration time for each specified field", "7.4.0");
}

}  // namespace trove::resp
