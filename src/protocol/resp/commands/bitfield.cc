// BITFIELD and BITFIELD_RO: integer fields of any width (i1..i64, u1..u63)
// at any bit offset of a string value, GET SET INCRBY with OVERFLOW
// WRAP|SAT|FAIL, as Redis 7. Arguments are all checked before anything
// runs; a rewrite stores only when a field changed. Run on the connection's
// worker with the key's stripe held. Bits are numbered as in bitmaps.cc:
// bit 0 is the most significant bit of byte 0.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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

// A field's bits are taken byte by byte: at bit position pos, the segment in
// pos's byte runs from bit (pos & 7) for `take` bits, and the byte has
// `8 - (pos & 7) - take` bits after it.

// The field of `bits` (1..64) bits at bit `off` of p, as an unsigned number.
// REQUIRES: p holds byte (off + bits - 1) / 8.
uint64_t ReadField(const uint8_t* p, uint64_t off, int bits) {
  uint64_t v = 0;
  const uint64_t end = off + static_cast<uint64_t>(bits);
  for (uint64_t pos = off; pos < end;) {
    const unsigned k = static_cast<unsigned>(pos & 7);
    const unsigned take = static_cast<unsigned>(std::min<uint64_t>(8 - k, end - pos));
    const unsigned byte = p[pos >> 3];
    const unsigned seg = (byte >> (8 - k - take)) & ((1u << take) - 1);
    v = (v << take) | seg;
    pos += take;
  }
  return v;
}

// Writes the low `bits` (1..64) bits of v as the field at bit `off` of p.
// REQUIRES: p holds byte (off + bits - 1) / 8.
void WriteField(uint8_t* p, uint64_t off, int bits, uint64_t v) {
  const uint64_t end = off + static_cast<uint64_t>(bits);
  for (uint64_t pos = off; pos < end;) {
    const unsigned k = static_cast<unsigned>(pos & 7);
    const unsigned take = static_cast<unsigned>(std::min<uint64_t>(8 - k, end - pos));
    const unsigned after = 8 - k - take;
    const uint64_t later = end - pos - take;  // field bits after this segment
    const unsigned ones = (1u << take) - 1;
    const unsigned seg = static_cast<unsigned>(v >> later) & ones;
    uint8_t& byte = p[pos >> 3];
    byte = static_cast<uint8_t>((byte & ~(ones << after)) | (seg << after));
    pos += take;
  }
}

// The low `bits` bits set.
uint64_t FieldMask(int bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }

// A field's bits read as a two's-complement number of `bits` bits.
int64_t SignExtend(uint64_t v, int bits) {
  if (bits < 64 && ((v >> (bits - 1)) & 1) != 0) v |= ~uint64_t{0} << bits;
  return static_cast<int64_t>(v);
}

// BITFIELD's OVERFLOW behaviours.
enum class Overflow : uint8_t { kWrap, kSat, kFail };

// A result that left its field's range (dir +1 past hi, -1 past lo) under
// OVERFLOW ow: false for FAIL, the limit it passed for SAT, the result's
// low bits (`wrapped`) for WRAP.
template <typename T>
bool ApplyOverflow(int dir, Overflow ow, T lo, T hi, T wrapped, T* out) {
  switch (ow) {
    case Overflow::kFail:
      return false;
    case Overflow::kSat:
      *out = dir > 0 ? hi : lo;
      return true;
    case Overflow::kWrap:
      break;
  }
  *out = wrapped;
  return true;
}

// What a SET (value, incr 0) or INCRBY (value = the field's current value)
// leaves in a signed field of `bits` bits: false for FAIL on overflow
// (nothing is written), else *out. Overflow is judged on the exact sum;
// WRAP keeps its low bits, SAT the limit it passed. As Redis, a SET value
// so far below the minimum that max - value exceeds INT64_MAX counts as
// passing the maximum (SAT then stores the maximum).
bool SignedResult(int64_t value, int64_t incr, int bits, Overflow ow, int64_t* out) {
  const int64_t max = bits >= 64 ? INT64_MAX : (int64_t{1} << (bits - 1)) - 1;
  const int64_t min = -max - 1;
  const uint64_t uval = static_cast<uint64_t>(value), uincr = static_cast<uint64_t>(incr);
  int dir = 0;  // +1 past the maximum, -1 past the minimum
  if (value > max) {
    dir = 1;
  } else if (value < min) {
    dir = static_cast<uint64_t>(max) - uval > static_cast<uint64_t>(INT64_MAX) ? 1 : -1;
  } else if (incr > 0 && uincr > static_cast<uint64_t>(max) - uval) {
    dir = 1;  // max - value >= 0 fits in 64 unsigned bits
  } else if (incr < 0 && uint64_t{0} - uincr > uval - static_cast<uint64_t>(min)) {
    dir = -1;
  }
  if (dir == 0) {
    *out = static_cast<int64_t>(uval + uincr);
    return true;
  }
  return ApplyOverflow(dir, ow, min, max, SignExtend((uval + uincr) & FieldMask(bits), bits), out);
}

// The same for an unsigned field of `bits` (1..63) bits; a SET's value is
// its argument's two's-complement bits (so a negative one passes the
// maximum, as in Redis).
bool UnsignedResult(uint64_t value, int64_t incr, int bits, Overflow ow, uint64_t* out) {
  const uint64_t max = FieldMask(bits);
  const uint64_t uincr = static_cast<uint64_t>(incr);
  int dir = 0;
  if (value > max || (incr > 0 && uincr > max - value)) {
    dir = 1;
  } else if (incr < 0 && uint64_t{0} - uincr > value) {
    dir = -1;
  }
  if (dir == 0) {
    *out = value + uincr;
    return true;
  }
  return ApplyOverflow(dir, ow, uint64_t{0}, max, (value + uincr) & max, out);
}

// A BITFIELD GET: the field at bit `off` of the value (an item, or bytes
// being rewritten), bits past the end read as 0.
uint64_t GetField(const ItemRef& it, uint64_t off, int bits) {
  uint8_t buf[9];  // a 64-bit field spans at most 9 bytes
  ReadBytes(it, static_cast<size_t>(off >> 3), buf, sizeof buf);
  return ReadField(buf, off & 7, bits);
}
uint64_t GetField(std::string_view s, uint64_t off, int bits) {
  uint8_t buf[9] = {};
  const size_t b = static_cast<size_t>(off >> 3);
  if (b < s.size()) std::memcpy(buf, s.data() + b, std::min(sizeof buf, s.size() - b));
  return ReadField(buf, off & 7, bits);
}

// ---------------------------------------------------------------------------
// BITFIELD BITFIELD_RO
// ---------------------------------------------------------------------------

struct FieldOp {
  enum Kind : uint8_t { kGet, kSet, kIncrBy } kind = kGet;
  bool is_signed = false;
  int bits = 0;
  uint64_t offset = 0;
  int64_t arg = 0;  // SET's value, INCRBY's increment
  Overflow overflow = Overflow::kWrap;
};

// A field type: i1..i64 or u1..u63 (lower-case i/u, as Redis).
bool ParseFieldType(CommandContext& ctx, std::string_view s, FieldOp* op) {
  int64_t n = 0;
  bool ok = !s.empty() && (s[0] == 'i' || s[0] == 'u') && ParseStrictInt64(s.substr(1), &n);
  if (ok) {
    op->is_signed = s[0] == 'i';
    ok = n >= 1 && n <= (op->is_signed ? 64 : 63);
  }
  if (!ok) {
    ctx.Error(
        "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported "
        "but i64 is.");
    return false;
  }
  op->bits = static_cast<int>(n);
  return true;
}

// Walks BITFIELD's subcommands from argv[2] in order, calling fn(op) for each
// GET, SET and INCRBY with the OVERFLOW in force. False after the error
// reply on the first bad one; a second walk over the same arguments meets
// none, so the handler walks once to check and once to run (no list).
template <class Fn>
bool ForEachFieldOp(CommandContext& ctx, Fn&& fn) {
  Overflow ow = Overflow::kWrap;
  const size_t argc = ctx.argc();
  for (size_t j = 2; j < argc; ++j) {
    const size_t rem = argc - j - 1;
    const std::string_view sub = ctx.argv[j];
    FieldOp op;
    if (EqualsIgnoreCase(sub, "get") && rem >= 2) {
      op.kind = FieldOp::kGet;
    } else if (EqualsIgnoreCase(sub, "set") && rem >= 3) {
      op.kind = FieldOp::kSet;
    } else if (EqualsIgnoreCase(sub, "incrby") && rem >= 3) {
      op.kind = FieldOp::kIncrBy;
    } else if (EqualsIgnoreCase(sub, "overflow") && rem >= 1) {
      const std::string_view t = ctx.argv[++j];
      if (EqualsIgnoreCase(t, "wrap")) {
        ow = Overflow::kWrap;
      } else if (EqualsIgnoreCase(t, "sat")) {
        ow = Overflow::kSat;
      } else if (EqualsIgnoreCase(t, "fail")) {
        ow = Overflow::kFail;
      } else {
        ctx.Error("ERR Invalid OVERFLOW type specified");
        return false;
      }
      continue;
    } else {
      ctx.SyntaxError();
      return false;
    }
    if (!ParseFieldType(ctx, ctx.argv[j + 1], &op)) return false;
    if (!ParseBitOffset(ctx, ctx.argv[j + 2], op.bits, &op.offset)) return false;
    if (op.kind != FieldOp::kGet && !ArgInt(ctx, ctx.argv[j + 3], &op.arg)) return false;
    op.overflow = ow;
    fn(op);
    j += op.kind == FieldOp::kGet ? size_t{2} : size_t{3};
  }
  return true;
}

// One reply of a BITFIELD that writes: a number, or nil for FAIL.
struct FieldReply {
  int64_t value = 0;
  bool nil = false;
};

// Runs a SET or INCRBY on the field of p (which holds it). *changed: the
// field's bits changed.
FieldReply ApplyFieldWrite(uint8_t* p, const FieldOp& op, bool* changed) {
  const uint64_t old_bits = ReadField(p, op.offset, op.bits);
  const bool incr = op.kind == FieldOp::kIncrBy;
  FieldReply r;
  uint64_t new_bits = 0;
  if (op.is_signed) {
    const int64_t old = SignExtend(old_bits, op.bits);
    int64_t nv = 0;
    if (!SignedResult(incr ? old : op.arg, incr ? op.arg : 0, op.bits, op.overflow, &nv)) {
      r.nil = true;
      return r;
    }
    r.value = incr ? nv : old;  // INCRBY answers the new value, SET the old one
    new_bits = static_cast<uint64_t>(nv) & FieldMask(op.bits);
  } else {
    uint64_t nv = 0;
    if (!UnsignedResult(incr ? old_bits : static_cast<uint64_t>(op.arg), incr ? op.arg : 0, op.bits,
                        op.overflow, &nv)) {
      r.nil = true;
      return r;
    }
    r.value = static_cast<int64_t>(incr ? nv : old_bits);  // at most 63 bits
    new_bits = nv;
  }
  WriteField(p, op.offset, op.bits, new_bits);
  *changed = new_bits != old_bits;
  return r;
}

int64_t FieldValue(uint64_t bits_read, const FieldOp& op) {
  return op.is_signed ? SignExtend(bits_read, op.bits) : static_cast<int64_t>(bits_read);
}

// BITFIELD key [GET type offset | [OVERFLOW WRAP|SAT|FAIL] SET type offset
// value | INCRBY type offset increment ...]; BITFIELD_RO (ro) takes GETs
// only. Every argument is checked before anything runs.
void BitfieldGeneric(CommandContext& ctx, bool ro) {
  size_t numops = 0;
  bool readonly = true;
  uint64_t highest = 0;  // the last bit a SET or INCRBY touches
  if (!ForEachFieldOp(ctx, [&](const FieldOp& op) {
        ++numops;
        if (op.kind == FieldOp::kGet) return;
        readonly = false;
        highest = std::max(highest, op.offset + static_cast<uint64_t>(op.bits) - 1);
      })) {
    return;
  }
  std::string key = ctx.Key(1);
  if (readonly) {
    // Only GETs: a read, counted as one even for BITFIELD (Redis's lookupKeyRead).
    ItemRef it = LookupLocked(ctx, key);
    if (!ctx.count_keyspace) CountKeyspace(ctx, static_cast<bool>(it), key);
    if (it && it.type() != ValueType::kString) {
      ctx.WrongType();
      return;
    }
    if (!ro) ctx.dirty = 0;
    ctx.w->ArrayHeader(numops);
    ForEachFieldOp(ctx, [&](const FieldOp& op) {
      ctx.w->Integer(FieldValue(GetField(it, op.offset, op.bits), op));
    });
    return;
  }
  if (ro) {
    ctx.Error("ERR BITFIELD_RO only supports the GET subcommand");
    return;
  }
  ItemRef it;
  if (!GetString(ctx, key, &it)) return;
  const size_t len = it ? it.value_length() : 0;
  const size_t need = std::max(len, static_cast<size_t>(highest >> 3) + 1);
  // As Redis, the string is created or grown to the last written bit even
  // when every write fails on overflow.
  const bool grown = !it || need > len;
  std::string v;
  int64_t exptime = 0;
  if (!BeginRewrite(ctx, &it, need, &v, &exptime)) return;
  // The replies wait for the store (which may fail); most calls fit inline.
  std::array<FieldReply, 16> inline_replies;
  std::vector<FieldReply> spill;
  FieldReply* replies = inline_replies.data();
  if (numops > inline_replies.size()) {
    spill.resize(numops);
    replies = spill.data();
  }
  int64_t changes = 0;
  size_t k = 0;
  ForEachFieldOp(ctx, [&](const FieldOp& op) {
    FieldReply& r = replies[k++];
    if (op.kind == FieldOp::kGet) {
      r.value = FieldValue(GetField(std::string_view(v), op.offset, op.bits), op);
      return;
    }
    bool changed = false;
    r = ApplyFieldWrite(Bytes(v), op, &changed);
    if (!r.nil && (grown || changed)) ++changes;
  });
  if ((grown || changes > 0) && !StoreStringLocked(ctx, key, v, exptime, false)) return;
  ctx.dirty = changes;
  ctx.w->ArrayHeader(numops);
  for (size_t i = 0; i < numops; ++i) {
    if (replies[i].nil)
      ctx.w->Null();
    else
      ctx.w->Integer(replies[i].value);
  }
}

}  // namespace

void CmdBitfield(CommandContext& ctx) { BitfieldGeneric(ctx, false); }
void CmdBitfieldRo(CommandContext& ctx) { BitfieldGeneric(ctx, true); }

bool BitfieldReadOnly(std::span<const std::string_view> argv) {
  for (size_t i = 2; i < argv.size(); ++i) {
    const size_t rem = argv.size() - i - 1;
    if (EqualsIgnoreCase(argv[i], "get") && rem >= 2)
      i += 2;
    else if (EqualsIgnoreCase(argv[i], "overflow") && rem >= 1)
      i += 1;
    else
      return false;  // SET, INCRBY, or a syntax error (taken as a write, as Redis)
  }
  return true;
}

}  // namespace trove::resp
