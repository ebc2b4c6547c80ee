// ReplyWriter: the one place memcached reply and error text is written.
// Owned by a handler on its connection's worker thread; no locking.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/engine.h"
#include "net/io_buffer.h"

namespace trove::memcache {

// Error texts more than one command file sends (memcached's wording).
inline constexpr const char* kBadFormat = "bad command line format";
// A memcached read of a key that holds a RESP collection (list, hash, set,
// sorted set): the value is not a byte string, so it is never sent.
inline constexpr const char* kWrongTypeError = "wrong type: key holds a RESP collection";

// Appends replies to a connection's OutputBuffer. Any text that did not come
// from a fixed reply (error details, stat values, echoed tokens) passes
// through Sanitize, which replaces CR and LF with spaces so that no reply can
// forge extra response lines.
// Thread safety: owner (worker) thread only, like the OutputBuffer.
class ReplyWriter {
 public:
  explicit ReplyWriter(net::OutputBuffer* out) : out_(out) {}

  // A fixed reply word, CRLF added ("STORED", "END", "MN", ...).
  void Word(std::string_view w);
  // "ERROR\r\n": unknown command or bad arity.
  void Error();
  // Error lines whose head is not ERROR/CLIENT_ERROR/SERVER_ERROR, e.g.
  // "SERVER_ERROR: shutdown not enabled", "BUSY ...", "MEMLIMIT_TOO_SMALL ...".
  void Status(std::string_view text);
  void ClientError(std::string_view msg);
  void ServerError(std::string_view msg);
  // "STAT <name> <value>\r\n".
  void Stat(std::string_view name, std::string_view value);
  void Stat(std::string_view name, uint64_t value);
  // "<n>\r\n" (incr/decr result).
  void Number(uint64_t n);
  // Bytes that are already a complete, trusted reply (engine DetailDump).
  void Trusted(std::string_view s);

  // Room for one reply line built in place (n <= 16 KiB); then Commit(used).
  // REQUIRES: !quiet() (callers building lines in place check it first).
  char* Reserve(size_t n) { return out_->Reserve(n); }
  void Commit(size_t n) { out_->Commit(n); }
  // The item's value and its CRLF, referenced from item memory; the
  // reference is held by the buffer until the bytes are written.
  void ItemValue(engine::ItemRef ref);

  net::OutputBuffer* buffer() { return out_; }

  // Text-protocol "noreply": while set, every reply (errors included, as in
  // memcached) is dropped. The handler clears it after each command.
  void set_quiet(bool q) { quiet_ = q; }
  bool quiet() const { return quiet_; }

  // Copies s to p with CR/LF replaced by spaces; returns the end.
  static char* Sanitize(char* p, std::string_view s);

 private:
  void Prefixed(std::string_view prefix, std::string_view msg);
  net::OutputBuffer* out_;
  bool quiet_ = false;
};

}  // namespace trove::memcache
