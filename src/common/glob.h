// GlobMatch: Redis's glob patterns (KEYS, SCAN MATCH, CONFIG GET, PSUBSCRIBE,
// ACL patterns, CLIENT KILL filters), in time O(pattern x subject) at worst.
// Thread safety: a pure function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace trove {

// Matches `subject` against `pattern` with the result Redis's stringmatchlen
// gives, including its corners:
//   *      any run of bytes; ?  one byte;  \x  the byte x;
//   [abc]  [^abc]  [a-z] (bounds swapped when reversed, compared as signed
//          chars as Redis does), \x inside a class (always case-sensitive),
//          an unterminated class runs to the end of the pattern;
//   an empty subject matches only the empty pattern (Redis: "*" against ""
//   is no match; its callers skip matching for a lone "*");
//   a pattern whose star run number kGlobMaxStarRuns + 1 (a run of '*' is
//   one) is followed by more pattern matches nothing (Redis's "protection
//   against abusive patterns": its recursion gives up deeper than 1000).
// `nocase` folds ASCII letters, as Redis's tolower in the C locale.
//
// Why not Redis's recursion: it takes a stack frame per star run and retries
// every later subject position in each. Every element other than '*'
// consumes exactly one byte, so
// remembering only the last star and retrying from one byte further (the
// classic two-pointer walk) visits each (pattern, subject) position pair at
// most once: O(pattern x subject) steps at worst, no recursion, no
// allocation. Redis's nesting limit is kept as a rule on the pattern (the
// walk counts the star runs it enters), so results stay Redis's.
bool GlobMatch(std::string_view pattern, std::string_view subject, bool nocase = false);

// Redis's nesting limit (util.c, stringmatchlen_impl: nesting > 1000).
inline constexpr size_t kGlobMaxStarRuns = 1000;

// For tests: GlobMatch that also reports how many steps its walk took (one
// per element compared or star run entered), to check the bound above
// without timing anything.
bool GlobMatchCountingSteps(std::string_view pattern, std::string_view subject, bool nocase,
                            uint64_t* steps);

}  // namespace trove
