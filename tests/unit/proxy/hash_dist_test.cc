// Key placement (proxy/hash_dist.h): MD5 against RFC 1321's vectors, the
// key filters' edge cases, ring lookups, the Lua constructors' errors, and
// every pool kind against fixtures/ring_fixtures.txt, which
// fixtures/gen_ring_fixtures.py computes from the published algorithms.
#include "proxy/hash_dist.h"

#include <cstdio>
#include <fstream>
#include <gtest/gtest.h>
#include <lua5.4/lua.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/md5.h"

namespace trove::proxy {
namespace {

std::string Hex(const Md5Digest& d) {
  std::string s;
  char b[3];
  for (uint8_t x : d) {
    std::snprintf(b, sizeof(b), "%02x", x);
    s += b;
  }
  return s;
}

TEST(Md5, MatchesRfc1321TestSuite) {
  EXPECT_EQ(Hex(Md5("")), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(Hex(Md5("a")), "0cc175b9c0f1b6a831c399e269772661");
  EXPECT_EQ(Hex(Md5("abc")), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(Hex(Md5("message digest")), "f96b697d7cb7938d525a2f31aaf161d0");
  EXPECT_EQ(Hex(Md5("abcdefghijklmnopqrstuvwxyz")), "c3fcd3d76192e4007dfb496cca67e13b");
  EXPECT_EQ(Hex(Md5("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")),
            "d174ab98d277d9f5a5611c2c9f419d9f");
  EXPECT_EQ(Hex(Md5("1234567890123456789012345678901234567890123456789012345678901234567890"
                    "1234567890")),
            "57edf4a22be3c955ac49da2e2107b67a");
  // Lengths around the padding's block boundary (55, 56, 64 bytes).
  EXPECT_EQ(Hex(Md5(std::string(55, 'x'))), "04364420e25c512fd958a70738aa8f72");
  EXPECT_EQ(Hex(Md5(std::string(56, 'x'))), "668a72d5ba17f08e62dabcafad6db14b");
  EXPECT_EQ(Hex(Md5(std::string(64, 'x'))), "c1bb4f81d892b2d57947682aeb252456");
}

TEST(Md5, WordsAreLittleEndian) {
  const Md5Digest d = Md5("abc");  // 90 01 50 98 ...
  EXPECT_EQ(Md5Word(d, 0), 0x98500190u);
}

KeySelector Filter(KeyFilter f, const std::string& conf) {
  KeySelector s;
  s.filter = f;
  s.filter_len = static_cast<uint8_t>(conf.size());
  for (size_t i = 0; i < conf.size(); ++i) s.filter_conf[i] = conf[i];
  return s;
}

TEST(KeyFilter, StopHashesTheKeyBeforeTheStopString) {
  const KeySelector s = Filter(KeyFilter::kStop, "|#|");
  EXPECT_EQ(s.Filtered("foo:bar|#|rest"), "foo:bar");
  EXPECT_EQ(s.Filtered("a|#|b|#|c"), "a");
  EXPECT_EQ(s.Filtered("|#|rest"), "");
  EXPECT_EQ(s.Filtered("no-stop-here"), "no-stop-here");
  // strstr semantics: the search ends at a NUL in the key.
  EXPECT_EQ(s.Filtered(std::string_view("ab\0c|#|d", 8)), std::string_view("ab\0c|#|d", 8));
  // A key past memcached's 250 bytes is hashed whole.
  const std::string long_key = "x|#|" + std::string(250, 'y');
  EXPECT_EQ(s.Filtered(long_key), long_key);
}

TEST(KeyFilter, TagsHashThePartBetweenTheTags) {
  const KeySelector s = Filter(KeyFilter::kTags, "{}");
  EXPECT_EQ(s.Filtered("user{42}:name"), "42");
  EXPECT_EQ(s.Filtered("{a}{b}"), "a");
  EXPECT_EQ(s.Filtered("x{}y"), "");  // memcached hashes the empty part
  EXPECT_EQ(s.Filtered("no tags"), "no tags");
  EXPECT_EQ(s.Filtered("open{only"), "open{only");
  EXPECT_EQ(s.Filtered("last{"), "last{");
  EXPECT_EQ(s.Filtered("}a{b}"), "b");
  const KeySelector same = Filter(KeyFilter::kTags, "$$x");  // only two characters count
  EXPECT_EQ(same.Filtered("a$b$c"), "b");
}

TEST(KeyDist, RingTakesTheFirstPointAtOrAfterTheHashAndWraps) {
  const std::vector<RingServer> servers = {{"10.0.0.1", "11211"}, {"10.0.0.2", "11211"}};
  const auto d = KeyDist::Ring(servers, RingMode::kKetama, 160);
  const auto& pts = d->points();
  ASSERT_EQ(pts.size(), 320u);
  for (size_t i = 1; i < pts.size(); ++i) ASSERT_LE(pts[i - 1].value, pts[i].value);
  for (size_t i = 0; i < pts.size(); i += 17) {
    EXPECT_EQ(d->Select(pts[i].value), static_cast<int32_t>(pts[i].server)) << i;
    if (i + 1 < pts.size() && pts[i].value + 1 < pts[i + 1].value) {
      EXPECT_EQ(d->Select(pts[i].value + 1), static_cast<int32_t>(pts[i + 1].server)) << i;
    }
  }
  EXPECT_EQ(d->Select(0), static_cast<int32_t>(pts[0].server));
  EXPECT_EQ(
      d->Select(0xFFFFFFFFu),
      static_cast<int32_t>(pts.back().value == 0xFFFFFFFFu ? pts.back().server : pts[0].server));
  // Only the low 32 bits of the hash count.
  EXPECT_EQ(d->Select(uint64_t{0xABCD} << 32 | pts[5].value), static_cast<int32_t>(pts[5].server));
}

TEST(KeyDist, Md5ModesMakeFourPointsPerDigest) {
  const std::vector<RingServer> servers = {{"a", "1"}, {"b", "2"}, {"c", "3"}};
  EXPECT_EQ(KeyDist::Ring(servers, RingMode::kKetama, 10)->points().size(), 3u * 8);
  EXPECT_EQ(KeyDist::Ring(servers, RingMode::kEvcache, 4)->points().size(), 3u * 4);
  EXPECT_EQ(KeyDist::Ring(servers, RingMode::kDefault, 7)->points().size(), 3u * 7);
}

TEST(KeyDist, EmptyPoolsSelectNothing) {
  EXPECT_EQ(KeyDist::Ring({}, RingMode::kDefault, 160)->Select(123), -1);
  EXPECT_EQ(KeyDist::Jump(0)->Select(123), -1);
  EXPECT_EQ(KeyDist::Jump(1)->Select(123), 0);
}

// ---- the Lua constructors -------------------------------------------------------

class DistLua : public ::testing::Test {
 protected:
  void SetUp() override {
    L = luaL_newstate();
    luaL_openlibs(L);
    lua_newtable(L);
    OpenHashDistFunctions(L);
    lua_setglobal(L, "mcp");
  }
  void TearDown() override { lua_close(L); }
  // "" when `code` runs, else its error message.
  std::string Run(const std::string& code) {
    if (luaL_dostring(L, code.c_str()) == LUA_OK) return "";
    std::string e = lua_tostring(L, -1);
    lua_pop(L, 1);
    return e;
  }
  lua_State* L = nullptr;
};

constexpr const char* kPool =
    "local p = { { id = 1, addr = 'a', port = '1' }, { id = 2, addr = 'b', port = '11211' } }\n";

TEST_F(DistLua, ValuesHaveMemcachedsShapes) {
  EXPECT_EQ(Run("assert(type(mcp.hash_xxhash) == 'userdata')\n"
                "assert(type(mcp.dist_jump_hash.new) == 'function')\n"
                "assert(type(mcp.dist_ring_hash.new) == 'function')\n"
                "assert(type(mcp.dist_ring_hash.hash) == 'userdata')\n"
                "assert(mcp.hash_xxhash ~= mcp.dist_ring_hash.hash)\n"),
            "");
  EXPECT_EQ(Run(std::string(kPool) +
                "local ud, lp = mcp.dist_ring_hash.new(p, { omode = 'twemproxy', obuckets = 40 })\n"
                "assert(type(ud) == 'userdata' and type(lp) == 'userdata')\n"
                "local j, jp = mcp.dist_jump_hash.new(p)\n"
                "assert(type(j) == 'userdata' and type(jp) == 'userdata')\n"),
            "");
}

// luaL_error puts the caller's position first; the text is memcached's.
TEST_F(DistLua, RingOptionErrorsAreMemcacheds) {
  auto err = [&](const std::string& code) { return Run(std::string(kPool) + code); };
  EXPECT_NE(
      err("mcp.dist_ring_hash.new(p, { omode = 'bogus' })").find(": ring_hash: bad omode argument"),
      std::string::npos);
  for (const char* b : {"0", "-1", "'x'", "1.5"}) {
    EXPECT_NE(err(std::string("mcp.dist_ring_hash.new(p, { obuckets = ") + b + " })")
                  .find(": ring_hash: option argument must be a positive integer"),
              std::string::npos)
        << b;
  }
  EXPECT_EQ(err("mcp.dist_ring_hash.new(p, { obuckets = '8' })"), "");  // as lua_tointegerx
  EXPECT_NE(err("mcp.dist_ring_hash.new(p, { omode = 'ketama', obuckets = 3 })").find("at least 4"),
            std::string::npos);
  EXPECT_NE(Run("mcp.dist_ring_hash.new({ { id = 1, addr = 'a' } })").find("needs addr and port"),
            std::string::npos);
  EXPECT_NE(Run("mcp.dist_ring_hash.new({ { id = 2, addr = 'a', port = '1' } })")
                .find("must have id = 1"),
            std::string::npos);
  EXPECT_NE(err("mcp.dist_ring_hash.new(p, { obuckets = 1 << 30 })").find("points"),
            std::string::npos);
}

// ---- the fixtures ------------------------------------------------------------------

// gen_ring_fixtures.py's key_of(i, kind).
std::string KeyOf(int64_t i, const std::string& kind) {
  std::string pad;
  for (int r = 0; r < 7; ++r) pad += "abcdefghijklmnopqrstuvwxyz0123456789";
  const std::string head = "k" + std::to_string(i) + ":";
  const size_t len = std::max<size_t>(static_cast<size_t>(1 + (i * 31) % 250), head.size());
  std::string key = (head + pad).substr(0, len);
  if (kind == "stop") {
    if (i % 7 != 0) key = "p" + std::to_string(i % 50) + "|#|" + key;
  } else if (kind == "tags") {
    const std::string tag =
        i % 7 == 0 ? "" : (i % 11 == 0 ? "{}" : "{t" + std::to_string(i % 50) + "}");
    key = key.substr(0, 5) + tag + key.substr(std::min<size_t>(5, key.size()));
  }
  return key.substr(0, 250);
}

struct FixtureCase {
  std::string name, servers, dist, hash, seed, filter, conf, kind;
  int64_t buckets = 0;
  std::string map, counts, fnv;
};

std::vector<FixtureCase> LoadFixtures() {
  std::ifstream in(TROVE_RING_FIXTURES);
  std::vector<FixtureCase> out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string tag;
    ls >> tag;
    if (tag == "case") {
      FixtureCase c;
      ls >> c.name >> c.servers >> c.dist >> c.hash >> c.seed >> c.filter >> c.conf >> c.buckets >>
          c.kind;
      out.push_back(c);
    } else if (tag == "map" && !out.empty()) {
      ls >> out.back().map;
    } else if (tag == "sum" && !out.empty()) {
      ls >> out.back().counts >> out.back().fnv;
    }
  }
  return out;
}

KeySelector SelectorOf(const FixtureCase& c, std::vector<std::string>* storage) {
  std::vector<RingServer> servers;
  std::istringstream ss(c.servers);
  std::string one;
  while (std::getline(ss, one, ',')) storage->push_back(one);
  for (const std::string& s : *storage) {
    const size_t colon = s.rfind(':');
    servers.push_back(
        {std::string_view(s).substr(0, colon), std::string_view(s).substr(colon + 1)});
  }
  KeySelector sel;
  if (c.dist == "jump") {
    sel.dist = KeyDist::Jump(servers.size());
  } else {
    const RingMode mode = c.dist == "default"     ? RingMode::kDefault
                          : c.dist == "ketama"    ? RingMode::kKetama
                          : c.dist == "twemproxy" ? RingMode::kTwemproxy
                                                  : RingMode::kEvcache;
    sel.dist = KeyDist::Ring(servers, mode, c.buckets);
  }
  sel.hash = c.hash == "md5" ? KeyHash::kKetamaMd5 : KeyHash::kXxh3;
  if (c.seed != "-") sel.seed = SeedOf(c.seed);
  if (c.filter != "-") {
    sel = [&] {
      KeySelector f = Filter(c.filter == "stop" ? KeyFilter::kStop : KeyFilter::kTags, c.conf);
      f.dist = sel.dist;
      f.hash = sel.hash;
      f.seed = sel.seed;
      return f;
    }();
  }
  return sel;
}

TEST(RingFixtures, EveryPoolPlacesKeysAsThePublishedAlgorithms) {
  const std::vector<FixtureCase> cases = LoadFixtures();
  ASSERT_EQ(cases.size(), 13u) << "fixtures file: " << TROVE_RING_FIXTURES;
  for (const FixtureCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::string> storage;
    const KeySelector sel = SelectorOf(c, &storage);
    ASSERT_EQ(c.map.size(), 2000u);
    int wrong = 0;
    for (int64_t i = 0; i < 2000; ++i) {
      const int32_t got = sel.Select(KeyOf(i, c.kind));
      if (got != c.map[static_cast<size_t>(i)] - '0' && ++wrong <= 5) {
        ADD_FAILURE() << "key " << KeyOf(i, c.kind) << ": backend " << got << ", fixture "
                      << c.map[static_cast<size_t>(i)];
      }
    }
    EXPECT_EQ(wrong, 0);
    // The summary over 100,000 keys: keys per backend and FNV-1a of the
    // index sequence.
    std::vector<int64_t> counts(storage.size());
    uint64_t fnv = 0xcbf29ce484222325ULL;
    for (int64_t i = 0; i < 100000; ++i) {
      const int32_t got = sel.Select(KeyOf(i, c.kind));
      ASSERT_GE(got, 0);
      ++counts[static_cast<size_t>(got)];
      fnv = (fnv ^ static_cast<uint64_t>(got)) * 0x100000001b3ULL;
    }
    std::string cs;
    for (int64_t n : counts) cs += (cs.empty() ? "" : ",") + std::to_string(n);
    char fx[17];
    std::snprintf(fx, sizeof(fx), "%016llx", static_cast<unsigned long long>(fnv));
    EXPECT_EQ(cs, c.counts);
    EXPECT_EQ(fx, c.fnv);
    std::printf("  %-18s 2000/2000 fixture keys, 100000 keys per backend %s fnv %s\n",
                c.name.c_str(), cs.c_str(), fx);
  }
}

}  // namespace
}  // namespace trove::proxy
