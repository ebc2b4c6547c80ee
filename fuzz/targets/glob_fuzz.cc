// libFuzzer target: trove::GlobMatch (common/glob.h) on a fuzzed pattern and
// subject, checked against Redis's own algorithm.
// Input: byte 0 bit 0 = nocase; bit 1 clear: the pattern runs to the first
// NUL byte and the subject is the rest; bit 1 set: byte 1 is the pattern's
// length and the subject is the rest (so patterns may hold NUL too).
// Checks:
//  - for short inputs (pattern and subject of at most kModelMax bytes),
//    GlobMatch gives the result of RedisStringMatch below, a line-for-line
//    port of Redis 7's stringmatchlen_impl (util.c) with its reads of the
//    NUL terminator kept;
//  - for any input: an all-escaped subject matches itself, "*" matches
//    exactly the non-empty subjects, and every call returns within
//    libFuzzer's -timeout (scripts/fuzz runs this target with -timeout=2).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/glob.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

// tolower() in the C locale, which is what Redis runs with; defined for the
// negative values a signed char gives too.
int ToLowerC(int c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }

// Redis 7's stringmatchlen_impl. `pattern` and `string` are NUL-terminated
// past their lengths (std::string::c_str), as Redis's sds strings are: the
// loops below read pattern[patternLen] exactly where Redis does.
int RedisStringMatchImpl(const char* pattern, int patternLen, const char* string, int stringLen,
                         int nocase, int* skipLongerMatches, int nesting) {
  if (nesting > 1000) return 0;
  while (patternLen && stringLen) {
    switch (pattern[0]) {
      case '*':
        while (patternLen && pattern[1] == '*') {
          pattern++;
          patternLen--;
        }
        if (patternLen == 1) return 1;
        while (stringLen) {
          if (RedisStringMatchImpl(pattern + 1, patternLen - 1, string, stringLen, nocase,
                                   skipLongerMatches, nesting + 1)) {
            return 1;
          }
          if (*skipLongerMatches) return 0;
          string++;
          stringLen--;
        }
        *skipLongerMatches = 1;
        return 0;
      case '?':
        string++;
        stringLen--;
        break;
      case '[': {
        int neg, match;
        pattern++;
        patternLen--;
        neg = pattern[0] == '^';
        if (neg) {
          pattern++;
          patternLen--;
        }
        match = 0;
        while (1) {
          if (pattern[0] == '\\' && patternLen >= 2) {
            pattern++;
            patternLen--;
            if (pattern[0] == string[0]) match = 1;
          } else if (pattern[0] == ']') {
            break;
          } else if (patternLen == 0) {
            pattern--;
            patternLen++;
            break;
          } else if (patternLen >= 3 && pattern[1] == '-') {
            int start = pattern[0];
            int end = pattern[2];
            int c = string[0];
            if (start > end) {
              int t = start;
              start = end;
              end = t;
            }
            if (nocase) {
              start = ToLowerC(start);
              end = ToLowerC(end);
              c = ToLowerC(c);
            }
            pattern += 2;
            patternLen -= 2;
            if (c >= start && c <= end) match = 1;
          } else {
            if (!nocase) {
              if (pattern[0] == string[0]) match = 1;
            } else {
              if (ToLowerC(pattern[0]) == ToLowerC(string[0])) match = 1;
            }
          }
          pattern++;
          patternLen--;
        }
        if (neg) match = !match;
        if (!match) return 0;
        string++;
        stringLen--;
        break;
      }
      case '\\':
        if (patternLen >= 2) {
          pattern++;
          patternLen--;
        }
        [[fallthrough]];
      default:
        if (!nocase) {
          if (pattern[0] != string[0]) return 0;
        } else {
          if (ToLowerC(pattern[0]) != ToLowerC(string[0])) return 0;
        }
        string++;
        stringLen--;
        break;
    }
    pattern++;
    patternLen--;
    if (stringLen == 0) {
      while (*pattern == '*') {
        pattern++;
        patternLen--;
      }
      break;
    }
  }
  if (patternLen == 0 && stringLen == 0) return 1;
  return 0;
}

bool RedisStringMatch(const std::string& pattern, const std::string& subject, bool nocase) {
  int skip = 0;
  return RedisStringMatchImpl(pattern.c_str(), static_cast<int>(pattern.size()), subject.c_str(),
                              static_cast<int>(subject.size()), nocase ? 1 : 0, &skip, 0) != 0;
}

// The brief's bound for the differential check; the model is cheap there.
constexpr size_t kModelMax = 10;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool nocase = (data[0] & 1) != 0;
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  std::string_view pattern, subject;
  if ((data[0] & 2) == 0) {
    size_t nul = rest.find('\0');
    pattern = rest.substr(0, nul);
    subject = nul == std::string_view::npos ? std::string_view() : rest.substr(nul + 1);
  } else {
    if (rest.empty()) return 0;
    size_t n = static_cast<unsigned char>(rest[0]);
    rest.remove_prefix(1);
    if (n > rest.size()) n = rest.size();
    pattern = rest.substr(0, n);
    subject = rest.substr(n);
  }

  const bool got = trove::GlobMatch(pattern, subject, nocase);
  if (pattern.size() <= kModelMax && subject.size() <= kModelMax) {
    const bool want = RedisStringMatch(std::string(pattern), std::string(subject), nocase);
    Check(got == want);
  }

  Check(trove::GlobMatch("*", subject, nocase) == !subject.empty());
  if (subject.size() <= 4096) {
    std::string escaped;
    for (char c : subject) {
      escaped.push_back('\\');
      escaped.push_back(c);
    }
    Check(trove::GlobMatch(escaped, subject, nocase));
  }
  return 0;
}
