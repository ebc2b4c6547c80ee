// Engine: creation, background threads and the memcached operations (get,
// touch, stores, delete, flush). The RESP front's locked access, heap values
// and scan are in engine_locked.cc. Worker threads.
#include "engine/engine.h"

#include <algorithm>

#include "common/limits.h"
#include "engine/crawler.h"
#include "engine/engine_impl.h"
#include "engine/lru_maintainer.h"
#include "engine/slab_rebalancer.h"
#include "engine/warm_restart.h"

namespace trove::engine {

namespace {
SlabOptions MakeSlabOptions(const EngineOptions& o, const MemoryFile* arena) {
  SlabOptions s;
  if (arena != nullptr) {
    s.arena = arena->base();
    s.arena_size = arena->size();
  }
  s.mem_limit = o.mem_limit;
  s.page_size = o.item_size_max;
  s.factor = o.factor;
  s.min_chunk = kItemHeader + o.chunk_size_min;
  s.slab_chunk_max = o.slab_chunk_max != 0 ? o.slab_chunk_max : o.item_size_max / 2;
  s.prealloc = o.prealloc;
  s.initial_malloced = o.initial_malloced;
  return s;
}
}  // namespace

Engine::Impl::Impl(Engine* e, const EngineOptions& o, const Clock* c, WarmStart* warm)
    : engine(e),
      opts(o),
      clock(c),
      // memcached starts its clock a little in the past so that rel time 1
      // ("expired") is always before now. A warm restart keeps the previous
      // run's base, so the items' engine-relative times keep their meaning.
      started(warm != nullptr && warm->reuse ? warm->saved.process_started
                                             : c->UnixSeconds() - 2),
      header(kItemHeader + (o.use_cas ? 8 : 0)),
      memfile(warm != nullptr ? std::move(warm->file) : nullptr),
      slabs(MakeSlabOptions(o, memfile.get())),
      locks(std::min(o.item_lock_power, o.hashpower_init)),
      table(&locks, o.hashpower_init),
      shared_ts(registry.New()),
      bg_ts(registry.New()) {
  lru.set_largest_class(slabs.largest_class());  // chunked items' LRU (Lru::LruClassOf)
}

Engine::Impl::~Impl() = default;

Result<std::unique_ptr<Engine>> Engine::Create(const EngineOptions& given) {
  EngineOptions opts = given;
  const size_t chunk_max = opts.slab_chunk_max != 0 ? opts.slab_chunk_max : opts.item_size_max / 2;
  if (opts.item_size_max < 1024 || opts.item_size_max > (1u << 30)) {
    return Status::Invalid("item_size_max must be between 1 KiB and 1 GiB");
  }
  if (opts.factor <= 1.0) return Status::Invalid("factor must be greater than 1.0");
  if (chunk_max > opts.item_size_max || opts.item_size_max % chunk_max != 0) {
    return Status::Invalid("slab_chunk_max must divide item_size_max");
  }
  if (opts.chunk_size_min < 16 || kItemHeader + opts.chunk_size_min + 8 > chunk_max) {
    return Status::Invalid("chunk_size_min out of range");
  }
  if (opts.hashpower_init < 4 || opts.hashpower_init > 32) {
    return Status::Invalid("hashpower must be between 4 and 32");
  }
  if (opts.item_lock_power < 1 || opts.item_lock_power > 20) {
    return Status::Invalid("item_lock_power must be between 1 and 20");
  }
  if (opts.slab_automove < 0 || opts.slab_automove > 2) {
    return Status::Invalid("slab_automove must be 0, 1 or 2");
  }
  // -e: the memory file, and whether the previous run's items are reused
  // (then with the hash table size they had, as memcached).
  std::unique_ptr<WarmStart> warm;
  if (!opts.memory_file.empty()) {
    auto w = OpenWarmStart(opts, chunk_max);
    if (!w.ok()) return w.status();
    warm = std::make_unique<WarmStart>(std::move(w.value()));
    if (warm->reuse) opts.hashpower_init = static_cast<int>(warm->saved.hashpower);
  }
  std::unique_ptr<Engine> e(new Engine(opts, warm.get()));
  Status st = warm != nullptr && warm->reuse ? e->impl_->RestoreWarm(*warm)
                                             : e->impl_->slabs.Init();
  if (!st.ok()) return st;
  return e;
}

Engine::Engine(const EngineOptions& opts) : Engine(opts, nullptr) {}

Engine::Engine(const EngineOptions& opts, WarmStart* warm)
    : opts_(opts), clock_(opts.clock != nullptr ? opts.clock : SystemClock::Default()) {
  opts_.clock = clock_;
  impl_ = std::make_unique<Impl>(this, opts_, clock_, warm);
  impl_->maintainer = std::make_unique<LruMaintainer>(impl_.get());
  impl_->crawler = std::make_unique<Crawler>(impl_.get());
  impl_->rebalancer = std::make_unique<SlabRebalancer>(impl_.get());
}

Engine::~Engine() {
  Stop();
  // After SaveForRestart the items belong to the memory file's next run.
  if (impl_->saved_for_restart) return;
  // Drop what is still linked so heap values are deleted.
  Impl* m = impl_.get();
  uint64_t cursor = 0;
  do {
    cursor = m->table.ScanStep(cursor, [m](Item* it) {
      m->UnlinkLocked(it, HashKey(KeyOf(it)));
    });
  } while (cursor != 0);
}

void Engine::Impl::StartTicker() {
  if (clock != SystemClock::Default() || ticker.joinable()) return;
  cached_unix.store(clock->UnixSeconds(), std::memory_order_relaxed);
  {
    MutexLock l(&ticker_mu);
    ticker_stop = false;
  }
  ticker = std::thread([this] {
    for (;;) {
      {
        MutexLock l(&ticker_mu);
        if (ticker_stop) return;
        ticker_cv.WaitFor(100);
        if (ticker_stop) return;
      }
      cached_unix.store(clock->UnixSeconds(), std::memory_order_relaxed);
    }
  });
  use_cached_time.store(true, std::memory_order_relaxed);
}

void Engine::Impl::StopTicker() {
  if (!ticker.joinable()) return;
  use_cached_time.store(false, std::memory_order_relaxed);
  {
    MutexLock l(&ticker_mu);
    ticker_stop = true;
    ticker_cv.SignalAll();
  }
  ticker.join();
}

void Engine::AddObserver(ItemObserver* o) {
  CHECK(!impl_->started_threads);
  CHECK(impl_->num_observers < Impl::kMaxObservers);
  impl_->observers[impl_->num_observers++] = o;
}

void Engine::Start() {
  if (impl_->started_threads) return;
  impl_->started_threads = true;
  impl_->StartTicker();
  impl_->table.StartExpander();
  if (opts_.lru_maintainer) impl_->maintainer->Start();
  if (opts_.lru_crawler) impl_->crawler->Start();
  if (opts_.slab_reassign) impl_->rebalancer->Start();
}

void Engine::Stop() {
  if (!impl_->started_threads) return;
  impl_->started_threads = false;
  impl_->rebalancer->Stop();
  impl_->crawler->Stop();
  impl_->maintainer->Stop();
  impl_->table.StopExpander();
  impl_->StopTicker();
}

ThreadStats* Engine::NewThreadStats() { return impl_->registry.New(); }

namespace {
// Get and GetAndTouch: looks key up under its stripe, runs on_hit(it, now)
// there on a hit, and counts the lookup as a get, or (as_touch) as a touch
// only: gat/gats are not gets (memcached). Inlined: as_touch is a constant.
template <typename OnHit>
Item* CountedLookup(Engine::Impl* m, std::string_view key, ThreadStats* ts, bool as_touch,
                    OnHit on_hit) {
  const auto [hv, now] = m->StartKeyOp(key, &ts);
  Item* it;
  {
    StripeLock l(&m->locks, m->locks.StripeOf(hv));
    it = m->FindLocked(key, hv, now, ts);
    if (it != nullptr) on_hit(it, now);
  }
  (as_touch ? ts->touch_cmds : ts->get_cmds).Add();
  if (it != nullptr) {
    SlabThreadStats& slab = ts->slab[ClassOf(it)];
    (as_touch ? slab.touch_hits : slab.get_hits).Add();
  } else {
    (as_touch ? ts->touch_misses : ts->get_misses).Add();
  }
  m->prefix.RecordGet(key, it != nullptr);
  return it;
}
}  // namespace

ItemRef Engine::Get(std::string_view key, ThreadStats* ts, bool bump) {
  auto on_hit = [bump](Item* it, uint32_t now) {
    if (bump) Impl::Bump(it, now);
  };
  return ItemRef(this, CountedLookup(impl_.get(), key, ts, /*as_touch=*/false, on_hit));
}

ItemRef Engine::Peek(std::string_view key, ThreadStats* ts) {
  Impl* m = impl_.get();
  const uint64_t hv = HashKey(key);
  StripeLock l(&m->locks, m->locks.StripeOf(hv));
  return ItemRef(this, m->FindLocked(key, hv, m->Now(), m->Ts(ts)));
}

ItemRef Engine::GetAndTouch(std::string_view key, int64_t exptime, ThreadStats* ts) {
  Impl* m = impl_.get();
  auto on_hit = [m, exptime](Item* it, uint32_t now) {
    TouchExpiry(it, m->RelTime(exptime));
    Impl::Bump(it, now);
  };
  return ItemRef(this, CountedLookup(m, key, ts, /*as_touch=*/true, on_hit));
}

bool Engine::Touch(std::string_view key, int64_t exptime, ThreadStats* ts) {
  Impl* m = impl_.get();
  const auto [hv, now] = m->StartKeyOp(key, &ts);
  int cls = 0;
  {
    StripeLock l(&m->locks, m->locks.StripeOf(hv));
    Item* it = m->PeekLocked(key, hv, now, ts);
    if (it != nullptr) {
      TouchExpiry(it, m->RelTime(exptime));
      Impl::Bump(it, now);
      cls = ClassOf(it);
    }
  }
  ts->touch_cmds.Add();
  if (cls != 0) {
    ts->slab[cls].touch_hits.Add();
  } else {
    ts->touch_misses.Add();
  }
  return cls != 0;
}

void Engine::CountTooLarge(ThreadStats* ts) { impl_->Ts(ts)->store_too_large.Add(); }

AllocOutput Engine::Allocate(std::string_view key, uint32_t flags, int64_t exptime,
                             size_t value_len, ThreadStats* ts, ValueType type,
                             size_t max_value) {
  Impl* m = impl_.get();
  ts = m->Ts(ts);
  AllocOutput out;
  Item* it =
      m->AllocItem(key, flags, m->RelTime(exptime), value_len, type, &out.status, max_value);
  if (it == nullptr) {
    if (out.status == AllocStatus::kTooLarge) {
      ts->store_too_large.Add();
    } else {
      ts->store_no_memory.Add();
    }
    return out;
  }
  out.item = ItemRef(this, it);
  return out;
}

StoreResult Engine::Store(std::string_view key, uint32_t flags, int64_t exptime,
                          std::string_view value, const StoreArgs& args, ThreadStats* ts,
                          uint64_t* cas_out) {
  AllocOutput a = Allocate(key, flags, exptime, value.size(), ts);
  if (a.status != AllocStatus::kOk) {
    // memcached drops the old value of a failed set so stale data cannot
    // outlive the write that should have replaced it.
    if (args.mode == StoreMode::kSet) {
      Impl* m = impl_.get();
      const uint64_t hv = HashKey(key);
      StripeLock l(&m->locks, m->locks.StripeOf(hv));
      if (Item* old = m->table.FindLocked(key, hv)) m->UnlinkLocked(old, hv);
    }
    return a.status == AllocStatus::kTooLarge ? StoreResult::kTooLarge : StoreResult::kNoMemory;
  }
  WritePayload(a.item.raw(), 0, value.data(), value.size());
  return StoreItem(a.item, args, ts, cas_out);
}

StoreResult Engine::StoreItem(ItemRef& item, const StoreArgs& args, ThreadStats* ts,
                              uint64_t* cas_out) {
  Impl* m = impl_.get();
  Item* it = item.raw();
  const uint64_t hv = HashKey(KeyOf(it));
  StripeLock l(&m->locks, m->locks.StripeOf(hv));
  StoreResult r = m->StoreLocked(&it, hv, args, m->Ts(ts), cas_out);
  if (it != item.raw()) item = ItemRef(this, it);  // append/prepend made a new item
  return r;
}

StoreResult Engine::StoreItemLocked(ItemRef& item, const StoreArgs& args, ThreadStats* ts,
                                    uint64_t* cas_out) {
  Impl* m = impl_.get();
  Item* it = item.raw();
  const uint64_t hv = HashKey(KeyOf(it));
  m->locks.AssertHeld(m->locks.StripeOf(hv));
  StoreResult r = m->StoreLocked(&it, hv, args, m->Ts(ts), cas_out);
  if (it != item.raw()) item = ItemRef(this, it);
  return r;
}

StoreResult Engine::Impl::StoreLocked(Item** itp, uint64_t hv, const StoreArgs& args,
                                      ThreadStats* ts, uint64_t* cas_out) {
  Item* it = *itp;
  const std::string_view key = KeyOf(it);
  const uint32_t now = Now();
  // The new item is not linked yet, so its flag bits are ours to set.
  if (args.key_binary) SetFlag(it, kItemKeyBinary);
  ts->slab[ClassOf(it)].cmd_set.Add();
  prefix.RecordSet(key);
  StoreMode mode = args.mode;
  // ms semantics: a CAS with set or replace is a cas.
  if (args.compare_cas.has_value() && (mode == StoreMode::kSet || mode == StoreMode::kReplace)) {
    mode = StoreMode::kCas;
  }
  Item* old = PeekLocked(key, hv, now, ts);
  Item* to_link = it;
  Item* made = nullptr;  // append/prepend result, owned here
  bool do_store = false;
  bool stale = false;
  StoreResult result = StoreResult::kNotStored;

  if (old != nullptr) {
    const uint64_t old_cas = CasOf(old);
    enum { kNone, kMatch, kStale, kBad } cas_res = kNone;
    const uint64_t want = args.compare_cas.value_or(0);  // 0 never matches
    if (!args.compare_cas.has_value() && mode != StoreMode::kCas) {
      cas_res = kNone;
    } else if (want != 0 && want == old_cas) {
      cas_res = kMatch;
    } else if (args.invalidate && want != 0 && want < old_cas) {
      cas_res = kStale;
    } else {
      cas_res = kBad;
    }
    switch (mode) {
      case StoreMode::kAdd:
        Bump(old, now);  // add of a present key still promotes it (memcached)
        break;
      case StoreMode::kCas:
        if (cas_res == kMatch) {
          ts->slab[ClassOf(old)].cas_hits.Add();
          do_store = true;
        } else if (cas_res == kStale) {
          // An older writer under invalidation: store, but keep the newer
          // CAS and mark the value stale so readers win a recache token.
          ts->slab[ClassOf(old)].cas_hits.Add();
          stale = true;
          do_store = true;
        } else {
          ts->slab[ClassOf(old)].cas_badval.Add();
          result = StoreResult::kExists;
        }
        break;
      case StoreMode::kAppend:
      case StoreMode::kPrepend: {
        if (cas_res != kNone && cas_res != kMatch) {
          result = StoreResult::kExists;
          break;
        }
        if (HasFlag(old, kItemHeap) || old->type != it->type) break;
        AllocStatus st;
        made = AllocItem(key, ClientFlagsOf(old), 0, size_t{old->nbytes} + it->nbytes,
                         static_cast<ValueType>(old->type), &st);
        if (made == nullptr) break;  // memcached answers NOT_STORED on OOM here
        CopyExpiry(made, old);
        const Item* first = mode == StoreMode::kAppend ? old : it;
        const Item* second = mode == StoreMode::kAppend ? it : old;
        // Copy through a bounded buffer: either side may be chunked.
        char buf[4096];
        size_t off = 0;
        for (const Item* src : {first, second}) {
          for (size_t done = 0; done < src->nbytes;) {
            size_t n = std::min(sizeof(buf), size_t{src->nbytes} - done);
            ReadPayload(src, done, buf, n);
            WritePayload(made, off, buf, n);
            done += n;
            off += n;
          }
        }
        to_link = made;
        do_store = true;
        break;
      }
      case StoreMode::kReplace:
      case StoreMode::kSet:
        do_store = true;
        break;
    }
    if (do_store) {
      if (args.keep_ttl) {
        CopyExpiry(to_link, old);
      }
      uint64_t cas = stale ? old_cas : (args.explicit_cas != 0 ? args.explicit_cas : NextCas());
      if (stale) {
        // memcached: a stale set replaces the value but keeps the TTL, the
        // stale mark and a win token already handed out.
        SetFlag(to_link, kItemStale);
        CopyExpiry(to_link, old);
        if (HasFlag(old, kItemTokenSent)) SetFlag(to_link, kItemTokenSent);
      }
      ReplaceLocked(old, to_link, hv, ts, cas);
      result = StoreResult::kStored;
    }
  } else {
    switch (mode) {
      case StoreMode::kAdd:
      case StoreMode::kSet:
        do_store = true;
        break;
      case StoreMode::kCas:
        ts->cas_misses.Add();
        result = StoreResult::kNotFound;
        break;
      case StoreMode::kAppend:
      case StoreMode::kPrepend:
        if (args.vivify_exptime.has_value()) {
          TouchExpiry(it, RelTime(*args.vivify_exptime));
          do_store = true;
        }
        break;
      case StoreMode::kReplace:
        break;
    }
    if (do_store) {
      LinkLocked(it, hv, ts, args.explicit_cas != 0 ? args.explicit_cas : NextCas());
      result = StoreResult::kStored;
    }
  }
  if (result == StoreResult::kStored && cas_out != nullptr) *cas_out = CasOf(to_link);
  if (made != nullptr) {
    if (result == StoreResult::kStored) {
      *itp = made;  // the caller's reference moves to the stored item
    } else {
      Release(made);
    }
  }
  return result;
}

DeleteResult Engine::Delete(std::string_view key, const DeleteArgs& args, ThreadStats* ts) {
  Impl* m = impl_.get();
  const auto [hv, now] = m->StartKeyOp(key, &ts);
  m->prefix.RecordDelete(key);
  StripeLock l(&m->locks, m->locks.StripeOf(hv));
  Item* it = m->PeekLocked(key, hv, now, ts);
  if (it == nullptr) {
    ts->delete_misses.Add();
    return DeleteResult::kNotFound;
  }
  if (args.compare_cas.has_value() && CasOf(it) != *args.compare_cas) {
    ts->delete_misses.Add();
    return DeleteResult::kExists;
  }
  if (args.invalidate && args.remove_value) {
    // md x I: the value emptied (as x) and the item marked stale (as I).
    AllocStatus st;
    Item* empty = m->AllocItem(key, 0, 0, 0, static_cast<ValueType>(it->type), &st);
    if (empty != nullptr) {
      CopyExpiry(empty, it);
      if (args.stale_exptime.has_value()) {
        TouchExpiry(empty, m->RelTime(*args.stale_exptime));
      }
      SetFlag(empty, kItemStale);
      m->ReplaceLocked(it, empty, hv, ts,
                       args.explicit_cas != 0 ? args.explicit_cas : m->NextCas());
      m->Release(empty);
      return DeleteResult::kDeleted;
    }
  }
  if (args.invalidate) {
    // md I: keep the item, mark it stale, bump its CAS and let the next
    // reader win the recache token.
    if (args.stale_exptime.has_value()) {
      TouchExpiry(it, m->RelTime(*args.stale_exptime));
    }
    SetFlag(it, kItemStale);
    ClearFlag(it, kItemTokenSent);
    SetCas(it, args.explicit_cas != 0 ? args.explicit_cas : m->NextCas());
    return DeleteResult::kDeleted;
  }
  ts->slab[ClassOf(it)].delete_hits.Add();
  if (args.remove_value) {
    // md x: an empty value with client flags 0 replaces the item.
    AllocStatus st;
    Item* empty = m->AllocItem(key, 0, 0, 0, static_cast<ValueType>(it->type), &st);
    if (empty != nullptr) {
      CopyExpiry(empty, it);
      m->ReplaceLocked(it, empty, hv, ts,
                       args.explicit_cas != 0 ? args.explicit_cas : m->NextCas());
      m->Release(empty);
      return DeleteResult::kDeleted;
    }
  }
  m->UnlinkLocked(it, hv);
  return DeleteResult::kDeleted;
}

void Engine::FlushAll(int64_t delay_seconds) {
  Impl* m = impl_.get();
  m->cmd_flush.fetch_add(1, std::memory_order_relaxed);
  const uint32_t now = m->Now();
  uint32_t new_oldest = delay_seconds > 0 ? m->RelTime(delay_seconds) : now;
  // memcached: with CAS, everything at or before the second before counts
  // by time, and items of this second by CAS order.
  if (opts_.use_cas) {
    new_oldest -= 1;
    if (new_oldest <= now) m->oldest_cas.store(m->NextCas(), std::memory_order_relaxed);
  }
  m->oldest_live.store(new_oldest, std::memory_order_relaxed);
}

// --- RESP: locked access ---

uint64_t Engine::KeyHash(std::string_view key) { return HashKey(key); }

void Engine::PrefetchKey(uint64_t hv) const {
  impl_->table.PrefetchSlot(hv);
  impl_->locks.Prefetch(impl_->locks.StripeOf(hv));
}

void Engine::PrefetchItem(uint64_t hv) const { impl_->table.PrefetchHead(hv); }

}  // namespace trove::engine
