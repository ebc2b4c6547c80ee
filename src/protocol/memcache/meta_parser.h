// Meta-command (mg/ms/md/ma/me/mn) flag parsing and base64 keys. Pure
// functions over a tokenized line; any thread, no allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "protocol/memcache/text_parser.h"

namespace trove::memcache {

// memcached: a meta command line holds at most 20 slots (MFLAG_MAX_OPT_LENGTH,
// counted as ntokens), and an opaque token is at most 32 bytes with its 'O'.
inline constexpr size_t kMetaMaxTokens = 20;
inline constexpr size_t kMetaMaxOpaque = 32;
// A base64 key decodes to at most 3/4 of the 250-byte wire limit.
inline constexpr size_t kMaxDecodedKey = 188;

// memcached 1.6.45's meta tokenizer accepts a flag token only when its first
// byte is in 'A'..'z' or a digit; any other makes the whole line a "bad
// command line format". Checks tokens[first..] up to the tokenizer's limit.
bool MetaTokensWellFormed(const ParsedLine& pl, size_t first);

// Everything the flags of one meta request say. Token-carrying flags keep the
// parsed value; the return flags are re-read from the tokens in request order
// when the reply is written (memcached echoes them in that order).
struct MetaFlags {
  uint64_t seen = 0;        // bit (c - 'A') for each flag character c
  std::string_view key;     // decoded when 'b' (points into the caller's buffer)
  bool key_binary = false;  // 'b'
  bool has_ttl = false;     // 'T'
  int64_t ttl = 0;
  bool has_vivify = false;  // 'N'
  int64_t vivify_ttl = 0;
  bool has_recache = false;  // 'R'
  int64_t recache_ttl = 0;
  uint32_t client_flags = 0;  // 'F'
  bool has_cas = false;       // 'C'
  uint64_t compare_cas = 0;
  bool has_explicit_cas = false;  // 'E'
  uint64_t explicit_cas = 0;
  uint64_t delta = 1;       // 'D'
  uint64_t initial = 0;     // 'J'
  char mode = 0;            // 'M', 0 when absent
  std::string_view opaque;  // 'O' token including the 'O'

  bool Has(char c) const { return (seen >> FlagBit(c)) & 1u; }
  static unsigned FlagBit(char c) { return static_cast<unsigned>(c - 'A') & 63u; }
};

// Parses the flag tokens line.tokens[first..count) of a meta command whose key
// is line.tokens[1]. When 'b' is present the key is base64-decoded into
// key_buf (kMaxDecodedKey bytes). Returns nullptr on success, or the
// CLIENT_ERROR text memcached gives (without the "CLIENT_ERROR " prefix).
// Like memcached, an unknown or repeated flag stops parsing at once; other
// errors let parsing continue so that every flag is seen.
// 'x' (md's remove-value) is accepted on every meta command, as memcached
// 1.6.45's shared flag parser does; only md acts on it.
const char* ParseMetaFlags(const ParsedLine& line, size_t first, char* key_buf, MetaFlags* out);

// Standard base64 (RFC 4648, padded). Decode returns the decoded length, or 0
// on bad input or when it would not fit in `cap`.
size_t Base64Decode(std::string_view in, char* out, size_t cap);
// Writes the encoding of `in` at out (needs 4*ceil(n/3) bytes); returns the length.
size_t Base64Encode(std::string_view in, char* out);

}  // namespace trove::memcache
