// Engine micro-benchmarks: get hit, get miss and set with 1 and 2 threads,
// plus the key hash. Run: build/release/bench/engine_bench
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/hash_table.h"

namespace trove::engine {
namespace {

constexpr int kKeys = 100000;

struct Fixture {
  std::unique_ptr<Engine> engine;
  std::vector<std::string> keys;
  std::vector<std::string> missing;
  std::string value = std::string(100, 'v');
};

Fixture& Shared() {
  static Fixture* f = [] {
    auto* x = new Fixture;
    EngineOptions o;
    o.mem_limit = 256u << 20;
    x->engine = std::move(Engine::Create(o)).value();
    x->engine->Start();
    ThreadStats* ts = x->engine->NewThreadStats();
    for (int i = 0; i < kKeys; ++i) {
      x->keys.push_back("key:" + std::to_string(i));
      x->missing.push_back("nokey:" + std::to_string(i));
      (void)x->engine->Store(x->keys.back(), 0, 0, x->value, StoreArgs{}, ts);
    }
    return x;
  }();
  return *f;
}

ThreadStats* Ts(Engine* e) {
  thread_local ThreadStats* ts = e->NewThreadStats();
  return ts;
}

void BM_GetHit(benchmark::State& state) {
  Fixture& f = Shared();
  ThreadStats* ts = Ts(f.engine.get());
  size_t i = static_cast<size_t>(state.thread_index()) * 7919;
  for (auto _ : state) {
    ItemRef r = f.engine->Get(f.keys[i++ % kKeys], ts);
    benchmark::DoNotOptimize(r.raw());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_GetHit)->Threads(1)->Threads(2)->UseRealTime();

void BM_GetMiss(benchmark::State& state) {
  Fixture& f = Shared();
  ThreadStats* ts = Ts(f.engine.get());
  size_t i = static_cast<size_t>(state.thread_index()) * 7919;
  for (auto _ : state) {
    ItemRef r = f.engine->Get(f.missing[i++ % kKeys], ts);
    benchmark::DoNotOptimize(r.raw());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_GetMiss)->Threads(1)->Threads(2)->UseRealTime();

void BM_Set(benchmark::State& state) {
  Fixture& f = Shared();
  ThreadStats* ts = Ts(f.engine.get());
  size_t i = static_cast<size_t>(state.thread_index()) * 7919;
  for (auto _ : state) {
    StoreResult r = f.engine->Store(f.keys[i++ % kKeys], 0, 0, f.value, StoreArgs{}, ts);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Set)->Threads(1)->Threads(2)->UseRealTime();

void BM_HashKey(benchmark::State& state) {
  std::string key(static_cast<size_t>(state.range(0)), 'k');
  for (auto _ : state) benchmark::DoNotOptimize(HashKey(key));
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_HashKey)->Arg(16)->Arg(64)->Arg(250);

}  // namespace
}  // namespace trove::engine

BENCHMARK_MAIN();
