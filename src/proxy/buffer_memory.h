// The proxy's buffer memory accounting (memcached's
// proxy_buffer_memory_used / proxy_buffer_memory_limit, set by
// mcp.buffer_memory_limit): per worker, the bytes of the client values and
// backend replies its requests in flight hold. Used by a worker thread and
// by the backends on its loop; read by `stats proxy` from any thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace trove::proxy {

// mcp.buffer_memory_limit(kb) as one worker's limit in bytes, memcached's
// split: kb * 1024 divided between the workers (unless that is no more
// than two bytes per worker); 0 when kb is 0 (no limit).
inline int64_t PerWorkerBufferLimit(int64_t kb, int64_t workers) {
  if (kb <= 0) return 0;
  int64_t limit = kb * 1024;
  if (workers > 0 && limit > workers * 2) limit /= workers;
  return limit;
}

// One worker's count and limit.
//
// Thread safety: Add, Over and set_limit on the owner worker thread only
// (the worker and the backends on its loop), so an add is a plain load and
// store, no locked instruction; used() from any thread (relaxed).
class BufferMemory {
 public:
  // REQUIRES: owner thread. limit 0: none.
  void set_limit(int64_t limit) { limit_ = limit; }
  // memcached's check: over once the count exceeds the limit (one request
  // may take it past; the next one is refused).
  bool Over() const { return limit_ > 0 && used_.load(std::memory_order_relaxed) > limit_; }
  // REQUIRES: owner thread.
  void Add(int64_t n) {
    used_.store(used_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  int64_t used() const { return used_.load(std::memory_order_relaxed); }

 private:
  int64_t limit_ = 0;             // owner thread only
  std::atomic<int64_t> used_{0};  // written by the owner only, read by stats
};

// The bytes one buffer (a request's value, a response's reply) has charged
// to a worker's BufferMemory, given back by Clear.
// Thread safety: the owner worker thread only.
struct BufferCharge {
  int64_t bytes = 0;
  void Set(BufferMemory* m, int64_t n) {
    if (n != bytes) m->Add(n - bytes);
    bytes = n;
  }
  void Clear(BufferMemory* m) {
    if (bytes != 0) m->Add(-bytes);
    bytes = 0;
  }
};

}  // namespace trove::proxy
