// ResponseBudget: memcached's `-o read_buf_mem_limit` for replies. Each
// worker gets an equal share of the limit; every reply in flight (one per
// command, one per key of a multiget, as memcached's response objects) costs
// kResponseCost bytes of its worker's share until the connection's output has
// been written. Take/Give run on the worker that owns the share; the
// counters are read by `stats` from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace trove::memcache {

class ResponseBudget {
 public:
  // memcached's mc_resp is about 1.2 KB (a 1 KiB write buffer plus iovecs).
  static constexpr int64_t kResponseCost = 1024;

  // limit_bytes > 0; workers >= 1. A share never drops below one response.
  ResponseBudget(size_t limit_bytes, int workers)
      : workers_(workers < 1 ? 1 : workers), shares_(new Share[static_cast<size_t>(workers_)]) {
    int64_t per = static_cast<int64_t>(limit_bytes) / workers_ / kResponseCost;
    cap_ = per < 1 ? 1 : per;
  }

  // Reserves n replies on `worker`'s share; false (counted in
  // response_obj_oom) when that would pass the share.
  bool Take(int worker, int64_t n) {
    Share& s = shares_[Index(worker)];
    const int64_t live = s.live.load(std::memory_order_relaxed);
    if (live + n > cap_) {
      s.oom.store(s.oom.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      return false;
    }
    s.live.store(live + n, std::memory_order_relaxed);
    return true;
  }
  void Give(int worker, int64_t n) {
    Share& s = shares_[Index(worker)];
    s.live.store(s.live.load(std::memory_order_relaxed) - n, std::memory_order_relaxed);
  }

  int64_t per_worker() const { return cap_; }
  uint64_t oom() const {
    uint64_t t = 0;
    for (int i = 0; i < workers_; ++i) t += shares_[i].oom.load(std::memory_order_relaxed);
    return t;
  }
  uint64_t live() const {
    int64_t t = 0;
    for (int i = 0; i < workers_; ++i) t += shares_[i].live.load(std::memory_order_relaxed);
    return t < 0 ? 0 : static_cast<uint64_t>(t);
  }

 private:
  // One writer (the worker); relaxed atomics only so `stats` may read.
  struct alignas(64) Share {
    std::atomic<int64_t> live{0};
    std::atomic<uint64_t> oom{0};
  };
  size_t Index(int worker) const {
    return static_cast<size_t>(worker >= 0 && worker < workers_ ? worker : 0);
  }
  int workers_;
  int64_t cap_ = 1;
  std::unique_ptr<Share[]> shares_;
};

}  // namespace trove::memcache
