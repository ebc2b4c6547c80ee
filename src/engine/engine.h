// Engine: the storage engine every protocol uses (memcached's design: slab
// allocator, segmented LRU, hash table with striped item locks, atomic
// refcounts). No networking. All public methods are thread-safe unless marked
// REQUIRES; background threads (LRU maintainer, crawler, hash expander, slab
// rebalancer) start in Start() and stop in Stop().
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/non_copyable.h"
#include "common/result.h"
#include "engine/item_observer.h"

namespace trove::engine {

class HeapCodec;  // heap_codec.h
struct WarmStart;  // warm_restart.h

// Settings fixed at creation (memcached's flags; defaults are memcached's).
struct EngineOptions {
  size_t mem_limit = 64ull << 20;      // -m, bytes of item memory
  // memcached's T_MEMD_INITIAL_MALLOC test hook: bytes counted as already
  // allocated (total_malloced starts there), so a test can reach -m quickly.
  size_t initial_malloced = 0;
  size_t item_size_max = 1u << 20;     // -I, also the slab page size
  double factor = 1.25;                // -f
  size_t chunk_size_min = 48;          // -n (value bytes of the smallest class)
  size_t slab_chunk_max = 0;           // 0 = item_size_max / 2
  bool use_cas = true;                 // -C turns it off
  bool evict_to_free = true;           // -M sets false: out-of-memory error instead
  int hashpower_init = 16;             // -o hashpower
  int item_lock_power = 13;            // stripes = 2^power
  bool lru_maintainer = true;
  // -o no_lru_segmented (and no_lru_maintainer, no_modern, as memcached):
  // new items go straight to COLD and stay there ("compat mode").
  bool lru_segmented = true;
  bool lru_crawler = true;
  int hot_lru_pct = 20;
  int warm_lru_pct = 40;
  double hot_max_factor = 0.2;
  double warm_max_factor = 2.0;
  bool temp_lru = false;
  uint32_t temp_ttl = 61;
  bool slab_reassign = true;
  int slab_automove = 1;               // 0 off, 1 conservative, 2 aggressive
  double slab_automove_ratio = 0.8;
  uint32_t slab_automove_window = 10;      // seconds of history (3..1800)
  double slab_automove_freeratio = 0.01;   // memory kept free in the global pool
  bool prealloc = false;               // -L
  const Clock* clock = nullptr;        // nullptr = SystemClock::Default()
  // -e: slab pages live in this file (mapped MAP_SHARED), saved by
  // SaveForRestart and reused by the next Create with the same settings
  // (warm_restart.h). Empty: pages are malloc'd.
  std::string memory_file;
  // Turns heap values into bytes and back across a warm restart; not owned,
  // outlives the engine (nullptr: heap-valued items do not survive).
  const HeapCodec* heap_codec = nullptr;
  // Receives memcached's "[restart] ..." lines; nullptr writes them to stderr.
  std::function<void(std::string_view)> restart_log;
};

// What an item's value holds. Strings are bytes. Collection items (RESP) hold
// either a compact byte encoding (kEncodedBytes) chosen by the RESP layer, or
// a HeapValue (kHeap) for large collections.
enum class ValueType : uint8_t { kString = 0, kList = 1, kHash = 2, kSet = 3, kZset = 4 };

// Outcomes, not errors (memcached's store_item_type).
enum class StoreResult : uint8_t { kStored, kNotStored, kExists, kNotFound, kTooLarge, kNoMemory };
enum class StoreMode : uint8_t { kSet, kAdd, kReplace, kAppend, kPrepend, kCas };
enum class ArithResult : uint8_t { kOk, kNotFound, kNonNumeric, kExists, kNoMemory };
enum class DeleteResult : uint8_t { kDeleted, kNotFound, kExists };
enum class AllocStatus : uint8_t { kOk, kTooLarge, kNoMemory };

class Engine;
struct Item;          // defined in item.h; opaque to protocols
struct ThreadStats;   // defined in stats.h; one per worker thread

// A large collection stored outside slab memory. The item's value holds only
// the pointer; the engine deletes the object when the item is freed.
// Thread safety: read or written only while the key's stripe lock is held
// (through a KeyLockSet), because collections are mutated in place.
class HeapValue {
 public:
  virtual ~HeapValue() = default;
  // Bytes used, counted against the -m limit (call Engine::AdjustHeapBytes
  // after changing it in place).
  virtual size_t MemoryUsage() const = 0;
};

// A counted reference to an item. Move-only; the reference is dropped on
// destruction. While held, the item's memory is not reused, so its value may
// be sent straight from item memory. The fields are immutable while the item
// is linked, except flag bits and times the engine updates under the lock.
class ItemRef {
 public:
  ItemRef() = default;
  ItemRef(Engine* e, Item* it) : engine_(e), item_(it) {}
  ~ItemRef() { Reset(); }
  ItemRef(ItemRef&& o) noexcept : engine_(o.engine_), item_(o.item_) { o.item_ = nullptr; }
  ItemRef& operator=(ItemRef&& o) noexcept {
    if (this != &o) { Reset(); engine_ = o.engine_; item_ = o.item_; o.item_ = nullptr; }
    return *this;
  }
  ItemRef(const ItemRef&) = delete;
  ItemRef& operator=(const ItemRef&) = delete;

  explicit operator bool() const { return item_ != nullptr; }
  void Reset();

  std::string_view key() const;
  uint32_t client_flags() const;
  uint64_t cas() const;            // 0 when CAS is off
  uint32_t value_length() const;   // bytes, without the trailing CRLF
  ValueType type() const;
  int slab_class() const;          // of the head chunk
  bool is_heap() const;            // value is a HeapValue*
  bool is_chunked() const;         // value spans several chunks
  bool key_is_binary() const;      // stored with a base64 key (meta b)
  // Absolute expiry as unix seconds (the second it falls in); 0 = never.
  int64_t expires_at_unix() const;
  // The same in unix milliseconds: exact for RESP's expiries, however far
  // (any int64 ms Redis accepts; item.h, "Expiry").
  int64_t expires_at_unix_ms() const;

  // The value as iovecs straight from item memory (1 span unless chunked);
  // with_crlf appends the "\r\n" the engine stores after every value.
  // Writes at most max spans, starting after the first `skip`; returns how
  // many it wrote. A chunked value has SpanCount() spans (-I / slab_chunk_max
  // at most), so callers with a fixed array take them in batches.
  int ValueSpans(iovec* out, int max, bool with_crlf, size_t skip = 0) const;
  size_t SpanCount(bool with_crlf) const;
  // The value when it is one span (always true unless is_chunked()).
  std::string_view value() const;
  // Copies the value out (any layout).
  void CopyValue(std::string* out) const;
  // Writable value memory of an item from Engine::Allocate that is not yet
  // stored (nullptr when chunked: use WriteValue then).
  char* writable_value();
  // Copies len bytes into the value at off, across chunks. REQUIRES: not
  // yet stored, off + len <= value_length().
  void WriteValue(size_t off, const char* src, size_t len);
  HeapValue* heap() const;         // REQUIRES: is_heap() and stripe lock held

  // Gives up ownership without dropping the reference (for OutputBuffer);
  // release later with Engine::ReleaseRaw(engine, item).
  Item* Detach() { Item* it = item_; item_ = nullptr; return it; }
  Engine* engine() const { return engine_; }
  Item* raw() const { return item_; }

 private:
  Engine* engine_ = nullptr;
  Item* item_ = nullptr;
};

// --- arguments of the richer operations (meta protocol, RESP) ---

struct StoreArgs {
  StoreMode mode = StoreMode::kSet;
  // kCas / ms C: the item's CAS must equal it. Given with set or replace it
  // turns the store into a cas. A value of 0 never matches (memcached treats a
  // zero unique as "no CAS", so `cas k 0 0 1 0` and `ms k 1 C0` answer EXISTS).
  std::optional<uint64_t> compare_cas;
  uint64_t explicit_cas = 0;        // ms E: CAS to give the new item (0 = next)
  bool invalidate = false;          // ms I: a CAS older than the item's marks
                                    // the stored item stale instead of failing
  std::optional<int64_t> vivify_exptime;  // ms N in append/prepend: create on miss
  bool keep_ttl = false;            // RESP SET KEEPTTL: keep the old expiry
  bool bump = true;
  bool key_binary = false;          // ms b: the key arrived in base64 (ItemRef::key_is_binary)
};

struct ArithArgs {
  bool incr = true;                 // false = decr (floors at 0); incr wraps at 2^64
  uint64_t delta = 1;
  uint64_t compare_cas = 0;         // ma C; 0 = no compare (memcached ignores ma C0)
  uint64_t explicit_cas = 0;        // ma E
  std::optional<int64_t> vivify_exptime;  // ma N: create on miss with `initial`
  uint64_t initial = 0;             // ma J
  std::optional<int64_t> touch_exptime;   // ma T
};
struct ArithOutput {
  ArithResult result = ArithResult::kNotFound;
  uint64_t value = 0;
  uint64_t cas = 0;
  int64_t ttl = -1;                 // seconds left, -1 = never expires
  ItemRef item;                     // the item after the operation (for ma v/t/c)
  bool vivified = false;            // created by vivify_exptime on this request (ma N)
};

struct DeleteArgs {
  // md C: the item's CAS must equal it. Plain equality, so with -C (items
  // carry CAS 0) C0 matches, and with CAS on it never does (memcached).
  std::optional<uint64_t> compare_cas;
  bool invalidate = false;          // md I: mark stale (CAS bumped) instead of removing
  std::optional<int64_t> stale_exptime;  // md T with I: new TTL of the stale item
  bool remove_value = false;        // md x: empty the value, keep the item and flags 0
  uint64_t explicit_cas = 0;        // md E
};

// mg: every meta-get flag that changes engine state or needs item metadata.
struct MetaGetArgs {
  bool bump = true;                       // u = false: don't bump the LRU or set FETCHED
  std::optional<int64_t> touch_exptime;   // T
  std::optional<int64_t> vivify_exptime;  // N: on miss create an empty item, win it
  std::optional<uint32_t> recache_ttl;    // R: win a token if TTL left is below this
  uint64_t explicit_cas = 0;              // E: the CAS of an item N creates (else ignored)
};
struct MetaGetOutput {
  ItemRef item;               // empty on a miss without N
  bool win = false;           // W: this client should recache
  bool stale = false;         // X: item is stale (invalidated)
  bool already_won = false;   // Z: another client already has the token
  bool hit_before = false;    // h: item had been fetched before this request
  uint32_t last_access_ago = 0;  // l: seconds since last access (before this one)
  int64_t ttl = -1;           // t: seconds left, -1 = never
  bool vivified = false;      // created by N on this request
};

// Result of Allocate for the two-step store (allocate, fill value, StoreItem),
// which lets the protocol read a value straight into item memory.
struct AllocOutput {
  AllocStatus status = AllocStatus::kNoMemory;
  ItemRef item;
};

// One key of an LRU crawler metadump (memcached's lru_crawler metadump format).
struct DumpEntry {
  std::string key;
  int64_t exp_unix;        // -1 = never
  int64_t last_access_unix;
  uint64_t cas;
  bool fetched;
  int slab_class;
  uint32_t size;
  uint32_t flags;
  bool key_binary;  // stored with ms b: dumps show it base64-encoded
};

// One item of `stats cachedump` (memcached's "ITEM <key> [<n> b; <t> s]").
struct CacheDumpEntry {
  std::string key;
  uint32_t value_bytes;
  int64_t exp_unix;  // 0 = never
};

// Stats as memcached names them, in memcached's order where it has one.
using StatList = std::vector<std::pair<std::string, std::string>>;

class KeyLockSet;

class Engine : NonCopyable {
 public:
  static Result<std::unique_ptr<Engine>> Create(const EngineOptions& opts);
  ~Engine();

  // Registers an observer of the items the engine removes on its own
  // (expiry, eviction). REQUIRES: before Start and before any worker runs;
  // at most 4; `o` outlives the engine.
  void AddObserver(ItemObserver* o);

  // Background threads (per options). Stop() joins them; called by ~Engine.
  void Start();
  void Stop();

  // -e: writes what the next run needs to reuse the memory file (heap values
  // to FILE.heap, the mapping synced, FILE.meta last) and unmaps it. After it
  // the engine may only be destroyed. REQUIRES: Stop() done and no other
  // thread using the engine (memcached's graceful stop, SIGUSR1).
  Status SaveForRestart();
  // True when Create reused the memory file of a previous run.
  bool restored() const;

  // One ThreadStats per worker (or test thread); owned by the engine, valid
  // until the engine is destroyed. Only that thread passes it to operations.
  ThreadStats* NewThreadStats();
  // A store the protocol refused as too large before allocating
  // (memcached's store_too_large counts those too).
  void CountTooLarge(ThreadStats* ts);

  // --- memcached text protocol operations ---
  // exptime everywhere is memcached's: 0 never; <= 30 days relative seconds;
  // larger an absolute unix time; negative already expired.
  ItemRef Get(std::string_view key, ThreadStats* ts, bool bump = true);
  ItemRef GetAndTouch(std::string_view key, int64_t exptime, ThreadStats* ts);
  // The live item for key without counting a get or bumping it (what a
  // store looks up first; `watch fetchers` shows that lookup as memcached
  // does). Dead items found are unlinked and counted as for Get.
  ItemRef Peek(std::string_view key, ThreadStats* ts);
  bool Touch(std::string_view key, int64_t exptime, ThreadStats* ts);
  StoreResult Store(std::string_view key, uint32_t flags, int64_t exptime,
                    std::string_view value, const StoreArgs& args, ThreadStats* ts,
                    uint64_t* cas_out = nullptr);
  // max_value 0: the item (header, key, value) is at most -I, memcached's
  // rule. Otherwise the value may be up to max_value bytes whatever -I is
  // (RESP's proto-max-bulk-len): past slab_chunk_max it is a chunked item,
  // its parts slab chunks counted against -m like any other.
  AllocOutput Allocate(std::string_view key, uint32_t flags, int64_t exptime,
                       size_t value_len, ThreadStats* ts, ValueType type = ValueType::kString,
                       size_t max_value = 0);
  // Stores an item from Allocate whose value has been filled. The ref stays
  // valid (it is the stored item on success).
  StoreResult StoreItem(ItemRef& item, const StoreArgs& args, ThreadStats* ts,
                        uint64_t* cas_out = nullptr);
  ArithOutput Arith(std::string_view key, const ArithArgs& args, ThreadStats* ts);
  DeleteResult Delete(std::string_view key, const DeleteArgs& args, ThreadStats* ts);
  // flush_all [delay]: items stored before now (+delay) become invalid.
  void FlushAll(int64_t delay_seconds);

  // --- meta protocol ---
  MetaGetOutput MetaGet(std::string_view key, const MetaGetArgs& args, ThreadStats* ts);

  // --- batch hints ---
  // A worker that holds several parsed requests calls PrefetchKey for each
  // request some way ahead of running it, and PrefetchItem a little later:
  // the bucket, the stripe lock and the first item of the bucket are then in
  // the cache when the request runs. Any thread; no lock; no effect on state.
  static uint64_t KeyHash(std::string_view key);
  void PrefetchKey(uint64_t hv) const;
  void PrefetchItem(uint64_t hv) const;

  // --- RESP: locked multi-key access and collections ---
  // Engine operations named *Locked REQUIRE the key's stripe held by a live
  // KeyLockSet on this thread; they never take a stripe lock themselves.
  ItemRef GetLocked(std::string_view key, ThreadStats* ts, bool bump = true);
  StoreResult StoreItemLocked(ItemRef& item, const StoreArgs& args, ThreadStats* ts,
                              uint64_t* cas_out = nullptr);
  bool UnlinkLocked(std::string_view key, ThreadStats* ts);
  // Changes the expiry of a linked item (RESP EXPIRE family, PERSIST) to a
  // unix time in milliseconds, 0 = never. Millisecond precision needs client
  // flags 0 (always so for RESP writes); an item with memcached flags rounds
  // up to the next second (and one past about 136 years from the engine's
  // start stays there). memcached's touch/gat keep the millisecond part.
  bool SetExpiryMsLocked(std::string_view key, int64_t unix_ms_or_zero, ThreadStats* ts);
  // The same for an item from Allocate / AllocateHeap not yet stored.
  void SetNewItemExpiryMs(ItemRef& item, int64_t unix_ms_or_zero);
  // Allocates an item whose value is a HeapValue (the pointer is stored).
  AllocOutput AllocateHeap(std::string_view key, int64_t exptime, ValueType type,
                           std::unique_ptr<HeapValue> value, ThreadStats* ts);
  // After a HeapValue changed size in place (stripe held).
  void AdjustHeapBytes(int64_t delta);

  // Iteration for SCAN/KEYS/RANDOMKEY/FLUSHDB: visits live items in a cursor
  // order that survives hash-table growth (reverse-binary bucket order, as
  // Redis's dictScan); returns the next cursor, 0 when done.
  uint64_t Scan(uint64_t cursor, size_t count,
                const std::function<void(const ItemRef&)>& fn);
  uint64_t curr_items() const;

  // --- admin ---
  StatList Stats() const;             // "stats" (engine part)
  // Keys removed because they expired, by any path (read, LRU, crawler,
  // slab mover): Redis's expired_keys.
  uint64_t ExpiredTotal() const;
  // CLIENT PAUSE: until monotonic time mono_ns (0: at once) no expired key is
  // removed; reads see it as missing, writes replace it (Redis pauses expiry).
  void HoldExpiryUntil(int64_t mono_ns);
  StatList SettingsStats() const;     // engine part of "stats settings"
  StatList ItemStats() const;         // "stats items"
  StatList SlabStats() const;         // "stats slabs"
  StatList SizeStats() const;         // "stats sizes"
  void ResetStats();                  // "stats reset"
  // Per-prefix stats ("stats detail on|off|dump"), prefix delimiter ':'.
  void SetDetailEnabled(bool on);
  std::string DetailDump() const;     // memcached's "PREFIX ..." lines, ending "END\r\n"
  // cache_memlimit N (MiB): false if below what is already in use and cannot shrink.
  bool SetMemLimit(size_t bytes);
  // The item-memory limit now (cache_memlimit / CONFIG SET maxmemory; 0 =
  // none), and whether it was lowered below the pages in use
  // (SlabAllocator::over_limit: lock-free, for per-command checks).
  size_t mem_limit() const;
  bool over_mem_limit() const;
  // Redis's eviction to a lowered maxmemory: with eviction on (no -M),
  // evicts the coldest items, class by class, until the items' bytes plus
  // heap bytes fit the limit or nothing is left to evict. Slab pages stay
  // allocated (over_mem_limit() still tells). Returns the items evicted.
  // Any thread holding no item lock; takes LRU and stripe locks per item.
  uint64_t EvictToLimit();
  // Whether a full cache evicts (memcached's default) or refuses the write
  // (-M); CONFIG SET maxmemory-policy allkeys-lru / noeviction changes it.
  bool evict_to_free() const;
  void SetEvictToFree(bool on);
  // slabs reassign src dst: "OK", "BUSY", "BADCLASS", "NOSPARE", "SAME" (memcached's replies).
  std::string SlabsReassign(int src, int dst);
  void SetSlabAutomove(int mode);
  // slabs automove ratio|window|freeratio (memcached's runtime settings).
  void SetSlabAutomoveRatio(double ratio);
  void SetSlabAutomoveWindow(uint32_t seconds);  // REQUIRES: 3..1800
  void SetSlabAutomoveFreeratio(double ratio);
  // lru_crawler: crawl "all" or "1,2,3"; returns memcached's reply word
  // ("OK", "BUSY currently processing crawler request", "BADCLASS ...").
  std::string CrawlerCrawl(std::string_view classes);
  // Runs the periodic (automatic) crawl now on the calling thread, with its
  // sysevent reports. Tests only: REQUIRES the crawler thread not started.
  void CrawlerAutoCrawlForTest();
  // One automove decision (one second of its window) on the calling thread;
  // true with src/dst filled when a page should move. Tests only: REQUIRES
  // the engine not started.
  bool AutomoveDecideForTest(int* src, int* dst);
  bool CrawlerEnable(bool on);
  void CrawlerSetSleep(uint32_t usec);
  void CrawlerSetToCrawl(uint32_t n);
  // Snapshot of keys for lru_crawler metadump (all, or listed classes).
  std::vector<DumpEntry> MetaDump(std::string_view classes);
  // True for "all" or a list of valid class ids ("1,2,3"), as crawls take.
  bool ValidCrawlClasses(std::string_view classes) const;
  // `stats cachedump <cls> <limit>`: the class's COLD LRU from its head (most
  // recent first), at most `limit` items (0: all) and about 2 MB of lines,
  // binary keys skipped, as memcached 1.6.45's item_cachedump.
  std::vector<CacheDumpEntry> CacheDump(int cls, uint32_t limit);

  const EngineOptions& options() const { return opts_; }
  const Clock* clock() const { return clock_; }
  // Seconds left before the item expires, -1 = never (for TTL/PTTL and meta t).
  int64_t TtlSeconds(const ItemRef& ref) const;
  // Seconds since the item was last read or written (RESP OBJECT IDLETIME;
  // reads that do not bump, such as OBJECT itself, leave it).
  int64_t IdleSeconds(const ItemRef& ref) const;
  // RESTORE ... IDLETIME: dates a linked item's last access `seconds` back,
  // as far as the engine's relative clock reaches: not before its time 0
  // (two seconds before the engine started; a warm restart keeps the first
  // run's), and not at or before the newest flush_all, which would make the
  // item dead. REQUIRES: the key's stripe held.
  void SetIdleSecondsLocked(const ItemRef& ref, uint64_t seconds);

  // Drops a reference taken out with ItemRef::Detach (OutputBuffer release hook).
  static void ReleaseRaw(void* engine, void* item);

  struct Impl;  // the parts in slab_allocator, hash_table, lru, ...

  // Stripes beyond a KeyLockSet, for server-side scripts that touch keys
  // they did not declare (RESP EVAL/FCALL). TryLockKeyStripe never waits:
  // kBusy when another thread holds the stripe, kHeld when this thread
  // does already (nothing to unlock then).
  enum class StripeTry { kLocked, kHeld, kBusy };
  StripeTry TryLockKeyStripe(std::string_view key);
  // REQUIRES: a kLocked TryLockKeyStripe of key not yet undone.
  void UnlockKeyStripe(std::string_view key);
  // Every stripe, in ascending order: the caller excludes every other user
  // of the keyspace until UnlockAllKeyStripes. REQUIRES: this thread holds
  // no stripe (no KeyLockSet alive).
  void LockAllKeyStripes();
  void UnlockAllKeyStripes();
  // The stripe index of key (which keys share a lock; no lock taken).
  uint32_t KeyStripe(std::string_view key) const;

 private:
  explicit Engine(const EngineOptions& opts);
  Engine(const EngineOptions& opts, WarmStart* warm);  // warm: -e, may be null
  friend class ItemRef;
  friend class KeyLockSet;
  EngineOptions opts_;
  const Clock* clock_;
  std::unique_ptr<Impl> impl_;
};

// Holds the stripe locks of a set of keys, taken in ascending stripe order and
// deduplicated, for multi-key atomic work (MULTI/EXEC, MSET, RENAME, collection
// updates). Only one KeyLockSet per thread at a time. Destruction unlocks.
class KeyLockSet : NonCopyable {
 public:
  KeyLockSet(Engine* engine, std::span<const std::string_view> keys);
  explicit KeyLockSet(Engine* engine, std::string_view key);
  // The same, but never waits on a stripe for good: a stripe held by another
  // thread is tried again (yielding) until it is free or give_up() returns
  // true; then every stripe taken is released and held() is false. For a
  // holder that may never let go (a busy script, RESP's BusyScripts), which
  // give_up() asks about. Stripes are still taken in ascending order.
  KeyLockSet(Engine* engine, std::span<const std::string_view> keys,
             const std::function<bool()>& give_up);
  ~KeyLockSet();
  bool held() const { return held_; }
  // The stripes of the keys, ascending and deduplicated.
  std::span<const uint32_t> stripes() const { return {stripes_, count_}; }

 private:
  Engine* engine_;
  // Ascending, deduplicated. Up to kInline stripes live in the object, so a
  // single-key command allocates nothing; more spill to the vector.
  static constexpr size_t kInline = 8;
  uint32_t inline_[kInline];
  std::vector<uint32_t> spill_;
  uint32_t* stripes_ = inline_;
  size_t count_ = 0;
  bool held_ = true;
  void ComputeStripes(std::span<const std::string_view> keys);
};

}  // namespace trove::engine
