// RespParser: incremental parser for RESP2 requests (multibulk and inline), as
// Redis 7's processMultibulkBuffer/processInlineBuffer. Owned by one
// connection, so it runs on that connection's worker only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/limits.h"

namespace trove::resp {

enum class ParseStatus : uint8_t { kOk, kNeedMore, kError };

// Parses one request at a time from the front of the unconsumed bytes.
//
// The caller offers the same unconsumed bytes again (with more appended) after
// kNeedMore, so the parser keeps its place as offsets from the request start
// and never rescans a finished argument.
//
// Thread safety: none; owned by one connection.
// Invariants:
//  1. After kOk, args() views the offered bytes (or inline_storage_) and stays
//     valid until the next Parse() or until those bytes are consumed.
//  2. After kError, error() holds Redis's exact "Protocol error: ..." text and
//     the connection must be closed after replying.
//  3. An empty request (blank inline line, "*0", "*-1") is kOk with no args.
class RespParser {
 public:
  explicit RespParser(size_t max_bulk = limits::kRespMaxBulk) : max_bulk_(max_bulk) {}

  // Parses one request from data[0, len). REQUIRES: after kNeedMore, data
  // starts at the same request start as the previous call.
  ParseStatus Parse(const char* data, size_t len);

  // Bytes of the request just parsed (valid after kOk).
  size_t consumed() const { return consumed_; }
  const std::vector<std::string_view>& args() const { return args_; }
  // After kError: why. Kept per thread, not per parser (read right after the
  // Parse that failed; an idle connection's memory, issue 42).
  const std::string& error() const { return ErrorSlot(); }
  // While waiting for a bulk body: the total bytes needed from the request
  // start; 0 if unknown.
  size_t bytes_wanted() const;

  void set_max_bulk(size_t n) { max_bulk_ = n; }
  // Between requests (none half read): gives the request buffers back to
  // the thread's spares (common/vector_pool.h), so an idle connection holds
  // none; args() is empty afterwards. A half-read request keeps them.
  void ReleaseIdle();
  // Redis's limits for a client that has not authenticated yet (when a
  // password is required): at most 10 arguments and 16 KiB per argument, so
  // a stranger cannot make the server allocate. Set before each Parse.
  void set_unauthenticated(bool on) { unauth_ = on; }
  static constexpr int64_t kUnauthMaxArgs = 10;
  static constexpr int64_t kUnauthMaxBulk = 16384;

 private:
  ParseStatus ParseMultibulk(const char* data, size_t len);
  ParseStatus ParseInline(const char* data, size_t len);
  ParseStatus Fail(std::string msg);
  void ResetRequest();

  size_t max_bulk_;
  bool unauth_ = false;
  // Resume state of a multibulk request (offsets from the request start).
  bool in_multibulk_ = false;
  int64_t multibulk_left_ = 0;
  int64_t bulk_len_ = -1;
  size_t pos_ = 0;
  std::vector<std::pair<size_t, size_t>> spans_;
  // Output of the last kOk.
  size_t consumed_ = 0;
  std::vector<std::string_view> args_;
  std::vector<std::string> inline_storage_;
  static std::string& ErrorSlot();
};

// Redis's string2ll: optional '-', no '+', no leading zeros or spaces.
bool ParseStrictInt64(std::string_view s, int64_t* out);

// Redis's sdssplitargs: splits an inline line with "..." and '...' quoting.
// False on unbalanced quotes.
bool SplitInlineArgs(std::string_view line, std::vector<std::string>* out);

}  // namespace trove::resp
