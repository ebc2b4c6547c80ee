// Framing and tokenizing of memcached text-protocol command lines. Pure
// functions over caller-owned bytes; used by the cache front and (later) the
// proxy. Any thread; no state, no allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace trove::memcache {

// memcached tokenizes at most 24 slots: 23 words plus a terminal slot. When a
// line has more words, the remainder is left untokenized (ParsedLine::rest).
inline constexpr size_t kMaxTokens = 23;

// A line with no '\n' after this many buffered bytes is junk: memcached closes
// the connection without a reply, except for multigets ("get "/"gets "
// after at most 100 spaces), whose key lists are unbounded.
inline constexpr size_t kLineLimit = 2048;
inline constexpr size_t kMaxLeadingSpaces = 100;

enum class LineStatus : uint8_t {
  kOk,        // a complete line
  kNeedMore,  // no '\n' yet; keep the bytes and read more
  kClose,     // no '\n' within kLineLimit: close the connection silently
};

struct LineResult {
  LineStatus status = LineStatus::kNeedMore;
  std::string_view line;  // without the trailing "\r\n" or "\n"
  size_t consumed = 0;    // bytes through the '\n'
};

// Finds the first command line in [data, data+len). A "\r" before the "\n" is
// dropped (a line of just "\r\n" is empty), as memcached does.
// `multiget_cap` bounds how long an unfinished multiget line may grow before
// it is treated as junk too (memcached has no bound; we keep one).
LineResult FindLine(const char* data, size_t len, size_t multiget_cap);

// Words of one line, split on ' ' only (memcached does not split on tabs).
struct ParsedLine {
  std::string_view tokens[kMaxTokens];
  size_t count = 0;       // words in tokens[]
  std::string_view rest;  // untokenized tail when the line had > kMaxTokens words
  // memcached's "ntokens": words plus the terminal slot. Command arity checks
  // are written against this number so they read like memcached's.
  size_t ntokens() const { return count + 1; }
  bool truncated() const { return !rest.empty(); }
  // The text protocol's trailing "noreply" token.
  bool noreply() const { return count > 0 && !truncated() && tokens[count - 1] == "noreply"; }
};

// Splits `line` into words. Never reads outside `line`.
void Tokenize(std::string_view line, ParsedLine* out);

// Walks the space-separated words of `s` one at a time (multiget keys), with
// no limit on their number.
class WordIterator {
 public:
  explicit WordIterator(std::string_view s) : s_(s) {}
  // Stores the next word and returns true, or returns false at the end.
  bool Next(std::string_view* word);

 private:
  std::string_view s_;
  size_t pos_ = 0;
};

// The word `idx` (0-based) of `s`, or an empty view; its offset in `s` is
// word.data() - s.data() when not empty.
std::string_view NthWord(std::string_view s, size_t idx);

// memcached's numeric token rules (safe_strto* on a 64-bit host).
// Client flags: decimal, optional '+', no '-', at most 2^64-1; truncated to
// 32 bits as memcached stores them.
bool ParseFlags(std::string_view s, uint32_t* out);
// Signed 64-bit decimal (exptime, lengths), optional sign.
bool ParseInt(std::string_view s, int64_t* out);
// Unsigned 64-bit decimal (CAS, delta), optional '+', no '-'.
bool ParseUint(std::string_view s, uint64_t* out);

// The <bytes> token of a storage command (set family and ms), by memcached
// 1.6.45's request parser: at most 11 characters, an optional '-', digits
// only, within int32, and then 0 <= n <= INT_MAX - 2. Whether this parses
// decides everything after a rejected storage line: when it does, the next
// n + 2 bytes are the data block and are swallowed whatever else is wrong;
// when it does not, nothing is swallowed (memcached cannot size the block).
bool ParseValueLength(std::string_view s, size_t* out);
// The cas unique of "cas": at most 22 digits, digits only, within uint64.
bool ParseCasUnique(std::string_view s, uint64_t* out);

}  // namespace trove::memcache
