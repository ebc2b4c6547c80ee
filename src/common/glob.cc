// GlobMatch: the two-pointer walk over Redis's glob elements.
#include "common/glob.h"

#include <cstddef>

namespace trove {
namespace {

int Lower(int c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }

// Redis compares plain chars, which are signed on our targets; keep its
// ordering for ranges over bytes >= 0x80 on every target.
int Signed(char c) { return static_cast<signed char>(c); }

// A class starting at p[i] == '['. Returns its length in the pattern and
// whether byte c is in it, with Redis's rules for each member.
size_t ClassElement(std::string_view p, size_t i, char c, bool nocase, bool* match) {
  size_t j = i + 1;
  bool neg = j < p.size() && p[j] == '^';
  if (neg) ++j;
  bool m = false;
  while (true) {
    size_t left = p.size() - j;
    if (left >= 2 && p[j] == '\\') {
      ++j;
      if (p[j] == c) m = true;  // escaped member: case-sensitive, as Redis
      ++j;
    } else if (left > 0 && p[j] == ']') {
      ++j;
      break;
    } else if (left == 0) {
      break;  // unterminated: the class takes the rest of the pattern
    } else if (left >= 3 && p[j + 1] == '-') {
      int lo = Signed(p[j]), hi = Signed(p[j + 2]), x = Signed(c);
      if (lo > hi) {
        int t = lo;
        lo = hi;
        hi = t;
      }
      if (nocase) {
        lo = Lower(lo);
        hi = Lower(hi);
        x = Lower(x);
      }
      if (x >= lo && x <= hi) m = true;
      j += 3;
    } else {
      if (nocase ? Lower(Signed(p[j])) == Lower(Signed(c)) : p[j] == c) m = true;
      ++j;
    }
  }
  *match = neg ? !m : m;
  return j - i;
}

// The element at p[i] (not '*'): its length, and whether it matches byte c.
size_t Element(std::string_view p, size_t i, char c, bool nocase, bool* match) {
  switch (p[i]) {
    case '?':
      *match = true;
      return 1;
    case '[':
      return ClassElement(p, i, c, nocase, match);
    case '\\':
      if (i + 1 < p.size()) {
        char lit = p[i + 1];
        *match = nocase ? Lower(Signed(lit)) == Lower(Signed(c)) : lit == c;
        return 2;
      }
      [[fallthrough]];
    default:
      *match = nocase ? Lower(Signed(p[i])) == Lower(Signed(c)) : p[i] == c;
      return 1;
  }
}

// The walk. Stars are entered in pattern order and never again (a retry
// goes back only to just after the last one), so counting the runs entered
// applies Redis's nesting limit: the run it would recurse past 1000 levels
// for fails the whole match, as Redis's skip-longer-matches cut then makes
// every caller give up. A trailing run matches at once in both.
template <bool kCount>
bool Walk(std::string_view p, std::string_view s, bool nocase, [[maybe_unused]] uint64_t* steps) {
  if (s.empty()) return p.empty();
  constexpr size_t kNone = static_cast<size_t>(-1);
  size_t pi = 0, si = 0;
  size_t star_p = kNone;  // pattern position just after the last star seen
  size_t star_s = 0;      // subject position that star's run ends at, so far
  size_t star_runs = 0;   // star runs entered
  while (si < s.size()) {
    if constexpr (kCount) ++*steps;
    if (pi < p.size() && p[pi] == '*') {
      while (pi < p.size() && p[pi] == '*') ++pi;
      if (pi == p.size()) return true;
      if (++star_runs > kGlobMaxStarRuns) return false;
      star_p = pi;
      star_s = si;
      continue;
    }
    if (pi < p.size()) {
      bool m;
      size_t len = Element(p, pi, s[si], nocase, &m);
      if (m) {
        pi += len;
        ++si;
        continue;
      }
    }
    if (star_p == kNone) return false;
    // The last star swallows one more byte; everything after it retries.
    pi = star_p;
    si = ++star_s;
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

}  // namespace

bool GlobMatch(std::string_view p, std::string_view s, bool nocase) {
  return Walk<false>(p, s, nocase, nullptr);
}

bool GlobMatchCountingSteps(std::string_view p, std::string_view s, bool nocase, uint64_t* steps) {
  *steps = 0;
  return Walk<true>(p, s, nocase, steps);
}

}  // namespace trove
