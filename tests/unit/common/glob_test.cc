// GlobMatch against Redis's documented and observed corners, and against a
// plain backtracking model of Redis's stringmatchlen on random short inputs.
#include "common/glob.h"

#include <gtest/gtest.h>

#include <cstdint>
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
// bound. The results are asserted, and the walk's step count shows the work
// is bounded (no timing).
TEST(GlobTest, Issue9PathologicalPatternsFinish) {
  std::string subject(300, 'a');
  std::string p1;
  for (int i = 0; i < 15; ++i) p1 += "a*";
  p1 += "b";
  uint64_t steps = 0;
  EXPECT_FALSE(GlobMatchCountingSteps(p1, subject, false, &steps));
  EXPECT_LE(steps, 2 * (p1.size() + subject.size()));
  std::string p2(5000, '*');
  p2 += "b";
  EXPECT_FALSE(GlobMatch(p2, std::string(100000, 'a')));
  std::string p3;
  for (int i = 0; i < 999; ++i) p3 += "*a";
  p3 += "*b";
  EXPECT_FALSE(GlobMatchCountingSteps(p3, std::string(2000, 'a'), false, &steps));
  EXPECT_LE(steps, 2 * (p3.size() + 2000));
  EXPECT_TRUE(GlobMatch(p3, std::string(2000, 'a') + "b"));
}

// keyspace.tcl, "Regression for pattern matching long nested loops".
TEST(GlobTest, LongNestedLoopsNoMatch) {
  std::string p;
  for (int i = 0; i < 20; ++i) p += "a*";
  p += "b";
  const std::string s(40, 'a');
  uint64_t steps = 0;
  EXPECT_FALSE(GlobMatchCountingSteps(p, s, false, &steps));
  EXPECT_LE(steps, 2 * (p.size() + s.size()));
}

// keyspace.tcl, "Regression for pattern matching very long nested loops":
// KEYS "*?" x 50000 against a key of 50000 'a's finds nothing in Redis (its
// recursion gives up past 1000 star runs), so it finds nothing here either,
// and the walk stops at the 1001st run: two steps per "*?" before it.
TEST(GlobTest, VeryLongNestedLoopsStopAtRedisNestingLimit) {
  std::string p;
  for (int i = 0; i < 50000; ++i) p += "*?";
  const std::string s(50000, 'a');
  uint64_t steps = 0;
  EXPECT_FALSE(GlobMatchCountingSteps(p, s, false, &steps));
  EXPECT_LE(steps, 2 * (kGlobMaxStarRuns + 1));
}

// The limit counts runs of stars that more pattern follows, as Redis's
// nesting does: 1000 match; a 1001st run fails unless it ends the pattern;
// stars that are escaped or in a class are bytes, not runs.
TEST(GlobTest, StarRunLimitAsRedis) {
  auto runs = [](const char* unit, size_t n) {
    std::string p;
    for (size_t i = 0; i < n; ++i) p += unit;
    return p;
  };
  const std::string a1000(1000, 'a'), a1001(1001, 'a');
  EXPECT_TRUE(GlobMatch(runs("*a", kGlobMaxStarRuns), a1000));
  EXPECT_FALSE(GlobMatch(runs("*a", kGlobMaxStarRuns + 1), a1001));
  EXPECT_FALSE(GlobMatch(runs("*?", kGlobMaxStarRuns + 1), a1001));
  EXPECT_TRUE(GlobMatch(runs("*a", kGlobMaxStarRuns) + "*", a1001));   // trailing run
  EXPECT_TRUE(GlobMatch(runs("*a", kGlobMaxStarRuns) + "**", a1001));  // one run
  EXPECT_TRUE(GlobMatch(runs("?*", kGlobMaxStarRuns + 1), std::string(3000, 'a')));
  EXPECT_FALSE(GlobMatch(runs("?*", kGlobMaxStarRuns + 2), std::string(3000, 'a')));
  EXPECT_TRUE(GlobMatch(runs("**a", kGlobMaxStarRuns), a1000));  // "**" is one run
  EXPECT_TRUE(GlobMatch(runs("*a", kGlobMaxStarRuns) + "\\*", a1000 + "*"));
  EXPECT_TRUE(GlobMatch(runs("*a", kGlobMaxStarRuns) + "[*]", a1000 + "*"));
  EXPECT_FALSE(GlobMatch(runs("*a", kGlobMaxStarRuns) + "*[*]", a1000 + "*"));
  // The subject ends before the 1001st run: no match, for lack of bytes.
  EXPECT_FALSE(GlobMatch(runs("a*", kGlobMaxStarRuns + 1) + "b", a1000));
}

// The walk is bounded by (pattern x subject) on the classic worst case of a
// two-pointer glob (one star, a long literal tail that fails at its end).
TEST(GlobTest, StepsBoundedByPatternTimesSubject) {
  std::string p = "*" + std::string(200, 'a') + "b";
  const std::string s(2000, 'a');
  uint64_t steps = 0;
  EXPECT_FALSE(GlobMatchCountingSteps(p, s, false, &steps));
  EXPECT_LE(steps, (p.size() + 1) * (s.size() + 1));
  EXPECT_TRUE(GlobMatchCountingSteps("h*llo", "hello", false, &steps));
  EXPECT_GT(steps, 0u);
}

}  // namespace
}  // namespace trove
