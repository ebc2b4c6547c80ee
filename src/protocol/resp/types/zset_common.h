// What the sorted-set command files share: the entry type, loading and
// storing a set, the member-list reply, and the commands of the other files.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "protocol/resp/core/command.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/types/collections.h"

namespace trove::resp {

using Entry = ZsetValue::Entry;

// Writes entries as members, or member/score (flat in RESP2, pairs in RESP3).
inline void WriteEntries(CommandContext& ctx, const std::vector<Entry>& es, bool withscores) {
  if (!withscores) {
    ctx.w->ArrayHeader(es.size());
    for (const auto& e : es) ctx.w->Bulk(e.second);
    return;
  }
  const bool pairs = ctx.w->proto() == 3;
  ctx.w->ArrayHeader(pairs ? es.size() : es.size() * 2);
  for (const auto& e : es) {
    if (pairs) ctx.w->ArrayHeader(2);
    ctx.w->Bulk(e.second);
    ctx.w->Double(e.first);
  }
}

// Picks v's encoding per the zset thresholds (CONFIG SET zset-max-listpack-*).
inline void CheckZsetEncoding(CommandContext& ctx, ZsetValue* v) {
  v->CheckEncoding(ctx.server->zset_max_listpack_entries.load(std::memory_order_relaxed),
                   ctx.server->zset_max_listpack_value.load(std::memory_order_relaxed));
}

// Re-encodes per the zset thresholds and stores the change.
inline void FinishZset(CommandContext& ctx, const std::string& key, ZsetValue* v, size_t before) {
  CheckZsetEncoding(ctx, v);
  FinishUpdate(ctx, key, v, before);
}

// The tail of ZRANGESTORE and Z*STORE, with dst already unlinked: stores es
// as a new sorted set at dst (nothing when empty) and replies with its size;
// after an OOM error reply nothing more.
inline void StoreEntries(CommandContext& ctx, const std::string& dst,
                         const std::vector<Entry>& es) {
  if (!es.empty()) {
    auto z = std::make_unique<ZsetValue>();
    for (const auto& e : es) z->Put(e.second, e.first);
    CheckZsetEncoding(ctx, z.get());
    if (StoreNewCollection(ctx, dst, ZsetValue::kType, std::move(z)) == nullptr) return;
  }
  ctx.w->Integer(static_cast<int64_t>(es.size()));
}

// The range commands (commands/zsets_range.cc): ZCOUNT, ZLEXCOUNT, the ZRANGE
// family, ZRANGESTORE, ZRANK/ZREVRANK and ZREMRANGEBY*.
void CmdZCount(CommandContext& ctx);
void CmdZLexCount(CommandContext& ctx);
void CmdZRange(CommandContext& ctx);
void CmdZRevRange(CommandContext& ctx);
void CmdZRangeByScore(CommandContext& ctx);
void CmdZRevRangeByScore(CommandContext& ctx);
void CmdZRangeByLex(CommandContext& ctx);
void CmdZRevRangeByLex(CommandContext& ctx);
void CmdZRangeStore(CommandContext& ctx);
void CmdZRank(CommandContext& ctx);
void CmdZRevRank(CommandContext& ctx);
void CmdZRemRangeByRank(CommandContext& ctx);
void CmdZRemRangeByScore(CommandContext& ctx);
void CmdZRemRangeByLex(CommandContext& ctx);

// The set-algebra commands (commands/zsets_setops.cc), registered by
// RegisterZsetCommands at their place in the table.
void RegisterZsetSetOpCommands(std::vector<CommandSpec>* t);

}  // namespace trove::resp
