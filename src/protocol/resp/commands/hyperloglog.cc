// HyperLogLog commands: PFADD PFCOUNT PFMERGE PFDEBUG PFSELFTEST, with
// Redis 7's replies and errors, over string values in Redis's exact format
// (types/hyperloglog.h), so a value moves between Redis and Trove (GET,
// SET, the memcached port) and counts the same. Run on the connection's
// worker with the keys' stripes held.
//
// A value is read in place when it is one span (a chunked one is copied
// once). A change is made in a per-thread buffer and stored as a new string
// item that keeps the key's expiry, as SETBIT does; PFADD neither copies
// nor stores when no register would rise. PFCOUNT of one key stores the
// value back with its cached cardinality refreshed, because Redis writes
// the cache into the value: GET then gives Redis's bytes.
//
// Keyspace events are raised here, not by a rule in key_event_rules.cc,
// because they follow Redis's calls rather than the value's change: PFADD
// raises pfadd only when a register rose (its error path may store and
// raises nothing), PFMERGE raises pfadd on its destination even when
// nothing rose, and PFCOUNT's write-back raises none (it still
// invalidates tracking, as Redis's signalModifiedKey does).
#include "protocol/resp/types/hyperloglog.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/key_events.h"
#include "protocol/resp/commands/bitmap_internal.h"
#include "protocol/resp/commands/string_values.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/types/keyspace.h"

namespace trove::resp {
namespace {

using engine::ItemRef;

constexpr std::string_view kNotHll = "WRONGTYPE Key is not a valid HyperLogLog string value.";
constexpr std::string_view kCorruptHll = "INVALIDOBJ Corrupted HLL object detected";

// The per-thread buffer a command copies or edits a value in. Kept between
// commands, so PFADD allocates nothing in steady state; a buffer grown past
// kKeepBytes (a large hand-made sparse value) is given back at the end of
// the command. One command uses it at a time: handlers do not nest.
class EditBuffer {
 public:
  static constexpr size_t kKeepBytes = 64 * 1024;
  EditBuffer() : s_(Storage()) {}
  ~EditBuffer() {
    if (s_.capacity() > kKeepBytes) std::string().swap(s_);
  }
  EditBuffer(const EditBuffer&) = delete;
  EditBuffer& operator=(const EditBuffer&) = delete;
  std::string& str() { return s_; }

 private:
  static std::string& Storage() {
    thread_local std::string s;
    return s;
  }
  std::string& s_;
};

// PFMERGE's and multi-key PFCOUNT's union: one register a byte, on the
// stack (16 KiB), as Redis keeps it.
using UnionRegisters = std::array<uint8_t, hll::kRegisters>;

size_t SparseMaxBytes(const CommandContext& ctx) {
  const int64_t v = ctx.server->hll_sparse_max_bytes.load(std::memory_order_relaxed);
  return v < 0 ? 0 : static_cast<size_t>(v);
}

// The value of a string item as one view: in place when it is one span,
// else copied into *copy. Valid while `it` and *copy are.
std::string_view ValueOf(const ItemRef& it, std::string* copy) {
  if (!it.is_chunked()) return it.value();
  it.CopyValue(copy);
  return *copy;
}

// *out = the value, copied (unless ValueOf already copied it there).
void TakeValue(const ItemRef& it, std::string* out) {
  const std::string_view v = ValueOf(it, out);
  if (v.data() != out->data()) out->assign(v);
}

// Whether a string item holds a HyperLogLog; replies kNotHll when not.
bool CheckHll(CommandContext& ctx, const ItemRef& it) {
  uint8_t head[hll::kHeaderSize];
  const size_t len = it.value_length();
  ReadBytes(it, 0, head, sizeof head);
  const std::string_view h(reinterpret_cast<const char*>(head), std::min(len, sizeof head));
  if (hll::IsHll(h, len)) return true;
  ctx.Error(kNotHll);
  return false;
}

// Looks a key up for a HyperLogLog command: false after the reply when it
// holds another type or a string that is no HyperLogLog; *it null when
// missing.
bool LookupHll(CommandContext& ctx, std::string_view ekey, ItemRef* it) {
  if (!GetString(ctx, ekey, it)) return false;
  return !*it || CheckHll(ctx, *it);
}

// The events of a HyperLogLog write that Redis raises: new (when the
// command created the key), then pfadd.
void NotifyPfadd(CommandContext& ctx, std::string_view ekey, bool created) {
  if (created && (ctx.notify & protocol::kKeClassNew) != 0)
    ctx.fx->AddKeyEvent(protocol::kKeClassNew, "new", ekey);
  if ((ctx.notify & protocol::kKeClassString) != 0)
    ctx.fx->AddKeyEvent(protocol::kKeClassString, "pfadd", ekey);
}

// Stores a refreshed value with no reply: PFCOUNT answers its count even
// when its cache cannot be written (no memory). True when stored.
bool StoreQuietly(CommandContext& ctx, std::string_view ekey, std::string_view value,
                  int64_t exptime) {
  engine::AllocOutput a = ctx.engine->Allocate(ekey, 0, 0, value.size(), ctx.ts);
  if (a.status != engine::AllocStatus::kOk) return false;
  if (exptime != 0) ctx.engine->SetNewItemExpiryMs(a.item, exptime);
  a.item.WriteValue(0, value.data(), value.size());
  engine::StoreArgs args;
  args.mode = engine::StoreMode::kSet;
  return ctx.engine->StoreItemLocked(a.item, args, ctx.ts) == engine::StoreResult::kStored;
}

// ---------------------------------------------------------------------------
// PFADD PFCOUNT PFMERGE
// ---------------------------------------------------------------------------

// PFADD key [element ...]: 1 when the key was created or a register rose.
void CmdPfadd(CommandContext& ctx) {
  const std::string key = ctx.Key(1);
  ItemRef it;
  if (!LookupHll(ctx, key, &it)) return;
  EditBuffer buf;
  std::string& v = buf.str();
  const std::span<const std::string_view> elements = ctx.argv.subspan(2);
  size_t from = 0;  // the first element that raises a register
  int64_t exptime = 0;
  int64_t updated = 0;
  const bool created = !it;
  if (created) {
    hll::MakeEmpty(&v);
    updated = 1;  // Redis counts the new key as a change
  } else {
    // Elements that raise nothing leave the value as it is in Redis's
    // sequential adds too, so only the first one that rises matters.
    const std::string_view cur = ValueOf(it, &v);
    while (from < elements.size()) {
      const hll::Pattern p = hll::PatternOf(elements[from]);
      if (hll::WouldRaise(cur, p.index, p.rank)) break;
      ++from;
    }
    if (from == elements.size()) {
      ctx.dirty = 0;
      ctx.w->Integer(0);
      return;
    }
    if (cur.data() != v.data()) v.assign(cur);
    exptime = KeepExptime(it);
    it.Reset();
  }
  const size_t max_bytes = SparseMaxBytes(ctx);
  for (size_t i = from; i < elements.size(); ++i) {
    const hll::Change c = hll::Add(&v, elements[i], max_bytes);
    if (c == hll::Change::kChanged) ++updated;
    if (c != hll::Change::kCorrupt) continue;
    // Redis edits the value in place: what the elements before the bad
    // spot changed stays, unannounced and uncounted.
    if (updated > 0) {
      hll::InvalidateCache(&v);
      if (!StoreStringLocked(ctx, key, v, exptime, false)) return;
    }
    ctx.dirty = 0;
    ctx.Error(kCorruptHll);
    return;
  }
  if (updated == 0) {
    ctx.dirty = 0;
    ctx.w->Integer(0);
    return;
  }
  hll::InvalidateCache(&v);
  if (!StoreStringLocked(ctx, key, v, exptime, false)) return;
  NotifyPfadd(ctx, key, created);
  ctx.dirty = updated;
  ctx.w->Integer(1);
}

// PFCOUNT key key [key ...]: the estimate of the union, stored nowhere.
void CountUnion(CommandContext& ctx) {
  UnionRegisters max{};
  EditBuffer buf;
  for (size_t i = 1; i < ctx.argc(); ++i) {
    ItemRef it;
    if (!LookupHll(ctx, ctx.Key(i), &it)) return;
    if (!it) continue;  // an empty HyperLogLog
    if (!hll::MergeInto(ValueOf(it, &buf.str()), max.data())) {
      ctx.Error(kCorruptHll);
      return;
    }
  }
  ctx.w->Integer(static_cast<int64_t>(hll::CountRaw(max.data())));
}

// PFCOUNT key [key ...]. Read-only for Redis (may-replicate), yet one key's
// stale cache is recomputed and written back.
void CmdPfcount(CommandContext& ctx) {
  if (ctx.argc() > 2) {
    CountUnion(ctx);
    return;
  }
  const std::string key = ctx.Key(1);
  ItemRef it;
  if (!LookupHll(ctx, key, &it)) return;
  if (!it) {
    ctx.w->Integer(0);
    return;
  }
  uint8_t head[hll::kHeaderSize];
  ReadBytes(it, 0, head, sizeof head);
  uint64_t card = 0;
  if (hll::CachedCardinality(std::string_view(reinterpret_cast<char*>(head), sizeof head), &card)) {
    ctx.w->Integer(static_cast<int64_t>(card));  // the stale bit is clear: below 2^63
    return;
  }
  EditBuffer buf;
  std::string& v = buf.str();
  TakeValue(it, &v);
  const int64_t exptime = KeepExptime(it);
  it.Reset();
  if (!hll::Count(v, &card)) {
    ctx.Error(kCorruptHll);
    return;
  }
  hll::SetCachedCardinality(&v, card);
  if (StoreQuietly(ctx, key, v, exptime)) {
    ctx.dirty = 1;
    // A read command: the seam invalidates nothing for it.
    if ((ctx.notify & protocol::kKeTracking) != 0) ctx.fx->AddInvalidation(key);
  }
  ctx.w->Integer(static_cast<int64_t>(card));
}

// PFMERGE destkey [sourcekey ...]: the union of every named HyperLogLog,
// the destination's own included, stored at destkey (created when
// missing, dense when any input is dense).
void CmdPfmerge(CommandContext& ctx) {
  UnionRegisters max{};
  EditBuffer buf;
  std::string& v = buf.str();
  const std::string dest = ctx.Key(1);
  bool dense = false;
  ItemRef dest_item;
  for (size_t i = 1; i < ctx.argc(); ++i) {
    ItemRef it;
    if (!LookupHll(ctx, i == 1 ? dest : ctx.Key(i), &it)) return;
    if (!it) continue;
    const std::string_view cur = ValueOf(it, &v);
    if (hll::EncodingOf(cur) == hll::kEncodingDense) dense = true;
    if (!hll::MergeInto(cur, max.data())) {
      ctx.Error(kCorruptHll);
      return;
    }
    if (i == 1) dest_item = std::move(it);
  }
  const bool created = !dest_item;
  int64_t exptime = 0;
  if (created) {
    hll::MakeEmpty(&v);
  } else {
    TakeValue(dest_item, &v);
    exptime = KeepExptime(dest_item);
    dest_item.Reset();
  }
  if (!hll::Absorb(&v, max.data(), dense, SparseMaxBytes(ctx))) {
    ctx.Error(kCorruptHll);
    return;
  }
  if (!StoreStringLocked(ctx, dest, v, exptime, false)) return;
  NotifyPfadd(ctx, dest, created);
  ctx.dirty = 1;
  ctx.w->Ok();
}

// ---------------------------------------------------------------------------
// PFDEBUG PFSELFTEST
// ---------------------------------------------------------------------------

// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key. GETREG and TODENSE turn a
// sparse value dense and store it, as Redis converts its value in place
// (Redis signals no change then; here the key's version moves, so a WATCH
// of it fails).
void CmdPfdebug(CommandContext& ctx) {
  const std::string key = ctx.Key(2);
  ItemRef it;
  if (!GetString(ctx, key, &it)) return;
  if (!it) {
    ctx.Error("ERR The specified key does not exist");
    return;
  }
  if (!CheckHll(ctx, it)) return;
  const std::string_view sub = ctx.argv[1];
  EditBuffer buf;
  std::string& v = buf.str();
  ctx.dirty = 0;
  const bool getreg = EqualsIgnoreCase(sub, "getreg");
  if (getreg || EqualsIgnoreCase(sub, "todense")) {
    TakeValue(it, &v);
    const int64_t exptime = KeepExptime(it);
    it.Reset();
    const bool convert = hll::EncodingOf(v) == hll::kEncodingSparse;
    if (convert) {
      if (!hll::ToDense(&v)) {
        ctx.Error(kCorruptHll);
        return;
      }
      if (!StoreStringLocked(ctx, key, v, exptime, false)) return;
      ctx.dirty = 1;
    }
    if (!getreg) {
      ctx.w->Integer(convert ? 1 : 0);
      return;
    }
    const auto* regs = reinterpret_cast<const uint8_t*>(v.data()) + hll::kHeaderSize;
    ctx.w->ArrayHeader(hll::kRegisters);
    for (uint32_t i = 0; i < hll::kRegisters; ++i) ctx.w->Integer(hll::DenseRegister(regs, i));
    return;
  }
  const std::string_view cur = ValueOf(it, &v);
  const bool sparse = hll::EncodingOf(cur) == hll::kEncodingSparse;
  if (EqualsIgnoreCase(sub, "decode")) {
    if (!sparse) {
      ctx.Error("ERR HLL encoding is not sparse");
      return;
    }
    ctx.w->Bulk(hll::DecodeSparse(cur));
  } else if (EqualsIgnoreCase(sub, "encoding")) {
    ctx.w->Simple(sparse ? "sparse" : "dense");
  } else {
    std::string e = "ERR Unknown PFDEBUG subcommand '";
    e.append(sub);
    e += '\'';
    ctx.Error(e);
  }
}

// PFSELFTEST: the register packing and the estimator's error bounds
// (hll::SelfTest; about half a second of this worker, as in Redis).
void CmdPfselftest(CommandContext& ctx) {
  const auto seed = static_cast<uint64_t>(ctx.server->NowUs()) * 0x9e3779b97f4a7c15ULL;
  const std::string err = hll::SelfTest(seed, SparseMaxBytes(ctx));
  if (err.empty())
    ctx.w->Ok();
  else
    ctx.Error(err);
}

}  // namespace

void RegisterHyperLogLogCommands(std::vector<CommandSpec>* t) {
  const CommandAdder add{t, "hyperloglog"};
  add("pfadd", -2, kCmdWrite | kCmdDenyOom | kCmdFast, 1, 1, CmdPfadd,
      "Adds elements to a HyperLogLog key. Creates the key if it doesn't exist.", "2.8.9");
  add("pfcount", -2, kCmdReadonly, 1, -1, CmdPfcount,
      "Returns the approximated cardinality of the set(s) observed by the HyperLogLog key(s).",
      "2.8.9");
  add("pfmerge", -2, kCmdWrite | kCmdDenyOom, 1, -1, CmdPfmerge,
      "Merges one or more HyperLogLog values into a single key.", "2.8.9");
  add("pfdebug", 3, kCmdWrite | kCmdDenyOom | kCmdAdmin, 2, 2, CmdPfdebug,
      "Internal commands for debugging HyperLogLog values.", "2.8.9");
  add("pfselftest", 1, kCmdAdmin, CmdPfselftest,
      "An internal command for testing HyperLogLog values.", "2.8.9");
}

}  // namespace trove::resp
