// Key expiry commands: EXPIRE PEXPIRE EXPIREAT PEXPIREAT, TTL PTTL
// EXPIRETIME PEXPIRETIME, PERSIST. Run on the connection's worker with the
// key's stripe held.
#include <climits>
#include <string>

#include "protocol/resp/core/command.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/types/keyspace.h"

namespace trove::resp {
namespace {

using engine::ItemRef;

// EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT.
void ExpireGeneric(CommandContext& ctx, bool ms, bool absolute) {
  int64_t n;
  if (!ArgInt(ctx, ctx.argv[2], &n)) return;
  UpdateConds conds;
  for (size_t i = 3; i < ctx.argc(); ++i) {
    std::string_view o = ctx.argv[i];
    if (!conds.Take(o)) {
      std::string m = "ERR Unsupported option ";
      m.append(o);
      ctx.Error(m);
      return;
    }
  }
  const auto [nx, xx, gt, lt] = conds;
  if (nx && (xx || gt || lt)) {
    ctx.Error("ERR NX and XX, GT or LT options at the same time are not compatible");
    return;
  }
  if (gt && lt) {
    ctx.Error("ERR GT and LT options at the same time are not compatible");
    return;
  }
  std::string err = "ERR invalid expire time in '";
  err += ctx.spec->name;
  err += "' command";
  int64_t when = n;
  if (!ms) {
    if (when > LLONG_MAX / 1000 || when < LLONG_MIN / 1000) {
      ctx.Error(err);
      return;
    }
    when *= 1000;
  }
  int64_t now = ctx.server->NowMs();
  if (!absolute) {
    if ((when > 0 && now > LLONG_MAX - when) || (when < 0 && now < LLONG_MIN - when)) {
      ctx.Error(err);
      return;
    }
    when += now;
  }
  std::string key = ctx.Key(1);
  ctx.dirty = 0;  // until the expiry is set below
  ItemRef it = ctx.engine->GetLocked(key, ctx.ts, false);
  if (!it) {
    ctx.w->Integer(0);
    return;
  }
  int64_t cur = it.expires_at_unix_ms() == 0 ? -1 : it.expires_at_unix_ms();
  if (nx && cur != -1) {
    ctx.w->Integer(0);
    return;
  }
  if (xx && cur == -1) {
    ctx.w->Integer(0);
    return;
  }
  if (gt && (cur == -1 || when <= cur)) {
    ctx.w->Integer(0);
    return;
  }
  if (lt && cur != -1 && when >= cur) {
    ctx.w->Integer(0);
    return;
  }
  it.Reset();
  int64_t expire_ms = FutureExpiryMs(when, now);
  if (expire_ms < 0)
    ctx.engine->UnlinkLocked(key, ctx.ts);
  else
    ctx.engine->SetExpiryMsLocked(key, expire_ms, ctx.ts);
  ctx.dirty = 1;
  ctx.w->Integer(1);
}
void CmdExpire(CommandContext& ctx) { ExpireGeneric(ctx, false, false); }
void CmdPExpire(CommandContext& ctx) { ExpireGeneric(ctx, true, false); }
void CmdExpireAt(CommandContext& ctx) { ExpireGeneric(ctx, false, true); }
void CmdPExpireAt(CommandContext& ctx) { ExpireGeneric(ctx, true, true); }

// TTL family: mode 0 TTL, 1 PTTL, 2 EXPIRETIME, 3 PEXPIRETIME.
void TtlGeneric(CommandContext& ctx, int mode) {
  ItemRef it = LookupLocked(ctx, ctx.Key(1), false);
  if (!it) {
    ctx.w->Integer(-2);
    return;
  }
  int64_t e = it.expires_at_unix_ms();
  if (e == 0) {
    ctx.w->Integer(-1);
    return;
  }
  int64_t left = PttlMs(it, ctx.server->NowMs());
  switch (mode) {
    case 0:
      ctx.w->Integer((left + 500) / 1000);
      break;
    case 1:
      ctx.w->Integer(left);
      break;
    case 2:
      // Rounded to the nearest second, as Redis's ttlGenericCommand, but
      // without its e + 500, which overflows for a PEXPIREAT near INT64_MAX.
      ctx.w->Integer(e / 1000 + (e % 1000 >= 500 ? 1 : 0));
      break;
    default:
      ctx.w->Integer(e);
      break;
  }
}
void CmdTtl(CommandContext& ctx) { TtlGeneric(ctx, 0); }
void CmdPTtl(CommandContext& ctx) { TtlGeneric(ctx, 1); }
void CmdExpireTime(CommandContext& ctx) { TtlGeneric(ctx, 2); }
void CmdPExpireTime(CommandContext& ctx) { TtlGeneric(ctx, 3); }

void CmdPersist(CommandContext& ctx) {
  std::string key = ctx.Key(1);
  ItemRef it = ctx.engine->GetLocked(key, ctx.ts, false);
  ctx.dirty = 0;
  if (!it || it.expires_at_unix_ms() == 0) {
    ctx.w->Integer(0);
    return;
  }
  it.Reset();
  ctx.engine->SetExpiryMsLocked(key, 0, ctx.ts);
  ctx.dirty = 1;
  ctx.w->Integer(1);
}

}  // namespace

void RegisterExpiryCommands(std::vector<CommandSpec>* t) {
  const uint32_t w = kCmdWrite;
  const uint32_t r = kCmdReadonly;
  const CommandAdder add{t, "generic"};
  add("expire", -3, w | kCmdFast, 1, 1, 1, CmdExpire,
      "Sets the expiration time of a key in seconds.", "1.0.0");
  add("pexpire", -3, w | kCmdFast, 1, 1, 1, CmdPExpire,
      "Sets the expiration time of a key in milliseconds.", "2.6.0");
  add("expireat", -3, w | kCmdFast, 1, 1, 1, CmdExpireAt,
      "Sets the expiration time of a key to a Unix timestamp.", "1.2.0");
  add("pexpireat", -3, w | kCmdFast, 1, 1, 1, CmdPExpireAt,
      "Sets the expiration time of a key to a Unix milliseconds timestamp.", "2.6.0");
  add("ttl", 2, r | kCmdFast, 1, 1, 1, CmdTtl, "Returns the expiration time in seconds of a key.",
      "1.0.0");
  add("pttl", 2, r | kCmdFast, 1, 1, 1, CmdPTtl,
      "Returns the expiration time in milliseconds of a key.", "2.6.0");
  add("expiretime", 2, r | kCmdFast, 1, 1, 1, CmdExpireTime,
      "Returns the expiration time of a key as a Unix timestamp.", "7.0.0");
  add("pexpiretime", 2, r | kCmdFast, 1, 1, 1, CmdPExpireTime,
      "Returns the expiration time of a key as a Unix milliseconds timestamp.", "7.0.0");
  add("persist", 2, w | kCmdFast, 1, 1, 1, CmdPersist, "Removes the expiration time of a key.",
      "2.2.0");
}

}  // namespace trove::resp
