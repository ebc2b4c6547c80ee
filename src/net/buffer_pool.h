// BufferPool: the 16 KiB blocks every connection's input and output borrow
// while it has bytes in flight, one pool per thread. An idle connection holds
// no buffer at all (memcached's rbuf approach: a connection takes a read
// buffer from its thread's cache for a read and gives it back once it has
// parsed everything), so 100,000 idle connections cost no buffer memory.
//
// Thread safety: thread-local; a block is taken and given back by the thread
// that owns the buffer at that moment. A block given back on another thread
// (a buffer destroyed elsewhere at shutdown) simply joins that thread's pool.
//
// Invariants:
//  1. A free block is owned by exactly one thread's pool and nobody else
//     reads or writes it; under ASan it is poisoned, so a stale pointer into
//     a returned buffer (bytes a handler consumed and still looks at) is
//     reported at once rather than reading another connection's bytes.
//  2. A pool keeps at most kMaxFree blocks; past that a given-back block is
//     freed, so a burst (many slow readers at once) does not pin memory.
#pragma once

#include <cstddef>

namespace trove::net {

class BufferPool {
 public:
  static constexpr size_t kBlockSize = 16 * 1024;
  // 1 MiB per thread kept for the next burst; a worker's steady state needs
  // only as many blocks as connections it serves in one loop turn.
  static constexpr size_t kMaxFree = 64;

  // A block of kBlockSize bytes (uninitialised).
  static char* Take();
  // Gives `block` (from Take, on any thread) back to this thread's pool.
  static void Give(char* block);
  // Free blocks this thread's pool holds (tests).
  static size_t FreeCount();
};

}  // namespace trove::net
