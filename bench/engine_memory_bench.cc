// Memory per item: loads N items (default 1,000,000; 100-byte values, keys
// of 10-20 bytes) and prints slab bytes per item and the RSS delta per item.
// Run: build/release/bench/engine_memory_bench [N]
#include <unistd.h>

#include <memory>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "engine/engine.h"

namespace {
size_t RssBytes() {
  std::ifstream f("/proc/self/statm");
  size_t pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}
std::string StatOf(const trove::engine::StatList& l, const char* name) {
  for (const auto& [k, v] : l) {
    if (k == name) return v;
  }
  return "0";
}
}  // namespace

int main(int argc, char** argv) {
  using namespace trove::engine;
  const long n = argc > 1 ? std::atol(argv[1]) : 1000000;
  EngineOptions o;
  o.mem_limit = 1024u << 20;  // like memcached -m 1024: nothing is evicted
  auto r = Engine::Create(o);
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
    return 1;
  }
  std::unique_ptr<Engine> e = std::move(r).value();
  e->Start();  // the hash expander grows the table as memcached's would
  ThreadStats* ts = e->NewThreadStats();
  const std::string value(100, 'v');
  const size_t rss0 = RssBytes();
  char key[32];
  for (long i = 0; i < n; ++i) {
    // 10..20 byte keys: "key:" plus a zero-padded number of varying width.
    int width = 6 + static_cast<int>(i % 11);
    int len = std::snprintf(key, sizeof(key), "key:%0*ld", width, i);
    if (e->Store(std::string_view(key, static_cast<size_t>(len)), 0, 0, value, StoreArgs{}, ts) !=
        StoreResult::kStored) {
      std::fprintf(stderr, "store failed at %ld\n", i);
      return 1;
    }
  }
  // Let the expander finish so the table size is the steady state.
  while (StatOf(e->Stats(), "hash_is_expanding") == "1" || e->curr_items() == 0) usleep(10000);
  usleep(200000);
  while (StatOf(e->Stats(), "hash_is_expanding") == "1") usleep(10000);
  const size_t rss1 = RssBytes();
  StatList slabs = e->SlabStats();
  StatList stats = e->Stats();
  uint64_t used_chunk_bytes = 0;
  for (int c = 1; c < 64; ++c) {
    std::string cs = StatOf(slabs, (std::to_string(c) + ":chunk_size").c_str());
    std::string used = StatOf(slabs, (std::to_string(c) + ":used_chunks").c_str());
    used_chunk_bytes += std::stoull(cs) * std::stoull(used);
  }
  const double items = static_cast<double>(std::stoull(StatOf(stats, "curr_items")));
  std::printf("items               %.0f\n", items);
  std::printf("bytes (stat)        %s  (%.1f per item: header+key+value+CRLF)\n",
              StatOf(stats, "bytes").c_str(), std::stod(StatOf(stats, "bytes")) / items);
  std::printf("slab chunk bytes    %llu  (%.1f per item, with slab rounding)\n",
              static_cast<unsigned long long>(used_chunk_bytes), static_cast<double>(used_chunk_bytes) / items);
  std::printf("total_malloced      %s  (%.1f per item)\n", StatOf(slabs, "total_malloced").c_str(),
              std::stod(StatOf(slabs, "total_malloced")) / items);
  std::printf("hash table          %s bytes (%.1f per item)\n", StatOf(stats, "hash_bytes").c_str(),
              std::stod(StatOf(stats, "hash_bytes")) / items);
  std::printf("RSS delta           %zu  (%.1f per item)\n", rss1 - rss0,
              static_cast<double>(rss1 - rss0) / items);
  return 0;
}
