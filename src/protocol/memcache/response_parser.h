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

// One element of a reply stream: a line, with its data block for VALUE / VA.
// A text `get` reply is several elements (VALUE..., END).
enum class ReplyKind : uint8_t {
  kValue,          // VALUE <key> <flags> <bytes> [<cas>]  + data
  kEnd,            // END
  kStored,         // STORED
  kNotStored,      // NOT_STORED
  kExists,         // EXISTS
  kNotFound,       // NOT_FOUND
  kDeleted,        // DELETED
  kTouched,        // TOUCHED
  kOk,             // OK
  kVersion,        // VERSION <text>
  kNumber,         // <digits> (incr / decr)
  kMetaValue,      // VA <bytes> [flags]                   + data
  kMetaHit,        // HD [flags]
  kMetaMiss,       // EN
  kMetaNotStored,  // NS
  kMetaExists,     // EX
  kMetaNotFound,   // NF
  kMetaNoop,       // MN
  kMetaDebug,      // ME <key> <text>
  kError,          // ERROR
  kClientError,    // CLIENT_ERROR <text>
  kServerError,    // SERVER_ERROR <text>
};

// Views point into the parsed input and live as long as it does.
struct ReplyElement {
  ReplyKind kind = ReplyKind::kEnd;
  std::string_view key;   // kValue only
  uint32_t flags = 0;     // kValue only
  std::string_view data;  // kValue, kMetaValue: the value bytes
  std::string_view text;  // errors, VERSION: the message; meta: the flags after the code
  size_t line_len = 0;    // the line without its CRLF
};

// Values longer than this are refused as garbage (memcached's proxy treats
// a vlen past INT32_MAX/2 as out of memory).
inline constexpr uint64_t kMaxReplyValue = (uint64_t{1} << 31) / 2;

struct ReplyLimits {
  size_t max_line = 8192;  // a longer line (without CRLF) is garbage
  uint64_t max_value = kMaxReplyValue;
};

// Parses one element from the front of [p, p+n): kOk sets *out and
// *consumed; kNeedMore means it is not complete yet; kBad means malformed
// bytes (an unknown line, a bad number, a bare LF, a missing CRLF after
// data, a line or value over the limits). Text codes stand alone; meta codes
// may carry flags. Never reads outside the input; allocates nothing.
ReplyStatus ParseReplyElement(const char* p, size_t n, ReplyElement* out, size_t* consumed,
                              const ReplyLimits& limits = ReplyLimits());

// mcmc's code and type of an element kind (r:code(), proxyreqs logs).
int CodeOf(ReplyKind k);
int TypeOf(ReplyKind k);

// One whole reply as the proxy forwards it.
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

// Frames the reply at the front of [p, p+n). A text "VALUE" block is framed
// through its "END" line, so a whole `get` reply is one reply.
ReplyStatus ParseReply(const char* p, size_t n, ParsedReply* out);

}  // namespace trove::memcache
