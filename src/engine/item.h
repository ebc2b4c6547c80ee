// Item: the header at the start of every slab chunk, and the layout helpers
// that find the key, CAS and value behind it. Used by every engine thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "common/check.h"

namespace trove::engine {

class HeapValue;  // engine.h

// Flag bits of Item::flags. Set and cleared with atomic or/and so that a hit
// (stripe lock) and a tail walk (LRU lock) never race on the word.
enum ItemFlag : uint16_t {
  kItemLinked = 1 << 0,     // in the hash table and an LRU; holds one reference
  kItemCas = 1 << 1,        // header carries a 64-bit CAS (engine use_cas)
  kItemSlabbed = 1 << 2,    // on a slab free list (slabs lock)
  kItemFetched = 1 << 3,    // read at least once since stored
  kItemActive = 1 << 4,     // read twice: the maintainer keeps it warm
  kItemChunked = 1 << 5,    // value lives in chunk parts (head item)
  kItemChunkPart = 1 << 6,  // a value chunk of a chunked item (no key)
  kItemHeap = 1 << 7,       // value is a HeapValue*
  kItemStale = 1 << 8,      // invalidated (meta ms I / md I)
  kItemTokenSent = 1 << 9,  // a client holds the recache (win) token
  kItemSetAside = 1 << 10,  // free chunk of a page being moved (slabs lock)
  kItemKeyBinary = 1 << 11, // key was given in base64 (meta b): mg k returns it so
  // Expiry has millisecond precision (RESP): it falls exptime seconds plus
  // client_flags milliseconds after the engine's start, and the memcached
  // client flags read as 0. Only items whose client flags were 0 get it.
  kItemExpMs = 1 << 12,
  // Expiry past exptime's 32-bit range (more than ~136 years after the
  // engine's start; Redis accepts unix times up to INT64_MAX ms). Only with
  // kItemExpMs: exptime and client_flags together then hold the expiry as
  // 64-bit engine-relative milliseconds. See ExpiryRelMs.
  kItemExpFar = 1 << 13,
};

enum class Segment : uint8_t { kHot = 0, kWarm = 1, kCold = 2, kTemp = 3 };
inline constexpr int kSegments = 4;
// Class ids use the low 6 bits of Item::clsid; the segment the top 2
// (memcached packs its sub-LRU id the same way), so at most 63 classes.
inline constexpr int kMaxClasses = 64;
inline constexpr uint8_t kClassMask = 0x3f;

// The header. 48 bytes, plus 8 when the engine keeps CAS (memcached 1.6: 48
// plus 8). Followed by [cas] key value "\r\n"; a chunked head item holds a
// pointer to its first chunk part after the key instead of the value.
//
// Thread safety: fields name their guard. "stripe" is the item lock of the
// key's hash. Invariants:
//  1. kItemLinked set <=> reachable from the hash table and on exactly one LRU
//     list; the link holds one reference.
//  2. refcount == 0 <=> not linked and nobody holds a reference; only then is
//     the chunk given back to the slabs.
//  3. key, nkey, nbytes and the value are immutable while linked, except that
//     Arith rewrites a number in place when it holds the only other reference.
struct Item {
  Item* next;                       // LRU list (LRU lock) or free list (slabs lock)
  Item* prev;                       // same guard as next
  Item* h_next;                     // hash chain (stripe); chunk parts: the head item
  // (chunk parts use next/prev as the part list: see FirstPart)
  std::atomic<uint32_t> time;       // last access, engine-relative seconds (relaxed)
  // Engine-relative seconds; 0 = never (written under stripe). With
  // kItemExpFar the high half of the expiry in ms (never 0): read it through
  // ExpirySecOf / ExpiryRelMs, except to test it against 0.
  std::atomic<uint32_t> exptime;
  uint32_t nbytes;                  // value bytes without CRLF (parts: bytes used)
  std::atomic<uint16_t> refcount;   // atomic; see invariant 2
  std::atomic<uint16_t> flags;      // ItemFlag bits, atomic or/and (relaxed)
  std::atomic<uint8_t> clsid;       // class | segment << 6; segment changes under stripe
  uint8_t type;                     // ValueType; fixed at allocation
  uint16_t nkey;                    // fixed at allocation
  // memcached flags, or with kItemExpMs the expiry's milliseconds (0-999),
  // or with kItemExpFar the low half of the expiry in ms. Written under the
  // stripe; relaxed atomic because memcached readers use it after the stripe
  // is released.
  std::atomic<uint32_t> client_flags;
};
static_assert(sizeof(Item) == 48, "item header must stay compact");

inline constexpr size_t kItemHeader = sizeof(Item);

inline bool HasFlag(const Item* it, uint16_t f) {
  return (it->flags.load(std::memory_order_relaxed) & f) != 0;
}
inline void SetFlag(Item* it, uint16_t f) {
  // Skip the write when set: hits on hot items would otherwise bounce the line.
  if (!HasFlag(it, f)) it->flags.fetch_or(f, std::memory_order_relaxed);
}
inline void ClearFlag(Item* it, uint16_t f) {
  if (HasFlag(it, f)) it->flags.fetch_and(static_cast<uint16_t>(~f), std::memory_order_relaxed);
}
inline int ClassOf(const Item* it) { return it->clsid.load(std::memory_order_relaxed) & kClassMask; }
inline Segment SegmentOf(const Item* it) {
  return static_cast<Segment>(it->clsid.load(std::memory_order_relaxed) >> 6);
}
inline void SetSegment(Item* it, Segment s) {
  it->clsid.store(static_cast<uint8_t>(ClassOf(it) | (static_cast<int>(s) << 6)),
                  std::memory_order_relaxed);
}

// The client flags memcached sees (0 for an item with a millisecond expiry).
// Reads client_flags first (acquire) so a concurrent switch to kItemExpMs,
// which sets the flag before storing the milliseconds (release), never shows
// the milliseconds as flags.
inline uint32_t ClientFlagsOf(const Item* it) {
  uint32_t f = it->client_flags.load(std::memory_order_acquire);
  return HasFlag(it, kItemExpMs) ? 0 : f;
}
// Expiry.
//
// Near (the common case): exptime holds whole engine-relative seconds and,
// under kItemExpMs, client_flags the 0-999 ms past them. Far (kItemExpFar,
// always with kItemExpMs, only for a RESP expiry more than UINT32_MAX
// seconds after the engine's start): the two words hold the expiry as
// engine-relative ms, exptime the high half, client_flags the low. Such an
// expiry is at least 2^32 * 1000 ms away, so exptime is at least 1000 and
// still reads "expires" to a test against 0. Nothing is added to the header: an
// item that does not use the far form pays nothing, and the 48 bytes stay.
//
// All writers hold the item's stripe (or the item is not linked yet). A
// reader without the stripe (CacheDump) may pair the flags of one expiry
// with the words of another while a RESP command changes it: it may show a
// wrong time, never touch memory it should not.

inline constexpr uint32_t kExpiryMaxSec = UINT32_MAX;

inline bool ExpiryIsFar(const Item* it) { return HasFlag(it, kItemExpFar); }
// Seconds for comparisons with the engine's clock (Engine::Impl::Now): the
// second the expiry falls in, or kExpiryMaxSec for a far one (the 32-bit
// clock never reaches it). 0 = never.
inline uint32_t ExpirySecOf(const Item* it) {
  const uint32_t e = it->exptime.load(std::memory_order_relaxed);
  return (e != 0 && ExpiryIsFar(it)) ? kExpiryMaxSec : e;
}
// The exact expiry in engine-relative ms (0 = never).
inline uint64_t ExpiryRelMs(const Item* it) {
  const uint64_t e = it->exptime.load(std::memory_order_relaxed);
  if (e == 0) return 0;
  const uint16_t f = it->flags.load(std::memory_order_relaxed);
  if ((f & kItemExpMs) == 0) return e * 1000;
  const uint64_t low = it->client_flags.load(std::memory_order_relaxed);
  return (f & kItemExpFar) != 0 ? (e << 32) | low : e * 1000 + low;
}
// The exact expiry in engine-relative whole seconds (0 = never).
inline uint64_t ExpiryRelSec(const Item* it) {
  return ExpiryIsFar(it) ? ExpiryRelMs(it) / 1000 : it->exptime.load(std::memory_order_relaxed);
}
// Whole seconds left at engine second `now` (0 once due), -1 = never.
inline int64_t ExpiryTtlSec(const Item* it, uint32_t now) {
  const uint64_t e = ExpiryRelSec(it);
  if (e == 0) return -1;
  return e > now ? static_cast<int64_t>(e - now) : 0;
}
// Milliseconds past the expiry's second (0 without kItemExpMs).
inline uint32_t ExpiryMsPart(const Item* it) {
  if (!HasFlag(it, kItemExpMs)) return 0;
  return static_cast<uint32_t>(ExpiryIsFar(it) ? ExpiryRelMs(it) % 1000
                                               : it->client_flags.load(std::memory_order_relaxed));
}
// Sets the expiry of `it` (under its stripe, or not yet linked) to `sec`
// engine-relative seconds plus `ms` milliseconds (0 = never when sec is 0).
// The milliseconds need the client-flags slot: an item with memcached flags
// of its own rounds up to the next second instead (and stays at
// kExpiryMaxSec at the top).
inline void StoreExpiry(Item* it, uint32_t sec, uint32_t ms) {
  if (ms != 0 && sec != 0) {
    if (HasFlag(it, kItemExpMs) || it->client_flags.load(std::memory_order_relaxed) == 0) {
      SetFlag(it, kItemExpMs);  // before the milliseconds: see ClientFlagsOf
      it->client_flags.store(ms, std::memory_order_release);
    } else if (sec != kExpiryMaxSec) {
      ++sec;
    }
  } else if (HasFlag(it, kItemExpMs)) {
    it->client_flags.store(0, std::memory_order_relaxed);
  }
  ClearFlag(it, kItemExpFar);
  it->exptime.store(sec, std::memory_order_relaxed);
}
// Sets the expiry of `it` (StoreExpiry's rules) to `rel_ms` engine-relative
// milliseconds, exactly however far (0 = never). An expiry past
// kExpiryMaxSec seconds takes the far form, or, on an item whose memcached
// flags hold the slot, stays at kExpiryMaxSec (about 136 years away).
inline void StoreExpiryRelMs(Item* it, uint64_t rel_ms) {
  if (rel_ms / 1000 <= kExpiryMaxSec) {
    StoreExpiry(it, static_cast<uint32_t>(rel_ms / 1000), static_cast<uint32_t>(rel_ms % 1000));
    return;
  }
  if (!HasFlag(it, kItemExpMs) && it->client_flags.load(std::memory_order_relaxed) != 0) {
    StoreExpiry(it, kExpiryMaxSec, 0);
    return;
  }
  // Flags before the words (see ClientFlagsOf); exptime last, so a reader
  // that finds it 0 before the switch still reads "never".
  SetFlag(it, kItemExpMs);
  SetFlag(it, kItemExpFar);
  it->client_flags.store(static_cast<uint32_t>(rel_ms), std::memory_order_release);
  it->exptime.store(static_cast<uint32_t>(rel_ms >> 32), std::memory_order_relaxed);
}
// Sets whole seconds (memcached's touch, gat, mg T, md I T): a RESP expiry's
// sub-second part stays, as it always has; a far expiry becomes a near one.
inline void TouchExpiry(Item* it, uint32_t sec) { StoreExpiry(it, sec, ExpiryMsPart(it)); }
// Gives `to` the expiry of `from` (StoreExpiryRelMs's rules).
inline void CopyExpiry(Item* to, const Item* from) { StoreExpiryRelMs(to, ExpiryRelMs(from)); }

inline size_t HeaderSize(const Item* it) { return kItemHeader + (HasFlag(it, kItemCas) ? 8 : 0); }
inline char* ItemKey(Item* it) { return reinterpret_cast<char*>(it) + HeaderSize(it); }
inline const char* ItemKey(const Item* it) {
  return reinterpret_cast<const char*>(it) + HeaderSize(it);
}
inline std::string_view KeyOf(const Item* it) { return {ItemKey(it), it->nkey}; }
// Value of an unchunked item (followed by CRLF).
inline char* ItemData(Item* it) { return ItemKey(it) + it->nkey; }
inline const char* ItemData(const Item* it) { return ItemKey(it) + it->nkey; }
// Data bytes of a chunk part.
inline char* PartData(Item* part) { return reinterpret_cast<char*>(part) + kItemHeader; }

// A kItemHeap item's value is a HeapValue pointer (unaligned-safe copies).
inline HeapValue* HeapValueOf(const Item* it) {
  HeapValue* hv;
  std::memcpy(&hv, ItemData(it), sizeof(hv));
  return hv;
}
inline void SetHeapValue(Item* it, HeapValue* hv) { std::memcpy(ItemData(it), &hv, sizeof(hv)); }

// CAS lives unaligned-safe at offset 48 (8-aligned: chunks are 8-aligned).
inline uint64_t CasOf(const Item* it) {
  if (!HasFlag(it, kItemCas)) return 0;
  auto* p = reinterpret_cast<uint64_t*>(const_cast<Item*>(it) + 1);
  return __atomic_load_n(p, __ATOMIC_RELAXED);
}
inline void SetCas(Item* it, uint64_t cas) {
  if (!HasFlag(it, kItemCas)) return;
  __atomic_store_n(reinterpret_cast<uint64_t*>(it + 1), cas, __ATOMIC_RELAXED);
}

// Chunked items. The head item holds, 8-aligned after its key, a pointer to
// the first part; parts form a doubly linked list through next/prev (a part is
// never on an LRU or free list while it belongs to a head) and name their head
// in h_next. nbytes of a part is the payload bytes it holds. An item may have
// as many parts as its size needs (memcached: -I / slab_chunk_max of them).
// The links change only under the head's stripe with no other reference held
// (the slab mover's chunk rescue), or before the head is linked.
inline size_t PartSlotOffset(size_t header, size_t nkey) { return (header + nkey + 7) & ~size_t{7}; }
// Bytes a chunked head needs (header, key, first-part pointer).
inline size_t ChunkedHeadSize(size_t header, size_t nkey) {
  return PartSlotOffset(header, nkey) + sizeof(Item*);
}
inline Item* FirstPart(const Item* it) {
  Item* p;
  std::memcpy(&p, reinterpret_cast<const char*>(it) + PartSlotOffset(HeaderSize(it), it->nkey),
              sizeof(p));
  return p;
}
inline void SetFirstPart(Item* it, Item* part) {
  std::memcpy(reinterpret_cast<char*>(it) + PartSlotOffset(HeaderSize(it), it->nkey), &part,
              sizeof(part));
}

// Copies `len` bytes of src into the item's payload (value + CRLF space) at
// `off`, across parts when chunked. REQUIRES: off + len <= nbytes + 2.
void WritePayload(Item* it, size_t off, const char* src, size_t len);
// Copies payload bytes [off, off+len) out.
void ReadPayload(const Item* it, size_t off, char* dst, size_t len);

}  // namespace trove::engine
