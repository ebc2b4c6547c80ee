// Tests for the warm restart files: FILE.meta format, parse and memcached's
// checks and messages; the page-class runs; FILE.heap; the memory file.
#include "engine/warm_restart.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <gtest/gtest.h>
#include <string>
#include <utility>

namespace trove::engine {
namespace {

RestartMeta Sample() {
  RestartMeta m;
  m.slab_config = "1.25";
  m.maxbytes = 64ull << 20;
  m.chunk_size = 48;
  m.item_size_max = 1 << 20;
  m.slab_chunk_size_max = 1 << 19;
  m.slab_page_size = 1 << 20;
  m.use_cas = true;
  m.slab_reassign = true;
  m.current_time = 1234;
  m.process_started = 1700000000;
  m.stop_time = 1700001234;
  m.current_cas = 987654321;
  m.hashpower = 17;
  m.oldest_live = 77;
  m.mmap_oldbase = 0x200000000000;
  m.oldest_cas = 55;
  m.heap_items = 3;
  m.page_classes = {1, 1, 1, 0, 5, 39, 39, 0, 0};
  return m;
}

bool HasLine(const MetaCheck& c, const std::string& line) {
  return std::find(c.log.begin(), c.log.end(), line) != c.log.end();
}

// Replaces the value of one "K<key> <value>" line.
std::string WithValue(std::string text, const std::string& key, const std::string& val) {
  size_t p = text.find("\nK" + key + " ");
  EXPECT_NE(p, std::string::npos) << key;
  size_t start = p + 3 + key.size();
  size_t end = text.find('\n', start);
  return text.replace(start, end - start, val);
}

TEST(WarmRestartMetaTest, RoundTripsEveryField) {
  const RestartMeta m = Sample();
  const std::string text = FormatRestartMeta(m);
  EXPECT_EQ(text.rfind("Tmain\n", 0), 0u);
  EXPECT_NE(text.find("\nKmaxbytes 67108864\n"), std::string::npos);
  EXPECT_NE(text.find("\nKmmap_oldbase 0x200000000000\n"), std::string::npos);
  EXPECT_NE(text.find("\nKpage_classes 1*3,0,5,39*2,0*2\n"), std::string::npos);
  MetaCheck c = CheckRestartMeta(text, m, m.stop_time + 10);
  ASSERT_EQ(c.verdict, MetaVerdict::kReuse);
  EXPECT_TRUE(c.log.empty());
  EXPECT_EQ(c.saved.current_time, m.current_time);
  EXPECT_EQ(c.saved.process_started, m.process_started);
  EXPECT_EQ(c.saved.stop_time, m.stop_time);
  EXPECT_EQ(c.saved.current_cas, m.current_cas);
  EXPECT_EQ(c.saved.hashpower, m.hashpower);
  EXPECT_EQ(c.saved.oldest_live, m.oldest_live);
  EXPECT_EQ(c.saved.oldest_cas, m.oldest_cas);
  EXPECT_EQ(c.saved.mmap_oldbase, m.mmap_oldbase);
  EXPECT_EQ(c.saved.heap_items, m.heap_items);
  EXPECT_EQ(c.saved.page_classes, m.page_classes);
}

TEST(WarmRestartMetaTest, EmptyFileIsFatal) {
  MetaCheck c = CheckRestartMeta("", Sample(), 1700002000);
  EXPECT_EQ(c.verdict, MetaVerdict::kFatal);
  ASSERT_FALSE(c.log.empty());
  EXPECT_EQ(c.log.back(), "[restart] Failed to read a tag from metadata file");
}

TEST(WarmRestartMetaTest, MissingTagOrUnknownTagIsFatal) {
  MetaCheck c = CheckRestartMeta("Kmaxbytes 1\n", Sample(), 1700002000);
  EXPECT_EQ(c.verdict, MetaVerdict::kFatal);
  EXPECT_EQ(c.log.back(), "[restart] corrupt metadata file");
  c = CheckRestartMeta("Tother\nKmaxbytes 1\n", Sample(), 1700002000);
  EXPECT_EQ(c.verdict, MetaVerdict::kFatal);
  EXPECT_TRUE(HasLine(c, "[restart] internal handler for metadata tag not found: other:"));
  c = CheckRestartMeta("garbage\n", Sample(), 1700002000);
  EXPECT_EQ(c.verdict, MetaVerdict::kFatal);
}

TEST(WarmRestartMetaTest, SettingMismatchStartsCleanWithMemcachedsMessage) {
  const RestartMeta m = Sample();
  RestartMeta now = m;
  now.maxbytes = 128ull << 20;
  MetaCheck c = CheckRestartMeta(FormatRestartMeta(m), now, m.stop_time + 1);
  EXPECT_EQ(c.verdict, MetaVerdict::kClean);
  EXPECT_TRUE(HasLine(c,
                      "[restart] restart incompatible due to setting for [maxbytes] "
                      "[old value: 67108864]"));
  // memcached stops at the mismatch, so it also counts too few lines.
  EXPECT_TRUE(HasLine(c, "[restart] missing some metadata lines"));
  EXPECT_EQ(c.log.back(), "[restart] failed to validate metadata, starting with a clean cache");

  for (auto [key, field] : {std::pair<const char*, int>{"use_cas", 0},
                            {"slab_config", 1},
                            {"item_size_max", 2},
                            {"slab_chunk_size_max", 3},
                            {"chunk_size", 4},
                            {"slab_page_size", 5},
                            {"slab_reassign", 6}}) {
    RestartMeta d = m;
    switch (field) {
      case 0:
        d.use_cas = false;
        break;
      case 1:
        d.slab_config = "1.5";
        break;
      case 2:
        d.item_size_max = 2 << 20;
        break;
      case 3:
        d.slab_chunk_size_max = 1 << 18;
        break;
      case 4:
        d.chunk_size = 96;
        break;
      case 5:
        d.slab_page_size = 2 << 20;
        break;
      default:
        d.slab_reassign = false;
        break;
    }
    MetaCheck x = CheckRestartMeta(FormatRestartMeta(m), d, m.stop_time + 1);
    EXPECT_EQ(x.verdict, MetaVerdict::kClean) << key;
    EXPECT_NE(x.log.front().find(std::string("[") + key + "]"), std::string::npos) << key;
  }
}

TEST(WarmRestartMetaTest, MissingLineStartsClean) {
  const RestartMeta m = Sample();
  std::string text = FormatRestartMeta(m);
  size_t p = text.find("Kcurrent_cas");
  text.erase(p, text.find('\n', p) + 1 - p);
  MetaCheck c = CheckRestartMeta(text, m, m.stop_time + 1);
  EXPECT_EQ(c.verdict, MetaVerdict::kClean);
  EXPECT_TRUE(HasLine(c, "[restart] missing some metadata lines"));
}

TEST(WarmRestartMetaTest, UnknownKeyIsReportedButHarmless) {
  const RestartMeta m = Sample();
  MetaCheck c = CheckRestartMeta(FormatRestartMeta(m) + "Kfuture_thing 1\n", m, m.stop_time);
  EXPECT_EQ(c.verdict, MetaVerdict::kReuse);
  EXPECT_TRUE(HasLine(c, "[restart] unknown/unhandled key: future_thing"));
}

TEST(WarmRestartMetaTest, StopInTheFutureOrBadNumbersStartClean) {
  const RestartMeta m = Sample();
  EXPECT_EQ(CheckRestartMeta(FormatRestartMeta(m), m, m.stop_time - 1).verdict,
            MetaVerdict::kClean);
  const std::string text = FormatRestartMeta(m);
  for (auto [key, val] : {std::pair<const char*, const char*>{"current_cas", "x1"},
                          {"hashpower", "99"},
                          {"page_classes", "1*0"},
                          {"page_classes", "64"},
                          {"mmap_oldbase", "zz"},
                          {"use_cas", "yes"}}) {
    MetaCheck c = CheckRestartMeta(WithValue(text, key, val), m, m.stop_time);
    EXPECT_EQ(c.verdict, MetaVerdict::kClean) << key << "=" << val;
  }
}

class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/trove_warm_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir_ + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  std::string dir_;
};

using HeapFileTest = TempDirTest;

TEST_F(HeapFileTest, RecordsRoundTripAndCountIsChecked) {
  const std::string path = dir_ + "/mem.heap";
  auto w = HeapFileWriter::Create(path);
  ASSERT_TRUE(w.ok());
  w.value()->Add(4096, ValueType::kHash, "h", std::string("a\0b", 3));
  w.value()->Add(96, ValueType::kZset, "z", std::string(100000, 'x'));
  ASSERT_TRUE(w.value()->Finish().ok());
  auto r = ReadHeapFile(path, 2);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r.value().size(), 2u);
  EXPECT_EQ(r.value().at(4096).key, "h");
  EXPECT_EQ(r.value().at(4096).type, ValueType::kHash);
  EXPECT_EQ(r.value().at(4096).bytes, std::string("a\0b", 3));
  EXPECT_EQ(r.value().at(96).bytes.size(), 100000u);
  EXPECT_FALSE(ReadHeapFile(path, 3).ok());
  ASSERT_EQ(::truncate(path.c_str(), 200), 0);
  EXPECT_FALSE(ReadHeapFile(path, 2).ok());
}

using MemoryFileTest = TempDirTest;

TEST_F(MemoryFileTest, MapsAgainAtTheRecordedAddressOnlyWhenFree) {
  const std::string path = dir_ + "/mem";
  bool at = true;
  auto a = MemoryFile::Open(path, 1 << 20, 0, &at);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_FALSE(at);  // nothing was asked for
  char* base = a.value()->base();
  std::memcpy(base, "hello", 5);
  ASSERT_TRUE(a.value()->Sync().ok());
  // While the first mapping lives its range is taken: the second lands elsewhere.
  auto b = MemoryFile::Open(path, 1 << 20, reinterpret_cast<uintptr_t>(base), &at);
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(at);
  EXPECT_NE(b.value()->base(), base);
  EXPECT_EQ(std::memcmp(b.value()->base(), "hello", 5), 0);  // same file
  b.value().reset();
  a.value().reset();
  auto c = MemoryFile::Open(path, 1 << 20, reinterpret_cast<uintptr_t>(base), &at);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(at);
  EXPECT_EQ(c.value()->base(), base);
  EXPECT_EQ(std::memcmp(c.value()->base(), "hello", 5), 0);
}

}  // namespace
}  // namespace trove::engine
