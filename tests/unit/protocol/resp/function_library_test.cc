// FunctionLibraries (the server's function libraries) and the RDB payload
// codec FUNCTION DUMP/RESTORE use: collisions, restore policies, epochs,
// case rules; lengths and strings in every encoding, footer checks.
#include "protocol/resp/services/function_library.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "protocol/resp/types/rdb_codec.h"

namespace trove::resp {
namespace {

FunctionLibrary Lib(const std::string& name, std::vector<std::string> fns) {
  FunctionLibrary l;
  l.name = name;
  l.code = "#!lua name=" + name + "\n";
  for (auto& f : fns) l.functions.push_back({f, std::nullopt, 0});
  return l;
}

TEST(FunctionLibrariesTest, AddReplaceAndCollisions) {
  FunctionLibraries libs;
  std::string err;
  const uint64_t e0 = libs.epoch();
  ASSERT_TRUE(libs.Add(Lib("a", {"f1", "f2"}), false, &err));
  EXPECT_GT(libs.epoch(), e0);
  EXPECT_FALSE(libs.Add(Lib("a", {"g"}), false, &err));
  EXPECT_EQ(err, "Library 'a' already exists");
  EXPECT_FALSE(libs.Add(Lib("b", {"F1"}), false, &err));  // function names ignore case
  EXPECT_EQ(err, "Function F1 already exists");
  ASSERT_TRUE(libs.Add(Lib("a", {"f1", "g"}), true, &err));  // replace keeps its own names
  ASSERT_EQ(libs.Snapshot().size(), 1u);
  EXPECT_EQ(libs.Snapshot()[0].functions[1].name, "g");  // f2 is gone with the old library
  EXPECT_FALSE(libs.Add(Lib("b", {"G"}), false, &err));  // and "g" is taken, in any case
  EXPECT_TRUE(libs.Add(Lib("b", {"f2"}), false, &err));
  EXPECT_TRUE(libs.Delete("b"));
  EXPECT_EQ(libs.library_count(), 1u);
  EXPECT_EQ(libs.function_count(), 2u);
  EXPECT_FALSE(libs.Delete("A"));  // library names are case-sensitive
  EXPECT_TRUE(libs.Delete("a"));
  EXPECT_EQ(libs.function_count(), 0u);
}

TEST(FunctionLibrariesTest, RestorePolicies) {
  using P = FunctionLibraries::RestorePolicy;
  FunctionLibraries libs;
  std::string err;
  ASSERT_TRUE(libs.Add(Lib("a", {"f1"}), false, &err));
  EXPECT_FALSE(libs.Restore({Lib("a", {"x"})}, P::kAppend, &err));
  EXPECT_EQ(err, "Library a already exists");
  EXPECT_FALSE(libs.Restore({Lib("b", {"f1"})}, P::kReplace, &err));
  EXPECT_EQ(err, "Function f1 already exists");
  EXPECT_FALSE(libs.Restore({Lib("b", {"y"}), Lib("c", {"Y"})}, P::kFlush, &err));
  EXPECT_EQ(libs.library_count(), 1u);  // every failure left the set as it was
  ASSERT_TRUE(libs.Restore({Lib("a", {"f9"}), Lib("b", {"f1"})}, P::kReplace, &err));
  EXPECT_EQ(libs.function_count(), 2u);  // f1 moved from a to b: a is replaced too
  ASSERT_TRUE(libs.Restore({Lib("z", {"q"})}, P::kFlush, &err));
  EXPECT_EQ(libs.library_count(), 1u);
  EXPECT_EQ(libs.Snapshot()[0].name, "z");
}

TEST(FunctionLibrariesTest, ConcurrentReadersSeeWholeSets) {
  FunctionLibraries libs;
  std::thread writer([&] {
    std::string err;
    for (int i = 0; i < 500; ++i) {
      libs.Add(Lib("l", {"f" + std::to_string(i), "g" + std::to_string(i)}), true, &err);
    }
  });
  for (int i = 0; i < 500; ++i) {
    for (const FunctionLibrary& l : libs.Snapshot()) EXPECT_EQ(l.functions.size(), 2u);
    EXPECT_EQ(libs.function_count() % 2, 0u);
  }
  writer.join();
}

TEST(RdbCodecTest, LengthsAndStringsRoundTrip) {
  std::string out;
  const std::vector<std::string> values = {"", "x", std::string(63, 'a'), std::string(64, 'b'),
                                           std::string(16383, 'c'), std::string(16384, 'd')};
  for (const auto& v : values) AppendRdbString(&out, v);
  AppendRdbFooter(&out);
  std::string_view body;
  ASSERT_TRUE(StripRdbFooter(out, &body));
  RdbReader in(body);
  for (const auto& v : values) {
    std::string s;
    ASSERT_TRUE(in.ReadString(&s));
    EXPECT_EQ(s, v);
  }
  EXPECT_TRUE(in.done());
  out[3] ^= 1;
  EXPECT_FALSE(StripRdbFooter(out, &body));
  EXPECT_FALSE(StripRdbFooter("short", &body));
}

TEST(RdbCodecTest, ReadsIntegerEncodings) {
  const std::string body("\xc0\x7f\xc1\x00\x80\xc2\xff\xff\xff\xff", 10);
  RdbReader in(body);
  std::string s;
  ASSERT_TRUE(in.ReadString(&s));
  EXPECT_EQ(s, "127");
  ASSERT_TRUE(in.ReadString(&s));
  EXPECT_EQ(s, "-32768");
  ASSERT_TRUE(in.ReadString(&s));
  EXPECT_EQ(s, "-1");
  EXPECT_FALSE(in.ReadString(&s));  // past the end
}

}  // namespace
}  // namespace trove::resp
