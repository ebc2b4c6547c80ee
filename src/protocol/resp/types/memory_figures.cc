// Memory figures (memory_figures.h).
#include "protocol/resp/types/memory_figures.h"

#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>

#include "protocol/resp/core/resp_parser.h"

namespace trove::resp {

MemoryFigures ReadMemory(const engine::Engine& e) {
  MemoryFigures m;
  for (const auto& [k, v] : e.Stats()) {
    if (k == "bytes") ParseStrictInt64(v, &m.dataset);
  }
  int64_t malloced = 0;
  for (const auto& [k, v] : e.SlabStats()) {
    if (k == "total_malloced") ParseStrictInt64(v, &malloced);
  }
  m.used = std::max(malloced, m.dataset);
  const engine::EngineOptions& o = e.options();
  m.startup = std::min(m.used, static_cast<int64_t>(o.prealloc ? o.mem_limit : o.initial_malloced));
  m.keys = static_cast<int64_t>(e.curr_items());
  return m;
}

int64_t ResidentBytes() {
  char buf[128];
  const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  if (n <= 0) return 0;
  const char* end = buf + n;
  const char* p = std::find(static_cast<const char*>(buf), end, ' ');
  int64_t pages = 0;
  if (p == end || std::from_chars(p + 1, end, pages).ec != std::errc()) return 0;
  return pages * static_cast<int64_t>(::sysconf(_SC_PAGESIZE));
}

AllocatorFigures ReadAllocator() {
  const struct mallinfo2 mi = ::mallinfo2();
  AllocatorFigures a;
  a.allocated = static_cast<int64_t>(mi.uordblks + mi.hblkhd);
  a.active = static_cast<int64_t>(mi.arena + mi.hblkhd);
  a.resident = ResidentBytes();
  return a;
}

double Ratio(int64_t a, int64_t b) {
  return b > 0 ? static_cast<double>(a) / static_cast<double>(b) : 0;
}

}  // namespace trove::resp
