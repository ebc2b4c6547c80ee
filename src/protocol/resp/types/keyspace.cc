// Keyspace helpers; run on the calling worker.
#include "protocol/resp/types/keyspace.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "common/str_append.h"
#include "protocol/key_events.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/core/scan_util.h"
#include "protocol/resp/types/collections.h"

namespace trove::resp {

size_t DbKeyPrefix(int db, std::string_view key, char prefix[2]) {
  if (db == 0 && (key.empty() || key[0] != '\0')) return 0;
  prefix[0] = '\0';
  prefix[1] = static_cast<char>(db);
  return 2;
}

std::string EncodeDbKey(int db, std::string_view key) {
  char prefix[2];
  size_t n = DbKeyPrefix(db, key, prefix);
  std::string r;
  r.reserve(key.size() + n);
  r.append(prefix, n);
  r.append(key);
  return r;
}

void DecodeDbKey(std::string_view enc, int* db, std::string_view* key) {
  if (enc.size() >= 2 && enc[0] == '\0') {
    *db = static_cast<unsigned char>(enc[1]);
    *key = enc.substr(2);
    return;
  }
  *db = 0;
  *key = enc;
}

std::string CommandContext::EncodeKey(std::string_view k) const { return EncodeDbKey(db(), k); }
std::string CommandContext::Key(size_t i) const { return EncodeDbKey(db(), argv[i]); }
void CommandContext::WrongArity() const {
  std::string m = "ERR wrong number of arguments for '";
  m += spec->name;
  m += "' command";
  w->Error(m);
}

int64_t FutureExpiryMs(int64_t abs_ms, int64_t now_ms) { return abs_ms <= now_ms ? -1 : abs_ms; }

int64_t PttlMs(const engine::ItemRef& item, int64_t now_ms) {
  int64_t e = item.expires_at_unix_ms();
  if (e == 0) return -1;
  int64_t left = e - now_ms;
  return left < 0 ? 0 : left;
}

const char* TypeName(engine::ValueType t) {
  switch (t) {
    case engine::ValueType::kString:
      return "string";
    case engine::ValueType::kList:
      return "list";
    case engine::ValueType::kHash:
      return "hash";
    case engine::ValueType::kSet:
      return "set";
    case engine::ValueType::kZset:
      return "zset";
  }
  return "none";
}

void CountKeyspace(CommandContext& ctx, bool hit, std::string_view ekey) {
  if (ctx.stats == nullptr) return;
  WorkerStats* st = ctx.stats;
  (hit ? st->keyspace_hits : st->keyspace_misses).fetch_add(1, std::memory_order_relaxed);
  if (!hit && !ekey.empty() && (ctx.notify & protocol::kKeClassKeyMiss) != 0 && ctx.fx != nullptr) {
    ctx.fx->AddKeyEvent(protocol::kKeClassKeyMiss, "keymiss", ekey);
  }
}

engine::ItemRef LookupLocked(CommandContext& ctx, std::string_view ekey, bool bump) {
  DCHECK(ctx.locked);
  engine::ItemRef r = ctx.engine->GetLocked(ekey, ctx.ts, bump && !ctx.no_touch);
  if (ctx.count_keyspace) CountKeyspace(ctx, static_cast<bool>(r), ekey);
  return r;
}

size_t MaxStringLen(const CommandContext& ctx) {
  // Without a server (unit tests over a fake engine) Redis's default.
  const int64_t v = ctx.server != nullptr
                        ? ctx.server->proto_max_bulk_len.load(std::memory_order_relaxed)
                        : int64_t{512} * 1024 * 1024;
  return static_cast<size_t>(std::max<int64_t>(v, 1));
}

bool StoreStringLocked(CommandContext& ctx, std::string_view ekey, std::string_view value,
                       int64_t expire_ms, bool keep_ttl, engine::ValueType type) {
  DCHECK(ctx.locked);
  if (ekey.size() > limits::kEngineMaxKey) {
    ctx.Error("ERR key too long (Trove keys are at most 65535 bytes)");
    return false;
  }
  engine::AllocOutput a =
      ctx.engine->Allocate(ekey, 0, 0, value.size(), ctx.ts, type, MaxStringLen(ctx));
  if (a.status == engine::AllocStatus::kTooLarge) {
    ctx.Error("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
    return false;
  }
  if (a.status != engine::AllocStatus::kOk) {
    ctx.Error("OOM command not allowed when used memory > 'maxmemory'.");
    return false;
  }
  if (expire_ms != 0) ctx.engine->SetNewItemExpiryMs(a.item, expire_ms);
  if (!value.empty()) {
    a.item.WriteValue(0, value.data(), value.size());
  }
  engine::StoreArgs args;
  args.mode = engine::StoreMode::kSet;
  args.keep_ttl = keep_ttl;
  engine::StoreResult r = ctx.engine->StoreItemLocked(a.item, args, ctx.ts);
  if (r == engine::StoreResult::kStored) return true;
  if (r == engine::StoreResult::kTooLarge) {
    ctx.Error("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
  } else {
    ctx.Error("OOM command not allowed when used memory > 'maxmemory'.");
  }
  return false;
}

KeyVersion KeyVersionLocked(CommandContext& ctx, std::string_view ekey) {
  KeyVersion v;
  engine::ItemRef it = ctx.engine->GetLocked(ekey, ctx.ts, false);
  if (!it) return v;
  v.cas = it.cas();
  v.identity = it.raw();
  v.expiry = it.expires_at_unix_ms();
  if (it.is_heap()) v.heap_version = static_cast<CollectionBase*>(it.heap())->version();
  return v;
}

WatchedKey WatchVersionLocked(CommandContext& ctx, std::string_view ekey) {
  return WatchedKey{std::string(ekey), KeyVersionLocked(ctx, ekey)};
}

bool ArgInt(CommandContext& ctx, std::string_view s, int64_t* out) {
  if (!ParseStrictInt64(s, out)) {
    ctx.NotInteger();
    return false;
  }
  return true;
}

bool AddIncrement(CommandContext& ctx, int64_t* cur, int64_t delta) {
  if ((delta < 0 && *cur < 0 && delta < LLONG_MIN - *cur) ||
      (delta > 0 && *cur > 0 && delta > LLONG_MAX - *cur)) {
    ctx.Error("ERR increment or decrement would overflow");
    return false;
  }
  *cur += delta;
  return true;
}

bool UpdateConds::Take(std::string_view o) {
  if (EqualsIgnoreCase(o, "nx"))
    nx = true;
  else if (EqualsIgnoreCase(o, "xx"))
    xx = true;
  else if (EqualsIgnoreCase(o, "gt"))
    gt = true;
  else if (EqualsIgnoreCase(o, "lt"))
    lt = true;
  else
    return false;
  return true;
}

bool ParseMpopArgs(CommandContext& ctx, const char* first, const char* second, size_t* where_pos,
                   bool* is_first, int64_t* count) {
  int64_t n;
  // Redis gives a non-integer numkeys the same reply as a non-positive one.
  if (!ParseStrictInt64(ctx.argv[1], &n) || n <= 0) {
    ctx.Error("ERR numkeys should be greater than 0");
    return false;
  }
  if (static_cast<size_t>(n) + 3 > ctx.argc()) {
    ctx.SyntaxError();
    return false;
  }
  const size_t pos = 2 + static_cast<size_t>(n);
  if (EqualsIgnoreCase(ctx.argv[pos], first)) {
    *is_first = true;
  } else if (EqualsIgnoreCase(ctx.argv[pos], second)) {
    *is_first = false;
  } else {
    ctx.SyntaxError();
    return false;
  }
  *where_pos = pos;
  *count = 1;
  bool has_count = false;
  for (size_t i = pos + 1; i < ctx.argc(); ++i) {
    if (EqualsIgnoreCase(ctx.argv[i], "count") && i + 1 < ctx.argc() && !has_count) {
      if (!ParseStrictInt64(ctx.argv[++i], count) || *count <= 0) {
        ctx.Error("ERR count should be greater than 0");
        return false;
      }
      has_count = true;
    } else {
      ctx.SyntaxError();
      return false;
    }
  }
  return true;
}

bool ParseLongDouble(std::string_view s, long double* out) {
  if (s.empty() || s.size() > 5000) return false;
  if (std::isspace(static_cast<unsigned char>(s[0]))) return false;
  std::string tmp(s);
  char* end = nullptr;
  errno = 0;
  long double v = std::strtold(tmp.c_str(), &end);
  if (end != tmp.c_str() + tmp.size() || errno == ERANGE || std::isnan(v)) return false;
  *out = v;
  return true;
}

bool ParseDouble(std::string_view s, double* out) {
  if (s.empty() || s.size() > 5000) return false;
  if (std::isspace(static_cast<unsigned char>(s[0]))) return false;  // Redis: no leading space
  double v;
  if (!trove::ParseDouble(s, &v) || std::isnan(v)) return false;
  // Redis's getDoubleFromObject: strtod's overflow (+-HUGE_VAL) and its
  // underflow to zero are errors; a denormal result is kept.
  if (errno == ERANGE && (std::isinf(v) || v == 0)) return false;
  *out = v;
  return true;
}

bool ArgDouble(CommandContext& ctx, std::string_view s, double* out, const char* err) {
  if (!ParseDouble(s, out)) {
    ctx.Error(err);
    return false;
  }
  return true;
}

}  // namespace trove::resp

#include "protocol/resp/core/client.h"
#include "protocol/resp/core/scan_util.h"

namespace trove::resp {

bool ParseCursor(std::string_view s, uint64_t* out) {
  int64_t v;
  if (!s.empty() && s[0] == '-' && ParseStrictInt64(s, &v)) {
    *out = static_cast<uint64_t>(v);
    return true;
  }
  return ParseU64(s, out);
}

uint64_t ScanPosition(std::string_view member) {
  return (engine::Engine::KeyHash(member) >> 1) + 1;
}

uint64_t ScanSlice(const ScanOrder& order, uint64_t cursor, int64_t count, size_t* begin,
                   size_t* end) {
  const auto& refs = order.refs;
  auto first = std::lower_bound(refs.begin(), refs.end(), cursor,
                                [](const ScanOrder::Ref& r, uint64_t c) { return r.pos < c; });
  size_t b = static_cast<size_t>(first - refs.begin());
  size_t e = b + std::min<size_t>(static_cast<size_t>(count), refs.size() - b);
  while (e < refs.size() && e > b && refs[e].pos == refs[e - 1].pos) ++e;
  *begin = b;
  *end = e;
  return e < refs.size() ? refs[e].pos : 0;
}

bool ParseScanArgs(CommandContext& ctx, size_t cursor_at, ScanOptions* o) {
  uint64_t cursor;
  if (!ParseCursor(ctx.argv[cursor_at], &cursor)) {
    ctx.Error("ERR invalid cursor");
    return false;
  }
  o->cursor = cursor;
  for (size_t i = cursor_at + 1; i < ctx.argc(); ++i) {
    std::string_view a = ctx.argv[i];
    bool more = i + 1 < ctx.argc();
    if (EqualsIgnoreCase(a, "count") && more) {
      if (!ArgInt(ctx, ctx.argv[++i], &o->count)) return false;
      if (o->count < 1) {
        ctx.SyntaxError();
        return false;
      }
    } else if (EqualsIgnoreCase(a, "match") && more) {
      o->pattern = ctx.argv[++i];
      o->has_pattern = o->pattern != "*";
    } else {
      ctx.SyntaxError();
      return false;
    }
  }
  return true;
}

}  // namespace trove::resp
