// What the string command families share (strings.cc, string_ranges.cc):
// typed lookup of a string key and copying its value out. The key's stripe
// is held by the caller.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/resp/core/command.h"
#include "protocol/resp/types/keyspace.h"

namespace trove::resp {

// Looks a string up: false (after WRONGTYPE) if the key holds another type.
inline bool GetString(CommandContext& ctx, std::string_view ekey, engine::ItemRef* out) {
  *out = LookupLocked(ctx, ekey);
  if (*out && out->type() != engine::ValueType::kString) {
    ctx.WrongType();
    return false;
  }
  return true;
}

inline std::string CopyOut(const engine::ItemRef& it) {
  std::string v;
  it.CopyValue(&v);
  return v;
}

// The expiry a rewrite of `it` keeps (0: none, or no item).
inline int64_t KeepExptime(const engine::ItemRef& it) { return it ? it.expires_at_unix_ms() : 0; }

// A string key about to be rewritten (APPEND, SETRANGE, INCR, INCRBYFLOAT):
// copies its value into *v and its expiry into *exptime, then releases the
// item. A missing key leaves both as the caller set them. False after
// WRONGTYPE.
inline bool ReadForRewrite(CommandContext& ctx, std::string_view key, std::string* v,
                           int64_t* exptime) {
  engine::ItemRef it;
  if (!GetString(ctx, key, &it)) return false;
  if (it) {
    *v = CopyOut(it);
    *exptime = KeepExptime(it);
  }
  return true;
}

}  // namespace trove::resp
