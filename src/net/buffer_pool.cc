// BufferPool: a thread-local free list of 16 KiB blocks.
#include "net/buffer_pool.h"

#include <cstdlib>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define TROVE_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define TROVE_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define TROVE_POISON(p, n) ((void)(p), (void)(n))
#define TROVE_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace trove::net {
namespace {

// A fixed array: taking and giving back never allocates.
struct FreeList {
  char* blocks[BufferPool::kMaxFree];
  size_t n = 0;
  ~FreeList() {
    for (size_t i = 0; i < n; ++i) {
      TROVE_UNPOISON(blocks[i], BufferPool::kBlockSize);
      std::free(blocks[i]);
    }
  }
};

thread_local FreeList tl_free;

}  // namespace

char* BufferPool::Take() {
  FreeList& f = tl_free;
  if (f.n == 0) {
    void* p = std::malloc(kBlockSize);
    if (p == nullptr) std::abort();  // as operator new would, without exceptions
    return static_cast<char*>(p);
  }
  char* b = f.blocks[--f.n];
  TROVE_UNPOISON(b, kBlockSize);
  return b;
}

void BufferPool::Give(char* block) {
  if (block == nullptr) return;
  FreeList& f = tl_free;
  if (f.n == kMaxFree) {
    std::free(block);
    return;
  }
  TROVE_POISON(block, kBlockSize);
  f.blocks[f.n++] = block;
}

size_t BufferPool::FreeCount() { return tl_free.n; }

}  // namespace trove::net
