// Bitmap commands: SETBIT GETBIT BITCOUNT BITPOS BITOP (BITFIELD: bitfield.cc),
// on string values with Redis 7's semantics (the newest documented ones:
// argument errors before the key is looked up, SETBIT/BITFIELD counting a
// change only when a bit or the length changed) and BITOP's DIFF, DIFF1,
// ANDOR and ONE of Redis 8.2. Run on the connection's worker with the keys'
// stripes held.
//
// Reads look at the stored item in place (walking its spans when the value
// is chunked) and copy nothing. Writes rewrite the string as APPEND and
// SETRANGE do (one copy out, grown with zero bytes, one store) and skip the
// store when nothing changed, so no keyspace event is raised and no change
// counted then, as in Redis.
#include <sys/uio.h>


#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/popcount.h"
#include "protocol/resp/commands/bitmap_internal.h"
#include "protocol/resp/commands/string_values.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/types/keyspace.h"

namespace trove::resp {
namespace {

using engine::ItemRef;
using engine::ValueType;

// ---------------------------------------------------------------------------
// Bit arithmetic, all of it. A string is an array of bits numbered as Redis
// numbers them: bit 0 is the most significant bit of byte 0, bit 7 its least
// significant, bit 8 the most significant bit of byte 1, and so on. Bits past
// the end of the string read as 0. A BITFIELD field of `bits` bits at bit
// offset `off` is the unsigned number its bits spell, first bit most
// significant (big-endian when the field is byte-aligned); a signed field is
// that number in two's complement.
// ---------------------------------------------------------------------------

// The bit of a byte that bit number k (0..7, from the most significant) is.
constexpr uint8_t BitMask(unsigned k) { return static_cast<uint8_t>(0x80u >> k); }
// The bits of a byte before bit k, and after it.
constexpr uint8_t BitsBefore(unsigned k) { return static_cast<uint8_t>(0xFF00u >> k); }
constexpr uint8_t BitsAfter(unsigned k) { return static_cast<uint8_t>(0x7Fu >> k); }

uint64_t PopCountByte(uint8_t b) { return static_cast<uint64_t>(__builtin_popcount(b)); }


// The first bit equal to `bit` (0 or 1) among bits [lo, hi] of p, or -1.
// Runs of whole bytes that cannot hold it are skipped a 64-bit word at a
// time.
int64_t FindBit(const uint8_t* p, uint64_t lo, uint64_t hi, int bit) {
  // Looking for a 1 in (byte ^ flip): flip turns a search for 0 into one for 1.
  const uint8_t flip = static_cast<uint8_t>(bit != 0 ? 0x00 : 0xFF);
  const uint64_t skip_word = bit != 0 ? 0 : ~uint64_t{0};
  auto probe = [&](size_t i, uint8_t mask) -> int64_t {
    const uint8_t v = static_cast<uint8_t>((p[i] ^ flip) & mask);
    if (v == 0) return -1;
    return static_cast<int64_t>(i) * 8 + std::countl_zero(v);
  };
  size_t b = static_cast<size_t>(lo >> 3);
  const size_t last = static_cast<size_t>(hi >> 3);
  const uint8_t first_mask = static_cast<uint8_t>(~BitsBefore(static_cast<unsigned>(lo & 7)));
  const uint8_t last_mask = static_cast<uint8_t>(~BitsAfter(static_cast<unsigned>(hi & 7)));
  if (b == last) return probe(b, static_cast<uint8_t>(first_mask & last_mask));
  if (int64_t r = probe(b, first_mask); r >= 0) return r;
  ++b;
  while (last - b >= 8) {
    uint64_t w;
    std::memcpy(&w, p + b, sizeof w);
    if (w != skip_word) break;
    b += 8;
  }
  for (; b < last; ++b) {
    if (int64_t r = probe(b, 0xFF); r >= 0) return r;
  }
  return probe(last, last_mask);
}

// ---------------------------------------------------------------------------
// Reading a stored string in place.
// ---------------------------------------------------------------------------

// Calls fn(p, n, at) for the existing bytes among [from, to) of a string
// item's value, in order: p points at the n bytes that start at byte `at`.
// One call unless the value is chunked; fn returns false to stop early.
template <class Fn>
void ForEachPiece(const ItemRef& it, size_t from, size_t to, Fn&& fn) {
  if (!it) return;
  to = std::min<size_t>(to, it.value_length());
  if (from >= to) return;
  if (!it.is_chunked()) {
    const std::string_view v = it.value();
    fn(reinterpret_cast<const uint8_t*>(v.data()) + from, to - from, from);
    return;
  }
  constexpr int kBatch = 16;
  iovec spans[kBatch];
  size_t at = 0, skip = 0;
  while (at < to) {
    const int got = it.ValueSpans(spans, kBatch, /*with_crlf=*/false, skip);
    if (got <= 0) return;
    for (int s = 0; s < got && at < to; ++s) {
      const size_t len = spans[s].iov_len;
      if (at + len > from) {
        const size_t lo = from > at ? from - at : 0;
        const size_t hi = std::min(len, to - at);
        if (!fn(static_cast<const uint8_t*>(spans[s].iov_base) + lo, hi - lo, at + lo)) return;
      }
      at += len;
    }
    skip += static_cast<size_t>(got);
  }
}

}  // namespace

// Copies bytes [off, off + n) of the value into dst: 0 past its end (or for
// no item).
void ReadBytes(const ItemRef& it, size_t off, uint8_t* dst, size_t n) {
  std::memset(dst, 0, n);
  ForEachPiece(it, off, off + n, [&](const uint8_t* p, size_t len, size_t at) {
    std::memcpy(dst + (at - off), p, len);
    return true;
  });
}

namespace {

// The set bits among bits [lo, hi] of the value. REQUIRES: hi < length * 8.
uint64_t CountBits(const ItemRef& it, uint64_t lo, uint64_t hi) {
  const size_t first = static_cast<size_t>(lo >> 3), last = static_cast<size_t>(hi >> 3);
  uint64_t n = 0;
  ForEachPiece(it, first, last + 1, [&](const uint8_t* p, size_t len, size_t) {
    n += PopCount(p, len);
    return true;
  });
  uint8_t edge = 0;
  ReadBytes(it, first, &edge, 1);
  n -= PopCountByte(static_cast<uint8_t>(edge & BitsBefore(static_cast<unsigned>(lo & 7))));
  ReadBytes(it, last, &edge, 1);
  n -= PopCountByte(static_cast<uint8_t>(edge & BitsAfter(static_cast<unsigned>(hi & 7))));
  return n;
}

// The first bit equal to `bit` among bits [lo, hi] of the value, or -1.
// REQUIRES: hi < length * 8.
int64_t FindBitInItem(const ItemRef& it, uint64_t lo, uint64_t hi, int bit) {
  int64_t found = -1;
  ForEachPiece(it, static_cast<size_t>(lo >> 3), static_cast<size_t>(hi >> 3) + 1,
               [&](const uint8_t* p, size_t n, size_t at) {
                 const uint64_t base = uint64_t{at} * 8;
                 const uint64_t a = std::max(lo, base) - base;
                 const uint64_t b = std::min(hi, base + uint64_t{n} * 8 - 1) - base;
                 const int64_t r = FindBit(p, a, b, bit);
                 if (r < 0) return true;
                 found = static_cast<int64_t>(base) + r;
                 return false;
               });
  return found;
}

// ---------------------------------------------------------------------------
// Arguments and the rewrite.
// ---------------------------------------------------------------------------

}  // namespace

// SETBIT, GETBIT and BITFIELD offsets (Redis's getBitOffsetFromArgument): an
// integer >= 0 whose byte (offset / 8) is below proto-max-bulk-len (512 MiB:
// offsets below 2^32). For BITFIELD (bits > 0), "#N" is the N-th field of
// that width, offset N * bits (a product past 64 bits is refused; Redis
// would wrap it).
bool ParseBitOffset(CommandContext& ctx, std::string_view s, int bits, uint64_t* out) {
  const bool nth = bits > 0 && !s.empty() && s[0] == '#';
  int64_t v = 0;
  bool ok = ParseStrictInt64(nth ? s.substr(1) : s, &v);
  if (ok && nth) {
    if (v > INT64_MAX / bits || v < INT64_MIN / bits)
      ok = false;
    else
      v *= bits;
  }
  const int64_t max_bytes = ctx.server->proto_max_bulk_len.load(std::memory_order_relaxed);
  if (!ok || v < 0 || (v >> 3) >= max_bytes) {
    ctx.Error("ERR bit offset is not an integer or out of range");
    return false;
  }
  *out = static_cast<uint64_t>(v);
  return true;
}

namespace {

// BITCOUNT's and BITPOS's unit: BIT or BYTE (any case).
bool ParseUnit(CommandContext& ctx, std::string_view s, bool* in_bits) {
  if (EqualsIgnoreCase(s, "bit")) {
    *in_bits = true;
  } else if (EqualsIgnoreCase(s, "byte")) {
    *in_bits = false;
  } else {
    ctx.SyntaxError();
    return false;
  }
  return true;
}

// BITCOUNT's and BITPOS's range over a string of len bytes, as Redis reads
// it: negative ends count from the end, both are clamped to the string, and
// an empty range (start > end) gives false. *lo and *hi are bit positions.
bool ResolveRange(int64_t start, int64_t end, int64_t len, bool in_bits, uint64_t* lo,
                  uint64_t* hi) {
  const int64_t total = in_bits ? len * 8 : len;
  if (start < 0) start += total;
  if (end < 0) end += total;
  if (start < 0) start = 0;
  if (end < 0) end = 0;
  if (end >= total) end = total - 1;
  if (start > end) return false;
  *lo = static_cast<uint64_t>(in_bits ? start : start * 8);
  *hi = static_cast<uint64_t>(in_bits ? end : end * 8 + 7);
  return true;
}

}  // namespace

// Starts a rewrite of the string *it (null: a new key) that needs `need`
// bytes: copies its value into *v grown with zero bytes to need (one
// allocation), takes its expiry and releases it. False after the error
// reply when the result cannot be stored: longer than the RESP port's
// strings may be (checked before anything is allocated).
bool BeginRewrite(CommandContext& ctx, ItemRef* it, size_t need, std::string* v, int64_t* exptime) {
  if (need > MaxStringLen(ctx)) {
    ctx.Error("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
    return false;
  }
  v->reserve(need);
  if (*it) {
    it->CopyValue(v);
    *exptime = KeepExptime(*it);
  }
  it->Reset();
  if (v->size() < need) v->resize(need, '\0');
  return true;
}

namespace {


// ---------------------------------------------------------------------------
// SETBIT GETBIT BITCOUNT BITPOS
// ---------------------------------------------------------------------------

void CmdSetBit(CommandContext& ctx) {
  uint64_t off = 0;
  if (!ParseBitOffset(ctx, ctx.argv[2], 0, &off)) return;
  int64_t on = 0;
  if (!ParseStrictInt64(ctx.argv[3], &on) || (on & ~int64_t{1}) != 0) {
    ctx.Error("ERR bit is not an integer or out of range");
    return;
  }
  std::string key = ctx.Key(1);
  ItemRef it;
  if (!GetString(ctx, key, &it)) return;
  const size_t byte = static_cast<size_t>(off >> 3);
  const uint8_t mask = BitMask(static_cast<unsigned>(off & 7));
  const size_t len = it ? it.value_length() : 0;
  int64_t old = 0;
  if (byte < len) {
    uint8_t b = 0;
    ReadBytes(it, byte, &b, 1);
    old = (b & mask) != 0 ? 1 : 0;
    if (old == on) {  // same bit, same length: nothing to store (Redis 7.2+)
      ctx.dirty = 0;
      ctx.w->Integer(old);
      return;
    }
  }
  std::string v;
  int64_t exptime = 0;
  if (!BeginRewrite(ctx, &it, std::max(len, byte + 1), &v, &exptime)) return;
  uint8_t& b = Bytes(v)[byte];
  b = static_cast<uint8_t>(on != 0 ? (b | mask) : (b & ~mask));
  if (!StoreStringLocked(ctx, key, v, exptime, false)) return;
  ctx.dirty = 1;
  ctx.w->Integer(old);
}

void CmdGetBit(CommandContext& ctx) {
  uint64_t off = 0;
  if (!ParseBitOffset(ctx, ctx.argv[2], 0, &off)) return;
  ItemRef it;
  if (!GetString(ctx, ctx.Key(1), &it)) return;
  uint8_t b = 0;
  ReadBytes(it, static_cast<size_t>(off >> 3), &b, 1);  // 0 past the end
  ctx.w->Integer((b & BitMask(static_cast<unsigned>(off & 7))) != 0 ? 1 : 0);
}

// BITCOUNT key [start end [BYTE|BIT]]
void CmdBitCount(CommandContext& ctx) {
  const size_t argc = ctx.argc();
  int64_t start = 0, end = -1;
  bool in_bits = false;
  const bool ranged = argc == 4 || argc == 5;
  if (ranged) {
    if (!ArgInt(ctx, ctx.argv[2], &start) || !ArgInt(ctx, ctx.argv[3], &end)) return;
    if (argc == 5 && !ParseUnit(ctx, ctx.argv[4], &in_bits)) return;
  } else if (argc != 2) {
    ctx.SyntaxError();
    return;
  }
  ItemRef it;
  if (!GetString(ctx, ctx.Key(1), &it)) return;
  // Redis answers 0 at once for two negative ends the wrong way round.
  if (ranged && start < 0 && end < 0 && start > end) {
    ctx.w->Integer(0);
    return;
  }
  const int64_t len = it ? static_cast<int64_t>(it.value_length()) : 0;
  uint64_t lo = 0, hi = 0;
  if (!ranged) {
    start = 0;
    end = len - 1;
  }
  if (!ResolveRange(start, end, len, in_bits, &lo, &hi)) {
    ctx.w->Integer(0);
    return;
  }
  ctx.w->Integer(static_cast<int64_t>(CountBits(it, lo, hi)));
}

// BITPOS key bit [start [end [BYTE|BIT]]]
void CmdBitPos(CommandContext& ctx) {
  int64_t bit = 0;
  if (!ArgInt(ctx, ctx.argv[2], &bit)) return;
  if (bit != 0 && bit != 1) {
    ctx.Error("ERR The bit argument must be 1 or 0.");
    return;
  }
  const size_t argc = ctx.argc();
  int64_t start = 0, end = -1;
  bool in_bits = false, end_given = false;
  if (argc >= 4 && argc <= 6) {
    // Redis's order: start, then the unit, then end.
    if (!ArgInt(ctx, ctx.argv[3], &start)) return;
    if (argc == 6 && !ParseUnit(ctx, ctx.argv[5], &in_bits)) return;
    if (argc >= 5) {
      if (!ArgInt(ctx, ctx.argv[4], &end)) return;
      end_given = true;
    }
  } else if (argc != 3) {
    ctx.SyntaxError();
    return;
  }
  ItemRef it;
  if (!GetString(ctx, ctx.Key(1), &it)) return;
  // A missing key is an endless run of zeros.
  if (!it) {
    ctx.w->Integer(bit != 0 ? -1 : 0);
    return;
  }
  const int64_t len = static_cast<int64_t>(it.value_length());
  if (!end_given) end = len - 1;  // the whole string from start (BYTE: a unit needs an end)
  uint64_t lo = 0, hi = 0;
  if (!ResolveRange(start, end, len, in_bits, &lo, &hi)) {
    ctx.w->Integer(-1);  // an empty range holds neither bit
    return;
  }
  int64_t pos = FindBitInItem(it, lo, hi, static_cast<int>(bit));
  // No clear bit up to the end of the string: without an explicit end the
  // string counts as padded with zeros, so the answer is the bit after it.
  if (pos < 0 && bit == 0 && !end_given) pos = static_cast<int64_t>(hi + 1);
  ctx.w->Integer(pos);
}

// ---------------------------------------------------------------------------
// BITOP
// ---------------------------------------------------------------------------

enum class BitOp : uint8_t { kAnd, kOr, kXor, kNot, kDiff, kDiff1, kAndOr, kOne };

// DIFF, DIFF1 and ANDOR combine their first source X with the OR of the
// others (X & ~Y, ~X & Y, X & Y).
bool FirstApart(BitOp op) {
  return op == BitOp::kDiff || op == BitOp::kDiff1 || op == BitOp::kAndOr;
}

bool ParseBitOp(std::string_view s, BitOp* op) {
  static constexpr std::pair<std::string_view, BitOp> kOps[] = {
      {"and", BitOp::kAnd},     {"or", BitOp::kOr},     {"xor", BitOp::kXor},
      {"not", BitOp::kNot},     {"diff", BitOp::kDiff}, {"diff1", BitOp::kDiff1},
      {"andor", BitOp::kAndOr}, {"one", BitOp::kOne}};
  for (const auto& [name, o] : kOps) {
    if (EqualsIgnoreCase(s, name)) {
      *op = o;
      return true;
    }
  }
  return false;
}

// Folds a source's bytes s[0, n) into the result d (ONE: and into c, the
// bits seen in more than one source). The first source was copied into d.
void FoldBytes(BitOp op, uint8_t* d, uint8_t* c, const uint8_t* s, size_t n) {
  switch (op) {
    case BitOp::kAnd:
      for (size_t i = 0; i < n; ++i) d[i] = static_cast<uint8_t>(d[i] & s[i]);
      return;
    case BitOp::kXor:
      for (size_t i = 0; i < n; ++i) d[i] = static_cast<uint8_t>(d[i] ^ s[i]);
      return;
    case BitOp::kOne:
      for (size_t i = 0; i < n; ++i) {
        c[i] = static_cast<uint8_t>(c[i] | (d[i] & s[i]));
        d[i] = static_cast<uint8_t>(d[i] ^ s[i]);
      }
      return;
    case BitOp::kOr:
    case BitOp::kDiff:  // the OR of the sources after X
    case BitOp::kDiff1:
    case BitOp::kAndOr:
    case BitOp::kNot:  // never folded: one source
      for (size_t i = 0; i < n; ++i) d[i] = static_cast<uint8_t>(d[i] | s[i]);
      return;
  }
}

// DIFF, DIFF1, ANDOR: combines X's bytes x[0, n) with d[0, n), the OR of
// the other sources.
void CombineFirst(BitOp op, uint8_t* d, const uint8_t* x, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const unsigned xs = x[i], ys = d[i];
    const unsigned r = op == BitOp::kDiff    ? (xs & ~ys)
                       : op == BitOp::kDiff1 ? (~xs & ys)
                                             : (xs & ys);
    d[i] = static_cast<uint8_t>(r);
  }
}

// BITOP op destkey key [key ...]: missing sources are empty strings, shorter
// ones are padded with zero bytes; the result is as long as the longest
// source, stored at destkey (without expiry), or destkey is deleted when it
// is empty.
void CmdBitop(CommandContext& ctx) {
  BitOp op = BitOp::kAnd;
  if (!ParseBitOp(ctx.argv[1], &op)) {
    ctx.SyntaxError();
    return;
  }
  const size_t nsrc = ctx.argc() - 3;
  if (op == BitOp::kNot && nsrc != 1) {
    ctx.Error("ERR BITOP NOT must be called with a single source key.");
    return;
  }
  if (FirstApart(op) && nsrc < 2) {
    std::string e = "ERR BITOP ";
    for (char ch : ctx.argv[1])
      e += (ch >= 'a' && ch <= 'z') ? static_cast<char>(ch - 'a' + 'A') : ch;
    e += " must be called with at least two source keys.";
    ctx.Error(e);
    return;
  }
  const bool first_apart = FirstApart(op);
  std::string res;     // grows to the longest source so far, zero-padded
  std::string common;  // ONE only
  ItemRef x;           // DIFF, DIFF1, ANDOR: the first source, combined last
  for (size_t j = 0; j < nsrc; ++j) {
    ItemRef it = LookupLocked(ctx, ctx.Key(3 + j));  // counts a keyspace hit or miss, as Redis
    if (it && it.type() != ValueType::kString) {
      ctx.WrongType();
      return;
    }
    const size_t len = it ? it.value_length() : 0;
    if (len > res.size()) {
      res.resize(len, '\0');
      if (op == BitOp::kOne) common.resize(len, '\0');
    }
    if (first_apart && j == 0) {
      x = std::move(it);
      continue;
    }
    uint8_t* d = Bytes(res);
    uint8_t* c = op == BitOp::kOne ? Bytes(common) : nullptr;
    const bool copy = j == 0;  // the first source is the result so far (res is all zero)
    ForEachPiece(it, 0, len, [&](const uint8_t* p, size_t n, size_t at) {
      if (copy)
        std::memcpy(d + at, p, n);
      else
        FoldBytes(op, d + at, c == nullptr ? nullptr : c + at, p, n);
      return true;
    });
    // AND with the zeros past this source's end.
    if (op == BitOp::kAnd && !copy && len < res.size()) std::memset(d + len, 0, res.size() - len);
  }
  const size_t maxlen = res.size();
  const std::string dest = ctx.Key(2);
  if (maxlen == 0) {
    ctx.dirty = ctx.engine->UnlinkLocked(dest, ctx.ts) ? 1 : 0;
    ctx.w->Integer(0);
    return;
  }
  uint8_t* d = Bytes(res);
  if (op == BitOp::kNot) {
    for (size_t i = 0; i < maxlen; ++i) d[i] = static_cast<uint8_t>(~d[i]);
  } else if (op == BitOp::kOne) {
    const uint8_t* c = Bytes(common);
    for (size_t i = 0; i < maxlen; ++i) d[i] = static_cast<uint8_t>(d[i] & ~c[i]);
  } else if (first_apart) {
    const size_t xlen = x ? x.value_length() : 0;
    ForEachPiece(x, 0, xlen, [&](const uint8_t* p, size_t n, size_t at) {
      CombineFirst(op, d + at, p, n);
      return true;
    });
    // Past X's end X is 0: DIFF and ANDOR give 0, DIFF1 keeps the OR.
    if (op != BitOp::kDiff1 && xlen < maxlen) std::memset(d + xlen, 0, maxlen - xlen);
  }
  x.Reset();
  if (!StoreStringLocked(ctx, dest, res, 0, false)) return;
  ctx.dirty = 1;
  ctx.w->Integer(static_cast<int64_t>(maxlen));
}

}  // namespace

void RegisterBitmapCommands(std::vector<CommandSpec>* t) {
  const uint32_t w = kCmdWrite | kCmdDenyOom;
  const uint32_t r = kCmdReadonly;
  const CommandAdder add{t, "bitmap"};
  add("setbit", 4, w, 1, 1, 1, CmdSetBit,
      "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.",
      "2.2.0");
  add("getbit", 3, r | kCmdFast, 1, 1, 1, CmdGetBit, "Returns a bit value by offset.", "2.2.0");
  add("bitcount", -2, r, 1, 1, 1, CmdBitCount,
      "Counts the number of set bits (population counting) in a string.", "2.6.0");
  add("bitpos", -3, r, 1, 1, 1, CmdBitPos, "Finds the first set (1) or clear (0) bit in a string.",
      "2.8.7");
  add("bitop", -4, w, 2, -1, 1, CmdBitop,
      "Performs bitwise operations on multiple strings, and stores the result.", "2.6.0");
  add("bitfield", -2, w, 1, 1, 1, CmdBitfield,
      "Performs arbitrary bitfield integer operations on strings.", "3.2.0");
  add("bitfield_ro", -2, r | kCmdFast, 1, 1, 1, CmdBitfieldRo,
      "Performs arbitrary read-only bitfield integer operations on strings.", "6.0.0");
}

}  // namespace trove::resp
