// CHECK (always on, for invariants whose breach corrupts memory) and DCHECK
// (debug only, for hot paths). Both abort with file:line and the expression.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace trove::detail {
[[noreturn]] inline void CheckFailed(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "CHECK failed: %s at %s:%d\n", expr, file, line);
  std::fflush(stderr);
  std::abort();
}
}  // namespace trove::detail

#define CHECK(x)                                                \
  do {                                                          \
    if (__builtin_expect(!(x), 0)) {                            \
      ::trove::detail::CheckFailed(#x, __FILE__, __LINE__);     \
    }                                                           \
  } while (0)

#ifndef NDEBUG
#define DCHECK(x) CHECK(x)
#define TROVE_DEBUG 1
#else
#define DCHECK(x) \
  do {            \
  } while (0)
#define TROVE_DEBUG 0
#endif
