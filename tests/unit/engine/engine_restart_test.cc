// Tests for the warm restart of the engine (-e): save, then the page walk of
// the next Create, on a ManualClock in a temporary directory.
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <gtest/gtest.h>
#include <memory>
#include <string>
#include <vector>

#include "engine/heap_codec.h"
#include "engine_test_util.h"

namespace trove::engine {
namespace {

using testing::MakeEngine;
using testing::StatU;
using testing::ValueOf;

// A heap value holding a string, and its codec (what RESP collections do).
class TestHeap final : public HeapValue {
 public:
  explicit TestHeap(std::string s) : s_(std::move(s)) {}
  size_t MemoryUsage() const override { return s_.size() + 64; }
  const std::string& s() const { return s_; }

 private:
  std::string s_;
};
class TestCodec final : public HeapCodec {
 public:
  void Encode(ValueType, const HeapValue& v, std::string* out) const override {
    out->append(static_cast<const TestHeap&>(v).s());
  }
  std::unique_ptr<HeapValue> Decode(ValueType, std::string_view b) const override {
    if (b == "corrupt") return nullptr;
    return std::make_unique<TestHeap>(std::string(b));
  }
};

class EngineRestartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/trove_restart_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    opts_.mem_limit = 16u << 20;
    opts_.item_size_max = 1u << 20;
    opts_.hashpower_init = 8;
    opts_.memory_file = dir_ + "/mem";
    opts_.heap_codec = &codec_;
    opts_.restart_log = [this](std::string_view l) { log_.emplace_back(l); };
  }
  void TearDown() override {
    e_.reset();
    std::string cmd = "rm -rf '" + dir_ + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  void Open() {
    e_ = MakeEngine(opts_, &clock_);
    ASSERT_NE(e_, nullptr);
    ts_ = e_->NewThreadStats();
  }
  // Saves, destroys the engine, lets `downtime` seconds pass and opens again.
  void Restart(int downtime) {
    ASSERT_TRUE(e_->SaveForRestart().ok());
    e_.reset();
    clock_.AdvanceSeconds(downtime);
    log_.clear();
    Open();
  }
  StoreResult Set(const std::string& k, const std::string& v, int64_t exp = 0, uint32_t flags = 0) {
    return e_->Store(k, flags, exp, v, StoreArgs{}, ts_);
  }
  std::string Get(const std::string& k) {
    ItemRef r = e_->Get(k, ts_);
    return r ? ValueOf(r) : "<miss>";
  }
  uint64_t UsedChunks() {
    StatList l = e_->SlabStats();
    uint64_t n = 0;
    for (const auto& [k, v] : l) {
      if (k.size() > 12 && k.compare(k.size() - 12, 12, ":used_chunks") == 0) n += std::stoull(v);
    }
    return n;
  }
  bool Logged(const std::string& line) const {
    for (const std::string& l : log_) {
      if (l == line) return true;
    }
    return false;
  }
  bool FileExists(const std::string& p) const { return ::access(p.c_str(), F_OK) == 0; }

  ManualClock clock_;
  TestCodec codec_;
  EngineOptions opts_;
  std::string dir_;
  std::vector<std::string> log_;
  std::unique_ptr<Engine> e_;
  ThreadStats* ts_ = nullptr;
};

TEST_F(EngineRestartTest, NewFileStartsEmptyAndSays) {
  Open();
  EXPECT_FALSE(e_->restored());
  EXPECT_TRUE(Logged("[restart] no metadata save file, starting with a clean cache"));
  EXPECT_TRUE(FileExists(opts_.memory_file));
  EXPECT_EQ(e_->curr_items(), 0u);
}

TEST_F(EngineRestartTest, ItemsSurviveWithFlagsCasAndTtl) {
  Open();
  const std::string big(600 * 1024, 'b');  // chunked (past slab_chunk_max 512 KiB)
  std::string big2(900 * 1024, 'c');
  big2[12345] = 'X';
  ASSERT_EQ(Set("small", "v1", 0, 42), StoreResult::kStored);
  ASSERT_EQ(Set("big", big), StoreResult::kStored);
  ASSERT_EQ(Set("big2", big2), StoreResult::kStored);
  ASSERT_EQ(Set("ttl", "t", 1000), StoreResult::kStored);
  for (int i = 0; i < 2000; ++i)
    ASSERT_EQ(Set("k" + std::to_string(i), std::string(i % 300, 'v')), StoreResult::kStored);
  uint64_t cas_before = e_->Get("small", ts_).cas();
  const int64_t ttl_exp = e_->Get("ttl", ts_).expires_at_unix();

  Restart(30);
  EXPECT_TRUE(e_->restored());
  EXPECT_FALSE(FileExists(opts_.memory_file + ".meta"));  // consumed (memcached too)
  EXPECT_EQ(e_->curr_items(), 2004u);
  {
    ItemRef s = e_->Get("small", ts_);  // released before the engine goes
    ASSERT_TRUE(s);
    EXPECT_EQ(ValueOf(s), "v1");
    EXPECT_EQ(s.client_flags(), 42u);
    EXPECT_EQ(s.cas(), cas_before);
  }
  EXPECT_EQ(Get("big"), big);
  EXPECT_EQ(Get("big2"), big2);
  EXPECT_EQ(e_->Get("ttl", ts_).expires_at_unix(), ttl_exp);
  EXPECT_EQ(e_->TtlSeconds(e_->Get("ttl", ts_)), 1000 - 30);
  for (int i = 0; i < 2000; i += 97)
    EXPECT_EQ(Get("k" + std::to_string(i)), std::string(i % 300, 'v'));
  // New CAS values continue above the old ones.
  uint64_t cas = 0;
  ASSERT_EQ(e_->Store("new", 0, 0, "n", StoreArgs{}, ts_, &cas), StoreResult::kStored);
  EXPECT_GT(cas, cas_before);
  // And the restored engine saves and restores again.
  Restart(1);
  EXPECT_TRUE(e_->restored());
  EXPECT_EQ(Get("big2"), big2);
  EXPECT_EQ(Get("new"), "n");
}

TEST_F(EngineRestartTest, ExpiredDeletedAndFlushedItemsAreFreedWithTheirChunks) {
  // Reference: the chunks that only the surviving items need.
  opts_.memory_file.clear();
  Open();
  ASSERT_EQ(Set("keep", "k"), StoreResult::kStored);
  ASSERT_EQ(Set("keepbig", std::string(700 * 1024, 'k')), StoreResult::kStored);
  const uint64_t need = UsedChunks();
  e_.reset();

  opts_.memory_file = dir_ + "/mem";
  Open();
  ASSERT_EQ(Set("keep", "k"), StoreResult::kStored);
  ASSERT_EQ(Set("keepbig", std::string(700 * 1024, 'k')), StoreResult::kStored);
  ASSERT_EQ(Set("short", "s", 5), StoreResult::kStored);
  ASSERT_EQ(Set("shortbig", std::string(800 * 1024, 's'), 5), StoreResult::kStored);
  ASSERT_EQ(Set("gone", "g"), StoreResult::kStored);
  ASSERT_EQ(Set("gonebig", std::string(600 * 1024, 'g')), StoreResult::kStored);
  ASSERT_EQ(e_->Delete("gone", DeleteArgs{}, ts_), DeleteResult::kDeleted);
  ASSERT_EQ(e_->Delete("gonebig", DeleteArgs{}, ts_), DeleteResult::kDeleted);
  EXPECT_GT(UsedChunks(), need);

  Restart(10);  // "short" and "shortbig" expire meanwhile
  EXPECT_EQ(e_->curr_items(), 2u);
  EXPECT_EQ(Get("short"), "<miss>");
  EXPECT_EQ(Get("shortbig"), "<miss>");
  EXPECT_EQ(Get("keep"), "k");
  EXPECT_EQ(UsedChunks(), need);
  // The freed chunks are usable: the memory fills again without errors.
  for (int i = 0; i < 40; ++i) {
    ASSERT_EQ(Set("again" + std::to_string(i), std::string(300 * 1024, 'a')), StoreResult::kStored);
  }

  // flush_all before the stop still hides what it flushed.
  ASSERT_EQ(Set("flushed", "f"), StoreResult::kStored);
  clock_.AdvanceSeconds(2);
  e_->FlushAll(0);
  clock_.AdvanceSeconds(2);
  ASSERT_EQ(Set("after", "a"), StoreResult::kStored);
  Restart(1);
  EXPECT_EQ(Get("flushed"), "<miss>");
  EXPECT_EQ(Get("after"), "a");
}

TEST_F(EngineRestartTest, HeapValuesGoThroughTheCodec) {
  Open();
  auto store_heap = [&](const std::string& key, const std::string& v) {
    KeyLockSet l(e_.get(), key);
    AllocOutput a = e_->AllocateHeap(key, 0, ValueType::kHash, std::make_unique<TestHeap>(v), ts_);
    ASSERT_EQ(a.status, AllocStatus::kOk);
    ASSERT_EQ(e_->StoreItemLocked(a.item, StoreArgs{}, ts_), StoreResult::kStored);
  };
  store_heap("h1", std::string(3 << 20, 'h'));  // larger than any item
  store_heap("h2", "corrupt");                  // the codec refuses it on load
  ASSERT_EQ(Set("s", "plain"), StoreResult::kStored);
  const std::string heap_file = opts_.memory_file + ".heap";

  ASSERT_TRUE(e_->SaveForRestart().ok());
  EXPECT_TRUE(FileExists(heap_file));
  e_.reset();
  clock_.AdvanceSeconds(1);
  Open();
  EXPECT_TRUE(e_->restored());
  EXPECT_FALSE(FileExists(heap_file));
  {
    KeyLockSet l(e_.get(), "h1");
    ItemRef r = e_->GetLocked("h1", ts_);
    ASSERT_TRUE(r);
    ASSERT_TRUE(r.is_heap());
    EXPECT_EQ(r.type(), ValueType::kHash);
    EXPECT_EQ(static_cast<TestHeap*>(r.heap())->s(), std::string(3 << 20, 'h'));
  }
  EXPECT_EQ(Get("h2"), "<miss>");  // dropped, not crashed on
  EXPECT_EQ(Get("s"), "plain");
  EXPECT_EQ(e_->curr_items(), 2u);
}

TEST_F(EngineRestartTest, SettingMismatchStartsCleanWithMemcachedsMessage) {
  Open();
  ASSERT_EQ(Set("k", "v"), StoreResult::kStored);
  ASSERT_TRUE(e_->SaveForRestart().ok());
  e_.reset();
  opts_.mem_limit = 32u << 20;
  clock_.AdvanceSeconds(1);
  Open();
  EXPECT_FALSE(e_->restored());
  EXPECT_TRUE(
      Logged("[restart] restart incompatible due to setting for [maxbytes] [old value: 16777216]"));
  EXPECT_TRUE(Logged("[restart] failed to validate metadata, starting with a clean cache"));
  EXPECT_EQ(Get("k"), "<miss>");
  ASSERT_EQ(Set("k2", "v2"), StoreResult::kStored);  // and works normally
  EXPECT_EQ(Get("k2"), "v2");
}

TEST_F(EngineRestartTest, EmptyMetadataFileRefusesToStart) {
  std::FILE* f = std::fopen((opts_.memory_file + ".meta").c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  opts_.clock = &clock_;
  auto r = Engine::Create(opts_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "[restart] Failed to read a tag from metadata file");
}

TEST_F(EngineRestartTest, WithoutSaveTheNextStartIsClean) {
  Open();
  ASSERT_EQ(Set("k", "v"), StoreResult::kStored);
  e_.reset();  // a stop without SIGUSR1: nothing saved
  Open();
  EXPECT_FALSE(e_->restored());
  EXPECT_EQ(Get("k"), "<miss>");
}

TEST_F(EngineRestartTest, HashPowerIsKept) {
  Open();
  for (int i = 0; i < 2000; ++i) ASSERT_EQ(Set("k" + std::to_string(i), "v"), StoreResult::kStored);
  e_->Start();  // the expander grows the table
  for (int i = 0; i < 300 && StatU(e_->Stats(), "hash_power_level") == 8; ++i) ::usleep(10000);
  ::usleep(100000);  // let a doubling in progress finish
  e_->Stop();
  const uint64_t power = StatU(e_->Stats(), "hash_power_level");
  EXPECT_GT(power, 8u);
  Restart(1);
  EXPECT_EQ(StatU(e_->Stats(), "hash_power_level"), power);
}

}  // namespace
}  // namespace trove::engine
