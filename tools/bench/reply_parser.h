// Incremental reply parsers for trove-bench: memcached text + meta replies and
// RESP2 frames. Called by the load thread that owns the connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "protocol/memcache/response_parser.h"

namespace trove::bench {

enum class ParseStatus { kOk, kNeedMore, kError };

// A reply line longer than this (without its CRLF) is malformed: no server
// reply we ask for comes close (the longest is VALUE with a 250-byte key).
inline constexpr size_t kMaxReplyLine = 1024;
// Largest value a reply may announce (memcached's default item limit).
inline constexpr uint64_t kMaxReplyValue = 1 << 20;

// memcached replies are parsed by the server's own parser
// (protocol/memcache/response_parser.h), with the limits above.
using McKind = memcache::ReplyKind;
using McReply = memcache::ReplyElement;

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
