// Stats summation and per-prefix detail stats. Any thread.
#include "engine/stats.h"

#include "common/str_append.h"

namespace trove::engine {

ThreadStats* StatsRegistry::New() {
  MutexLock l(&mu_);
  all_.push_back(std::make_unique<ThreadStats>());
  return all_.back().get();
}

ThreadTotals StatsRegistry::RawSumLocked() const {
  ThreadTotals t;
  for (const auto& s : all_) {
    t.get_cmds += s->get_cmds.Get();
    t.get_misses += s->get_misses.Get();
    t.get_expired += s->get_expired.Get();
    t.get_flushed += s->get_flushed.Get();
    t.touch_cmds += s->touch_cmds.Get();
    t.touch_misses += s->touch_misses.Get();
    t.delete_misses += s->delete_misses.Get();
    t.incr_misses += s->incr_misses.Get();
    t.decr_misses += s->decr_misses.Get();
    t.cas_misses += s->cas_misses.Get();
    t.store_too_large += s->store_too_large.Get();
    t.store_no_memory += s->store_no_memory.Get();
    t.total_items += s->total_items.Get();
    t.meta_cmds += s->meta_cmds.Get();
    for (int c = 0; c < kMaxClasses; ++c) {
      const SlabThreadStats& in = s->slab[c];
      ThreadTotals::Slab& o = t.slab[c];
      o.get_hits += in.get_hits.Get();
      o.cmd_set += in.cmd_set.Get();
      o.delete_hits += in.delete_hits.Get();
      o.incr_hits += in.incr_hits.Get();
      o.decr_hits += in.decr_hits.Get();
      o.cas_hits += in.cas_hits.Get();
      o.cas_badval += in.cas_badval.Get();
      o.touch_hits += in.touch_hits.Get();
    }
  }
  return t;
}

ThreadTotals StatsRegistry::Sum() const {
  MutexLock l(&mu_);
  ThreadTotals t = RawSumLocked();
  const ThreadTotals& b = baseline_;
  t.get_cmds -= b.get_cmds;
  t.get_misses -= b.get_misses;
  t.get_expired -= b.get_expired;
  t.get_flushed -= b.get_flushed;
  t.touch_cmds -= b.touch_cmds;
  t.touch_misses -= b.touch_misses;
  t.delete_misses -= b.delete_misses;
  t.incr_misses -= b.incr_misses;
  t.decr_misses -= b.decr_misses;
  t.cas_misses -= b.cas_misses;
  t.store_too_large -= b.store_too_large;
  t.store_no_memory -= b.store_no_memory;
  t.total_items -= b.total_items;
  t.meta_cmds -= b.meta_cmds;
  for (int c = 0; c < kMaxClasses; ++c) {
    ThreadTotals::Slab& o = t.slab[c];
    const ThreadTotals::Slab& bs = b.slab[c];
    o.get_hits -= bs.get_hits;
    o.cmd_set -= bs.cmd_set;
    o.delete_hits -= bs.delete_hits;
    o.incr_hits -= bs.incr_hits;
    o.decr_hits -= bs.decr_hits;
    o.cas_hits -= bs.cas_hits;
    o.cas_badval -= bs.cas_badval;
    o.touch_hits -= bs.touch_hits;
    t.get_hits += o.get_hits;
    t.cmd_set += o.cmd_set;
    t.delete_hits += o.delete_hits;
    t.incr_hits += o.incr_hits;
    t.decr_hits += o.decr_hits;
    t.cas_hits += o.cas_hits;
    t.cas_badval += o.cas_badval;
    t.touch_hits += o.touch_hits;
  }
  return t;
}

void StatsRegistry::Reset() {
  MutexLock l(&mu_);
  baseline_ = RawSumLocked();
}

PrefixStats::Entry* PrefixStats::FindLocked(std::string_view key) {
  size_t pos = key.find(':');
  if (pos == std::string_view::npos) return nullptr;  // no prefix: not counted
  std::string prefix(key.substr(0, pos));
  auto [it, inserted] = map_.try_emplace(prefix);
  if (inserted) order_.push_back(prefix);
  return &it->second;
}

void PrefixStats::RecordGet(std::string_view key, bool hit) {
  if (!enabled()) return;
  MutexLock l(&mu_);
  if (Entry* e = FindLocked(key)) {
    ++e->get;
    if (hit) ++e->hit;
  }
}

void PrefixStats::RecordSet(std::string_view key) {
  if (!enabled()) return;
  MutexLock l(&mu_);
  if (Entry* e = FindLocked(key)) ++e->set;
}

void PrefixStats::RecordDelete(std::string_view key) {
  if (!enabled()) return;
  MutexLock l(&mu_);
  if (Entry* e = FindLocked(key)) ++e->del;
}

void PrefixStats::Clear() {
  MutexLock l(&mu_);
  map_.clear();
  order_.clear();
}

std::string PrefixStats::Dump() const {
  MutexLock l(&mu_);
  std::string out;
  for (const std::string& p : order_) {
    const Entry& e = map_.at(p);
    out += "PREFIX ";
    out += p;
    out += " get ";
    AppendU64(out, e.get);
    out += " hit ";
    AppendU64(out, e.hit);
    out += " set ";
    AppendU64(out, e.set);
    out += " del ";
    AppendU64(out, e.del);
    out += "\r\n";
  }
  out += "END\r\n";
  return out;
}

}  // namespace trove::engine
