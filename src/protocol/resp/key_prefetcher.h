// KeyPrefetcher: looks ahead in a connection's pipelined input for the keys
// of the next requests and has the engine prefetch their buckets, stripe
// locks and items, so a batch of lookups overlaps its cache misses instead of
// taking them one after another. Owned by one Session (its worker only).
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/engine.h"

namespace trove::resp {

// Scans only well-formed multibulk requests ("*N\r\n$L\r\n...") and takes
// argv[1] as the key; anything else ends the look-ahead for this batch. It is
// a hint: a wrong guess costs a wasted prefetch, never a wrong result.
// Invariant: ring_ holds, in input order, requests that start at or after the
// running one; ends_ are offsets into the current OnData buffer.
class KeyPrefetcher {
 public:
  // Starts a new input buffer (each OnData call).
  void Reset() {
    scan_ = 0;
    head_ = count_ = 0;
    stopped_ = false;
  }
  // Called before running the request that ends `end` bytes into data.
  void Before(const engine::Engine* e, int db, const char* data, size_t len, size_t end);

  // Scans one request at data[start, len): where it ends and the engine hash
  // of its argv[1] in database db. False if it is incomplete or not a plain
  // multibulk request of 2 to 64 arguments.
  static bool ScanRequest(int db, const char* data, size_t len, size_t start, size_t* end,
                          uint64_t* hv);

 private:

  static constexpr size_t kAhead = 8;    // requests whose bucket is prefetched
  static constexpr size_t kItemLag = 4;  // ... and, this close, their first item
  struct Slot {
    size_t end;
    uint64_t hv;
    bool item_done;
  };
  Slot ring_[kAhead];
  size_t head_ = 0, count_ = 0;
  size_t scan_ = 0;
  bool stopped_ = false;
};

}  // namespace trove::resp
