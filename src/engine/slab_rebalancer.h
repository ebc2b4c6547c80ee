// SlabRebalancer: moves slab pages between classes, on request
// (slabs reassign) or by automove policy (memcached modes 0/1/2).
#pragma once

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "engine/engine.h"
#include "engine/item.h"

namespace trove::engine {

// Owner: Engine::Impl. Thread safety: public methods are thread-safe; mu_
// (kBackground) guards requests and the automove window. A move evicts
// what lives in the page: it takes a reference under the slabs lock
// (SlabAllocator::RefMovingChunkOwner), drops that lock, then locks the
// item's stripe normally (it holds nothing else), so no reverse step.
class SlabRebalancer {
 public:
  explicit SlabRebalancer(Engine::Impl* impl);
  ~SlabRebalancer() { Stop(); }
  void Start();
  void Stop();

  // memcached's replies: "OK", "BUSY ...", "BADCLASS ...", "NOSPARE ...", "SAME ...".
  std::string Reassign(int src, int dst);
  void SetAutomove(int mode) { automove_.store(mode, std::memory_order_relaxed); }
  int automove() const { return automove_.load(std::memory_order_relaxed); }
  // Moves one page now (synchronously); false if it could not complete.
  bool MovePage(int src, int dst);
  // One automove decision over the window since the last call; returns
  // true and fills src/dst when a move should happen.
  bool Decide(int* src, int* dst);

 private:
  void Loop();
  // Copies a linked item of the moving page into a free chunk of its class
  // and swaps it into the table. REQUIRES: stripe(hv) held. False if no
  // free chunk (the caller evicts instead).
  bool Rescue(Item* it, uint64_t hv);
  Engine::Impl* impl_;
  std::atomic<int> automove_;
  Mutex mu_{LockRank::kBackground};
  CondVar cv_{&mu_};
  bool stop_ GUARDED_BY(mu_) = false;
  int req_src_ GUARDED_BY(mu_) = 0;
  int req_dst_ GUARDED_BY(mu_) = -1;
  // Automove window (rebalancer thread only).
  std::vector<uint64_t> last_evicted_;
  std::vector<int> evict_windows_;
  std::thread thread_;
};

}  // namespace trove::engine
