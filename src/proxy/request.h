// A memcached request as the proxy parses it (memcached's proxy parser,
// proto_parser.c: command, key token, value length, noreply, meta flags),
// and the request object Lua routes see (mcp.request): the client's exact
// bytes, edited in place or rebuilt by its methods.
//
// Pure data and functions; used on one worker thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/memcache/request_classify.h"
#include "proxy/buffer_memory.h"

namespace trove::proxy {

// memcached's proxy limits: MCP_REQUEST_MAXLEN (2 x KEY_MAX_LENGTH) for a
// routed request line, MAX_CMD_PREFIX for what precedes a multiget's first
// key, KEY_MAX_LENGTH for each key.
inline constexpr size_t kRequestMaxLen = 500;
inline constexpr size_t kMaxCmdPrefix = 20;
inline constexpr size_t kMaxKeyLength = 250;

// What the parser found in one request line.
struct ReqInfo {
  int cmd = 0;
  bool meta = false;      // mg ms md mn ma me: flags follow the key (ms: the length)
  bool get_type = false;  // get gets gat gats: several keys split into one request each
  bool noreply = false;   // text command whose last token is "noreply"
  bool has_value = false;
  uint16_t key_token = 0;  // 0: no key
  uint16_t ntokens = 0;
  size_t key_off = 0, key_len = 0;  // in the line
  size_t vlen = 0;                  // value bytes, without their CRLF
  uint64_t flags = 0;               // meta flags present: bit (c - 'A') for A..z
  bool HasFlag(char c) const {
    return c >= 'A' && c <= 'z' && (flags >> static_cast<unsigned>(c - 'A') & 1) != 0;
  }
};

// memcached's process_request over `line` (without its EOL; `total` is the
// line's length with its EOL). 0: parsed; -1: bad token count or value
// length (CLIENT_ERROR parsing request); -2: not a command the proxy knows.
int ParseRequest(std::string_view line, size_t total, ReqInfo* out);

// The request object. `bytes` holds the line, its EOL and the value block
// (with its CRLF); info describes the line as it is now.
struct RequestUd {
  std::string bytes;
  size_t line_len = 0;
  size_t eol_len = 2;
  ReqInfo info;
  int cfd = 0;  // the client's socket (proxyreqs lines)
  // A client's value held for a request in flight (a slot's request; the
  // slot gives it back when released).
  BufferCharge charge;

  std::string_view line() const { return std::string_view(bytes).substr(0, line_len); }
  std::string_view key() const {
    return std::string_view(bytes).substr(info.key_off, info.key_len);
  }
  std::string_view value() const {
    return std::string_view(bytes).substr(std::min(bytes.size(), line_len + eol_len));
  }
  // Refills from a client's request (bytes keeps its capacity).
  void Assign(std::string_view b, size_t ll, size_t el, const ReqInfo& i, int fd) {
    bytes.assign(b);
    line_len = ll;
    eol_len = el;
    info = i;
    cfd = fd;
  }
  // Replaces the line (its EOL becomes CRLF), keeps the value and parses
  // again; false (nothing changed) when the new line does not parse or is
  // longer than kRequestMaxLen.
  bool SetLine(std::string_view new_line);
  // memcached's mcp_request_render: token idx (0-based) becomes
  // flag+tok (removed when both are empty). false as SetLine.
  bool Render(size_t idx, char flag, std::string_view tok);
  // memcached's mcp_request_append: " " flag tok at the end of the line.
  bool Append(char flag, std::string_view tok);
  // Token idx (0-based) of the line, empty past the last.
  std::string_view Token(size_t idx) const;
  // The index of the first meta flag token starting with c, or 0.
  size_t FlagIndex(char c) const;
};

// Writes into *out the bytes to send a backend for request `r`: noreply
// becomes "noreplY" and meta q flags become spaces (the backend answers,
// the proxy decides what the client sees), as memcached's proxy does.
void BackendBytes(const RequestUd& r, std::string* out);

}  // namespace trove::proxy
