// String commands (GET SET MGET MSET GETEX INCR ...) on the shared keyspace; run on the
// connection's worker with the keys' stripes held.
#include <climits>
#include <cmath>
#include <string>

#include "common/str_append.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/types/keyspace.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/commands/string_values.h"

namespace trove::resp {
namespace {

using engine::ItemRef;
using engine::ValueType;


void CmdGet(CommandContext& ctx) {
  ItemRef it;
  if (!GetString(ctx, ctx.Key(1), &it)) return;
  if (!it)
    ctx.w->Null();
  else
    ctx.w->BulkItem(std::move(it));
}

// EX, PX, EXAT or PXAT (any case).
bool IsExpiryUnit(std::string_view o) {
  return EqualsIgnoreCase(o, "ex") || EqualsIgnoreCase(o, "px") || EqualsIgnoreCase(o, "exat") ||
         EqualsIgnoreCase(o, "pxat");
}

// The expiry options shared by SET and GETEX.
struct ExpireOpt {
  bool has = false;
  bool keepttl = false;
  bool persist = false;
  int64_t abs_ms = 0;
};

// Parses "EX n" style option value at argv[i+1]; false after an error reply.
bool ParseExpireValue(CommandContext& ctx, std::string_view unit, std::string_view val,
                      ExpireOpt* e) {
  int64_t n;
  if (!ArgInt(ctx, val, &n)) return false;
  bool seconds = EqualsIgnoreCase(unit, "ex") || EqualsIgnoreCase(unit, "exat");
  bool absolute = EqualsIgnoreCase(unit, "exat") || EqualsIgnoreCase(unit, "pxat");
  std::string err = "ERR invalid expire time in '";
  err += ctx.spec->name;
  err += "' command";
  if (n <= 0 || (seconds && n > LLONG_MAX / 1000)) {
    ctx.Error(err);
    return false;
  }
  int64_t ms = seconds ? n * 1000 : n;
  if (!absolute) {
    int64_t now = ctx.server->NowMs();
    if (ms > LLONG_MAX - now) {
      ctx.Error(err);
      return false;
    }
    ms += now;
  }
  e->has = true;
  e->abs_ms = ms;
  return true;
}

// SET's and GETEX's options: the expiry, and NX, XX and GET (SET only).
struct StringOpts {
  bool nx = false, xx = false, get = false;
  ExpireOpt e;
};

// The options of SET (set: NX, XX, GET, KEEPTTL) or GETEX (PERSIST), and the
// expiry both take, from argv[from] (as Redis's
// parseExtendedStringArgumentsOrReply). False after the error reply.
bool ParseStringOptions(CommandContext& ctx, size_t from, bool set, StringOpts* opts) {
  ExpireOpt* e = &opts->e;
  for (size_t i = from; i < ctx.argc(); ++i) {
    std::string_view o = ctx.argv[i];
    const bool has_next = i + 1 < ctx.argc();
    if (set && EqualsIgnoreCase(o, "nx") && !opts->xx) {
      opts->nx = true;
    } else if (set && EqualsIgnoreCase(o, "xx") && !opts->nx) {
      opts->xx = true;
    } else if (set && EqualsIgnoreCase(o, "get")) {
      opts->get = true;
    } else if (set && EqualsIgnoreCase(o, "keepttl") && !e->has) {
      e->keepttl = true;
    } else if (!set && EqualsIgnoreCase(o, "persist") && !e->has && !e->persist) {
      e->persist = true;
    } else if (IsExpiryUnit(o) && !e->keepttl && !e->persist && !e->has && has_next) {
      if (!ParseExpireValue(ctx, o, ctx.argv[i + 1], e)) return false;
      ++i;
    } else {
      ctx.SyntaxError();
      return false;
    }
  }
  return true;
}

void CmdSet(CommandContext& ctx) {
  StringOpts opts;
  if (!ParseStringOptions(ctx, 3, /*set=*/true, &opts)) return;
  const bool nx = opts.nx, xx = opts.xx, get = opts.get;
  const ExpireOpt& e = opts.e;
  std::string key = ctx.Key(1);
  // As Redis: only GET reads the old value (and counts a keyspace hit or
  // miss); NX, XX and KEEPTTL look without counting; a plain SET never looks.
  ItemRef old;
  if (get) {
    old = LookupLocked(ctx, key);
    CountKeyspace(ctx, static_cast<bool>(old), key);  // SET is a write: counted here
  } else if (nx || xx || e.keepttl)
    old = ctx.engine->GetLocked(key, ctx.ts, /*bump=*/false);
  if (get && old && old.type() != ValueType::kString) {
    ctx.WrongType();
    return;
  }
  bool ok = !((nx && old) || (xx && !old));
  std::string old_value;
  if (get && old) old_value = CopyOut(old);
  if (ok) {
    int64_t exptime = 0;
    if (e.has)
      exptime = FutureExpiryMs(e.abs_ms, ctx.server->NowMs());
    else if (e.keepttl)
      exptime = KeepExptime(old);
    if (exptime < 0) {
      ctx.engine->UnlinkLocked(key, ctx.ts);
    } else if (!StoreStringLocked(ctx, key, ctx.argv[2], exptime, false)) {
      return;
    }
  }
  if (get) {
    if (old)
      ctx.w->Bulk(old_value);
    else
      ctx.w->Null();
  } else if (ok) {
    ctx.w->Ok();
  } else {
    ctx.w->Null();
  }
}

void CmdSetNx(CommandContext& ctx) {
  std::string key = ctx.Key(1);
  if (LookupLocked(ctx, key, false)) {
    ctx.w->Integer(0);
    return;
  }
  if (StoreStringLocked(ctx, key, ctx.argv[2], 0, false)) ctx.w->Integer(1);
}

void SetExGeneric(CommandContext& ctx, bool ms) {
  ExpireOpt e;
  if (!ParseExpireValue(ctx, ms ? "px" : "ex", ctx.argv[2], &e)) return;
  std::string key = ctx.Key(1);
  int64_t exptime = FutureExpiryMs(e.abs_ms, ctx.server->NowMs());
  if (StoreStringLocked(ctx, key, ctx.argv[3], exptime, false)) ctx.w->Ok();
}
void CmdSetEx(CommandContext& ctx) { SetExGeneric(ctx, false); }
void CmdPSetEx(CommandContext& ctx) { SetExGeneric(ctx, true); }

void CmdGetSet(CommandContext& ctx) {
  std::string key = ctx.Key(1);
  ItemRef old;
  if (!GetString(ctx, key, &old)) return;
  std::string v;
  bool had = static_cast<bool>(old);
  if (had) v = CopyOut(old);
  old.Reset();
  if (!StoreStringLocked(ctx, key, ctx.argv[2], 0, false)) return;
  if (had)
    ctx.w->Bulk(v);
  else
    ctx.w->Null();
}

// GETDEL and GETEX: copies key's string value into *v before the command
// changes the key (the item is released on return). False when the reply is
// already written: the wrong type, or a null for a missing key.
bool CopyStringValue(CommandContext& ctx, std::string_view key, std::string* v) {
  ItemRef it;
  if (!GetString(ctx, key, &it)) return false;
  if (!it) {
    ctx.w->Null();
    return false;
  }
  *v = CopyOut(it);
  return true;
}

void CmdGetDel(CommandContext& ctx) {
  std::string key = ctx.Key(1);
  std::string v;
  if (!CopyStringValue(ctx, key, &v)) return;
  ctx.engine->UnlinkLocked(key, ctx.ts);
  ctx.w->Bulk(v);
}

void CmdGetEx(CommandContext& ctx) {
  StringOpts opts;
  if (!ParseStringOptions(ctx, 2, /*set=*/false, &opts)) return;
  const ExpireOpt& e = opts.e;
  std::string key = ctx.Key(1);
  std::string v;
  if (!CopyStringValue(ctx, key, &v)) return;
  if (e.has) {
    int64_t exptime = FutureExpiryMs(e.abs_ms, ctx.server->NowMs());
    if (exptime < 0)
      ctx.engine->UnlinkLocked(key, ctx.ts);
    else
      ctx.engine->SetExpiryMsLocked(key, exptime, ctx.ts);
  } else if (e.persist) {
    ctx.engine->SetExpiryMsLocked(key, 0, ctx.ts);
  }
  ctx.w->Bulk(v);
}

void CmdMGet(CommandContext& ctx) {
  ctx.w->ArrayHeader(ctx.argc() - 1);
  for (size_t i = 1; i < ctx.argc(); ++i) {
    ItemRef it = LookupLocked(ctx, ctx.Key(i));
    if (!it || it.type() != ValueType::kString)
      ctx.w->Null();
    else
      ctx.w->BulkItem(std::move(it));
  }
}

void CmdMSet(CommandContext& ctx) {
  if (ctx.argc() % 2 == 0) {
    ctx.WrongArity();
    return;
  }
  for (size_t i = 1; i + 1 < ctx.argc(); i += 2) {
    if (!StoreStringLocked(ctx, ctx.Key(i), ctx.argv[i + 1], 0, false)) return;
  }
  ctx.w->Ok();
}

void CmdMSetNx(CommandContext& ctx) {
  if (ctx.argc() % 2 == 0) {
    ctx.WrongArity();
    return;
  }
  for (size_t i = 1; i + 1 < ctx.argc(); i += 2) {
    if (LookupLocked(ctx, ctx.Key(i), false)) {
      ctx.w->Integer(0);
      return;
    }
  }
  for (size_t i = 1; i + 1 < ctx.argc(); i += 2) {
    if (!StoreStringLocked(ctx, ctx.Key(i), ctx.argv[i + 1], 0, false)) return;
  }
  ctx.w->Integer(1);
}

void IncrGeneric(CommandContext& ctx, int64_t delta) {
  std::string key = ctx.Key(1);
  std::string v = "0";  // a missing key counts as 0
  int64_t exptime = 0;
  if (!ReadForRewrite(ctx, key, &v, &exptime)) return;
  int64_t cur = 0;
  if (!ParseStrictInt64(v, &cur)) {
    ctx.NotInteger();
    return;
  }
  if (!AddIncrement(ctx, &cur, delta)) return;
  std::string out;
  AppendI64(out, cur);
  if (StoreStringLocked(ctx, key, out, exptime, false)) ctx.w->Integer(cur);
}

void CmdIncr(CommandContext& ctx) { IncrGeneric(ctx, 1); }
void CmdDecr(CommandContext& ctx) { IncrGeneric(ctx, -1); }
void CmdIncrBy(CommandContext& ctx) {
  int64_t d;
  if (!ArgInt(ctx, ctx.argv[2], &d)) return;
  IncrGeneric(ctx, d);
}
void CmdDecrBy(CommandContext& ctx) {
  int64_t d;
  if (!ArgInt(ctx, ctx.argv[2], &d)) return;
  if (d == LLONG_MIN) {
    ctx.Error("ERR decrement would overflow");
    return;
  }
  IncrGeneric(ctx, -d);
}

void CmdIncrByFloat(CommandContext& ctx) {
  std::string key = ctx.Key(1);
  std::string v = "0";  // a missing key counts as 0
  int64_t exptime = 0;
  if (!ReadForRewrite(ctx, key, &v, &exptime)) return;
  long double cur = 0, incr = 0;
  if (!ParseLongDouble(v, &cur) || !ParseLongDouble(ctx.argv[2], &incr)) {
    ctx.NotFloat();
    return;
  }
  cur += incr;
  if (std::isnan(cur) || std::isinf(cur)) {
    ctx.Error("ERR increment would produce NaN or Infinity");
    return;
  }
  std::string out = FormatLongDouble(cur);
  if (StoreStringLocked(ctx, key, out, exptime, false)) ctx.w->Bulk(out);
}

}  // namespace

void RegisterStringCommands(std::vector<CommandSpec>* t) {
  const uint32_t w = kCmdWrite | kCmdDenyOom;
  const uint32_t r = kCmdReadonly;
  const CommandAdder add{t, "string"};
  add("get", 2, r | kCmdFast, 1, 1, 1, CmdGet, "Returns the string value of a key.", "1.0.0");
  add("set", -3, w, 1, 1, 1, CmdSet, "Sets the string value of a key.", "1.0.0");
  add("setnx", 3, w | kCmdFast, 1, 1, 1, CmdSetNx,
      "Set the string value of a key only when the key doesn't exist.", "1.0.0");
  add("setex", 4, w, 1, 1, 1, CmdSetEx, "Sets the string value and expiration time of a key.",
      "2.0.0");
  add("psetex", 4, w, 1, 1, 1, CmdPSetEx,
      "Sets the string value and expiration time in milliseconds of a key.", "2.6.0");
  add("getset", 3, w | kCmdFast, 1, 1, 1, CmdGetSet,
      "Returns the previous string value of a key after setting it to a new value.", "1.0.0");
  add("getdel", 2, kCmdWrite | kCmdFast, 1, 1, 1, CmdGetDel,
      "Returns the string value of a key after deleting the key.", "6.2.0");
  add("getex", -2, kCmdWrite | kCmdFast, 1, 1, 1, CmdGetEx,
      "Returns the string value of a key after setting its expiration time.", "6.2.0");
  add("mget", -2, r | kCmdFast, 1, -1, 1, CmdMGet,
      "Atomically returns the string values of one or more keys.", "1.0.0");
  add("mset", -3, w, 1, -1, 2, CmdMSet,
      "Atomically creates or modifies the string values of one or more keys.", "1.0.1");
  add("msetnx", -3, w, 1, -1, 2, CmdMSetNx,
      "Atomically modifies the string values of one or more keys only when all keys don't exist.",
      "1.0.1");
  add("incr", 2, w | kCmdFast, 1, 1, 1, CmdIncr, "Increments the integer value of a key by one.",
      "1.0.0");
  add("decr", 2, w | kCmdFast, 1, 1, 1, CmdDecr, "Decrements the integer value of a key by one.",
      "1.0.0");
  add("incrby", 3, w | kCmdFast, 1, 1, 1, CmdIncrBy,
      "Increments the integer value of a key by a number.", "1.0.0");
  add("decrby", 3, w | kCmdFast, 1, 1, 1, CmdDecrBy,
      "Decrements a number from the integer value of a key.", "1.0.0");
  add("incrbyfloat", 3, w | kCmdFast, 1, 1, 1, CmdIncrByFloat,
      "Increment the floating point value of a key by a number.", "2.6.0");
}

}  // namespace trove::resp
