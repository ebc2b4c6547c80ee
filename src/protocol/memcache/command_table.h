// The memcached text, meta and admin commands as one table (command_table.cc):
// each command's handler, its name for SLOWLOG / LATENCY and the permission
// it needs. Immutable data, read by every worker.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/engine.h"
#include "protocol/command_log.h"
#include "protocol/memcache/text_parser.h"

namespace trove::memcache {

class MemcacheHandler;
class ReplyWriter;
struct McCommand;

// One request line as the dispatcher hands it to its command's handler.
struct Request {
  const McCommand* cmd = nullptr;
  std::string_view args;           // the line after the command word
  const ParsedLine* pl = nullptr;  // the tokenized line; null with kUntokenized
  size_t line_len = 0;             // the line's bytes, line end included
  const char* after = nullptr;     // the input after the line (a storage command's value)
  size_t after_len = 0;
};

// What a -Y user must be allowed (UserAccess::CheckMemcache) to run a command.
enum class Access : uint8_t {
  kOpen,       // never checked: version, quit, mn, me
  kCommand,    // no key: MemcacheHandler::ProcessOne checks it before the handler runs
  kRead,       // per key: the handler checks each key once the line is known valid
  kWrite,      //   (memcached's format errors come first, so the check cannot
  kReadWrite,  //   precede them), through the same Permit(*r.cmd, key)
};

// The `need` argument of UserAccess::CheckMemcache: 0 either, 1 read, 2
// write, 3 both.
constexpr uint8_t NeedOf(Access a) {
  switch (a) {
    case Access::kRead: return 1;
    case Access::kWrite: return 2;
    case Access::kReadWrite: return 3;
    default: return 0;
  }
}

// McCommand::flags.
// The get family: the keys are walked from Request::args, the line is never
// tokenized (a multiget line can hold any number of keys).
inline constexpr uint8_t kUntokenized = 1 << 0;
// A trailing "noreply" silences every reply, set after the arity check.
inline constexpr uint8_t kNoreply = 1 << 1;
// Set before the permission check, so that it silences a refusal too.
inline constexpr uint8_t kNoreplyFirst = 1 << 2;
// Word 1 is a key: one over kMemcacheMaxKey is a bad format (after noreply).
inline constexpr uint8_t kTextKey = 1 << 3;
// The get family's variants: return the CAS (gets, gats) / touch (gat, gats).
inline constexpr uint8_t kWithCas = 1 << 4;
inline constexpr uint8_t kTouch = 1 << 5;

// One command. ProcessOne runs, in this order: kNoreplyFirst, the kCommand
// permission check, min_tokens, kNoreply, kTextKey, then `run`.
struct McCommand {
  using Handler = size_t (MemcacheHandler::*)(const Request&, ReplyWriter&);
  Handler run = nullptr;  // returns the bytes consumed (0: the request is incomplete)
  protocol::McCmd id = protocol::kMcOther;  // its SLOWLOG / LATENCY name and ACL command
  Access access = Access::kOpen;
  uint8_t min_tokens = 0;  // memcached's ntokens (words + 1) below which: bad format
  uint8_t flags = 0;
  engine::StoreMode mode = engine::StoreMode::kSet;  // the set family's store
};

}  // namespace trove::memcache
