// GlobMatch: Redis's glob patterns (KEYS, SCAN MATCH, CONFIG GET, PSUBSCRIBE,
// ACL patterns, CLIENT KILL filters), in time O(pattern x subject) at worst.
// Thread safety: a pure function.
#pragma once

#include <string_view>

namespace trove {

// Matches `subject` against `pattern` with the result Redis's stringmatchlen
// gives, including its corners:
//   *      any run of bytes; ?  one byte;  \x  the byte x;
//   [abc]  [^abc]  [a-z] (bounds swapped when reversed, compared as signed
//          chars as Redis does), \x inside a class (always case-sensitive),
//          an unterminated class runs to the end of the pattern;
//   an empty subject matches only the empty pattern (Redis: "*" against ""
//   is no match; its callers skip matching for a lone "*").
// `nocase` folds ASCII letters, as Redis's tolower in the C locale.
//
// Why not Redis's recursion: it backtracks with a nesting limit, which caps
// stars at 1000 and still costs O(n^k) on some inputs. Every element other
// than '*' consumes exactly one byte, so remembering only the last star and
// retrying from one byte further (the classic two-pointer walk) visits each
// (pattern, subject) position pair at most once: no recursion, no allocation.
bool GlobMatch(std::string_view pattern, std::string_view subject, bool nocase = false);

}  // namespace trove
