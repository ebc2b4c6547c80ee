// Shared parsing of the SCAN-family options (HSCAN SSCAN ZSCAN); any worker.
#pragma once

#include <cstdint>
#include <string_view>

#include "protocol/resp/types/collections.h"
#include "protocol/resp/core/command.h"
#include "protocol/resp/types/keyspace.h"

namespace trove::resp {

struct ScanOptions {
  uint64_t cursor = 0;
  std::string_view pattern;
  bool has_pattern = false;
  int64_t count = 10;
};

// Parses "cursor [MATCH p] [COUNT n]" from argv[cursor_at]; false after an
// error reply.
bool ParseScanArgs(CommandContext& ctx, size_t cursor_at, ScanOptions* o);

// HSCAN/SSCAN/ZSCAN. A compact collection is returned whole with cursor 0,
// as Redis does for a listpack or intset. A larger one is walked in the order
// of ScanPosition(member): cursor c resumes at the first element whose
// position is >= c, so an element present for the whole scan is returned
// exactly once whatever is added or removed meanwhile (elements that share a
// position are never split between calls). Each call reads COUNT elements
// (more to finish a shared position) and filters them by MATCH.
//
// (KeyHash(member) >> 1) + 1: never 0, the cursor that starts and ends.
uint64_t ScanPosition(std::string_view member);
// The slice [*begin, *end) of order.refs a call with this cursor and count
// visits, and the cursor to return (0 when the walk is complete).
uint64_t ScanSlice(const ScanOrder& order, uint64_t cursor, int64_t count, size_t* begin,
                   size_t* end);

// One call over a collection past its compact thresholds: visits the refs of
// this call's slice whose member matches MATCH, and returns the next cursor.
// After the last slice the order is dropped, so `visit` must keep views of
// the elements (ref.member / ref.value), never of the ref itself.
template <typename Visit>
uint64_t ScanLargeCollection(const CollectionBase& v, const ScanOptions& o, Visit&& visit) {
  const ScanOrder& order = v.scan_order();
  size_t b, e;
  uint64_t next = ScanSlice(order, o.cursor, o.count, &b, &e);
  for (size_t i = b; i < e; ++i) {
    const ScanOrder::Ref& r = order.refs[i];
    if (!o.has_pattern || GlobMatch(o.pattern, r.member)) visit(r);
  }
  if (next == 0) v.DropScanOrder();
  return next;
}

}  // namespace trove::resp
