// GlobMatch against Redis's documented and observed corners, and against a
// plain backtracking model of Redis's stringmatchlen on random short inputs.
#include "common/glob.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>

namespace trove {
namespace {

int L(int c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }
int S(char c) { return static_cast<signed char>(c); }

// The reference: stringmatchlen's rules as plain recursion, exponential in
// the worst case, so used only on short inputs.
bool Model(const char* p, int pl, const char* s, int sl, bool nc) {
  while (pl > 0 && sl > 0) {
    switch (p[0]) {
      case '*':
        while (pl > 1 && p[1] == '*') {
          ++p;
          --pl;
        }
        if (pl == 1) return true;
        for (; sl > 0; ++s, --sl) {
          if (Model(p + 1, pl - 1, s, sl, nc)) return true;
        }
        return false;
      case '?':
        ++s;
        --sl;
        break;
      case '[': {
        ++p;
        --pl;
        bool neg = pl > 0 && p[0] == '^';
        if (neg) {
          ++p;
          --pl;
        }
        bool m = false;
        while (true) {
          if (pl >= 2 && p[0] == '\\') {
            ++p;
            --pl;
            if (p[0] == s[0]) m = true;
          } else if (pl > 0 && p[0] == ']') {
            break;
          } else if (pl == 0) {
            --p;
            ++pl;
            break;
          } else if (pl >= 3 && p[1] == '-') {
            int a = S(p[0]), b = S(p[2]), c = S(s[0]);
            if (a > b) std::swap(a, b);
            if (nc) {
              a = L(a);
              b = L(b);
              c = L(c);
            }
            if (c >= a && c <= b) m = true;
            p += 2;
            pl -= 2;
          } else if (nc ? L(S(p[0])) == L(S(s[0])) : p[0] == s[0]) {
            m = true;
          }
          ++p;
          --pl;
        }
        if (neg) m = !m;
        if (!m) return false;
        ++s;
        --sl;
        break;
      }
      case '\\':
        if (pl >= 2) {
          ++p;
          --pl;
        }
        [[fallthrough]];
      default:
        if (nc ? L(S(p[0])) != L(S(s[0])) : p[0] != s[0]) return false;
        ++s;
        --sl;
        break;
    }
    ++p;
    --pl;
    if (sl == 0) {
      while (pl > 0 && p[0] == '*') {
        ++p;
        --pl;
      }
      break;
    }
  }
  return pl == 0 && sl == 0;
}

bool M(const std::string& p, const std::string& s, bool nc = false) {
  return Model(p.data(), static_cast<int>(p.size()), s.data(), static_cast<int>(s.size()), nc);
}

TEST(GlobTest, RedisBasics) {
  EXPECT_TRUE(GlobMatch("h?llo", "hello"));
  EXPECT_TRUE(GlobMatch("h*llo", "heeeello"));
  EXPECT_TRUE(GlobMatch("h[ae]llo", "hallo"));
  EXPECT_FALSE(GlobMatch("h[ae]llo", "hillo"));
  EXPECT_TRUE(GlobMatch("h[^e]llo", "hallo"));
  EXPECT_FALSE(GlobMatch("h[^e]llo", "hello"));
  EXPECT_TRUE(GlobMatch("h[a-b]llo", "hbllo"));
  EXPECT_TRUE(GlobMatch("h[b-a]llo", "hallo"));  // reversed bounds swap
  EXPECT_TRUE(GlobMatch("h\\*llo", "h*llo"));
  EXPECT_FALSE(GlobMatch("h\\*llo", "hallo"));
  EXPECT_TRUE(GlobMatch("[\\]]", "]"));
  EXPECT_TRUE(GlobMatch("a\\", "a\\"));  // trailing backslash is literal
  EXPECT_TRUE(GlobMatch("[abc", "b"));   // unterminated class
  EXPECT_FALSE(GlobMatch("[abc", "bc"));
  EXPECT_FALSE(GlobMatch("[]", "a"));
  EXPECT_TRUE(GlobMatch("[^]", "a"));
  EXPECT_TRUE(GlobMatch("a*", "a"));
  EXPECT_TRUE(GlobMatch("", ""));
  EXPECT_FALSE(GlobMatch("*", ""));  // Redis: an empty subject matches only ""
  EXPECT_FALSE(GlobMatch("", "a"));
}

TEST(GlobTest, NocaseAsRedis) {
  EXPECT_TRUE(GlobMatch("MAXMEM*", "maxmemory", true));
  EXPECT_FALSE(GlobMatch("MAXMEM*", "maxmemory", false));
  EXPECT_TRUE(GlobMatch("[A-C]x", "bX", true));
  EXPECT_FALSE(GlobMatch("[\\A]", "a", true));  // escaped member stays case-sensitive
}

TEST(GlobTest, AgreesWithModelOnRandomInputs) {
  std::mt19937 rng(12345);
  const char alphabet[] = {'a', 'b', 'A', '*', '?', '[', ']', '^', '-', '\\', '\xe9', 'z'};
  for (int iter = 0; iter < 200000; ++iter) {
    std::string p, s;
    int pl = static_cast<int>(rng() % 8), sl = static_cast<int>(rng() % 7);
    for (int i = 0; i < pl; ++i) p += alphabet[rng() % sizeof(alphabet)];
    for (int i = 0; i < sl; ++i) s += alphabet[rng() % 4 == 0 ? 3 + rng() % 9 : rng() % 3];
    bool nc = rng() % 2;
    ASSERT_EQ(GlobMatch(p, s, nc), M(p, s, nc)) << "pattern '" << p << "' subject '" << s
                                                << "' nocase " << nc;
  }
}

// Issue 9: patterns that made the old recursive matcher backtrack without
// bound. These would run for minutes before; the assertion is the result,
// and the run time of this test is the evidence (no timing asserted).
TEST(GlobTest, Issue9PathologicalPatternsFinish) {
  std::string subject(300, 'a');
  std::string p1;
  for (int i = 0; i < 15; ++i) p1 += "a*";
  p1 += "b";
  EXPECT_FALSE(GlobMatch(p1, subject));
  std::string p2(5000, '*');
  p2 += "b";
  EXPECT_FALSE(GlobMatch(p2, std::string(100000, 'a')));
  std::string p3;
  for (int i = 0; i < 2000; ++i) p3 += "*a";
  EXPECT_TRUE(GlobMatch(p3, std::string(2000, 'a')));
  EXPECT_FALSE(GlobMatch(p3, std::string(1999, 'a')));
}

}  // namespace
}  // namespace trove
