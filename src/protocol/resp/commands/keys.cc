// Generic key commands (DEL EXISTS RENAME COPY MOVE KEYS SCAN ...); run on the connection's
// worker, with the keys' stripes held except for the keyspace walks.
#include <climits>
#include <string>

#include "common/str_append.h"
#include "protocol/key_events.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/types/keyspace.h"
#include "protocol/resp/core/keyspace_walk.h"
#include "protocol/resp/commands/random_pick.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/core/client.h"

namespace trove::resp {
namespace {

using engine::ItemRef;

void CmdDel(CommandContext& ctx) {
  int64_t n = 0;
  for (size_t i = 1; i < ctx.argc(); ++i) {
    if (ctx.engine->UnlinkLocked(ctx.Key(i), ctx.ts)) ++n;
  }
  ctx.dirty = n;
  ctx.w->Integer(n);
}

void CmdExists(CommandContext& ctx) {
  int64_t n = 0;
  for (size_t i = 1; i < ctx.argc(); ++i) {
    if (LookupLocked(ctx, ctx.Key(i), false)) ++n;
  }
  ctx.w->Integer(n);
}

void CmdTouch(CommandContext& ctx) {
  int64_t n = 0;
  for (size_t i = 1; i < ctx.argc(); ++i) {
    if (LookupLocked(ctx, ctx.Key(i), true)) ++n;
  }
  ctx.w->Integer(n);
}

void CmdType(CommandContext& ctx) {
  ItemRef it = LookupLocked(ctx, ctx.Key(1), false);
  ctx.w->Simple(it ? TypeName(it.type()) : "none");
}

void RenameGeneric(CommandContext& ctx, bool nx) {
  std::string src = ctx.Key(1), dst = ctx.Key(2);
  ItemRef it = ctx.engine->GetLocked(src, ctx.ts, false);
  if (!it) {
    ctx.Error("ERR no such key");
    return;
  }
  ctx.dirty = 0;  // renaming a key to itself changes nothing (Redis)
  if (src == dst) {
    if (nx)
      ctx.w->Integer(0);
    else
      ctx.w->Ok();
    return;
  }
  if (nx && ctx.engine->GetLocked(dst, ctx.ts, false)) {
    ctx.w->Integer(0);
    return;
  }
  if (!CopyItemLocked(ctx, it, dst, it.expires_at_unix_ms())) return;
  it.Reset();
  ctx.engine->UnlinkLocked(src, ctx.ts);
  ctx.dirty = 1;
  if (nx)
    ctx.w->Integer(1);
  else
    ctx.w->Ok();
}
void CmdRename(CommandContext& ctx) { RenameGeneric(ctx, false); }
void CmdRenameNx(CommandContext& ctx) { RenameGeneric(ctx, true); }

bool ParseDb(CommandContext& ctx, std::string_view s, int* db) {
  int64_t n;
  if (!ArgInt(ctx, s, &n)) return false;
  if (n < 0 || n >= ctx.server->databases()) {
    ctx.Error("ERR DB index is out of range");
    return false;
  }
  *db = static_cast<int>(n);
  return true;
}

// COPY and MOVE name keys of two databases, so they lock for themselves.
void CmdCopy(CommandContext& ctx) {
  int dst_db = ctx.db();
  bool replace = false;
  for (size_t i = 3; i < ctx.argc(); ++i) {
    if (EqualsIgnoreCase(ctx.argv[i], "replace")) {
      replace = true;
    } else if (EqualsIgnoreCase(ctx.argv[i], "db") && i + 1 < ctx.argc()) {
      if (!ParseDb(ctx, ctx.argv[++i], &dst_db)) return;
    } else {
      ctx.SyntaxError();
      return;
    }
  }
  std::string src = ctx.Key(1), dst = EncodeDbKey(dst_db, ctx.argv[2]);
  if (src == dst) {
    ctx.Error("ERR source and destination objects are the same");
    return;
  }
  std::string_view keys[2] = {src, dst};
  engine::KeyLockSet lock(ctx.engine, keys);
  ItemRef it = ctx.engine->GetLocked(src, ctx.ts, false);
  CountKeyspace(ctx, static_cast<bool>(it));  // the source is read, the target not
  ctx.dirty = 0;
  if (!it) {
    ctx.w->Integer(0);
    return;
  }
  if (ctx.engine->GetLocked(dst, ctx.ts, false)) {
    if (!replace) {
      ctx.w->Integer(0);
      return;
    }
  }
  CommandContext inner = ctx;
  inner.locked = true;
  if (!CopyItemLocked(inner, it, dst, it.expires_at_unix_ms())) return;
  ctx.dirty = 1;
  ctx.w->Integer(1);
  // Redis adds the copy (dbAdd: "new") and then reports copy_to.
  if (ctx.notify & protocol::kKeClassNew) ctx.fx->AddKeyEvent(protocol::kKeClassNew, "new", dst);
  if (ctx.notify & protocol::kKeClassGeneric) {
    ctx.fx->AddKeyEvent(protocol::kKeClassGeneric, "copy_to", dst);
  }
}

void CmdMove(CommandContext& ctx) {
  int dst_db;
  if (!ParseDb(ctx, ctx.argv[2], &dst_db)) return;
  if (dst_db == ctx.db()) {
    ctx.Error("ERR source and destination objects are the same");
    return;
  }
  std::string src = ctx.Key(1), dst = EncodeDbKey(dst_db, ctx.argv[1]);
  std::string_view keys[2] = {src, dst};
  engine::KeyLockSet lock(ctx.engine, keys);
  ItemRef it = ctx.engine->GetLocked(src, ctx.ts, false);
  ctx.dirty = 0;
  if (!it || ctx.engine->GetLocked(dst, ctx.ts, false)) {
    ctx.w->Integer(0);
    return;
  }
  CommandContext inner = ctx;
  inner.locked = true;
  if (!CopyItemLocked(inner, it, dst, it.expires_at_unix_ms())) return;
  it.Reset();
  ctx.engine->UnlinkLocked(src, ctx.ts);
  ctx.dirty = 1;
  ctx.w->Integer(1);
  if (ctx.notify & protocol::kKeClassNew) ctx.fx->AddKeyEvent(protocol::kKeClassNew, "new", dst);
  if (ctx.notify & protocol::kKeClassGeneric) {
    ctx.fx->AddKeyEvent(protocol::kKeClassGeneric, "move_from", src);
    ctx.fx->AddKeyEvent(protocol::kKeClassGeneric, "move_to", dst);
  }
}

// Collects the keys of one database (user form) matching pattern/type.
void CollectKeys(CommandContext& ctx, int db, std::string_view pattern, bool all,
                 std::string_view type, std::vector<std::string>* out) {
  uint64_t cursor = 0;
  do {
    cursor = ctx.engine->Scan(cursor, 1024, [&](const ItemRef& it) {
      int kdb;
      std::string_view k;
      DecodeDbKey(it.key(), &kdb, &k);
      if (kdb != db) return;
      if (!type.empty() && type != TypeName(it.type())) return;
      if (all || GlobMatch(pattern, k)) out->emplace_back(k);
    });
  } while (cursor != 0);
}

void CmdKeys(CommandContext& ctx) {
  // In slices (keyspace_walk.h): the pattern is copied, argv dies with
  // this call.
  struct State {
    std::string pattern;
    bool all;
    int db;
    std::vector<std::string> keys;
    size_t reply_bytes = 0;  // the reply's size so far (the output limit's check)
  };
  auto st =
      std::make_shared<State>(State{std::string(ctx.argv[1]), ctx.argv[1] == "*", ctx.db(), {}, 0});
  auto walk = std::make_shared<SlicedWalk>();
  walk->engine = ctx.engine;
  walk->visit = [st](const ItemRef& it) {
    int kdb;
    std::string_view k;
    DecodeDbKey(it.key(), &kdb, &k);
    if (kdb != st->db) return;
    if (st->all || GlobMatch(st->pattern, k)) {
      st->keys.emplace_back(k);
      st->reply_bytes += k.size() + 16;  // "$<len>\r\n" and the CRLF, near enough
    }
  };
  walk->reply_bytes = &st->reply_bytes;
  walk->finish = [st](RespWriter& w) {
    w.ArrayHeader(st->keys.size());
    for (const auto& k : st->keys) w.Bulk(k);
  };
  RunSlicedWalk(ctx, std::move(walk));
}

void CmdScan(CommandContext& ctx) {
  uint64_t cursor;
  if (!ParseCursor(ctx.argv[1], &cursor)) {
    ctx.Error("ERR invalid cursor");
    return;
  }
  std::string_view pattern;
  bool has_pattern = false;
  std::string_view type;
  int64_t count = 10;
  for (size_t i = 2; i < ctx.argc(); ++i) {
    std::string_view o = ctx.argv[i];
    bool more = i + 1 < ctx.argc();
    if (EqualsIgnoreCase(o, "count") && more) {
      if (!ArgInt(ctx, ctx.argv[++i], &count)) return;
      if (count < 1) {
        ctx.SyntaxError();
        return;
      }
    } else if (EqualsIgnoreCase(o, "match") && more) {
      pattern = ctx.argv[++i];
      has_pattern = !(pattern == "*");
    } else if (EqualsIgnoreCase(o, "type") && more) {
      type = ctx.argv[++i];
    } else {
      ctx.SyntaxError();
      return;
    }
  }
  std::vector<std::string> keys;
  int db = ctx.db();
  std::string type_lc = ToLower(type);
  cursor = ctx.engine->Scan(cursor, static_cast<size_t>(count), [&](const ItemRef& it) {
    int kdb;
    std::string_view k;
    DecodeDbKey(it.key(), &kdb, &k);
    if (kdb != db) return;
    if (!type_lc.empty() && type_lc != TypeName(it.type())) return;
    if (has_pattern && !GlobMatch(pattern, k)) return;
    keys.emplace_back(k);
  });
  ctx.w->ArrayHeader(2);
  std::string c;
  AppendU64(c, cursor);
  ctx.w->Bulk(c);
  ctx.w->ArrayHeader(keys.size());
  for (const auto& k : keys) ctx.w->Bulk(k);
}

void CmdRandomKey(CommandContext& ctx) {
  std::vector<std::string> keys;
  uint64_t cursor = 0;
  int db = ctx.db();
  do {
    cursor = ctx.engine->Scan(cursor, 64, [&](const ItemRef& it) {
      int kdb;
      std::string_view k;
      DecodeDbKey(it.key(), &kdb, &k);
      if (kdb == db && keys.size() < 256) keys.emplace_back(k);
    });
  } while (cursor != 0 && keys.size() < 256);
  if (keys.empty()) {
    ctx.w->Null();
    return;
  }
  ctx.w->Bulk(keys[CommandRng()() % keys.size()]);
}

void KeysFrom1Last2(std::span<const std::string_view>, std::vector<size_t>* out) {
  out->push_back(1);
  out->push_back(2);
}

}  // namespace

// Deletes every key of database db (FLUSHDB, FLUSHALL); returns how many.
// SWAPDB: swaps the two databases key by key (each key pair atomically).
void SwapDatabases(CommandContext& ctx, int a, int b) {
  std::vector<std::string> keys;
  CollectKeys(ctx, a, "", true, "", &keys);
  CollectKeys(ctx, b, "", true, "", &keys);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  CommandContext inner = ctx;
  inner.locked = true;
  for (const auto& k : keys) {
    std::string ka = EncodeDbKey(a, k), kb = EncodeDbKey(b, k);
    std::string_view views[2] = {ka, kb};
    engine::KeyLockSet lock(ctx.engine, views);
    ItemRef ia = ctx.engine->GetLocked(ka, ctx.ts, false);
    ItemRef ib = ctx.engine->GetLocked(kb, ctx.ts, false);
    if (ia) {
      if (!CopyItemLocked(inner, ia, kb, ia.expires_at_unix_ms())) return;
    } else {
      ctx.engine->UnlinkLocked(kb, ctx.ts);
    }
    if (ib) {
      if (!CopyItemLocked(inner, ib, ka, ib.expires_at_unix_ms())) return;
    } else {
      ctx.engine->UnlinkLocked(ka, ctx.ts);
    }
  }
}

void RegisterKeyCommands(std::vector<CommandSpec>* t) {
  const uint32_t w = kCmdWrite;
  const uint32_t r = kCmdReadonly;
  const CommandAdder add{t, "generic"};
  add("del", -2, w, 1, -1, 1, CmdDel, "Deletes one or more keys.", "1.0.0");
  add("unlink", -2, w | kCmdFast, 1, -1, 1, CmdDel, "Asynchronously deletes one or more keys.",
      "4.0.0");
  add("exists", -2, r | kCmdFast, 1, -1, 1, CmdExists, "Determines whether one or more keys exist.",
      "1.0.0");
  add("touch", -2, r | kCmdFast, 1, -1, 1, CmdTouch,
      "Returns the number of existing keys out of those specified after updating the time they "
      "were last accessed.",
      "3.2.1");
  add("type", 2, r | kCmdFast, 1, 1, 1, CmdType, "Determines the type of value stored at a key.",
      "1.0.0");
  add("rename", 3, w, 1, 2, 1, CmdRename, "Renames a key and overwrites the destination.", "1.0.0",
      KeysFrom1Last2);
  add("renamenx", 3, w | kCmdFast, 1, 2, 1, CmdRenameNx,
      "Renames a key only when the target key name doesn't exist.", "1.0.0", KeysFrom1Last2);
  add("copy", -3, w | kCmdDenyOom | kCmdGlobal, 1, 2, 1, CmdCopy,
      "Copies the value of a key to a new key.", "6.2.0");
  add("move", 3, w | kCmdFast | kCmdGlobal, 1, 1, 1, CmdMove, "Moves a key to another database.",
      "1.0.0");
  add("keys", 2, r | kCmdGlobal, 0, 0, 0, CmdKeys, "Returns all key names that match a pattern.",
      "1.0.0");
  add("scan", -2, r | kCmdGlobal, 0, 0, 0, CmdScan, "Iterates over the key names in the database.",
      "2.8.0");
  add("randomkey", 1, r | kCmdGlobal, 0, 0, 0, CmdRandomKey,
      "Returns a random key name from the database.", "1.0.0");
}

}  // namespace trove::resp
