// The memory figures INFO memory, MEMORY STATS and MEMORY DOCTOR report:
// the engine's (slab memory, item bytes), the allocator's (glibc) and the
// process's resident set. Each call reads them afresh; nothing is cached.
#pragma once

#include <cstdint>

#include "engine/engine.h"

namespace trove::resp {

// used is the slab memory the engine holds (Redis: the allocator's total,
// INFO used_memory), dataset the bytes of items. Heap collections are
// counted against -m by the engine but not yet reported in its stats.
struct MemoryFigures {
  int64_t used = 0;
  int64_t dataset = 0;
  int64_t startup = 0;  // slab memory held from the start (-L preallocates every page)
  int64_t keys = 0;     // every database's and the memcached port's
};
MemoryFigures ReadMemory(const engine::Engine& e);

// The process's resident set size (the second field of Linux's
// /proc/self/statm, in pages); 0 if it cannot be read.
int64_t ResidentBytes();

// What glibc's allocator holds (mallinfo2 sums every arena): allocated is
// the bytes in use, active what the arenas and mmapped chunks took from the
// system, resident the process's RSS.
struct AllocatorFigures {
  int64_t allocated = 0, active = 0, resident = 0;
};
AllocatorFigures ReadAllocator();

// a / b, 0 when b is not positive.
double Ratio(int64_t a, int64_t b);

}  // namespace trove::resp
