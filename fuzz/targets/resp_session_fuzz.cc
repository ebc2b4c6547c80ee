// libFuzzer target: pipelined RESP requests through the RESP protocol handler
// (protocol/resp/connection/resp_protocol.h, one Session) on a real engine, delivered in
// pieces the way TCP may split them.
// Input: byte 0 picks the piece size (1..256); the rest is the byte stream.
// Each input gets a fresh engine and factory, so CONFIG SET, AUTH, SELECT or
// FLUSHALL never leak into the next input and every crash reproduces alone.
// Checks, besides ASan/UBSan:
//  - OnData never consumes more than it was given, nor asks for fewer bytes
//    than it already has;
//  - the replies are well-formed RESP2/RESP3 (lengths right, no CR or LF
//    inside a simple string or error line), with no bytes left over;
//  - replies stay in step with requests: exactly one top-level reply per
//    non-empty request the handler took (counted by a RespParser over the
//    whole stream), plus one for a protocol error, and a handler left open
//    has taken every complete request. (P|S)SUBSCRIBE and (P|S)UNSUBSCRIBE
//    answer once per channel, or per channel held, so an input with one of
//    them gets the other checks only, as does one with CLIENT REPLY (OFF
//    and SKIP drop replies). PUBLISH delivers nothing here, and KEYS or
//    FLUSHALL run their slices at once: there is no worker.
// Inputs with DEBUG SLEEP are rejected (-1): they would only measure the
// timeout.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/limits.h"
#include "engine/engine.h"
#include "net/io_buffer.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/connection/resp_protocol.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

struct World {
  trove::ManualClock clock;
  std::unique_ptr<trove::engine::Engine> engine;
  std::unique_ptr<trove::net::ProtocolFactory> factory;
  World() {
    trove::engine::EngineOptions eo;
    eo.mem_limit = 16u << 20;
    eo.item_size_max = 64u << 10;  // also the slab page size
    // A small table and few lock stripes: cheap to build and tear down for
    // every input, and keys share stripes often.
    eo.hashpower_init = 4;
    eo.item_lock_power = 2;
    eo.lru_maintainer = false;
    eo.lru_crawler = false;
    eo.slab_reassign = false;
    eo.clock = &clock;
    engine = std::move(trove::engine::Engine::Create(eo)).value();
    factory = trove::resp::NewRespFactory(engine.get(), nullptr, trove::resp::RespOptions());
    factory->InitWorker(0);
  }
};

// What a RespParser makes of the whole stream: where each request ends and
// whether it has arguments, and where parsing stopped.
struct Framing {
  std::vector<size_t> ends;       // end offset of each complete request
  std::vector<bool> nonempty;     // ... and whether it is a command
  size_t stop = 0;                // offset of the incomplete or bad request
  bool error = false;             // parsing stopped on a protocol error
  bool sleeps = false;            // some request is DEBUG SLEEP
  bool uncounted = false;         // some request may answer more than once, or not at all
};

bool IsSubscribeCommand(std::string_view name) {
  for (std::string_view c : {"subscribe", "psubscribe", "ssubscribe", "unsubscribe",
                             "punsubscribe", "sunsubscribe"}) {
    if (IEquals(name, c)) return true;
  }
  return false;
}

Framing Frame(std::string_view in) {
  Framing f;
  trove::resp::RespParser p;  // the default bulk limit, as a new Session's
  size_t off = 0;
  while (true) {
    trove::resp::ParseStatus st = p.Parse(in.data() + off, in.size() - off);
    if (st == trove::resp::ParseStatus::kNeedMore) break;
    if (st == trove::resp::ParseStatus::kError) {
      f.error = true;
      break;
    }
    const auto& argv = p.args();
    if (argv.size() >= 2 && IEquals(argv[0], "debug") && IEquals(argv[1], "sleep")) {
      f.sleeps = true;
    }
    if (!argv.empty() && IsSubscribeCommand(argv[0])) f.uncounted = true;
    if (argv.size() >= 2 && IEquals(argv[0], "client") && IEquals(argv[1], "reply")) {
      f.uncounted = true;
    }
    off += p.consumed();
    f.ends.push_back(off);
    f.nonempty.push_back(!argv.empty());
  }
  f.stop = off;
  return f;
}

// Reads one RESP2/RESP3 reply at *pos; false if malformed or cut short.
bool ReadReply(std::string_view s, size_t* pos, int depth) {
  if (depth > 64 || *pos >= s.size()) return false;
  const char type = s[*pos];
  size_t eol = s.find("\r\n", *pos);
  if (eol == std::string_view::npos) return false;
  std::string_view head = s.substr(*pos + 1, eol - *pos - 1);
  *pos = eol + 2;
  if (head.find_first_of("\r\n") != std::string_view::npos) return false;
  int64_t n = 0;
  switch (type) {
    case '+':
    case '-':
    case ':':
    case '_':
    case ',':
    case '#':
    case '(':
      return true;
    case '$':
    case '=':
    case '!':
      if (!trove::resp::ParseStrictInt64(head, &n)) return false;
      if (n == -1 && type == '$') return true;
      if (n < 0 || s.size() - *pos < static_cast<size_t>(n) + 2) return false;
      *pos += static_cast<size_t>(n);
      if (s.substr(*pos, 2) != "\r\n") return false;
      *pos += 2;
      return true;
    case '*':
    case '~':
    case '>':
    case '%':
    case '|': {
      if (!trove::resp::ParseStrictInt64(head, &n)) return false;
      if (n == -1 && type == '*') return true;
      if (n < 0) return false;
      int64_t items = (type == '%' || type == '|') ? 2 * n : n;
      for (int64_t i = 0; i < items; ++i) {
        if (!ReadReply(s, pos, depth + 1)) return false;
      }
      // An attribute map annotates the reply that follows it.
      return type != '|' || ReadReply(s, pos, depth + 1);
    }
    default:
      return false;
  }
}

size_t CountReplies(std::string_view s) {
  size_t pos = 0, count = 0;
  while (pos < s.size()) {
    Check(ReadReply(s, &pos, 0));
    ++count;
  }
  return count;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t step = static_cast<size_t>(data[0]) + 1;
  std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  // Past 64 KiB an unterminated line's fate depends on the split (Redis's
  // inline limit is a check on the read buffer); the framing oracle is exact
  // below that.
  if (in.size() >= trove::limits::kRespInlineMax) return -1;
  const Framing framing = Frame(in);
  if (framing.sleeps) return -1;

  World world;
  trove::net::ConnInfoView ci;
  ci.id = 1;
  ci.peer = "127.0.0.1:40000";
  auto handler = world.factory->Create(0, ci);
  trove::net::OutputBuffer out;
  std::string replies;
  std::string pending;
  size_t pos = 0;
  size_t taken = 0;  // bytes the handler consumed in all
  while (pos < in.size() && !handler->WantsClose()) {
    size_t take = step < in.size() - pos ? step : in.size() - pos;
    pending.append(in.data() + pos, take);
    pos += take;
    for (int rounds = 0; rounds < 64 && !pending.empty() && !handler->WantsClose(); ++rounds) {
      size_t used = handler->OnData(pending.data(), pending.size(), out);
      Check(used <= pending.size());
      if (used == 0) {
        size_t want = handler->BytesWanted();
        Check(want == 0 || want > pending.size());
        break;
      }
      pending.erase(0, used);
      taken += used;
    }
    replies += out.ToString();
    out.Clear();  // runs every item releaser, as a written reply would
    world.clock.AdvanceMicros(1000);
  }

  // Which requests the handler took: all those ending within `taken`, and a
  // protocol error only if it consumed bytes of the bad request.
  size_t expected = 0;
  for (size_t i = 0; i < framing.ends.size() && framing.ends[i] <= taken; ++i) {
    if (framing.nonempty[i]) ++expected;
  }
  const bool hit_error = framing.error && taken > framing.stop;
  if (hit_error) {
    ++expected;
    Check(handler->WantsClose());
  }
  if (!handler->WantsClose()) {
    // Open after the whole stream: every complete request was taken, and
    // what is left is the start of one more.
    Check(!framing.error);
    Check(taken == framing.stop);
  }
  const size_t got = CountReplies(replies);
  if (!framing.uncounted) Check(got == expected);
  return 0;
}
