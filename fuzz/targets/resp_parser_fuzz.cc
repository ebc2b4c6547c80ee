// libFuzzer target: the RESP request parser alone (protocol/resp/core/resp_parser.h).
// Input: byte 0 picks the piece size for split delivery, byte 1 the bulk
// limit; the rest is a stream of requests. Checks:
//  - parsing the stream whole and delivered in pieces (each Parse offered the
//    same request start again after kNeedMore, as Session does) gives the
//    same requests, the same error and the same stop;
//  - consumed() and bytes_wanted() stay in bounds, multibulk arguments view
//    the request's own bytes, errors are Redis's "Protocol error: ..." text;
//  - every parsed argument list survives a round trip through a quoted
//    inline line and SplitInlineArgs;
//  - ParseStrictInt64 accepts exactly the canonical decimal int64 strings.
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "common/limits.h"
#include "protocol/resp/core/resp_parser.h"

namespace {

using trove::resp::ParseStatus;
using trove::resp::RespParser;

void Check(bool ok) {
  if (!ok) std::abort();
}

// One Parse outcome, with owned copies of the arguments.
struct Event {
  ParseStatus status;
  size_t consumed = 0;
  std::vector<std::string> args;
  std::string error;
  bool operator==(const Event&) const = default;
};

// Redis's string2ll accepts a string iff it is how %lld prints some int64.
void CheckStrictInt(std::string_view s) {
  int64_t got = 0;
  bool ok = trove::resp::ParseStrictInt64(s, &got);
  int64_t want = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), want);
  bool canonical = ec == std::errc() && ptr == s.data() + s.size() && std::to_string(want) == s;
  Check(ok == canonical);
  if (ok) Check(got == want);
}

// Quotes an argument the way redis-cli's sdscatrepr does, so that
// SplitInlineArgs must give it back byte for byte.
void AppendQuoted(std::string* line, std::string_view arg) {
  static const char kHex[] = "0123456789abcdef";
  line->push_back('"');
  for (char c : arg) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      line->push_back('\\');
      line->push_back(c);
    } else if (u < 0x20 || u >= 0x7f) {
      line->append("\\x");
      line->push_back(kHex[u >> 4]);
      line->push_back(kHex[u & 15]);
    } else {
      line->push_back(c);
    }
  }
  line->push_back('"');
}

void CheckInlineRoundTrip(const std::vector<std::string>& args) {
  std::string line;
  for (const std::string& a : args) {
    if (!line.empty()) line.push_back(' ');
    AppendQuoted(&line, a);
  }
  std::vector<std::string> back;
  Check(trove::resp::SplitInlineArgs(line, &back));
  Check(back == args);
}

// Runs one Parse on [data, data+len) and records it. `all` is true when no
// more bytes will come.
Event ParseOnce(RespParser* p, const char* data, size_t len) {
  Event e;
  e.status = p->Parse(data, len);
  switch (e.status) {
    case ParseStatus::kOk: {
      e.consumed = p->consumed();
      Check(e.consumed > 0 && e.consumed <= len);
      const bool multibulk = data[0] == '*';
      for (std::string_view a : p->args()) {
        if (multibulk) {
          Check(a.data() >= data && a.data() + a.size() <= data + e.consumed);
        }
        e.args.emplace_back(a);
      }
      break;
    }
    case ParseStatus::kNeedMore: {
      size_t want = p->bytes_wanted();
      Check(want == 0 || want > len);
      break;
    }
    case ParseStatus::kError:
      e.error = p->error();
      Check(e.error.rfind("Protocol error: ", 0) == 0);
      break;
  }
  return e;
}

// The whole stream at once: one event per request, then the stop.
std::vector<Event> ParseWhole(std::string_view in, size_t max_bulk) {
  RespParser p(max_bulk);
  std::vector<Event> events;
  size_t off = 0;
  while (true) {
    Event e = ParseOnce(&p, in.data() + off, in.size() - off);
    events.push_back(e);
    if (e.status != ParseStatus::kOk) break;
    off += e.consumed;
  }
  return events;
}

// The stream arriving `step` bytes at a time; unconsumed bytes are offered
// again with the next piece appended.
std::vector<Event> ParseSplit(std::string_view in, size_t max_bulk, size_t step) {
  RespParser p(max_bulk);
  std::vector<Event> events;
  std::string buf;  // the unconsumed bytes, as a connection's input buffer
  size_t fed = 0;
  while (true) {
    Event e = ParseOnce(&p, buf.data(), buf.size());
    if (e.status == ParseStatus::kNeedMore && fed < in.size()) {
      size_t take = step < in.size() - fed ? step : in.size() - fed;
      buf.append(in.data() + fed, take);
      fed += take;
      continue;
    }
    events.push_back(e);
    if (e.status != ParseStatus::kOk) break;
    buf.erase(0, e.consumed);
  }
  return events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t step = static_cast<size_t>(data[0]) + 1;
  // 0: Redis's default bulk limit; otherwise a small one, to reach its error.
  const size_t max_bulk =
      data[1] == 0 ? trove::limits::kRespMaxBulk : static_cast<size_t>(data[1]) * 4;
  std::string_view in(reinterpret_cast<const char*>(data + 2), size - 2);
  // Past 64 KiB an unterminated line fails only when it arrives unsplit
  // ("too big inline request" is Redis's check on the read buffer), so the
  // two ways of parsing may differ legitimately.
  if (in.size() >= trove::limits::kRespInlineMax) return -1;

  std::vector<Event> whole = ParseWhole(in, max_bulk);
  std::vector<Event> split = ParseSplit(in, max_bulk, step);
  Check(whole == split);

  for (const Event& e : whole) {
    if (e.status != ParseStatus::kOk) continue;
    CheckInlineRoundTrip(e.args);
    for (const std::string& a : e.args) {
      if (a.size() <= 24) CheckStrictInt(a);
    }
  }
  // Integers straight from the input too, at every short length.
  for (size_t n = 1; n <= 21 && n <= in.size(); ++n) CheckStrictInt(in.substr(0, n));
  return 0;
}
