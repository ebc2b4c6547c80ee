// Stress: threads doing random set/get/delete/incr/append under a tiny
// memory limit while the hash table grows and pages move. Every value read
// must be one that some thread wrote for that key (self-checking records).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace trove::engine {
namespace {

uint32_t Fnv(std::string_view s) {
  uint32_t h = 2166136261u;
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  return h;
}

// One record: "<key,writer,seq,len,payload,checksum>"; a value is one or
// more records (append adds records).
std::string Record(const std::string& key, int writer, uint64_t seq, size_t len) {
  std::string body = key + "," + std::to_string(writer) + "," + std::to_string(seq) + "," +
                     std::to_string(len) + ",";
  body.append(len, static_cast<char>('a' + seq % 26));
  return "<" + body + "," + std::to_string(Fnv(body)) + ">";
}

// True if `v` is a sequence of valid records for `key`.
bool Valid(const std::string& key, const std::string& v, std::string* why) {
  size_t pos = 0;
  if (v.empty()) {
    *why = "empty";
    return false;
  }
  while (pos < v.size()) {
    if (v[pos] != '<') {
      *why = "no record start at " + std::to_string(pos);
      return false;
    }
    size_t end = v.find('>', pos);
    if (end == std::string::npos) {
      *why = "unterminated";
      return false;
    }
    std::string rec = v.substr(pos + 1, end - pos - 1);
    size_t last = rec.rfind(',');
    std::string body = rec.substr(0, last);
    if (std::to_string(Fnv(body)) != rec.substr(last + 1)) {
      *why = "checksum";
      return false;
    }
    if (body.compare(0, key.size() + 1, key + ",") != 0) {
      *why = "foreign key";
      return false;
    }
    pos = end + 1;
  }
  return true;
}

TEST(EngineStressTest, RandomOpsKeepValuesIntact) {
  ManualClock clock;
  EngineOptions o;
  o.mem_limit = 4 << 20;
  o.item_size_max = 64 * 1024;  // 64 KiB pages; values above 32 KiB are chunked
  o.hashpower_init = 8;
  o.item_lock_power = 4;
  o.slab_automove = 2;
  auto e = testing::MakeEngine(o, &clock);
  e->Start();
  constexpr int kThreads = 4;
  constexpr int kKeys = 3000;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(6);
  std::atomic<int> failures{0};
  std::atomic<uint64_t> ops{0}, reads{0};
  std::atomic<bool> stop{false};

  auto worker = [&](int id) {
    ThreadStats* ts = e->NewThreadStats();
    std::mt19937_64 rng(1234 + id);
    uint64_t seq = 0;
    std::string why;
    while (std::chrono::steady_clock::now() < deadline) {
      for (int batch = 0; batch < 64; ++batch) {
        int k = static_cast<int>(rng() % kKeys);
        bool counter = k % 10 == 0;
        std::string key = (counter ? "n:" : "s:") + std::to_string(k);
        int op = static_cast<int>(rng() % 100);
        ++ops;
        if (counter) {
          if (op < 30) {
            (void)e->Store(key, 0, 0, std::to_string(rng() % 1000), {}, ts);
          } else if (op < 70) {
            ArithArgs a;
            a.incr = op < 55;
            a.delta = rng() % 100;
            ArithOutput r = e->Arith(key, a, ts);
            if (r.result == ArithResult::kNonNumeric) {
              ++failures;
              ADD_FAILURE() << "counter became non-numeric: " << key;
            }
          } else {
            ItemRef r = e->Get(key, ts);
            if (r) {
              ++reads;
              std::string v = testing::ValueOf(r);
              size_t d = v.find_first_not_of("0123456789");
              if (v.empty() || (d != std::string::npos && v.find_first_not_of(' ', d) != std::string::npos)) {
                ++failures;
                ADD_FAILURE() << "bad counter " << key << " = '" << v << "'";
              }
            }
          }
          continue;
        }
        if (op < 35) {
          // Mostly small values, some large enough to be chunked.
          size_t len = rng() % 20 == 0 ? 30000 + rng() % 20000 : rng() % 400;
          (void)e->Store(key, static_cast<uint32_t>(id), 0, Record(key, id, ++seq, len), {}, ts);
        } else if (op < 45) {
          StoreArgs a;
          a.mode = rng() % 2 ? StoreMode::kAppend : StoreMode::kPrepend;
          (void)e->Store(key, 0, 0, Record(key, id, ++seq, rng() % 50), a, ts);
        } else if (op < 55) {
          (void)e->Delete(key, {}, ts);
        } else if (op < 60) {
          // cas round trip
          ItemRef r = e->Get(key, ts);
          if (r) {
            StoreArgs a;
            a.mode = StoreMode::kCas;
            a.compare_cas = r.cas();
            r.Reset();
            (void)e->Store(key, 0, 0, Record(key, id, ++seq, rng() % 100), a, ts);
          }
        } else {
          ItemRef r = e->Get(key, ts);
          if (r) {
            ++reads;
            std::string v = testing::ValueOf(r);
            if (!Valid(key, v, &why)) {
              ++failures;
              ADD_FAILURE() << "bad value for " << key << ": " << why;
            }
          }
        }
      }
    }
  };
  // Moves pages around on request while the workers run.
  std::thread mover([&] {
    std::mt19937 rng(7);
    while (!stop) {
      (void)e->SlabsReassign(static_cast<int>(1 + rng() % 20), static_cast<int>(rng() % 20));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  std::vector<std::thread> th;
  for (int i = 0; i < kThreads; ++i) th.emplace_back(worker, i);
  for (auto& t : th) t.join();
  stop = true;
  mover.join();
  e->Stop();
  StatList s = e->Stats();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(reads.load(), 1000u);
  EXPECT_GT(testing::StatU(s, "evictions"), 0u);
  EXPECT_GT(testing::StatU(s, "hash_power_level"), 8u);
  std::printf("ops=%llu reads=%llu evictions=%llu slabs_moved=%llu hashpower=%llu\n",
              static_cast<unsigned long long>(ops.load()), static_cast<unsigned long long>(reads.load()),
              static_cast<unsigned long long>(testing::StatU(s, "evictions")),
              static_cast<unsigned long long>(testing::StatU(s, "slabs_moved")),
              static_cast<unsigned long long>(testing::StatU(s, "hash_power_level")));
}

}  // namespace
}  // namespace trove::engine
