// ScanTextRequest: the look-ahead scan over pipelined memcached requests,
// built on the handler's own line finder and tokenizer.
#include "protocol/memcache/text_prefetch.h"

#include "protocol/memcache/request_classify.h"

#include <string_view>

#include "common/str_append.h"
#include "engine/engine.h"
#include "protocol/memcache/text_parser.h"

namespace trove::memcache {
namespace {

// True if a meta request's flags (tokens from `first` on) include b: the key
// is base64 and its engine form is not the token.
bool HasBase64Flag(const ParsedLine& pl, size_t first) {
  for (size_t i = first; i < pl.count; ++i) {
    if (pl.tokens[i] == "b") return true;
  }
  return false;
}

}  // namespace

bool ScanTextRequest(const char* data, size_t len, size_t start, size_t* end, uint64_t* hv) {
  if (start >= len) return false;
  LineResult lr = FindLine(data + start, len - start, kLineLimit);
  if (lr.status != LineStatus::kOk) return false;
  ParsedLine pl;
  Tokenize(lr.line, &pl);
  if (pl.count < 2) return false;
  size_t block = 0;  // data block bytes after the line (plus its CRLF)
  bool has_block = false;
  using namespace cmd;  // NOLINT: the CMD_* vocabulary
  const int c = CmdOf(pl.tokens[0]);
  const int vt = ValueLengthToken(c);
  if (vt >= 0) {
    if (pl.count <= static_cast<size_t>(vt) || !ParseValueLength(pl.tokens[vt], &block)) return false;
    if (c == kCmdMs && HasBase64Flag(pl, 3)) return false;
    has_block = true;
  } else if (c == kCmdMg || c == kCmdMd || c == kCmdMa) {
    if (HasBase64Flag(pl, 2)) return false;
  } else if (c != kCmdGet && c != kCmdGets && c != kCmdDelete && c != kCmdIncr &&
             c != kCmdDecr && c != kCmdTouch) {
    return false;
  }
  size_t next = start + lr.consumed;
  if (has_block) {
    if (block > len || next + block + 2 > len) return false;
    next += block + 2;
  }
  *end = next;
  *hv = engine::Engine::KeyHash(pl.tokens[1]);
  return true;
}

}  // namespace trove::memcache
