// Collections in the keyspace: decoding an item into its value, the
// per-command scratch of decoded values, LoadCollection / LoadOrCreate /
// FinishUpdate and the stores after a command (collections.h). Run under the
// key's stripe.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "protocol/resp/core/client.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/core/scan_util.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/types/keyspace.h"

namespace trove::resp {

namespace {

std::unique_ptr<CollectionBase> NewOfType(engine::ValueType t) {
  switch (t) {
    case engine::ValueType::kList:
      return std::make_unique<ListValue>();
    case engine::ValueType::kHash:
      return std::make_unique<HashValue>();
    case engine::ValueType::kSet:
      return std::make_unique<SetValue>();
    case engine::ValueType::kZset:
      return std::make_unique<ZsetValue>();
    case engine::ValueType::kString:
      break;
  }
  return nullptr;
}

// Decodes a compact collection item. Decoding can only fail on a corrupt
// item; the result is then empty rather than a crash.
std::unique_ptr<CollectionBase> DecodeItem(const engine::ItemRef& it) {
  std::unique_ptr<CollectionBase> c = NewOfType(it.type());
  std::string bytes;
  it.CopyValue(&bytes);
  if (c != nullptr && !c->Decode(bytes)) c = NewOfType(it.type());
  return c;
}

ScratchEntry* FindScratch(CommandContext& ctx, std::string_view ekey) {
  if (ctx.scratch == nullptr) return nullptr;
  for (auto& e : *ctx.scratch)
    if (e.key == ekey) return &e;
  return nullptr;
}

ScratchEntry* FindScratchObj(CommandContext& ctx, const CollectionBase* v) {
  if (ctx.scratch == nullptr) return nullptr;
  for (auto& e : *ctx.scratch)
    if (e.obj == v && v != nullptr) return &e;
  return nullptr;
}

void DropScratch(CommandContext& ctx, std::string_view ekey) {
  if (ScratchEntry* e = FindScratch(ctx, ekey)) {
    e->obj = nullptr;
    e->heap_resident = false;
  }
}

ScratchEntry* AddScratch(CommandContext& ctx, std::string_view ekey) {
  CHECK(ctx.scratch != nullptr);
  if (ScratchEntry* e = FindScratch(ctx, ekey)) return e;
  ctx.scratch->emplace_back();
  ctx.scratch->back().key.assign(ekey);
  return &ctx.scratch->back();
}

// Stores v's byte form as the item at ekey; false (no reply written) if the
// engine cannot allocate it.
bool StoreCompact(CommandContext& ctx, std::string_view ekey, engine::ValueType type,
                  const CollectionBase& v, int64_t expire_ms) {
  std::string bytes;
  v.Encode(&bytes);
  engine::AllocOutput a = ctx.engine->Allocate(ekey, 0, 0, bytes.size(), ctx.ts, type);
  if (a.status != engine::AllocStatus::kOk) return false;
  if (expire_ms != 0) ctx.engine->SetNewItemExpiryMs(a.item, expire_ms);
  a.item.WriteValue(0, bytes.data(), bytes.size());
  engine::StoreArgs args;
  return ctx.engine->StoreItemLocked(a.item, args, ctx.ts) == engine::StoreResult::kStored;
}

// A hash whose fields have TTLs now lives at ekey: the active field expiry
// (services/hash_field_expiry.h) is told its earliest, at_ms (0: none, nothing
// to do). Every store of a collection passes here, so RENAME, COPY, MOVE and
// SWAPDB register the new key without knowing about field TTLs.
void NoteFieldTtls(CommandContext& ctx, std::string_view ekey, int64_t at_ms) {
  if (at_ms == 0 || ctx.server == nullptr) return;
  ctx.server->hash_field_expiry().Note(ekey, at_ms);
}

// A list or zset that has data now: the blocked clients waiting on it are
// tried after this command (block_registry.h).
void SignalReady(CommandContext& ctx, std::string_view ekey, engine::ValueType type) {
  if (type != engine::ValueType::kList && type != engine::ValueType::kZset) return;
  if (ctx.fx == nullptr || ctx.server == nullptr || !ctx.server->blocks().any()) return;
  ctx.fx->AddReadyKey(ekey);
}

// Moves a scratch object into the engine as a HeapValue; false if that fails.
bool StoreHeap(CommandContext& ctx, ScratchEntry* e) {
  engine::AllocOutput a =
      ctx.engine->AllocateHeap(e->key, 0, e->type, std::move(e->owned), ctx.ts);
  if (a.status != engine::AllocStatus::kOk) return false;
  if (e->exptime != 0) ctx.engine->SetNewItemExpiryMs(a.item, e->exptime);
  engine::StoreArgs args;
  if (ctx.engine->StoreItemLocked(a.item, args, ctx.ts) != engine::StoreResult::kStored) {
    return false;
  }
  e->heap_resident = true;
  NoteFieldTtls(ctx, e->key, e->obj->next_field_expiry());
  return true;
}

}  // namespace

LoadStatus LoadAnyCollection(CommandContext& ctx, std::string_view ekey, CollectionBase** out,
                             engine::ValueType* type) {
  *out = nullptr;
  if (ScratchEntry* e = FindScratch(ctx, ekey)) {
    if (e->obj != nullptr) {
      *out = e->obj;
      *type = e->type;
      return LoadStatus::kOk;
    }
  }
  engine::ItemRef it = ctx.engine->GetLocked(ekey, ctx.ts, !ctx.no_touch);
  if (ctx.count_keyspace) CountKeyspace(ctx, static_cast<bool>(it), ekey);
  if (!it) return LoadStatus::kMissing;
  if (it.type() == engine::ValueType::kString) return LoadStatus::kWrongType;
  *type = it.type();
  if (it.is_heap()) {
    *out = static_cast<CollectionBase*>(it.heap());
    return LoadStatus::kOk;
  }
  if (ctx.scratch == nullptr) return LoadStatus::kWrongType;
  ScratchEntry* e = AddScratch(ctx, ekey);
  e->owned = DecodeItem(it);
  e->obj = e->owned.get();
  e->type = it.type();
  e->exptime = it.expires_at_unix_ms();
  e->heap_resident = false;
  *out = e->obj;
  return LoadStatus::kOk;
}

CollectionBase* CreateScratch(CommandContext& ctx, std::string_view ekey, engine::ValueType type,
                              std::unique_ptr<CollectionBase> v) {
  ScratchEntry* e = AddScratch(ctx, ekey);
  e->owned = std::move(v);
  e->obj = e->owned.get();
  e->type = type;
  e->exptime = 0;
  e->heap_resident = false;
  return e->obj;
}

CollectionBase* StoreNewCollection(CommandContext& ctx, std::string_view ekey,
                                   engine::ValueType type, std::unique_ptr<CollectionBase> v,
                                   int64_t exptime) {
  DCHECK(ctx.locked);
  DropScratch(ctx, ekey);
  if (ekey.size() > limits::kEngineMaxKey) {
    ctx.Error("ERR key too long (Trove keys are at most 65535 bytes)");
    return nullptr;
  }
  if (v->compact()) {
    if (!StoreCompact(ctx, ekey, type, *v, exptime)) {
      ctx.Error("OOM command not allowed when used memory > 'maxmemory'.");
      return nullptr;
    }
    ScratchEntry* e = AddScratch(ctx, ekey);
    e->owned = std::move(v);
    e->obj = e->owned.get();
    e->type = type;
    e->exptime = exptime;
    SignalReady(ctx, ekey, type);
    NoteFieldTtls(ctx, ekey, e->obj->next_field_expiry());
    return e->obj;
  }
  CollectionBase* raw = v.get();
  SignalReady(ctx, ekey, type);
  engine::AllocOutput a = ctx.engine->AllocateHeap(ekey, 0, type, std::move(v), ctx.ts);
  if (a.status != engine::AllocStatus::kOk) {
    ctx.Error("OOM command not allowed when used memory > 'maxmemory'.");
    return nullptr;
  }
  if (exptime != 0) ctx.engine->SetNewItemExpiryMs(a.item, exptime);
  engine::StoreArgs args;
  engine::StoreResult r = ctx.engine->StoreItemLocked(a.item, args, ctx.ts);
  if (r != engine::StoreResult::kStored) {
    ctx.Error("OOM command not allowed when used memory > 'maxmemory'.");
    return nullptr;
  }
  NoteFieldTtls(ctx, ekey, raw->next_field_expiry());
  return raw;
}

bool CopyItemLocked(CommandContext& ctx, const engine::ItemRef& item, std::string_view dst,
                    int64_t exptime) {
  DropScratch(ctx, dst);
  if (item.is_heap()) {
    auto* src = static_cast<CollectionBase*>(item.heap());
    return StoreNewCollection(ctx, dst, item.type(), src->Clone(), exptime) != nullptr;
  }
  std::string v;
  item.CopyValue(&v);
  if (!StoreStringLocked(ctx, dst, v, exptime, false, item.type())) return false;
  SignalReady(ctx, dst, item.type());  // a compact list or zset: RENAME, COPY, MOVE
  if (item.type() == engine::ValueType::kHash)
    NoteFieldTtls(ctx, dst, HashValue::PeekNextFieldExpiry(v));
  return true;
}

std::string CollectionEncoding(const engine::ItemRef& item) {
  if (item.is_heap()) return static_cast<CollectionBase*>(item.heap())->encoding();
  return DecodeItem(item)->encoding();
}

void FinishUpdate(CommandContext& ctx, std::string_view ekey, CollectionBase* v,
                  size_t bytes_before) {
  if (v->size() > 0 && ctx.server != nullptr && ctx.server->blocks().any()) {
    SignalReady(ctx, ekey, engine::ValueType::kList);  // the type is checked when served
  }
  ScratchEntry* e = FindScratchObj(ctx, v);
  if (e == nullptr || e->heap_resident) {
    // A HeapValue changed in place. Account first: the engine subtracts the
    // value's MemoryUsage() as it is when the item is freed.
    v->Bump();
    size_t after = v->MemoryUsage();
    if (after != bytes_before) {
      ctx.engine->AdjustHeapBytes(static_cast<int64_t>(after) - static_cast<int64_t>(bytes_before));
    }
    if (v->size() == 0) {
      ctx.engine->UnlinkLocked(ekey, ctx.ts);
      DropScratch(ctx, ekey);
    } else {
      NoteFieldTtls(ctx, ekey, v->next_field_expiry());
    }
    return;
  }
  if (v->size() == 0) {
    ctx.engine->UnlinkLocked(ekey, ctx.ts);
    e->obj = nullptr;
    return;
  }
  // A compact value is written back as a new item (new CAS, so WATCH sees
  // it). If the engine has no room, write_failed makes Session answer -OOM
  // instead of the reply the handler wrote.
  if (v->compact() && StoreCompact(ctx, ekey, e->type, *v, e->exptime)) {
    NoteFieldTtls(ctx, ekey, v->next_field_expiry());
    return;
  }
  // Past the thresholds (or no room for the bytes): the object itself
  // becomes the item's HeapValue.
  if (!StoreHeap(ctx, e)) {
    e->obj = nullptr;
    if (ctx.write_failed != nullptr) *ctx.write_failed = true;
  }
}

}  // namespace trove::resp
