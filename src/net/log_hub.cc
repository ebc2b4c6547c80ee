// LogHub: per-thread rings, the collector thread, and delivery to watchers.
#include "net/log_hub.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "common/check.h"
#include "net/worker_group.h"

namespace trove::net {

namespace {
std::atomic<uint64_t> g_hub_generation{1};

// Rings are powers of two (their mask); at least 4 KiB.
LogHubOptions RoundRing(LogHubOptions o) {
  size_t cap = 4096;
  while (cap < o.worker_buf) cap <<= 1;
  o.worker_buf = cap;
  return o;
}

// An entry in a ring: this header, then `len` body bytes, padded to 32 (a
// multiple of the header's size class, so the room left before the ring's
// end is always 0 or enough for a filler header).
struct EntryHeader {
  uint32_t len;   // body bytes; kPad marks filler up to the ring's end
  uint32_t type;  // LogType
  uint64_t gid;
  int64_t ts_us;
};
constexpr uint32_t kPad = 0xffffffffu;
constexpr size_t kAlign = 32;
static_assert(sizeof(EntryHeader) <= kAlign);
constexpr size_t AlignEntry(size_t n) { return (n + kAlign - 1) & ~(kAlign - 1); }

// The collector polls while someone watches: memcached's logger sleeps 1 ms
// after a busy pass and backs off to this when idle.
constexpr int64_t kMinSleepUs = 1000;
constexpr int64_t kMaxSleepUs = 50 * 1000;
}  // namespace

// A single-producer single-consumer byte ring. head and tail count bytes
// ever written/read (never wrap); the producer publishes head with release
// after writing an entry, the collector publishes tail after reading.
struct LogHub::Ring {
  explicit Ring(size_t cap) : buf(cap), mask(cap - 1) {}
  std::vector<char> buf;
  const size_t mask;
  std::atomic<uint64_t> head{0};
  std::atomic<uint64_t> tail{0};

  // Producer only. False when there is no room (the entry is dropped).
  bool Write(const EntryHeader& h, std::string_view body) {
    const size_t cap = buf.size();
    const size_t need = AlignEntry(sizeof(EntryHeader) + body.size());
    uint64_t hd = head.load(std::memory_order_relaxed);
    const uint64_t tl = tail.load(std::memory_order_acquire);
    size_t pos = static_cast<size_t>(hd) & mask;
    const size_t to_end = cap - pos;
    const size_t total = need <= to_end ? need : to_end + need;
    if (hd + total - tl > cap) return false;
    if (need > to_end) {  // filler to the end, then start over at 0
      EntryHeader pad{kPad, 0, 0, 0};
      std::memcpy(&buf[pos], &pad, sizeof(pad));
      hd += to_end;
      pos = 0;
    }
    std::memcpy(&buf[pos], &h, sizeof(h));
    if (!body.empty()) std::memcpy(&buf[pos + sizeof(h)], body.data(), body.size());
    head.store(hd + need, std::memory_order_release);
    return true;
  }
};

struct LogHub::Watcher {
  uint64_t id = 0;
  uint64_t conn_id = 0;
  uint32_t mask = 0;
  uint64_t first_gid = 0;
  // Collector only:
  std::string batch;
  uint64_t batch_lines = 0;
  uint64_t skipped = 0;  // lines lost since the last delivered batch
  // Bytes posted to the worker and not yet appended there (collector adds,
  // the worker's task subtracts); and lines the worker had to drop because
  // the connection's output was over the limit.
  std::atomic<uint64_t> inflight{0};
  std::atomic<uint64_t> dropped_at_worker{0};
};

LogHub::LogHub(WorkerGroup* group, const Clock* clock, LogHubOptions opts)
    : group_(group),
      clock_(clock),
      opts_(RoundRing(opts)),
      generation_(g_hub_generation.fetch_add(1, std::memory_order_relaxed)) {}

LogHub::~LogHub() { Stop(); }

LogHub::Ring* LogHub::RingForThisThread() {
  struct Cached {
    uint64_t generation = 0;
    Ring* ring = nullptr;
  };
  thread_local Cached cached;
  if (cached.generation == generation_) return cached.ring;
  auto r = std::make_unique<Ring>(opts_.worker_buf);
  Ring* raw = r.get();
  {
    MutexLock l(&mu_);
    rings_.push_back(std::move(r));
  }
  cached.generation = generation_;
  cached.ring = raw;
  return raw;
}

void LogHub::Log(LogType type, std::string_view body) {
  if (!Wants(type)) return;
  const size_t max_body = opts_.worker_buf / 4 - sizeof(EntryHeader);
  if (body.size() > max_body) body = body.substr(0, max_body);
  EntryHeader h;
  h.len = static_cast<uint32_t>(body.size());
  h.type = type;
  h.gid = next_gid_.fetch_add(1, std::memory_order_relaxed);
  h.ts_us = clock_->UnixMicros();
  if (RingForThisThread()->Write(h, body)) {
    written_.fetch_add(1, std::memory_order_relaxed);
  } else {
    dropped_.fetch_add(1, std::memory_order_relaxed);
  }
}

LogHub::AddResult LogHub::AddWatcher(uint64_t conn_id, uint32_t mask, uint64_t* id) {
  MutexLock l(&mu_);
  const bool monitor = mask == kLogMonitor;
  if (monitor ? num_monitor_ >= opts_.max_monitors : num_watch_ >= opts_.max_watchers) {
    return AddResult::kTooMany;
  }
  auto w = std::make_shared<Watcher>();
  w->id = next_watcher_id_++;
  w->conn_id = conn_id;
  w->mask = mask;
  w->first_gid = next_gid_.load(std::memory_order_relaxed);
  *id = w->id;
  watchers_.push_back(std::move(w));
  (monitor ? num_monitor_ : num_watch_)++;
  UpdateMaskLocked();
  cv_.SignalAll();
  return AddResult::kOk;
}

void LogHub::RemoveWatcher(uint64_t id) {
  MutexLock l(&mu_);
  for (size_t i = 0; i < watchers_.size(); ++i) {
    if (watchers_[i]->id != id) continue;
    (watchers_[i]->mask == kLogMonitor ? num_monitor_ : num_watch_)--;
    watchers_.erase(watchers_.begin() + static_cast<std::ptrdiff_t>(i));
    UpdateMaskLocked();
    return;
  }
}

void LogHub::UpdateMaskLocked() {
  uint32_t m = 0;
  for (const auto& w : watchers_) m |= w->mask;
  mask_.store(m, std::memory_order_relaxed);
}

LogHubStats LogHub::Stats() const {
  LogHubStats s;
  s.worker_dropped = dropped_.load(std::memory_order_relaxed);
  s.worker_written = written_.load(std::memory_order_relaxed);
  s.watcher_skipped = skipped_.load(std::memory_order_relaxed);
  s.watcher_sent = sent_.load(std::memory_order_relaxed);
  MutexLock l(&mu_);
  s.watchers = static_cast<uint64_t>(num_watch_);
  s.monitors = static_cast<uint64_t>(num_monitor_);
  return s;
}

void LogHub::Format(const Watcher& w, uint64_t gid, int64_t ts_us, std::string_view body,
                    std::string* out) const {
  char head[64];
  const long long sec = ts_us / 1000000;
  const int usec = static_cast<int>(ts_us % 1000000);
  int n;
  if (w.mask == kLogMonitor) {
    n = std::snprintf(head, sizeof(head), "+%lld.%06d ", sec, usec);
  } else {
    // memcached prints the microseconds unpadded ("%d").
    n = std::snprintf(head, sizeof(head), "ts=%lld.%d gid=%llu ", sec, usec,
                      static_cast<unsigned long long>(gid));
  }
  out->append(head, static_cast<size_t>(n));
  out->append(body);
  out->append(w.mask == kLogMonitor ? "\r\n" : "\n");
}

size_t LogHub::CollectOnce() {
  std::vector<Ring*> rings;
  std::vector<std::shared_ptr<Watcher>> watchers;
  {
    MutexLock l(&mu_);
    rings.reserve(rings_.size());
    for (auto& r : rings_) rings.push_back(r.get());
    watchers = watchers_;
  }
  // Lines the workers dropped come back as skipped counts.
  for (auto& w : watchers) {
    w->skipped += w->dropped_at_worker.exchange(0, std::memory_order_relaxed);
  }
  // Entries of every ring, merged by gid: lines reach watchers in the order
  // they were logged across threads (as one Redis thread would print them).
  struct View {
    uint64_t gid;
    uint32_t type;
    int64_t ts_us;
    std::string_view body;
  };
  thread_local std::vector<View> views;
  views.clear();
  std::vector<uint64_t> new_tails(rings.size());
  for (size_t ri = 0; ri < rings.size(); ++ri) {
    Ring* r = rings[ri];
    uint64_t tl = r->tail.load(std::memory_order_relaxed);
    const uint64_t hd = r->head.load(std::memory_order_acquire);
    while (tl < hd) {
      const size_t pos = static_cast<size_t>(tl) & r->mask;
      EntryHeader h;
      std::memcpy(&h, &r->buf[pos], sizeof(h));
      if (h.len == kPad) {
        tl += r->buf.size() - pos;
        continue;
      }
      views.push_back({h.gid, h.type, h.ts_us, std::string_view(&r->buf[pos + sizeof(h)], h.len)});
      tl += AlignEntry(sizeof(EntryHeader) + h.len);
    }
    new_tails[ri] = tl;
  }
  std::sort(views.begin(), views.end(), [](const View& a, const View& b) { return a.gid < b.gid; });
  for (const View& v : views) {
    for (auto& w : watchers) {
      if ((w->mask & v.type) == 0 || v.gid < w->first_gid) continue;
      const uint64_t queued = w->inflight.load(std::memory_order_relaxed) + w->batch.size();
      if (queued >= opts_.watcher_buf) {
        ++w->skipped;
        skipped_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      if (w->skipped > 0) {
        // memcached's marker; for MONITOR a line redis-py's parser accepts.
        char sk[96];
        const unsigned long long n = w->skipped;
        const int len = w->mask == kLogMonitor
                            ? std::snprintf(sk, sizeof(sk),
                                            "[0 0.0.0.0:0] \"monitor-skipped\" \"%llu\"", n)
                            : std::snprintf(sk, sizeof(sk), "skipped=%llu", n);
        if (w->mask == kLogMonitor) {
          Format(*w, v.gid, v.ts_us, std::string_view(sk, static_cast<size_t>(len)), &w->batch);
        } else {
          w->batch.append(sk, static_cast<size_t>(len)).push_back('\n');
        }
        w->skipped = 0;
      }
      Format(*w, v.gid, v.ts_us, v.body, &w->batch);
      ++w->batch_lines;
    }
  }
  // The ring bytes the views point into are released only now.
  for (size_t ri = 0; ri < rings.size(); ++ri) {
    rings[ri]->tail.store(new_tails[ri], std::memory_order_release);
  }
  const size_t entries = views.size();
  for (auto& w : watchers) {
    if (!w->batch.empty()) Deliver(w);
  }
  return entries;
}

void LogHub::Deliver(const std::shared_ptr<Watcher>& w) {
  auto bytes = std::make_shared<std::string>(std::move(w->batch));
  const uint64_t lines = w->batch_lines;
  w->batch.clear();
  w->batch_lines = 0;
  w->inflight.fetch_add(bytes->size(), std::memory_order_relaxed);
  const size_t limit = opts_.watcher_buf;
  std::atomic<uint64_t>* sent = &sent_;
  std::atomic<uint64_t>* skipped = &skipped_;
  group_->PostToConn(w->conn_id, [w, bytes, lines, limit, sent, skipped](ConnControl* c,
                                                                        ProtocolHandler*) {
    w->inflight.fetch_sub(bytes->size(), std::memory_order_relaxed);
    if (c->output().pending_bytes() >= limit) {
      // The watcher is not reading: its unsent output stays bounded.
      w->dropped_at_worker.fetch_add(lines, std::memory_order_relaxed);
      skipped->fetch_add(lines, std::memory_order_relaxed);
      return;
    }
    c->output().Append(*bytes);
    c->OutputAdded();
    sent->fetch_add(lines, std::memory_order_relaxed);
  });
}

void LogHub::Run() {
  int64_t sleep_us = kMinSleepUs;
  for (;;) {
    {
      MutexLock l(&mu_);
      if (bg_.stopping()) return;
      if (watchers_.empty()) {
        cv_.WaitFor(1000);
        continue;
      }
    }
    const size_t n = CollectOnce();
    sleep_us = n > 0 ? kMinSleepUs : std::min(sleep_us * 2, kMaxSleepUs);
    MutexLock l(&mu_);
    if (bg_.stopping()) return;
    cv_.WaitFor(sleep_us / 1000);
  }
}

}  // namespace trove::net
