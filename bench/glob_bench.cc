// GlobMatch on the patterns that made the old recursive matcher backtrack
// without bound (issue 9), and on ordinary ones. A record, not a test: each
// case states pattern, subject length and time per match.
// Run: build/release/bench/glob_bench
#include <benchmark/benchmark.h>

#include <string>

#include "common/glob.h"

namespace trove {
namespace {

std::string Stars(int n, const char* unit, const char* tail) {
  std::string p;
  for (int i = 0; i < n; ++i) p += unit;
  return p + tail;
}

// a*a*...*a*b (15 stars) against a run of a's: exponential for plain
// backtracking; O(pattern x subject) here.
void BM_StarsThenMissing(benchmark::State& st) {
  const std::string p = Stars(15, "a*", "b");
  const std::string s(static_cast<size_t>(st.range(0)), 'a');
  for (auto _ : st) benchmark::DoNotOptimize(GlobMatch(p, s));
  st.SetLabel("a*a*...a*b (15 stars)");
}
BENCHMARK(BM_StarsThenMissing)->Arg(300)->Arg(3000)->Arg(30000);

// 2000 "*a" pairs against 1999 a's: the worst case for the two-pointer walk.
void BM_ManyStarsNearMatch(benchmark::State& st) {
  const std::string p = Stars(2000, "*a", "");
  const std::string s(1999, 'a');
  for (auto _ : st) benchmark::DoNotOptimize(GlobMatch(p, s));
  st.SetLabel("(*a) x 2000 vs a x 1999");
}
BENCHMARK(BM_ManyStarsNearMatch);

// Classes after each star: the class is re-read at each retry.
void BM_StarsAndClasses(benchmark::State& st) {
  const std::string p = Stars(20, "*[a-c]", "z");
  const std::string s(1000, 'b');
  for (auto _ : st) benchmark::DoNotOptimize(GlobMatch(p, s));
  st.SetLabel("(*[a-c]) x 20 z vs b x 1000");
}
BENCHMARK(BM_StarsAndClasses);

// What KEYS user:* costs per key.
void BM_TypicalPrefix(benchmark::State& st) {
  const std::string s = "user:123456:profile";
  for (auto _ : st) benchmark::DoNotOptimize(GlobMatch("user:*:profile", s));
  st.SetLabel("user:*:profile");
}
BENCHMARK(BM_TypicalPrefix);

}  // namespace
}  // namespace trove

BENCHMARK_MAIN();
