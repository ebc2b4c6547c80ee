// Framing of memcached replies as a backend sends them (text and meta):
// where one reply ends, its MCMC_CODE_* number and its value. Used by the
// proxy's backend connections. Pure functions over caller-owned bytes; any
// thread; no allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace trove::memcache {

// mcmc's reply codes, as memcached's proxy exposes them to Lua (r:code()).
enum McmcCode : int {
  kCodeStored = 8,
  kCodeExists = 9,
  kCodeDeleted = 10,
  kCodeTouched = 11,
  kCodeVersion = 12,
  kCodeNotFound = 13,
  kCodeNotStored = 14,
  kCodeOk = 15,
  kCodeNop = 16,
  kCodeEnd = 17,
  kCodeError = 21,
  kCodeClientError = 22,
  kCodeServerError = 23,
};

// mcmc's reply types (proxyreqs log lines).
enum McmcType : int {
  kTypeGet = 100,
  kTypeMeta = 101,
  kTypeStat = 102,
  kTypeGeneric = 104,
  kTypeEnd = 105,
  kTypeVersion = 106,
  kTypeNumeric = 107,
  kTypeErrmsg = 108,
  kTypeFail = 109,
};

enum class ReplyStatus : uint8_t {
  kNeedMore,  // no complete reply yet
  kOk,        // one complete reply
  kBad,       // not a memcached reply (garbage, absurd length)
};

struct ParsedReply {
  size_t len = 0;      // bytes of the whole reply, through its last CRLF
  int code = 0;        // McmcCode
  int type = 0;        // McmcType
  size_t vlen = 0;     // value bytes (without CRLF); 0 without a value
  size_t value_off = 0;  // offset of the value in the reply
  size_t line_len = 0;   // the first line, without its CRLF
  bool is_error() const {
    return code == kCodeError || code == kCodeClientError || code == kCodeServerError;
  }
};

// Values longer than this are refused as garbage (memcached's proxy treats
// a vlen past INT32_MAX/2 as out of memory).
inline constexpr uint64_t kMaxReplyValue = (uint64_t{1} << 31) / 2;

// Frames the reply at the front of [p, p+n). A text "VALUE" block is framed
// through its "END" line, so a whole `get` reply is one reply.
ReplyStatus ParseReply(const char* p, size_t n, ParsedReply* out);

}  // namespace trove::memcache
