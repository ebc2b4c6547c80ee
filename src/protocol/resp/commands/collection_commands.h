// Command bodies that are one algorithm over several collection types
// (HDEL, SREM, ZREM). Run on the connection's worker with the key's stripe held.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/resp/core/command.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/types/collections.h"

namespace trove::resp {

// "<cmd> key member [member ...]": removes each member with T::*Remove and
// replies with how many were there. A missing key replies 0 and a key of
// another type WRONGTYPE. Only when something was removed does the key
// change (FinishUpdate: deleted once empty, else re-stored or bumped), so a
// no-op keeps its item, CAS and WATCH version. ctx.dirty stays unset (the
// caller counts the write). The keyspace events (hdel/srem/zrem, and del on
// emptying) come from the command's kWrite rule in key_event_rules.cc, which
// sees that version change; nothing here posts them.
// Invariant relied on: T::*Remove changes nothing and returns false when the
// member is absent, so n == 0 means the collection is untouched.
// REQUIRES: ctx.locked (the stripe of argv[1]).
template <typename T, bool (T::*Remove)(std::string_view)>
void RemoveMembers(CommandContext& ctx) {
  std::string key = ctx.Key(1);
  T* v;
  if (!ReadExisting(ctx, key, &v, [&] { ctx.w->Integer(0); })) return;
  size_t before = v->MemoryUsage();
  int64_t n = 0;
  for (size_t i = 2; i < ctx.argc(); ++i)
    if ((v->*Remove)(ctx.argv[i])) ++n;
  if (n > 0) FinishUpdate(ctx, key, v, before);
  ctx.w->Integer(n);
}

// HGET and ZSCORE (one member: multi false) or HMGET and ZMSCORE (each of
// argv[2..] in an array): ReplyOne(ctx, v, member) answers for one member,
// v null when the key is missing. A key of another type replies WRONGTYPE.
// REQUIRES: ctx.locked (the stripe of argv[1]).
template <typename T, void (*ReplyOne)(CommandContext&, const T*, std::string_view)>
void ReplyPerMember(CommandContext& ctx, bool multi) {
  T* v;
  if (!ReadCollection(ctx, ctx.Key(1), &v)) return;
  if (!multi) {
    ReplyOne(ctx, v, ctx.argv[2]);
    return;
  }
  ctx.w->ArrayHeader(ctx.argc() - 2);
  for (size_t i = 2; i < ctx.argc(); ++i) ReplyOne(ctx, v, ctx.argv[i]);
}

// The optional count of LPOP, RPOP, SPOP, ZPOPMIN and ZPOPMAX: argv[2] when
// given (*count keeps its default otherwise). More arguments get `too_many`'s
// error (arity for the list pops, syntax for the others, as Redis). False
// after the error reply.
inline bool ParsePopCount(CommandContext& ctx, void (CommandContext::*too_many)() const,
                          int64_t* count) {
  if (ctx.argc() > 3) {
    (ctx.*too_many)();
    return false;
  }
  if (ctx.argc() == 3 && (!ParseStrictInt64(ctx.argv[2], count) || *count < 0)) {
    ctx.Error("ERR value is out of range, must be positive");
    return false;
  }
  return true;
}

// LPOP, RPOP and SPOP: parses the optional count into *count (left at -1
// when absent), then loads ekey. A missing key is answered with
// empty_array() when a count was given, with a null without one. False
// after any reply.
template <typename T, typename EmptyArray>
bool ReadPopTarget(CommandContext& ctx, void (CommandContext::*too_many)() const,
                   std::string_view ekey, T** v, int64_t* count, EmptyArray empty_array) {
  if (!ParsePopCount(ctx, too_many, count)) return false;
  return ReadExisting(ctx, ekey, v, [&] {
    if (*count >= 0)
      empty_array();
    else
      ctx.w->Null();
  });
}

// The reply of HSCAN, SSCAN and ZSCAN: the next cursor, then an array of
// the `per` bulks write(e) writes for each element e of out.
template <typename Elem, typename Write>
void WriteScanReply(CommandContext& ctx, uint64_t next, const std::vector<Elem>& out, size_t per,
                    Write write) {
  ctx.w->ArrayHeader(2);
  ctx.w->Bulk(std::to_string(next));
  ctx.w->ArrayHeader(out.size() * per);
  for (const Elem& e : out) write(e);
}

}  // namespace trove::resp
