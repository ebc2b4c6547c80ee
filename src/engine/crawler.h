// Crawler: the LRU crawler thread that reclaims expired and flushed items in
// the background, on request (lru_crawler crawl) or on its own schedule.
#pragma once

#include <atomic>
#include <string>
#include <string_view>
#include <vector>

#include "common/background_thread.h"
#include "common/mutex.h"
#include "engine/engine.h"
#include "engine/item.h"

namespace trove::engine {

// Owner: Engine::Impl. It walks the hash table a bucket at a time with that
// stripe held (instead of cursor items inside the LRU lists): every linked
// item is in exactly one bucket and one LRU, so the visit covers the same
// items while leaving the LRU locks to workers.
// Thread safety: public methods are thread-safe; mu_ (kBackground) guards
// the request fields; the walk takes stripes then LRU locks (item order).
class Crawler {
 public:
  explicit Crawler(Engine::Impl* impl) : impl_(impl) {}
  ~Crawler() { Stop(); }
  void Start() {
    bg_.Start([this] { Loop(); });
  }
  void Stop() { bg_.Stop(); }
  bool running_thread() const { return bg_.running(); }

  // "all" or "1,2,3": memcached's reply line.
  std::string Request(std::string_view classes);
  void SetSleep(uint32_t usec) { sleep_usec_.store(usec, std::memory_order_relaxed); }
  void SetToCrawl(uint32_t n) { to_crawl_.store(n, std::memory_order_relaxed); }
  uint32_t sleep_usec() const { return sleep_usec_.load(std::memory_order_relaxed); }
  uint32_t to_crawl() const { return to_crawl_.load(std::memory_order_relaxed); }
  // One synchronous crawl over the selected classes (tests, Request's work).
  // An automatic one (the periodic crawl) also reports each class it
  // examined to the observers (`watch sysevents` type=lru_crawler lines).
  void CrawlNow(const std::vector<bool>& classes, bool automatic = false);
  // Parses a class list; false on a bad id.
  bool ParseClasses(std::string_view spec, std::vector<bool>* out) const;

 private:
  void Loop();
  // After an automatic crawl: one SysEvent per class examined.
  void ReportStatus(const uint64_t* checked, const uint64_t* reclaimed, uint32_t started);
  Engine::Impl* impl_;
  std::atomic<uint32_t> sleep_usec_{100};
  std::atomic<uint32_t> to_crawl_{0};
  Mutex mu_{LockRank::kBackground};
  CondVar cv_{&mu_};
  bool pending_ GUARDED_BY(mu_) = false;
  std::vector<bool> request_ GUARDED_BY(mu_);
  // Crawler thread only: when each class was last crawled automatically
  // (engine seconds; 0 = never), for the status line's since_run.
  uint32_t last_auto_[kMaxClasses] = {};
  BackgroundThread bg_{&mu_, &cv_};  // last: joined before the rest goes
};

}  // namespace trove::engine
