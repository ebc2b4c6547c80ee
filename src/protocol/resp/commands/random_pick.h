// Random choices for RANDOMKEY, SPOP, SRANDMEMBER, HRANDFIELD and ZRANDMEMBER,
// with Redis's count rules in one place. Runs on the connection's worker.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "protocol/resp/core/command.h"
#include "protocol/resp/types/collections.h"

namespace trove::resp {

// This worker's random source (thread_local, fixed seed: runs are repeatable).
std::mt19937_64& CommandRng();

// Parses "key [count [with_word]]" from argv[2..]: with_word is WITHVALUES or
// WITHSCORES, or nullptr for commands that take none (SRANDMEMBER). False after
// writing the syntax or integer error.
bool ParseRandomArgs(CommandContext& ctx, const char* with_word, bool* has_count,
                     int64_t* count, bool* with);

// The start of HRANDFIELD, SRANDMEMBER and ZRANDMEMBER: parses the count and
// the WITH word (ParseRandomArgs) and reads argv[1] as a T. False when the
// reply is written: an error, or for a missing key an empty array when a
// count was given, else a null.
template <typename T>
bool ReadRandomSource(CommandContext& ctx, const char* with_word, bool* has_count,
                      int64_t* count, bool* with, T** v) {
  if (!ParseRandomArgs(ctx, with_word, has_count, count, with)) return false;
  if (!ReadCollection(ctx, ctx.Key(1), v)) return false;
  if (*v != nullptr) return true;
  if (*has_count)
    ctx.w->ArrayHeader(0);
  else
    ctx.w->Null();
  return false;
}

// Redis's count rule: count >= 0 gives that many distinct elements of `all`
// (all of them when fewer), in random order; count < 0 gives -count elements
// that may repeat. REQUIRES: !all.empty(). False after the out-of-range error.
template <typename T>
bool PickRandom(CommandContext& ctx, std::vector<T> all, int64_t count, std::vector<T>* out) {
  std::mt19937_64& rng = CommandRng();
  if (count >= 0) {
    std::shuffle(all.begin(), all.end(), rng);
    if (static_cast<uint64_t>(count) < all.size()) all.resize(static_cast<size_t>(count));
    *out = std::move(all);
    return true;
  }
  if (count < -(INT64_MAX / 2)) {
    ctx.Error("ERR value is out of range");
    return false;
  }
  out->clear();
  out->reserve(static_cast<size_t>(-count));
  for (int64_t i = 0; i < -count; ++i) out->push_back(all[rng() % all.size()]);
  return true;
}

// The output-limit check of a reply written as it goes (random_pick.cc):
// true when the client is past its client-output-buffer-limit, in which
// case it has been closed and the caller stops. Never inside EXEC, which
// runs whole (Redis's commands stop only on CLIENT_CLOSE_ASAP).
bool StoppedByOutputLimit(CommandContext& ctx);

// Redis's count < 0 rule, written as it goes rather than gathered first:
// n picks of `all` (repeats allowed), each written by write(element), with
// the output limit checked every 1024 picks. So HRANDFIELD key -999999999
// stops mid-run at the limit, as in Redis, instead of first building a
// vector of a billion picks. The caller has written the array header.
// False when stopped by the limit. REQUIRES: !all.empty().
template <typename T, typename Write>
bool WriteRandomRepeats(CommandContext& ctx, const std::vector<T>& all, uint64_t n, Write write) {
  std::mt19937_64& rng = CommandRng();
  for (uint64_t i = 0; i < n; ++i) {
    if ((i & 1023) == 1023 && StoppedByOutputLimit(ctx)) return false;
    write(all[rng() % all.size()]);
  }
  return true;
}

}  // namespace trove::resp
