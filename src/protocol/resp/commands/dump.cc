// DUMP and RESTORE: a key's value as a payload in Redis's serialization
// format (types/rdb_objects.h), and back. Runs on the connection's worker
// with the key's stripe held by the seam.
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "protocol/key_events.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/effects.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/types/keyspace.h"
#include "protocol/resp/types/rdb_objects.h"

namespace trove::resp {
namespace {

// DUMP reads the value where it lives: a string from item memory (copied
// only when chunked), a collection as its HeapValue or, for a compact item,
// decoded once into the command's scratch.
void CmdDump(CommandContext& ctx) {
  const std::string key = ctx.Key(1);
  engine::ItemRef it = LookupLocked(ctx, key);  // a read: counted, and it bumps
  if (!it) {
    ctx.w->Null();
    return;
  }
  std::string payload;
  if (it.type() == engine::ValueType::kString) {
    if (it.is_chunked()) {
      std::string v;
      it.CopyValue(&v);
      DumpString(v, &payload);
    } else {
      DumpString(it.value(), &payload);
    }
  } else {
    it.Reset();
    CommandContext inner = ctx;
    inner.count_keyspace = false;  // counted above
    inner.no_touch = true;         // bumped above
    CollectionBase* c = nullptr;
    engine::ValueType type;
    if (LoadAnyCollection(inner, key, &c, &type) != LoadStatus::kOk) {
      ctx.w->Null();  // cannot happen under the stripe; answer as a miss
      return;
    }
    DumpCollection(type, *c, &payload);
  }
  ctx.w->Bulk(payload);
}

struct RestoreOptions {
  bool replace = false;
  bool absttl = false;
  int64_t idle = -1;  // IDLETIME seconds; -1 not given
  int64_t freq = -1;  // FREQ 0..255; -1 not given
};

// Redis's option loop: IDLETIME and FREQ exclude each other (the second of
// them is a syntax error), and each value is checked where it is read.
bool ParseRestoreOptions(CommandContext& ctx, RestoreOptions* o) {
  for (size_t j = 4; j < ctx.argc(); ++j) {
    const std::string_view a = ctx.argv[j];
    const bool has_value = j + 1 < ctx.argc();
    if (EqualsIgnoreCase(a, "replace")) {
      o->replace = true;
    } else if (EqualsIgnoreCase(a, "absttl")) {
      o->absttl = true;
    } else if (EqualsIgnoreCase(a, "idletime") && has_value && o->freq == -1) {
      if (!ArgInt(ctx, ctx.argv[++j], &o->idle)) return false;
      if (o->idle < 0) {
        ctx.Error("ERR Invalid IDLETIME value, must be >= 0");
        return false;
      }
    } else if (EqualsIgnoreCase(a, "freq") && has_value && o->idle == -1) {
      if (!ArgInt(ctx, ctx.argv[++j], &o->freq)) return false;
      if (o->freq < 0 || o->freq > 255) {
        ctx.Error("ERR Invalid FREQ value, must be >= 0 and <= 255");
        return false;
      }
    } else {
      ctx.SyntaxError();
      return false;
    }
  }
  return true;
}

// Picks the compact or large encoding of a restored collection by the
// server's thresholds, as the write commands of its type do.
void CheckRestoredEncoding(CommandContext& ctx, engine::ValueType type, CollectionBase* c) {
  const RespServer& s = *ctx.server;
  auto load = [](const std::atomic<int64_t>& a) { return a.load(std::memory_order_relaxed); };
  switch (type) {
    case engine::ValueType::kHash:
      static_cast<HashValue*>(c)->CheckEncoding(load(s.hash_max_listpack_entries),
                                                load(s.hash_max_listpack_value));
      break;
    case engine::ValueType::kSet:
      static_cast<SetValue*>(c)->CheckEncoding(load(s.set_max_intset_entries),
                                               load(s.set_max_listpack_entries),
                                               load(s.set_max_listpack_value));
      break;
    case engine::ValueType::kZset:
      static_cast<ZsetValue*>(c)->CheckEncoding(load(s.zset_max_listpack_entries),
                                                load(s.zset_max_listpack_value));
      break;
    case engine::ValueType::kList:  // ListValue::compact() decides by itself
    case engine::ValueType::kString:
      break;
  }
}

// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f], with
// Redis's order of checks: options, then the key's existence, then the TTL,
// then the payload. IDLETIME dates the key's last access back (OBJECT
// IDLETIME reports it; the engine's clock bounds it, Engine::
// SetIdleSecondsLocked). FREQ is checked and then has no effect, as in Redis
// under an LRU maxmemory-policy: Trove has no LFU policy (CONFIG SET
// maxmemory-policy accepts allkeys-lru and noeviction only).
void CmdRestore(CommandContext& ctx) {
  RestoreOptions o;
  if (!ParseRestoreOptions(ctx, &o)) return;
  const std::string key = ctx.Key(1);
  const bool existed = static_cast<bool>(ctx.engine->GetLocked(key, ctx.ts, false));
  if (existed && !o.replace) {
    ctx.Error("BUSYKEY Target key name already exists.");
    return;
  }
  int64_t ttl;
  if (!ArgInt(ctx, ctx.argv[2], &ttl)) return;
  if (ttl < 0) {
    ctx.Error("ERR Invalid TTL value, must be >= 0");
    return;
  }
  RdbValue v;
  const RdbLoad loaded = LoadPayload(ctx.argv[3], &v);
  if (loaded == RdbLoad::kBadFooter) {
    ctx.Error("ERR DUMP payload version or checksum are wrong");
    return;
  }
  if (loaded != RdbLoad::kOk) {
    ctx.Error("ERR Bad data format");
    return;
  }
  ctx.dirty = 0;
  int64_t expire_ms = 0;
  if (ttl != 0) {
    const int64_t now = ctx.server->NowMs();
    expire_ms = ttl;
    if (!o.absttl) {
      expire_ms = ttl > std::numeric_limits<int64_t>::max() - now
                      ? std::numeric_limits<int64_t>::max()
                      : now + ttl;
    }
    if (FutureExpiryMs(expire_ms, now) < 0) {
      // Already expired: Redis creates nothing, and a replaced key is
      // deleted (a del event).
      if (existed) {
        ctx.engine->UnlinkLocked(key, ctx.ts);
        ctx.dirty = 1;
        if (ctx.notify & protocol::kKeClassGeneric) {
          ctx.fx->AddKeyEvent(protocol::kKeClassGeneric, "del", key);
        }
      }
      ctx.w->Ok();
      return;
    }
  }
  // The store replaces what is at the key, of any type (REPLACE).
  if (v.type == engine::ValueType::kString) {
    if (!StoreStringLocked(ctx, key, v.str, expire_ms, false)) return;
  } else {
    CheckRestoredEncoding(ctx, v.type, v.coll.get());
    // After the encoding: the TTLs reorder a compact hash, cheaply only
    // while it is small. The store registers a hash with field TTLs with
    // the active field expiry (NoteFieldTtls), passed ones included.
    ApplyFieldTtls(&v);
    if (StoreNewCollection(ctx, key, v.type, std::move(v.coll), expire_ms) == nullptr) return;
  }
  if (o.idle >= 0) {
    engine::ItemRef it = ctx.engine->GetLocked(key, ctx.ts, false);
    if (it) ctx.engine->SetIdleSecondsLocked(it, static_cast<uint64_t>(o.idle));
  }
  ctx.dirty = 1;
  ctx.w->Ok();
  // Redis adds the key (dbAdd, after deleting a replaced one: "new") and
  // then reports the restore.
  if (ctx.notify & protocol::kKeClassNew) ctx.fx->AddKeyEvent(protocol::kKeClassNew, "new", key);
  if (ctx.notify & protocol::kKeClassGeneric) {
    ctx.fx->AddKeyEvent(protocol::kKeClassGeneric, "restore", key);
  }
}

}  // namespace

void RegisterDumpCommands(std::vector<CommandSpec>* t) {
  const CommandAdder add{t, "generic"};
  add("dump", 2, kCmdReadonly, 1, 1, 1, CmdDump,
      "Returns a serialized representation of the value stored at a key.", "2.6.0");
  add("restore", -4, kCmdWrite | kCmdDenyOom, 1, 1, 1, CmdRestore,
      "Creates a key from the serialized representation of a value.", "2.6.0");
}

}  // namespace trove::resp
