// Warm restart files: the FILE.meta text (format, parse, memcached's checks
// and messages), the memory file mapping and the FILE.heap records. Main
// thread, at startup and at a graceful stop.
#include "engine/warm_restart.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "common/str_append.h"
#include "engine/item.h"

namespace trove::engine {
namespace {

// memcached's keys (its _mc_meta_load_cb), then Trove's. Every one must be
// present for the memory to be reused (memcached requires its 16).
enum MetaKey : int {
  kMmapOldbase,
  kMaxbytes,
  kChunkSize,
  kItemSizeMax,
  kSlabChunkSizeMax,
  kSlabPageSize,
  kSlabConfig,
  kUseCas,
  kSlabReassign,
  kCurrentCas,
  kOldestLive,
  kLoggerGid,
  kCurrentTime,
  kStopTime,
  kProcessStarted,
  kHashpower,
  kOldestCas,
  kHeapItems,
  kPageClasses,
  kNumKeys
};
constexpr const char* kKeyNames[kNumKeys] = {
    "mmap_oldbase",   "maxbytes",    "chunk_size",   "item_size_max", "slab_chunk_size_max",
    "slab_page_size", "slab_config", "use_cas",      "slab_reassign", "current_cas",
    "oldest_live",    "logger_gid",  "current_time", "stop_time",     "process_started",
    "hashpower",      "oldest_cas",  "heap_items",   "page_classes"};

void Kv(std::string* out, const char* key, std::string_view val) {
  *out += 'K';
  *out += key;
  *out += ' ';
  *out += val;
  *out += '\n';
}
void KvU(std::string* out, const char* key, uint64_t v) {
  std::string s;
  AppendU64(s, v);
  Kv(out, key, s);
}

// Page classes as runs: "3*12,0,5*2" (class 3 twelve times, ...).
std::string FormatPages(const std::vector<uint8_t>& pages) {
  std::string s;
  for (size_t i = 0; i < pages.size();) {
    size_t j = i;
    while (j < pages.size() && pages[j] == pages[i]) ++j;
    if (!s.empty()) s += ',';
    AppendU64(s, pages[i]);
    if (j - i > 1) {
      s += '*';
      AppendU64(s, j - i);
    }
    i = j;
  }
  return s;
}

bool ParsePages(std::string_view v, std::vector<uint8_t>* out) {
  out->clear();
  while (!v.empty()) {
    size_t comma = v.find(',');
    std::string_view run = v.substr(0, comma);
    v = comma == std::string_view::npos ? std::string_view() : v.substr(comma + 1);
    uint64_t cls = 0, n = 1;
    size_t star = run.find('*');
    if (!ParseU64(run.substr(0, star), &cls) || cls >= kMaxClasses) return false;
    if (star != std::string_view::npos &&
        (!ParseU64(run.substr(star + 1), &n) || n == 0 || n > (uint64_t{1} << 32))) {
      return false;
    }
    out->insert(out->end(), n, static_cast<uint8_t>(cls));
  }
  return true;
}

bool ParseHex(std::string_view v, uint64_t* out) {
  if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) v.remove_prefix(2);
  if (v.empty()) return false;
  auto r = std::from_chars(v.data(), v.data() + v.size(), *out, 16);
  return r.ec == std::errc() && r.ptr == v.data() + v.size();
}

bool ParseBool(std::string_view v, bool* out) {
  if (v == "true") return (*out = true), true;
  if (v == "false") return (*out = false), true;
  return false;
}

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// Reads one value into m; false when it cannot be parsed or a setting
// differs from `cur` (memcached's "restart incompatible" case).
bool ApplyKey(int key, std::string_view val, const RestartMeta& cur, int64_t now_unix,
              RestartMeta* m) {
  uint64_t u = 0;
  bool b = false;
  switch (key) {
    case kMmapOldbase:
      return ParseHex(val, &m->mmap_oldbase);
    case kMaxbytes:
      return ParseU64(val, &m->maxbytes) && m->maxbytes == cur.maxbytes;
    case kChunkSize:
      return ParseU64(val, &m->chunk_size) && m->chunk_size == cur.chunk_size;
    case kItemSizeMax:
      return ParseU64(val, &m->item_size_max) && m->item_size_max == cur.item_size_max;
    case kSlabChunkSizeMax:
      return ParseU64(val, &m->slab_chunk_size_max) &&
             m->slab_chunk_size_max == cur.slab_chunk_size_max;
    case kSlabPageSize:
      return ParseU64(val, &m->slab_page_size) && m->slab_page_size == cur.slab_page_size;
    case kSlabConfig:
      m->slab_config = val;
      return val == cur.slab_config;
    case kUseCas:
      return ParseBool(val, &b) && (m->use_cas = b) == cur.use_cas;
    case kSlabReassign:
      return ParseBool(val, &b) && (m->slab_reassign = b) == cur.slab_reassign;
    case kCurrentCas:
      return ParseU64(val, &m->current_cas);
    case kOldestLive:
      return ParseU32(val, &m->oldest_live);
    case kLoggerGid:
      return ParseU64(val, &m->logger_gid);
    case kCurrentTime:
      return ParseU32(val, &m->current_time);
    case kStopTime:
      // memcached also refuses a stop in the same second (delta 0); Trove
      // only a clock that went back, so a quick restart keeps the cache.
      return ParseI64(val, &m->stop_time) && now_unix >= m->stop_time;
    case kProcessStarted:
      return ParseI64(val, &m->process_started) && m->process_started > 0;
    case kHashpower:
      return ParseU64(val, &u) && u >= 4 && u <= 32 &&
             (m->hashpower = static_cast<uint32_t>(u), true);
    case kOldestCas:
      return ParseU64(val, &m->oldest_cas);
    case kHeapItems:
      return ParseU64(val, &m->heap_items);
    case kPageClasses:
      return ParsePages(val, &m->page_classes);
    default:
      return false;
  }
}

}  // namespace

std::string FormatRestartMeta(const RestartMeta& m) {
  std::string s = "Tmain\n";
  Kv(&s, "slab_config", m.slab_config);
  KvU(&s, "maxbytes", m.maxbytes);
  KvU(&s, "chunk_size", m.chunk_size);
  KvU(&s, "item_size_max", m.item_size_max);
  KvU(&s, "slab_chunk_size_max", m.slab_chunk_size_max);
  KvU(&s, "slab_page_size", m.slab_page_size);
  Kv(&s, "use_cas", m.use_cas ? "true" : "false");
  Kv(&s, "slab_reassign", m.slab_reassign ? "true" : "false");
  KvU(&s, "current_time", m.current_time);
  KvU(&s, "process_started", static_cast<uint64_t>(m.process_started));
  KvU(&s, "stop_time", static_cast<uint64_t>(m.stop_time));
  KvU(&s, "current_cas", m.current_cas);
  KvU(&s, "logger_gid", m.logger_gid);
  KvU(&s, "hashpower", m.hashpower);
  KvU(&s, "oldest_live", m.oldest_live);
  Kv(&s, "mmap_oldbase", Hex(m.mmap_oldbase));
  KvU(&s, "oldest_cas", m.oldest_cas);
  KvU(&s, "heap_items", m.heap_items);
  Kv(&s, "page_classes", FormatPages(m.page_classes));
  return s;
}

MetaCheck CheckRestartMeta(std::string_view text, const RestartMeta& current, int64_t now_unix) {
  MetaCheck c;
  auto next_line = [&text](std::string_view* line) {
    if (text.empty()) return false;
    size_t nl = text.find('\n');
    *line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    return true;
  };
  std::string_view line;
  // The first line must be the tag of a known handler (memcached aborts otherwise).
  if (!next_line(&line)) {
    c.log.emplace_back("[restart] Failed to read a tag from metadata file");
    c.verdict = MetaVerdict::kFatal;
    return c;
  }
  if (line.empty() || line[0] != 'T' || line.substr(1) != "main") {
    if (!line.empty() && line[0] == 'T') {
      c.log.push_back("[restart] internal handler for metadata tag not found: " +
                      std::string(line.substr(1)) + ":");
    } else if (line.empty() || line[0] != 'K') {
      c.log.push_back("[restart] invalid metadata line:\n\n" + std::string(line) + "\n");
    }
    c.log.emplace_back("[restart] corrupt metadata file");
    c.verdict = MetaVerdict::kFatal;
    return c;
  }
  uint32_t seen = 0;
  bool ok = true;
  while (next_line(&line)) {
    if (line.empty() || line[0] != 'K') {
      if (line.empty() || line[0] != 'T') {
        c.log.push_back("[restart] invalid metadata line:\n\n" + std::string(line) + "\n");
      }
      break;  // memcached stops reading this tag's keys here
    }
    std::string_view kv = line.substr(1);
    size_t sp = kv.find(' ');
    std::string_view key = kv.substr(0, sp);
    std::string_view val = sp == std::string_view::npos ? std::string_view() : kv.substr(sp + 1);
    int k = 0;
    while (k < kNumKeys && key != kKeyNames[k]) ++k;
    if (k == kNumKeys) {
      c.log.push_back("[restart] unknown/unhandled key: " + std::string(key));
      continue;
    }
    seen |= 1u << k;
    if (!ApplyKey(k, val, current, now_unix, &c.saved)) {
      c.log.push_back("[restart] restart incompatible due to setting for [" + std::string(key) +
                      "] [old value: " + std::string(val) + "]");
      ok = false;
      break;
    }
  }
  // As memcached: a check that stopped early has also seen too few lines.
  if (seen != (1u << kNumKeys) - 1) {
    c.log.emplace_back("[restart] missing some metadata lines");
    ok = false;
  }
  if (!ok) {
    c.log.emplace_back("[restart] failed to validate metadata, starting with a clean cache");
    c.verdict = MetaVerdict::kClean;
    return c;
  }
  c.verdict = MetaVerdict::kReuse;
  return c;
}

// --- MemoryFile ---

Result<std::unique_ptr<MemoryFile>> MemoryFile::Open(const std::string& path, size_t size,
                                                     uintptr_t want, bool* at_want) {
  *at_want = false;
  const long os_page = ::sysconf(_SC_PAGESIZE);
  const size_t ps = os_page > 0 ? static_cast<size_t>(os_page) : 4096;
  size = (size + ps - 1) / ps * ps;
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, S_IRUSR | S_IWUSR);
  if (fd < 0) return Status::FromErrno("failed to open file for mmap: " + path);
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    Status s = Status::FromErrno("ftruncate failed: " + path);
    ::close(fd);
    return s;
  }
  // MAP_FIXED_NOREPLACE never replaces a mapping; a kernel older than 4.17
  // treats it as a hint, so the address is compared too.
  auto try_at = [&](uintptr_t addr) -> char* {
    void* p = ::mmap(reinterpret_cast<void*>(addr), size, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
    if (p == MAP_FAILED) return nullptr;
    if (reinterpret_cast<uintptr_t>(p) != addr) {
      ::munmap(p, size);
      return nullptr;
    }
    return static_cast<char*>(p);
  };
  char* base = nullptr;
  if (want != 0) {
    base = try_at(want);
    *at_want = base != nullptr;
  }
  if (base == nullptr) base = try_at(kMemoryFileBase);
  if (base == nullptr) {
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      Status s = Status::FromErrno("failed to mmap " + path);
      ::close(fd);
      return s;
    }
    base = static_cast<char*>(p);
  }
  return std::unique_ptr<MemoryFile>(new MemoryFile(path, fd, base, size));
}

MemoryFile::~MemoryFile() {
  ::munmap(base_, size_);
  ::close(fd_);
}

Status MemoryFile::Sync() const {
  if (::msync(base_, size_, MS_SYNC) != 0) return Status::FromErrno("msync " + path_);
  return Status::Ok();
}

// --- FILE.heap ---

namespace {
constexpr char kHeapMagic[] = "TROVEHEAP1\n";
constexpr uint64_t kHeapEnd = ~uint64_t{0};
}  // namespace

Result<std::unique_ptr<HeapFileWriter>> HeapFileWriter::Create(const std::string& path) {
  mode_t old = ::umask(S_IRWXG | S_IRWXO);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ::umask(old);
  if (f == nullptr) return Status::FromErrno("open " + path);
  std::unique_ptr<HeapFileWriter> w(new HeapFileWriter(f));
  w->failed_ = std::fwrite(kHeapMagic, 1, sizeof(kHeapMagic) - 1, f) != sizeof(kHeapMagic) - 1;
  return w;
}

HeapFileWriter::~HeapFileWriter() {
  if (f_ != nullptr) std::fclose(f_);
}

void HeapFileWriter::Add(uint64_t offset, ValueType type, std::string_view key,
                         std::string_view bytes) {
  const uint8_t t = static_cast<uint8_t>(type);
  const uint32_t klen = static_cast<uint32_t>(key.size());
  const uint64_t blen = bytes.size();
  bool ok = std::fwrite(&offset, sizeof(offset), 1, f_) == 1 && std::fwrite(&t, 1, 1, f_) == 1 &&
            std::fwrite(&klen, sizeof(klen), 1, f_) == 1 &&
            std::fwrite(key.data(), 1, key.size(), f_) == key.size() &&
            std::fwrite(&blen, sizeof(blen), 1, f_) == 1 &&
            std::fwrite(bytes.data(), 1, bytes.size(), f_) == bytes.size();
  failed_ = failed_ || !ok;
  ++count_;
}

Status HeapFileWriter::Finish() {
  bool ok = std::fwrite(&kHeapEnd, sizeof(kHeapEnd), 1, f_) == 1 &&
            std::fwrite(&count_, sizeof(count_), 1, f_) == 1;
  ok = std::fclose(f_) == 0 && ok;
  f_ = nullptr;
  if (failed_ || !ok) return Status(StatusCode::kIoError, "failed to write the heap value file");
  return Status::Ok();
}

Result<HeapRecords> ReadHeapFile(const std::string& path, uint64_t expected) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return Status::FromErrno("open " + path);
  HeapRecords out;
  auto read = [f](void* p, size_t n) { return n == 0 || std::fread(p, 1, n, f) == n; };
  char magic[sizeof(kHeapMagic) - 1];
  bool ok = read(magic, sizeof(magic)) && std::memcmp(magic, kHeapMagic, sizeof(magic)) == 0;
  uint64_t count = 0;
  while (ok) {
    uint64_t off = 0;
    if (!(ok = read(&off, sizeof(off)))) break;
    if (off == kHeapEnd) {
      ok = read(&count, sizeof(count)) && count == out.size() && count == expected;
      break;
    }
    uint8_t t = 0;
    uint32_t klen = 0;
    uint64_t blen = 0;
    HeapRecord r;
    ok = read(&t, 1) && t <= static_cast<uint8_t>(ValueType::kZset) && read(&klen, sizeof(klen));
    if (ok) {
      r.key.resize(klen);
      ok = read(r.key.data(), klen) && read(&blen, sizeof(blen)) && blen < (uint64_t{1} << 40);
    }
    if (ok) {
      r.bytes.resize(blen);
      ok = read(r.bytes.data(), blen);
    }
    r.type = static_cast<ValueType>(t);
    if (ok) out[off] = std::move(r);
  }
  std::fclose(f);
  if (!ok)
    return Status(StatusCode::kIoError, "heap value file " + path + " is truncated or corrupt");
  return out;
}

// --- startup ---

RestartMeta CurrentSettings(const EngineOptions& o, size_t slab_chunk_max) {
  RestartMeta m;
  char f[32];
  std::snprintf(f, sizeof(f), "%g", o.factor);
  m.slab_config = f;
  m.maxbytes = o.mem_limit;
  m.chunk_size = o.chunk_size_min;
  m.item_size_max = o.item_size_max;
  m.slab_chunk_size_max = slab_chunk_max;
  m.slab_page_size = o.item_size_max;
  m.use_cas = o.use_cas;
  m.slab_reassign = o.slab_reassign;
  return m;
}

namespace {
void Log(const EngineOptions& o, std::string_view line) {
  if (o.restart_log) {
    o.restart_log(line);
  } else {
    std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
  }
}

// The whole file, or false when it does not exist (or cannot be read).
bool ReadWhole(const std::string& path, std::string* out) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out->append(buf, n);
  std::fclose(f);
  return true;
}
}  // namespace

Result<WarmStart> OpenWarmStart(const EngineOptions& opts, size_t slab_chunk_max) {
  WarmStart w;
  const std::string meta_path = opts.memory_file + ".meta";
  const std::string heap_path = opts.memory_file + ".heap";
  std::string text;
  if (!ReadWhole(meta_path, &text)) {
    Log(opts, "[restart] no metadata save file, starting with a clean cache");
  } else {
    const int64_t now =
        (opts.clock != nullptr ? opts.clock : SystemClock::Default())->UnixSeconds();
    MetaCheck c = CheckRestartMeta(text, CurrentSettings(opts, slab_chunk_max), now);
    // Removed once read (memcached too): a crash of the run that reuses the
    // memory must not leave a stale description of it behind.
    ::unlink(meta_path.c_str());
    // A fatal verdict's last line becomes the error main prints.
    const size_t shown = c.log.size() - (c.verdict == MetaVerdict::kFatal ? 1 : 0);
    for (size_t i = 0; i < shown; ++i) Log(opts, c.log[i]);
    if (c.verdict == MetaVerdict::kFatal) {
      ::unlink(heap_path.c_str());
      return Status(StatusCode::kFailedPrecondition, c.log.back());
    }
    if (c.verdict == MetaVerdict::kReuse) {
      w.reuse = true;
      w.saved = std::move(c.saved);
    }
  }
  if (w.reuse) {
    auto heap = ReadHeapFile(heap_path, w.saved.heap_items);
    if (heap.ok()) {
      w.heap = std::move(heap.value());
    } else if (w.saved.heap_items != 0) {
      // The items stay; only the heap-valued ones (collections) are dropped.
      Log(opts,
          "[restart] " + std::string(heap.status().message()) + "; heap-valued items are dropped");
    }
  }
  ::unlink(heap_path.c_str());
  bool at_old = false;
  auto file = MemoryFile::Open(opts.memory_file, opts.mem_limit,
                               w.reuse ? static_cast<uintptr_t>(w.saved.mmap_oldbase) : 0, &at_old);
  if (!file.ok()) return file.status();
  w.file = std::move(file.value());
  if (w.reuse && !at_old) {
    Log(opts, "[restart] memory file cannot be mapped at its old address " +
                  Hex(w.saved.mmap_oldbase) + ", starting with a clean cache");
    w.reuse = false;
    w.heap.clear();
  }
  return w;
}

}  // namespace trove::engine
