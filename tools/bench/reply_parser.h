// Incremental reply parsers for trove-bench: memcached text + meta replies and
// RESP2 frames. Called by the load thread that owns the connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace trove::bench {

enum class ParseStatus { kOk, kNeedMore, kError };

// A reply line longer than this (without its CRLF) is malformed: no server
// reply we ask for comes close (the longest is VALUE with a 250-byte key).
inline constexpr size_t kMaxReplyLine = 1024;
// Largest value a reply may announce (memcached's default item limit).
inline constexpr uint64_t kMaxReplyValue = 1 << 20;

enum class McKind {
  kValue,          // VALUE <key> <flags> <bytes> [<cas>]  + data
  kEnd,            // END
  kStored,         // STORED
  kNotStored,      // NOT_STORED
  kExists,         // EXISTS
  kNotFound,       // NOT_FOUND
  kMetaValue,      // VA <bytes> [flags]                   + data
  kMetaHit,        // HD [flags]
  kMetaMiss,       // EN
  kMetaNotStored,  // NS
  kMetaExists,     // EX
  kMetaNotFound,   // NF
  kMetaNoop,       // MN
  kError,          // ERROR
  kClientError,    // CLIENT_ERROR <text>
  kServerError,    // SERVER_ERROR <text>
};

// Views point into the parsed input and live as long as it does.
struct McReply {
  McKind kind = McKind::kEnd;
  std::string_view key;   // kValue only
  uint32_t flags = 0;     // kValue only
  std::string_view data;  // kValue, kMetaValue: the value bytes
  std::string_view text;  // errors: the message; meta: the flags after the code
};

// Parses one memcached reply element (text or meta) from the front of
// [p, p+n). kOk sets *out and *consumed; kNeedMore means the element is not
// complete yet (nothing consumed); kError means malformed bytes (an unknown
// line, a bad number, a missing CRLF after data, an over-long line). Never
// reads outside the input; allocates nothing.
ParseStatus ParseMcReply(const char* p, size_t n, McReply* out, size_t* consumed);

enum class RespKind { kSimple, kError, kInteger, kBulk, kNullBulk, kArray, kNullArray };

struct RespReply {
  RespKind kind = RespKind::kSimple;
  std::string_view str;  // kSimple, kError: the line; kBulk: the payload
  int64_t integer = 0;   // kInteger: the value; kArray: the element count
};

// Parses one RESP2 frame. An array yields only its header (kArray with the
// count); its elements follow as separate frames. Same contract as
// ParseMcReply.
ParseStatus ParseRespReply(const char* p, size_t n, RespReply* out, size_t* consumed);

}  // namespace trove::bench
