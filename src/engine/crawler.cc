// Crawler thread: reclaims dead items bucket by bucket; also answers
// lru_crawler crawl requests. Background thread.
#include "engine/crawler.h"

#include <charconv>
#include <chrono>
#include <thread>

#include "engine/engine_impl.h"

namespace trove::engine {

namespace {
// Autocrawl period: memcached's maintainer schedules crawls from item-age
// histograms; a fixed minute keeps expired memory from lingering without it.
constexpr int64_t kAutoCrawlMs = 60 * 1000;
}  // namespace

bool Crawler::ParseClasses(std::string_view spec, std::vector<bool>* out) const {
  const int n = impl_->slabs.num_classes();
  out->assign(kMaxClasses, false);
  if (spec == "all") {
    for (int c = 1; c <= n; ++c) (*out)[c] = true;
    return true;
  }
  while (!spec.empty()) {
    size_t comma = spec.find(',');
    std::string_view tok = spec.substr(0, comma);
    int id = 0;
    auto r = std::from_chars(tok.data(), tok.data() + tok.size(), id);
    if (r.ec != std::errc() || r.ptr != tok.data() + tok.size() || id < 1 || id >= kMaxClasses - 1) {
      return false;
    }
    (*out)[id] = true;
    if (comma == std::string_view::npos) break;
    spec.remove_prefix(comma + 1);
  }
  return true;
}

std::string Crawler::Request(std::string_view classes) {
  std::vector<bool> sel;
  if (!ParseClasses(classes, &sel)) return "BADCLASS invalid class id";
  if (!bg_.running()) return "ERROR lru crawler disabled";
  MutexLock l(&mu_);
  if (pending_ || impl_->crawler_running.load(std::memory_order_relaxed)) {
    return "BUSY currently processing crawler request";
  }
  request_ = std::move(sel);
  pending_ = true;
  // Running from the moment the request is accepted, as memcached: a client
  // that polls lru_crawler_running right after OK must not see it idle.
  impl_->crawler_running.store(true, std::memory_order_relaxed);
  cv_.SignalAll();
  return "OK";
}

void Crawler::CrawlNow(const std::vector<bool>& classes, bool automatic) {
  Engine::Impl* m = impl_;
  const uint32_t started = m->Now();
  uint64_t reclaimed[kMaxClasses] = {};
  m->crawler_running.store(true, std::memory_order_relaxed);
  m->crawler_starts.fetch_add(1, std::memory_order_relaxed);
  const uint32_t limit = to_crawl();
  uint64_t checked[kMaxClasses] = {};
  uint64_t cursor = 0;
  size_t steps = 0;
  do {
    const uint32_t now = m->Now();
    cursor = m->table.ScanStep(cursor, [&](Item* it) {
      const int cls = ClassOf(it);
      if (!classes[cls] || (limit != 0 && checked[cls] >= limit)) return;
      ++checked[cls];
      LruClassStats& st = m->lru.stats(cls);
      st.crawler_items_checked.fetch_add(1, std::memory_order_relaxed);
      if (m->Reclaimable(it, now)) {
        ++reclaimed[cls];
        st.crawler_reclaimed.fetch_add(1, std::memory_order_relaxed);
        m->crawler_reclaimed_total.fetch_add(1, std::memory_order_relaxed);
        if (!HasFlag(it, kItemFetched)) st.expired_unfetched.fetch_add(1, std::memory_order_relaxed);
        if (m->IsExpired(it, now)) m->ReportRemoval(it, RemovalCause::kExpired);
        m->UnlinkLocked(it, HashKey(KeyOf(it)));
      }
    });
    // Yield the stripes now and then so workers never queue behind us.
    if (++steps % 1024 == 0 && sleep_usec() > 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(sleep_usec()));
    }
  } while (cursor != 0);
  m->crawler_running.store(false, std::memory_order_relaxed);
  if (automatic) ReportStatus(checked, reclaimed, started);
}

void Crawler::ReportStatus(const uint64_t* checked, const uint64_t* reclaimed, uint32_t started) {
  Engine::Impl* m = impl_;
  const uint32_t now = m->Now();
  const bool wanted = m->WantsSysEvents();
  for (int c = 1; c < kMaxClasses; ++c) {
    if (checked[c] == 0) continue;
    const uint32_t last = last_auto_[c];
    last_auto_[c] = started == 0 ? 1 : started;
    if (!wanted) continue;
    SysEvent e{SysEvent::Kind::kCrawlerStatus};
    e.clsid = c;
    e.since_run = last == 0 || started < last ? 0 : started - last;
    e.next_run = static_cast<int32_t>(kAutoCrawlMs / 1000);
    e.elapsed = now > started ? now - started : 0;
    e.examined = checked[c];
    e.reclaimed = reclaimed[c];
    m->ReportSysEvent(e);
  }
}

void Crawler::Loop() {
  for (;;) {
    std::vector<bool> sel;
    bool automatic = false;
    {
      MutexLock l(&mu_);
      // Condition variables wake spuriously: only a request, Stop or the
      // full autocrawl period may start a crawl, or a requester waiting for
      // "its" crawl would see an unrequested one finish first.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kAutoCrawlMs);
      while (!bg_.stopping() && !pending_) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) break;
        cv_.WaitFor(left.count());
      }
      if (bg_.stopping()) return;
      automatic = !pending_;
      if (pending_) {
        sel = request_;
        pending_ = false;
      } else {
        sel.assign(kMaxClasses, true);
      }
      // Marked running before the lock drops, so Request() never sees an
      // idle crawler between taking this work and starting it.
      impl_->crawler_running.store(true, std::memory_order_relaxed);
    }
    CrawlNow(sel, automatic);
  }
}

}  // namespace trove::engine
