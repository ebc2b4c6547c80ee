// Engine admin: stats in memcached's names and order, stats reset/detail,
// memory limit, slab reassign, LRU crawler control and metadump.
#include <cstdio>
#include <string>

#include "common/str_append.h"
#include "engine/crawler.h"
#include "engine/engine_impl.h"
#include "engine/lru_maintainer.h"
#include "engine/slab_rebalancer.h"

namespace trove::engine {

namespace {
void Add(StatList* l, std::string name, uint64_t v) {
  std::string s;
  AppendU64(s, v);
  l->emplace_back(std::move(name), std::move(s));
}
void AddStr(StatList* l, std::string name, std::string v) {
  l->emplace_back(std::move(name), std::move(v));
}
std::string ClassKey(int cls, const char* name) {
  std::string s;
  AppendU64(s, static_cast<uint64_t>(cls));
  s += ':';
  s += name;
  return s;
}
}  // namespace

uint64_t Engine::ExpiredTotal() const {
  return impl_->expired_total.load(std::memory_order_relaxed);
}

void Engine::HoldExpiryUntil(int64_t mono_ns) {
  if (mono_ns != 0) impl_->expiry_hold_used.store(true, std::memory_order_relaxed);
  impl_->expiry_hold_until_ns.store(mono_ns, std::memory_order_relaxed);
}

StatList Engine::Stats() const {
  Impl* m = impl_.get();
  ThreadTotals t = m->registry.Sum();
  uint64_t bytes = 0;
  for (int c = 1; c <= m->slabs.num_classes(); ++c) {
    for (int g = 0; g < kSegments; ++g) bytes += m->lru.Bytes(c, static_cast<Segment>(g));
  }
  // One LRU counter summed over the classes.
  auto lru_sum = [m](std::atomic<uint64_t> LruClassStats::*counter) {
    uint64_t sum = 0;
    for (int c = 1; c <= m->slabs.num_classes(); ++c) {
      sum += (m->lru.stats(c).*counter).load(std::memory_order_relaxed);
    }
    return sum;
  };
  StatList l;
  Add(&l, "cmd_get", t.get_cmds);
  Add(&l, "cmd_set", t.cmd_set);
  Add(&l, "cmd_flush", m->cmd_flush.load(std::memory_order_relaxed));
  Add(&l, "cmd_touch", t.touch_cmds);
  Add(&l, "cmd_meta", t.meta_cmds);
  Add(&l, "get_hits", t.get_hits);
  Add(&l, "get_misses", t.get_misses);
  Add(&l, "get_expired", t.get_expired);
  Add(&l, "get_flushed", t.get_flushed);
  Add(&l, "delete_misses", t.delete_misses);
  Add(&l, "delete_hits", t.delete_hits);
  Add(&l, "incr_misses", t.incr_misses);
  Add(&l, "incr_hits", t.incr_hits);
  Add(&l, "decr_misses", t.decr_misses);
  Add(&l, "decr_hits", t.decr_hits);
  Add(&l, "cas_misses", t.cas_misses);
  Add(&l, "cas_hits", t.cas_hits);
  Add(&l, "cas_badval", t.cas_badval);
  Add(&l, "touch_hits", t.touch_hits);
  Add(&l, "touch_misses", t.touch_misses);
  Add(&l, "store_too_large", t.store_too_large);
  Add(&l, "store_no_memory", t.store_no_memory);
  Add(&l, "limit_maxbytes", m->slabs.mem_limit());
  Add(&l, "hash_power_level", static_cast<uint64_t>(m->table.hashpower()));
  Add(&l, "hash_bytes", m->table.hash_bytes());
  Add(&l, "hash_is_expanding", m->table.expanding() ? 1 : 0);
  // As memcached 1.6.45: the mover's, crawler's and maintainer's counters
  // only while that part is on.
  if (opts_.slab_reassign) {
    Add(&l, "slab_reassign_rescues", m->reassign_rescues.load(std::memory_order_relaxed));
    Add(&l, "slab_reassign_chunk_rescues", m->reassign_chunk_rescues.load(std::memory_order_relaxed));
    Add(&l, "slab_reassign_inline_reclaim", m->reassign_inline_reclaim.load(std::memory_order_relaxed));
    Add(&l, "slab_reassign_busy_items", m->reassign_busy.load(std::memory_order_relaxed));
    Add(&l, "slab_reassign_busy_deletes", m->reassign_busy_deletes.load(std::memory_order_relaxed));
    Add(&l, "slab_reassign_busy_nomem", m->reassign_busy_nomem.load(std::memory_order_relaxed));
    l.emplace_back("slab_reassign_last_busy_status",
                   MoveStatusName(m->reassign_last_busy.load(std::memory_order_relaxed)));
    Add(&l, "slab_reassign_running", m->reassign_running.load(std::memory_order_relaxed) ? 1 : 0);
    Add(&l, "slabs_moved", m->slabs_moved.load(std::memory_order_relaxed));
  }
  // memcached's settings.lru_crawler: on at start unless disabled, then what
  // lru_crawler enable/disable made it.
  if (m->started_threads ? m->crawler->running_thread() : opts_.lru_crawler) {
    Add(&l, "lru_crawler_running", m->crawler_running.load(std::memory_order_relaxed) ? 1 : 0);
    Add(&l, "lru_crawler_starts", m->crawler_starts.load(std::memory_order_relaxed));
  }
  if (opts_.lru_maintainer) {
    Add(&l, "lru_maintainer_juggles", m->maintainer_juggles.load(std::memory_order_relaxed));
  }
  Add(&l, "malloc_fails", 0);
  Add(&l, "bytes", bytes);
  Add(&l, "curr_items", m->table.items());
  Add(&l, "total_items", t.total_items);
  Add(&l, "slab_global_page_pool", m->slabs.global_pool_pages());
  Add(&l, "expired_unfetched", lru_sum(&LruClassStats::expired_unfetched));
  Add(&l, "evicted_unfetched", lru_sum(&LruClassStats::evicted_unfetched));
  if (opts_.lru_maintainer) Add(&l, "evicted_active", lru_sum(&LruClassStats::evicted_active));
  Add(&l, "evictions", lru_sum(&LruClassStats::evicted));
  Add(&l, "reclaimed", lru_sum(&LruClassStats::reclaimed));
  Add(&l, "crawler_reclaimed", lru_sum(&LruClassStats::crawler_reclaimed));
  Add(&l, "crawler_items_checked", lru_sum(&LruClassStats::crawler_items_checked));
  Add(&l, "lrutail_reflocked", lru_sum(&LruClassStats::lrutail_reflocked));
  if (opts_.lru_maintainer) {
    Add(&l, "moves_to_cold", lru_sum(&LruClassStats::moves_to_cold));
    Add(&l, "moves_to_warm", lru_sum(&LruClassStats::moves_to_warm));
    Add(&l, "moves_within_lru", lru_sum(&LruClassStats::moves_within_lru));
    Add(&l, "direct_reclaims", lru_sum(&LruClassStats::direct_reclaims));
    Add(&l, "lru_bumps_dropped", 0);
  }
  return l;
}

StatList Engine::SettingsStats() const {
  const EngineOptions& o = opts_;
  StatList l;
  Add(&l, "maxbytes", impl_->slabs.mem_limit());
  AddStr(&l, "evictions", impl_->evict_to_free.load(std::memory_order_relaxed) ? "on" : "off");
  char f[32];  // memcached prints the factor with "%.2f"
  std::snprintf(f, sizeof(f), "%.2f", o.factor);
  AddStr(&l, "growth_factor", f);
  Add(&l, "chunk_size", o.chunk_size_min);
  AddStr(&l, "cas_enabled", o.use_cas ? "yes" : "no");
  Add(&l, "item_size_max", o.item_size_max);
  Add(&l, "slab_chunk_max", impl_->slabs.ChunkSize(impl_->slabs.largest_class()));
  AddStr(&l, "slab_reassign", o.slab_reassign ? "yes" : "no");
  Add(&l, "slab_automove", static_cast<uint64_t>(impl_->rebalancer->automove()));
  {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.2f", impl_->rebalancer->ratio());
    AddStr(&l, "slab_automove_ratio", buf);
    Add(&l, "slab_automove_window", impl_->rebalancer->window());
    std::snprintf(buf, sizeof(buf), "%.3f", impl_->rebalancer->freeratio());
    AddStr(&l, "slab_automove_freeratio", buf);
  }
  AddStr(&l, "lru_crawler", impl_->crawler->running_thread() ? "yes" : "no");
  Add(&l, "lru_crawler_sleep", impl_->crawler->sleep_usec());
  Add(&l, "lru_crawler_tocrawl", impl_->crawler->to_crawl());
  AddStr(&l, "lru_maintainer_thread", o.lru_maintainer ? "yes" : "no");
  Add(&l, "hot_lru_pct", static_cast<uint64_t>(o.hot_lru_pct));
  Add(&l, "warm_lru_pct", static_cast<uint64_t>(o.warm_lru_pct));
  AddStr(&l, "hot_max_factor", std::to_string(o.hot_max_factor).substr(0, 4));
  AddStr(&l, "warm_max_factor", std::to_string(o.warm_max_factor).substr(0, 4));
  AddStr(&l, "temp_lru", o.temp_lru ? "yes" : "no");
  Add(&l, "temporary_ttl", o.temp_ttl);
  Add(&l, "hashpower_init", static_cast<uint64_t>(o.hashpower_init));
  AddStr(&l, "detail_enabled", impl_->prefix.enabled() ? "yes" : "no");
  return l;
}

StatList Engine::ItemStats() const {
  Impl* m = impl_.get();
  const uint32_t now = m->Now();
  StatList l;
  for (int c = 1; c <= m->slabs.num_classes(); ++c) {
    uint64_t hot = m->lru.Items(c, Segment::kHot), warm = m->lru.Items(c, Segment::kWarm);
    uint64_t cold = m->lru.Items(c, Segment::kCold), temp = m->lru.Items(c, Segment::kTemp);
    const LruClassStats& s = m->lru.stats(c);
    uint64_t total = hot + warm + cold + temp;
    if (total == 0 && s.evicted.load(std::memory_order_relaxed) == 0 &&
        s.outofmemory.load(std::memory_order_relaxed) == 0) {
      continue;  // memcached lists classes that hold or held items
    }
    auto ld = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
    uint64_t mem = 0;
    for (int g = 0; g < kSegments; ++g) mem += m->lru.Bytes(c, static_cast<Segment>(g));
    // As memcached 1.6.45: the segment counts and the maintainer's counters
    // only while the LRU maintainer runs.
    const bool maint = m->opts.lru_maintainer;
    Add(&l, "items:" + ClassKey(c, "number"), total);
    if (maint) {
      Add(&l, "items:" + ClassKey(c, "number_hot"), hot);
      Add(&l, "items:" + ClassKey(c, "number_warm"), warm);
      Add(&l, "items:" + ClassKey(c, "number_cold"), cold);
      if (m->opts.temp_lru) Add(&l, "items:" + ClassKey(c, "number_temp"), temp);
      Add(&l, "items:" + ClassKey(c, "age_hot"), m->lru.TailAge(c, Segment::kHot, now));
      Add(&l, "items:" + ClassKey(c, "age_warm"), m->lru.TailAge(c, Segment::kWarm, now));
    }
    Add(&l, "items:" + ClassKey(c, "age"), m->lru.TailAge(c, Segment::kCold, now));
    Add(&l, "items:" + ClassKey(c, "mem_requested"), mem);
    Add(&l, "items:" + ClassKey(c, "evicted"), ld(s.evicted));
    Add(&l, "items:" + ClassKey(c, "evicted_nonzero"), ld(s.evicted_nonzero));
    Add(&l, "items:" + ClassKey(c, "evicted_time"), s.evicted_time.load(std::memory_order_relaxed));
    Add(&l, "items:" + ClassKey(c, "outofmemory"), ld(s.outofmemory));
    Add(&l, "items:" + ClassKey(c, "tailrepairs"), 0);
    Add(&l, "items:" + ClassKey(c, "reclaimed"), ld(s.reclaimed));
    Add(&l, "items:" + ClassKey(c, "expired_unfetched"), ld(s.expired_unfetched));
    Add(&l, "items:" + ClassKey(c, "evicted_unfetched"), ld(s.evicted_unfetched));
    if (maint) Add(&l, "items:" + ClassKey(c, "evicted_active"), ld(s.evicted_active));
    Add(&l, "items:" + ClassKey(c, "crawler_reclaimed"), ld(s.crawler_reclaimed));
    Add(&l, "items:" + ClassKey(c, "crawler_items_checked"), ld(s.crawler_items_checked));
    Add(&l, "items:" + ClassKey(c, "lrutail_reflocked"), ld(s.lrutail_reflocked));
    if (maint) {
      Add(&l, "items:" + ClassKey(c, "moves_to_cold"), ld(s.moves_to_cold));
      Add(&l, "items:" + ClassKey(c, "moves_to_warm"), ld(s.moves_to_warm));
      Add(&l, "items:" + ClassKey(c, "moves_within_lru"), ld(s.moves_within_lru));
      Add(&l, "items:" + ClassKey(c, "direct_reclaims"), ld(s.direct_reclaims));
    }
  }
  return l;
}

StatList Engine::SlabStats() const {
  Impl* m = impl_.get();
  ThreadTotals t = m->registry.Sum();
  StatList l;
  uint64_t active = 0;
  for (int c = 1; c <= m->slabs.num_classes(); ++c) {
    SlabClassInfo i = m->slabs.Info(c);
    if (i.pages == 0) continue;
    ++active;
    const ThreadTotals::Slab& s = t.slab[c];
    Add(&l, ClassKey(c, "chunk_size"), i.chunk_size);
    Add(&l, ClassKey(c, "chunks_per_page"), i.chunks_per_page);
    Add(&l, ClassKey(c, "total_pages"), i.pages);
    Add(&l, ClassKey(c, "total_chunks"), i.total_chunks);
    Add(&l, ClassKey(c, "used_chunks"), i.total_chunks - i.free_chunks);
    Add(&l, ClassKey(c, "free_chunks"), i.free_chunks);
    Add(&l, ClassKey(c, "free_chunks_end"), 0);
    Add(&l, ClassKey(c, "get_hits"), s.get_hits);
    Add(&l, ClassKey(c, "cmd_set"), s.cmd_set);
    Add(&l, ClassKey(c, "delete_hits"), s.delete_hits);
    Add(&l, ClassKey(c, "incr_hits"), s.incr_hits);
    Add(&l, ClassKey(c, "decr_hits"), s.decr_hits);
    Add(&l, ClassKey(c, "cas_hits"), s.cas_hits);
    Add(&l, ClassKey(c, "cas_badval"), s.cas_badval);
    Add(&l, ClassKey(c, "touch_hits"), s.touch_hits);
  }
  Add(&l, "active_slabs", active);
  Add(&l, "total_malloced", m->slabs.malloced());
  return l;
}

StatList Engine::SizeStats() const {
  // memcached tracks the size histogram only with -o track_sizes; off here.
  return {{"sizes_status", "disabled"}};
}

// `stats reset`: what memcached 1.6.45's stats_reset clears: the per-thread
// counters, the per-class item stats, the prefix table of `stats detail`,
// and the engine's global counters.
void Engine::ResetStats() {
  Impl* m = impl_.get();
  m->registry.Reset();
  for (int c = 0; c < kMaxClasses; ++c) {
    LruClassStats& s = m->lru.stats(c);
    for (std::atomic<uint64_t>* a :
         {&s.evicted, &s.evicted_nonzero, &s.outofmemory, &s.reclaimed, &s.expired_unfetched,
          &s.evicted_unfetched, &s.evicted_active, &s.crawler_reclaimed,
          &s.crawler_items_checked, &s.lrutail_reflocked, &s.moves_to_cold, &s.moves_to_warm,
          &s.moves_within_lru, &s.direct_reclaims}) {
      a->store(0, std::memory_order_relaxed);
    }
    s.evicted_time.store(0, std::memory_order_relaxed);
  }
  m->reassign_last_busy.store(0, std::memory_order_relaxed);
  m->prefix.Clear();
  for (std::atomic<uint64_t>* a :
       {&m->cmd_flush, &m->reassign_rescues, &m->reassign_chunk_rescues, &m->reassign_busy,
        &m->reassign_inline_reclaim, &m->reassign_busy_deletes, &m->reassign_busy_nomem,
        &m->slabs_moved, &m->maintainer_juggles, &m->crawler_starts,
        &m->crawler_reclaimed_total}) {
    a->store(0, std::memory_order_relaxed);
  }
}
void Engine::SetDetailEnabled(bool on) { impl_->prefix.SetEnabled(on); }
std::string Engine::DetailDump() const { return impl_->prefix.Dump(); }
bool Engine::SetMemLimit(size_t bytes) { return impl_->slabs.SetMemLimit(bytes); }
size_t Engine::mem_limit() const { return impl_->slabs.mem_limit(); }
bool Engine::over_mem_limit() const { return impl_->slabs.over_limit(); }
bool Engine::evict_to_free() const { return impl_->evict_to_free.load(std::memory_order_relaxed); }
void Engine::SetEvictToFree(bool on) { impl_->evict_to_free.store(on, std::memory_order_relaxed); }

uint64_t Engine::EvictToLimit() {
  Impl* m = impl_.get();
  const size_t limit = m->slabs.mem_limit();
  if (!m->evict_to_free.load(std::memory_order_relaxed) || limit == 0) return 0;
  auto used = [m] {
    uint64_t bytes = static_cast<uint64_t>(std::max<int64_t>(0, m->slabs.heap_bytes()));
    for (int c = 1; c <= m->slabs.largest_class(); ++c) {
      for (int g = 0; g < kSegments; ++g) bytes += m->lru.Bytes(c, static_cast<Segment>(g));
    }
    return bytes;
  };
  uint64_t evicted = 0;
  while (used() > limit) {
    bool progress = false;
    for (int c = 1; c <= m->slabs.largest_class(); ++c) {
      for (int i = 0; i < 64 && m->FreeSomething(c); ++i) {
        progress = true;
        ++evicted;
      }
    }
    if (!progress) break;
  }
  return evicted;
}

std::string Engine::SlabsReassign(int src, int dst) {
  if (!opts_.slab_reassign) return "CLIENT_ERROR slab reassignment disabled";
  return impl_->rebalancer->Reassign(src, dst);
}

void Engine::SetSlabAutomove(int mode) { impl_->rebalancer->SetAutomove(mode); }
void Engine::SetSlabAutomoveRatio(double r) { impl_->rebalancer->SetRatio(r); }
void Engine::SetSlabAutomoveWindow(uint32_t s) { impl_->rebalancer->SetWindow(s); }
void Engine::SetSlabAutomoveFreeratio(double r) { impl_->rebalancer->SetFreeratio(r); }
std::string Engine::CrawlerCrawl(std::string_view classes) { return impl_->crawler->Request(classes); }

bool Engine::AutomoveDecideForTest(int* src, int* dst) { return impl_->rebalancer->Decide(src, dst); }

void Engine::CrawlerAutoCrawlForTest() {
  impl_->crawler->CrawlNow(std::vector<bool>(kMaxClasses, true), /*automatic=*/true);
}

bool Engine::CrawlerEnable(bool on) {
  if (on) {
    impl_->crawler->Start();
  } else {
    impl_->crawler->Stop();
  }
  return true;
}

void Engine::CrawlerSetSleep(uint32_t usec) { impl_->crawler->SetSleep(usec); }
void Engine::CrawlerSetToCrawl(uint32_t n) { impl_->crawler->SetToCrawl(n); }

bool Engine::ValidCrawlClasses(std::string_view classes) const {
  std::vector<bool> sel;
  return impl_->crawler->ParseClasses(classes, &sel);
}

std::vector<CacheDumpEntry> Engine::CacheDump(int cls, uint32_t limit) {
  Impl* m = impl_.get();
  std::vector<CacheDumpEntry> out;
  if (cls <= 0 || cls >= kMaxClasses) return out;
  constexpr size_t kMaxBytes = 2u << 20;  // memcached's 2 MB response cap
  size_t bytes = 0;
  Lru::List& l = m->lru.list(cls, Segment::kCold);
  MutexLock lock(&l.mu);
  for (Item* it = l.head; it != nullptr && (limit == 0 || out.size() < limit); it = it->next) {
    if (HasFlag(it, kItemKeyBinary) || it->nkey == 0) continue;
    CacheDumpEntry e;
    e.key.assign(KeyOf(it));
    e.value_bytes = it->nbytes;
    const uint64_t exp = ExpiryRelSec(it);
    e.exp_unix = exp == 0 ? 0 : m->started + static_cast<int64_t>(exp);
    bytes += e.key.size() + 32;
    if (bytes + 6 > kMaxBytes) break;
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<DumpEntry> Engine::MetaDump(std::string_view classes) {
  Impl* m = impl_.get();
  std::vector<bool> sel;
  std::vector<DumpEntry> out;
  if (!m->crawler->ParseClasses(classes, &sel)) return out;
  const uint32_t now = m->Now();
  uint64_t cursor = 0;
  do {
    cursor = m->table.ScanStep(cursor, [&](Item* it) {
      const int cls = ClassOf(it);
      if (!sel[cls] || m->IsDead(it, now)) return;
      DumpEntry e;
      e.key = std::string(KeyOf(it));
      const uint64_t exp = ExpiryRelSec(it);
      e.exp_unix = exp == 0 ? -1 : m->started + static_cast<int64_t>(exp);
      e.last_access_unix = m->started + it->time.load(std::memory_order_relaxed);
      e.cas = CasOf(it);
      e.fetched = HasFlag(it, kItemFetched);
      e.slab_class = cls;
      e.size = m->Ntotal(it);
      e.flags = ClientFlagsOf(it);
      e.key_binary = HasFlag(it, kItemKeyBinary);
      out.push_back(std::move(e));
    });
  } while (cursor != 0);
  return out;
}

}  // namespace trove::engine
