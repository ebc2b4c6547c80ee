// Warm restart (-e FILE, memcached's restartable cache): the memory file that
// holds every slab page, the FILE.meta text that says whether the next run may
// reuse it, and FILE.heap with the heap values. Main thread only: at startup
// before the engine's threads run, and at a graceful stop after they ended.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/non_copyable.h"
#include "common/result.h"
#include "common/status.h"
#include "engine/engine.h"

namespace trove::engine {

// Where a first run maps the memory file when it may choose: far from the
// executable, the malloc heap and the kernel's mmap area (x86-64 puts them
// near 0x55.. and 0x7f..), so the next process finds the range free again.
inline constexpr uintptr_t kMemoryFileBase = uintptr_t{0x200000000000};

// The FILE.meta contents: memcached's "main" keys (same names and meaning
// where Trove has the concept) plus Trove's page map. Text, one "K<key>
// <value>" line each after a "T<tag>" line, as memcached writes it.
struct RestartMeta {
  // Settings that must match for the memory to be reused.
  std::string slab_config;           // the growth factor, as a number string
  uint64_t maxbytes = 0;             // -m in bytes
  uint64_t chunk_size = 0;           // -n
  uint64_t item_size_max = 0;        // -I
  uint64_t slab_chunk_size_max = 0;  // effective slab_chunk_max
  uint64_t slab_page_size = 0;       // = item_size_max in Trove
  bool use_cas = true;
  bool slab_reassign = true;
  // State carried over.
  uint32_t current_time = 0;          // engine-relative seconds at the stop
  int64_t process_started = 0;        // unix seconds of engine time 0 (Impl::started)
  int64_t stop_time = 0;              // unix seconds of the stop
  uint64_t current_cas = 0;           // the last CAS handed out
  uint64_t logger_gid = 0;            // memcached's watch id; Trove writes 0
  uint32_t hashpower = 0;             // the hash table's size at the stop
  uint32_t oldest_live = 0;           // flush_all deadline (engine-relative, 0 none)
  uint64_t mmap_oldbase = 0;          // where the memory file was mapped
  uint64_t oldest_cas = 0;            // flush_all's CAS bound (Trove)
  uint64_t heap_items = 0;            // records in FILE.heap (Trove)
  std::vector<uint8_t> page_classes;  // class of each arena page, 0 = pool (Trove)
};

// The metadata text for `m`.
std::string FormatRestartMeta(const RestartMeta& m);

enum class MetaVerdict : uint8_t {
  kReuse,  // parsed, settings match: restore from the memory file
  kClean,  // valid but unusable (a setting differs, lines missing): start empty
  kFatal,  // not a metadata file at all: refuse to start (memcached aborts)
};
struct MetaCheck {
  MetaVerdict verdict = MetaVerdict::kClean;
  // memcached's "[restart] ..." lines, in the order it prints them.
  std::vector<std::string> log;
  RestartMeta saved;  // what was read (complete when kReuse)
};
// Parses the metadata text and compares its settings with those of `current`
// (only the settings fields are read). `now_unix` checks the stop time: a
// stop in the future means the clock went back, and the cache is not reused.
MetaCheck CheckRestartMeta(std::string_view text, const RestartMeta& current, int64_t now_unix);

// The memory file: one MAP_SHARED mapping of a file sized to the memory
// limit. Owner: Engine::Impl (outlives the slab allocator that carves it).
// Thread safety: immutable after Open; Sync from one thread.
class MemoryFile : NonCopyable {
 public:
  // Opens (creating, mode 0600) `path`, sizes it to `size` bytes and maps it.
  // With `want` != 0 the mapping must land there (MAP_FIXED_NOREPLACE);
  // *at_want tells whether it did. Otherwise, or when that address is taken,
  // it lands at kMemoryFileBase if free, else where the kernel chooses.
  static Result<std::unique_ptr<MemoryFile>> Open(const std::string& path, size_t size,
                                                  uintptr_t want, bool* at_want);
  ~MemoryFile();

  char* base() const { return base_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // msync(MS_SYNC) of the whole mapping.
  Status Sync() const;

 private:
  MemoryFile(std::string path, int fd, char* base, size_t size)
      : path_(std::move(path)), fd_(fd), base_(base), size_(size) {}
  std::string path_;
  int fd_;
  char* base_;
  size_t size_;
};

// One heap value saved in FILE.heap: the item it belongs to (offset of its
// header in the memory file), its key (checked on load) and the codec bytes.
struct HeapRecord {
  ValueType type = ValueType::kString;
  std::string key;
  std::string bytes;
};
using HeapRecords = std::unordered_map<uint64_t, HeapRecord>;

// FILE.heap: a magic line, then per record offset, type, key and bytes
// (little-endian lengths), then an end marker with the count.
class HeapFileWriter : NonCopyable {
 public:
  static Result<std::unique_ptr<HeapFileWriter>> Create(const std::string& path);
  ~HeapFileWriter();
  void Add(uint64_t offset, ValueType type, std::string_view key, std::string_view bytes);
  // Writes the end marker and closes; an error if any write failed.
  Status Finish();
  uint64_t count() const { return count_; }

 private:
  explicit HeapFileWriter(std::FILE* f) : f_(f) {}
  std::FILE* f_;
  uint64_t count_ = 0;
  bool failed_ = false;
};
// Reads FILE.heap; an error if it is missing, truncated or its count is not
// `expected`.
Result<HeapRecords> ReadHeapFile(const std::string& path, uint64_t expected);

// What Engine::Create needs from the memory file before the engine exists.
struct WarmStart {
  std::unique_ptr<MemoryFile> file;
  bool reuse = false;  // the file holds the previous run's items
  RestartMeta saved;   // valid when reuse
  HeapRecords heap;    // valid when reuse
};
// The settings part of the metadata for these options (slab_chunk_max as the
// engine uses it).
RestartMeta CurrentSettings(const EngineOptions& o, size_t slab_chunk_max);
// Reads and removes FILE.meta and FILE.heap, then maps FILE. Errors only for
// what memcached refuses to start with (a corrupt metadata file, a file that
// cannot be opened or mapped); a mismatch starts clean. Writes memcached's
// messages to opts.restart_log (stderr when unset).
Result<WarmStart> OpenWarmStart(const EngineOptions& opts, size_t slab_chunk_max);

}  // namespace trove::engine
