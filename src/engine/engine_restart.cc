// Engine: the warm restart itself (-e). The save at a graceful stop and the
// page walk that rebuilds the index at the next start. Main thread, while no
// other engine thread runs.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "engine/engine.h"
#include "engine/engine_impl.h"
#include "engine/heap_codec.h"
#include "engine/warm_restart.h"

namespace trove::engine {

Status Engine::Impl::RestoreWarm(const WarmStart& w) {
  const RestartMeta& m = w.saved;
  cas_id.store(m.current_cas, std::memory_order_relaxed);
  oldest_live.store(m.oldest_live, std::memory_order_relaxed);
  oldest_cas.store(m.oldest_cas, std::memory_order_relaxed);

  // Pass 1: pages back to their classes, free chunks back on the free lists,
  // every other chunk that is not a chunk part collected. Parts are reached
  // only through their head (item.h), so the walk never reads their links.
  std::vector<Item*> found;
  if (!slabs.AdoptArenaPages(m.page_classes, [&found](Item* it) { found.push_back(it); })) {
    return Status(StatusCode::kFailedPrecondition,
                  "[restart] the saved page map does not fit the memory file");
  }
  const uint32_t now = Now();
  const char* base = memfile->base();
  std::vector<std::vector<Item*>> lists(size_t{kMaxClasses} * kSegments);
  std::vector<Item*> drop;
  for (Item* it : found) {
    bool live = HasFlag(it, kItemLinked) && !IsDead(it, now);
    if (live && HasFlag(it, kItemHeap)) {
      // The pointer named the old process's heap: the value comes from
      // FILE.heap, by the item's place in the memory file.
      live = false;
      auto rec = w.heap.find(static_cast<uint64_t>(reinterpret_cast<char*>(it) - base));
      if (opts.heap_codec != nullptr && rec != w.heap.end() && rec->second.key == KeyOf(it) &&
          static_cast<uint8_t>(rec->second.type) == it->type) {
        std::unique_ptr<HeapValue> v = opts.heap_codec->Decode(rec->second.type, rec->second.bytes);
        if (v != nullptr) {
          slabs.AddHeapBytes(static_cast<int64_t>(v->MemoryUsage()));
          SetHeapValue(it, v.release());
          live = true;
        }
      }
    }
    if (!live) {
      drop.push_back(it);
      continue;
    }
    it->refcount.store(1, std::memory_order_relaxed);  // the link's reference
    it->next = it->prev = it->h_next = nullptr;
    // The segment it had, unless this run has no such list.
    Segment seg = SegmentOf(it);
    if (!opts.lru_segmented) {
      seg = Segment::kCold;
    } else if (seg == Segment::kTemp && !opts.temp_lru) {
      seg = Segment::kHot;
    }
    SetSegment(it, seg);
    lists[static_cast<size_t>(lru.LruClassOf(it)) * kSegments + static_cast<size_t>(seg)].push_back(
        it);
  }

  // Pass 2: expired, flushed, unlinked or unrestorable items are freed with
  // their chunk parts (after pass 1, so no part reaches a free list twice).
  for (Item* it : drop) {
    ClearFlag(it, kItemHeap);  // the old pointer is not ours to delete
    ClearFlag(it, kItemLinked);
    it->refcount.store(0, std::memory_order_relaxed);
    FreeItem(it);
  }

  // Pass 3: each LRU list rebuilt in last-access order (oldest at the tail).
  for (std::vector<Item*>& l : lists) {
    std::stable_sort(l.begin(), l.end(), [](const Item* a, const Item* b) {
      return a->time.load(std::memory_order_relaxed) < b->time.load(std::memory_order_relaxed);
    });
    for (Item* it : l) {
      const uint64_t hv = HashKey(KeyOf(it));
      StripeLock g(&locks, locks.StripeOf(hv));
      table.InsertLocked(it, hv);
      lru.Link(it, Ntotal(it));
    }
  }
  restored = true;
  return Status::Ok();
}

Status Engine::Impl::SaveWarm() {
  if (memfile == nullptr) {
    return Status(StatusCode::kFailedPrecondition, "no memory file (-e) to save");
  }
  if (saved_for_restart) return Status::Ok();
  slabs.AbortMove();
  const std::string& path = memfile->path();

  // Heap values to FILE.heap; each is deleted and its pointer cleared, as the
  // process that reads the memory file next has its own heap.
  auto writer = HeapFileWriter::Create(path + ".heap");
  if (!writer.ok()) return writer.status();
  const char* base = memfile->base();
  uint64_t cursor = 0;
  std::string bytes;
  do {
    cursor = table.ScanStep(cursor, [&](Item* it) {
      if (!HasFlag(it, kItemHeap)) return;
      HeapValue* hv = HeapValueOf(it);
      if (hv == nullptr) return;
      if (opts.heap_codec != nullptr) {
        bytes.clear();
        opts.heap_codec->Encode(static_cast<ValueType>(it->type), *hv, &bytes);
        writer.value()->Add(static_cast<uint64_t>(reinterpret_cast<char*>(it) - base),
                            static_cast<ValueType>(it->type), KeyOf(it), bytes);
      }
      slabs.AddHeapBytes(-static_cast<int64_t>(hv->MemoryUsage()));
      delete hv;
      SetHeapValue(it, nullptr);
    });
  } while (cursor != 0);
  const uint64_t heap_items = writer.value()->count();
  Status st = writer.value()->Finish();
  if (!st.ok()) return st;

  RestartMeta m = CurrentSettings(opts, slabs.ChunkSize(slabs.largest_class()));
  m.current_time = Now();
  m.process_started = started;
  m.stop_time = clock->UnixSeconds();
  m.current_cas = cas_id.load(std::memory_order_relaxed);
  m.logger_gid = 0;
  m.hashpower = static_cast<uint32_t>(table.hashpower());
  m.oldest_live = oldest_live.load(std::memory_order_relaxed);
  m.oldest_cas = oldest_cas.load(std::memory_order_relaxed);
  m.mmap_oldbase = reinterpret_cast<uintptr_t>(base);
  m.heap_items = heap_items;
  m.page_classes = slabs.ArenaPageClasses();
  saved_for_restart = true;  // from here the memory belongs to the next run

  st = memfile->Sync();
  if (!st.ok()) return st;
  // The metadata last, written whole and renamed into place: without it the
  // next run starts clean, so a stop cut short never reuses half a save.
  const std::string meta = path + ".meta";
  const std::string tmp = meta + ".tmp";
  mode_t old = ::umask(S_IRWXG | S_IRWXO);
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  ::umask(old);
  if (f == nullptr) return Status::FromErrno("failed to write metadata file " + tmp);
  const std::string text = FormatRestartMeta(m);
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), meta.c_str()) != 0) {
    Status s = Status::FromErrno("failed to write metadata file " + meta);
    ::unlink(tmp.c_str());
    return s;
  }
  return Status::Ok();
}

Status Engine::SaveForRestart() {
  Stop();
  return impl_->SaveWarm();
}

bool Engine::restored() const { return impl_->restored; }

}  // namespace trove::engine
