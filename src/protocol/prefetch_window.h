// PrefetchWindow: the look-ahead over a connection's pipelined requests that
// both protocol handlers use. Before each request runs, it scans a few of the
// requests behind it for their key and has the engine prefetch that key's
// bucket slot and stripe lock, and, closer in, the bucket's first item, so a
// batch of lookups overlaps its cache misses (docs/adr/0004).
//
// One window per thread (ForThread), shared by every connection of the
// worker: its state lives only while one OnData call runs, so a connection
// needs none of its own (an idle connection's memory, issue 42). Each call
// names its owner (the handler); a call from another owner than the last one
// (a connection served nested, while a script is busy, between two of the
// outer one's requests) starts the window afresh, which costs at most a few
// prefetches. Thread safety: thread-local.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/engine.h"

namespace trove::protocol {

// Scan: bool(const char* data, size_t len, size_t start, size_t* end,
// uint64_t* hv): the request starting at data[start] ends at *end and names
// the key whose engine hash is *hv; false if incomplete or not understood,
// which ends the look-ahead for this buffer. A wrong guess only wastes a
// prefetch. Invariant: ring_ holds, in input order, requests that end after
// the running one; ends are offsets into the current input buffer.
class PrefetchWindow {
 public:
  static constexpr size_t kAhead = 8;    // requests whose bucket is prefetched
  static constexpr size_t kItemLag = 4;  // ... and, this close, their first item

  // The calling thread's window.
  static PrefetchWindow& ForThread() {
    static thread_local PrefetchWindow w;
    return w;
  }

  // Starts a new input buffer (each OnData call) of `owner`.
  void Reset(const void* owner) {
    owner_ = owner;
    scan_ = 0;
    head_ = count_ = 0;
    stopped_ = false;
  }

  // Called before running the request that ends `end` bytes into data.
  template <typename Scan>
  void Before(const void* owner, const engine::Engine* e, const char* data, size_t len,
              size_t end, Scan&& scan) {
    if (owner != owner_) Reset(owner);  // another connection used it since
    while (count_ > 0 && ring_[head_].end <= end) {
      head_ = (head_ + 1) % kAhead;
      --count_;
    }
    if (scan_ < end) {  // behind (first call, or the scan lost step): restart here
      scan_ = end;
      count_ = 0;
    }
    while (!stopped_ && count_ < kAhead) {
      Slot s;
      if (!scan(data, len, scan_, &s.end, &s.hv) || s.end <= scan_) {
        stopped_ = true;
        break;
      }
      s.item_done = false;
      e->PrefetchKey(s.hv);
      ring_[(head_ + count_) % kAhead] = s;
      ++count_;
      scan_ = s.end;
    }
    for (size_t i = 0; i < count_ && i < kItemLag; ++i) {
      Slot& s = ring_[(head_ + i) % kAhead];
      if (!s.item_done) {
        e->PrefetchItem(s.hv);
        s.item_done = true;
      }
    }
  }

 private:
  struct Slot {
    size_t end;
    uint64_t hv;
    bool item_done;
  };
  Slot ring_[kAhead];
  const void* owner_ = nullptr;  // whose input the offsets refer to
  size_t head_ = 0, count_ = 0;
  size_t scan_ = 0;
  bool stopped_ = false;
};

}  // namespace trove::protocol
