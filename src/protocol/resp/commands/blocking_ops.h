// The parts of the list and zset commands that the blocking commands run
// (commands/blocking.cc), with their keys' stripes held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "protocol/resp/types/collections.h"
#include "protocol/resp/core/command.h"
#include "protocol/resp/types/keyspace.h"

namespace trove::resp {

// Loads a source key of a pop that may block (BLPOP's keys, BLMOVE's source,
// LMPOP's and ZMPOP's keys); false after the reply. Of another type it is
// WRONGTYPE, except while a blocked client is served (ctx.would_block set):
// Redis serves a blocked client only from a key of the type it waits for,
// so it stays blocked (LPUSH + DEL + SET of its key in one transaction).
template <typename T>
bool ReadPopSource(CommandContext& ctx, const std::string& key, T** v) {
  if (LoadCollection<T>(ctx, key, v) != LoadStatus::kWrongType) return true;
  if (ctx.would_block != nullptr)
    *ctx.would_block = true;
  else
    ctx.WrongType();
  return false;
}

// What LMPOP and ZMPOP share: parses numkeys, the keys and the side (`first`
// or `second`, any case) with COUNT; on the first key that holds a value,
// replies [key, elements] where pop(v, side, count) pops and writes the
// elements (side true for `first`). True if a reply was written (or an
// error), false if every key was empty (nothing written).
template <typename T, typename Pop>
bool PopFromFirstNonEmpty(CommandContext& ctx, const char* first, const char* second, Pop pop) {
  size_t pos;
  bool side;
  int64_t count;
  if (!ParseMpopArgs(ctx, first, second, &pos, &side, &count)) return true;
  for (size_t k = 2; k < pos; ++k) {
    std::string key = ctx.Key(k);
    T* v;
    // Served while blocked, a key of another type means "still waiting".
    if (!ReadPopSource(ctx, key, &v)) return ctx.would_block == nullptr;
    if (v == nullptr) continue;
    size_t before = v->MemoryUsage();
    ctx.w->ArrayHeader(2);
    ctx.w->Bulk(ctx.argv[k]);
    pop(v, side, static_cast<size_t>(count));
    FinishUpdate(ctx, key, v, before);
    return true;
  }
  return false;
}

// LEFT / RIGHT (any case); false for anything else.
bool ParseSide(std::string_view s, bool* left);
// LMOVE's body on argv[1] (source) and argv[2] (destination), replying.
void ListMove(CommandContext& ctx, bool from_left, bool to_left);
// LMPOP / ZMPOP on argv (numkeys at argv[1]): true if a reply was written
// (data or an error), false if every key was empty (nothing written).
bool ListMPop(CommandContext& ctx);
bool ZsetMPop(CommandContext& ctx);

}  // namespace trove::resp
