// SlabRebalancer: moves slab pages between classes, on request
// (slabs reassign) or by automove policy (memcached modes 0/1/2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/background_thread.h"
#include "common/mutex.h"
#include "engine/engine.h"
#include "engine/item.h"

namespace trove::engine {

// What the mover found at a chunk on its last busy pass (memcached's
// slab_reassign_last_busy_status names).
enum class MoveStatus : uint8_t {
  kNone, kPass, kFromSlab, kFromLru, kBusy, kBusyUploading, kBusyActive, kBusyFloating, kLocked
};
const char* MoveStatusName(uint8_t status);

// Owner: Engine::Impl. Thread safety: public methods are thread-safe; mu_
// (kBackground) guards requests; the automove history is the rebalancer
// thread's. A move rescues what lives in the page (or evicts it when it is
// dead or cannot be rescued): it takes a reference under the slabs lock
// (SlabAllocator::RefMovingChunkOwner), drops that lock, then locks the
// item's stripe normally (it holds nothing else), so no reverse step. Under
// the stripe it may take LRU locks (try-locking other stripes) and the
// slabs lock: the engine's usual order.
class SlabRebalancer {
 public:
  explicit SlabRebalancer(Engine::Impl* impl);
  ~SlabRebalancer() { Stop(); }
  void Start() {
    bg_.Start([this] { Loop(); });
  }
  void Stop() { bg_.Stop(); }

  // memcached's replies: "OK", "BUSY ...", "BADCLASS ...", "NOSPARE ...", "SAME ...".
  std::string Reassign(int src, int dst);
  void SetAutomove(int mode) { automove_.store(mode, std::memory_order_relaxed); }
  int automove() const { return automove_.load(std::memory_order_relaxed); }
  // memcached's runtime knobs (slabs automove ratio|window|freeratio). A
  // new window restarts the history, as memcached re-inits its automover.
  void SetRatio(double r) { ratio_.store(r, std::memory_order_relaxed); }
  void SetWindow(uint32_t s) { window_.store(s, std::memory_order_relaxed); }
  void SetFreeratio(double r) { freeratio_.store(r, std::memory_order_relaxed); }
  double ratio() const { return ratio_.load(std::memory_order_relaxed); }
  uint32_t window() const { return window_.load(std::memory_order_relaxed); }
  double freeratio() const { return freeratio_.load(std::memory_order_relaxed); }
  // Moves one page now (synchronously); false if it could not complete.
  bool MovePage(int src, int dst);
  // One automove decision over the window since the last call; returns
  // true and fills src/dst when a move should happen.
  bool Decide(int* src, int* dst);

 private:
  void Loop();
  enum class Rescued : uint8_t { kYes, kNoMemory, kBusy };
  // Copies `chunk` (the linked item `owner` itself, or one of its chunk
  // parts) into a free chunk of the same class outside the moving page and
  // points everything that named it at the copy. REQUIRES: stripe(hv) held
  // and one reference on owner taken by the caller. A chunked item's head or
  // part moves only while nobody else holds the item (kBusy otherwise); no
  // free chunk gives kNoMemory (the caller frees room and retries).
  // allow_evictions: this move may evict to find room (RescueChunk).
  Rescued Rescue(Item* owner, Item* chunk, uint64_t hv, bool allow_evictions);
  Rescued RescuePart(Item* owner, Item* part, bool allow_evictions);
  // A free chunk of cls outside the moving page for a rescue: the free list,
  // else (allow_evictions) ordinary evictions from the class's tails.
  Item* RescueChunk(int cls, bool allow_evictions);
  Engine::Impl* impl_;
  std::atomic<int> automove_;
  Mutex mu_{LockRank::kBackground};
  CondVar cv_{&mu_};
  int req_src_ GUARDED_BY(mu_) = 0;
  int req_dst_ GUARDED_BY(mu_) = -1;
  std::atomic<double> ratio_;
  std::atomic<uint32_t> window_;
  std::atomic<double> freeratio_;
  // Automove history (rebalancer thread only): per class, the last
  // `window` one-second samples, as memcached's slab_automove.c keeps them.
  struct Sample {
    uint32_t age = 0;            // COLD tail age
    bool dirty = false;          // evicted, ran out of memory or grew
    bool evicted = false;
    double evicted_share = 0;    // of all evictions in that second
  };
  struct ClassHistory {
    uint64_t evicted = 0, outofmemory = 0, pages = 0;  // the previous sample's totals
  };
  uint32_t hist_window_ = 0;     // window the history was sized for
  uint64_t hist_ticks_ = 0;
  std::vector<ClassHistory> last_;
  std::vector<Sample> samples_;  // [class * window + tick % window]
  BackgroundThread bg_{&mu_, &cv_};  // last: joined before the rest goes
};

}  // namespace trove::engine
