// libFuzzer target: the memcached request path with storage payloads. The
// input does not go to the handler as it is: it drives a generator
// (FuzzedDataProvider) that writes a pipeline of whole requests, mostly
// storage lines (set/add/replace/append/prepend/cas/ms) with fuzzed fields
// and data blocks, some of them hostile: blocks holding "flush_all\r\n",
// "delete Sentinel\r\n" and whole requests, bad terminators, lengths that do
// or do not parse, values too large for an item or big enough to be read
// straight into item memory. Every request is followed by "mn\r\n", and the
// pipeline reaches a fresh handler on a fresh engine in fuzzed pieces.
//
// The oracle is exact about framing. By memcached 1.6.45's rule (see
// ParseValueLength in protocol/memcache/text_parser.h): when a storage
// line's <bytes> token parses, the next <bytes> + 2 bytes are its data block
// whatever else is wrong with the line; when it does not, the line alone is
// the request. The generator knows which bytes are command lines, so:
//  - the replies split at the "MN" markers into exactly one group per
//    request, with nothing left over, and each group is what that request
//    may answer (its one reply line, none for noreply, VALUE/VA blocks read
//    by their lengths);
//  - the handler takes every byte and is left idle and open;
//  - the key "Sentinel", stored before the pipeline and never named by a
//    command line, still holds its value afterwards, unless the pipeline had
//    a real flush_all line. A data block executed as commands trips one of
//    these (an extra reply group, or a flushed or rewritten Sentinel).
// Where memcached's reply is not pinned down here (the store outcome, which
// meta error, whether q hides it) a request may answer any of a set.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "engine/engine.h"
#include "net/io_buffer.h"
#include "protocol/memcache/memcache_protocol.h"

namespace {

constexpr std::string_view kSentinelKey = "Sentinel";
constexpr std::string_view kSentinelValue = "the sentinel value";
constexpr size_t kItemSizeMax = 64u << 10;

[[noreturn]] void Fail(const char* what, size_t op, std::string_view detail) {
  std::fprintf(stderr, "memcache_storage_fuzz: %s (request %zu): '%.*s'\n", what, op,
               static_cast<int>(detail.size() < 200 ? detail.size() : 200), detail.data());
  std::abort();
}

// memcached 1.6.45's <bytes> rule, written from its description (at most 11
// characters, an optional '-', digits, within int32; "-" and "-0" are 0; any
// other negative fails; at most INT_MAX - 2), independently of the handler's.
bool ValueLengthParses(std::string_view s, size_t* out) {
  if (s.empty() || s.size() > 11) return false;
  size_t i = s[0] == '-' ? 1 : 0;
  int64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
    if (v > 2147483648LL) return false;
  }
  if (s[0] == '-' && v != 0) return false;
  if (v > 2147483647LL - 2) return false;
  *out = static_cast<size_t>(v);
  return true;
}

// What one request may answer, between its "MN" markers.
struct Rule {
  enum Kind { kLines, kGet, kMetaGet } kind = kLines;
  size_t min = 1, max = 1;            // reply lines (kLines)
  std::vector<std::string> allowed;   // exact lines; "X*" allows any line starting "X"
};

Rule Lines(size_t min, size_t max, std::vector<std::string> allowed) {
  Rule r;
  r.min = min;
  r.max = max;
  r.allowed = std::move(allowed);
  return r;
}

bool Allowed(const Rule& r, std::string_view line) {
  for (const std::string& a : r.allowed) {
    if (!a.empty() && a.back() == '*') {
      if (line.substr(0, a.size() - 1) == std::string_view(a).substr(0, a.size() - 1)) return true;
    } else if (line == a) {
      return true;
    }
  }
  return false;
}

const std::vector<std::string>& StoreOutcomes() {
  static const std::vector<std::string> v = {"STORED", "NOT_STORED", "EXISTS", "NOT_FOUND",
                                             "SERVER_ERROR out of memory storing object"};
  return v;
}

// Fields from fixed lists, each valid or not by memcached's rules beyond doubt.
struct Field {
  const char* text;
  bool valid;
};
constexpr Field kFlags[] = {{"0", true},   {"1", true},    {"65535", true}, {"4294967295", true},
                            {"-1", false}, {"abc", false}, {"1x", false}};
constexpr Field kExptimes[] = {{"0", true},          {"-1", true},    {"60", true},
                               {"2592000", true},    {"1700000100", true}, {"abc", false},
                               {"1.5", false},       {"x1", false}};
constexpr Field kCasUniques[] = {{"0", true},   {"1", true},   {"2", true},
                                 {"3", true},   {"12345", true}, {"18446744073709551615", true},
                                 {"-1", false}, {"abc", false}, {"184467440737095516160", false}};

// Byte strings that must stay data when they sit inside a data block.
constexpr const char* kPoison[] = {
    "flush_all\r\n",
    "flush_all 0\r\n",
    "delete Sentinel\r\n",
    "set Sentinel 0 0 3\r\nbad\r\n",
    "ms Sentinel 3 T0\r\nbad\r\n",
    "md Sentinel q\r\n",
    "mn\r\n",
    "\r\nflush_all\r\n",
    "get Sentinel\r\n",
    "incr Sentinel 1\r\n",
    "set k0 0 0 5\r\n",
    "cas k1 0 0 1 1\r\n",
    "END\r\nMN\r\n",
};

// The base64 forms of "bk0".."bk3", for ms with the b flag.
constexpr const char* kBase64Keys[] = {"Ymsw", "Ymsx", "Ymsy", "Ymsz"};

class Generator {
 public:
  explicit Generator(FuzzedDataProvider* fdp) : fdp_(fdp) {}

  std::string stream;
  std::vector<Rule> rules;
  bool flushed = false;  // a real flush_all line

  void Run() {
    const int max_ops = fdp_->ConsumeIntegralInRange(1, 40);
    for (int i = 0; i < max_ops && fdp_->remaining_bytes() > 0; ++i) {
      switch (fdp_->ConsumeIntegralInRange(0, 15)) {
        case 0:
          Get();
          break;
        case 1:
          MetaGet();
          break;
        case 2:
          Other();
          break;
        case 3:
          MetaSet();
          break;
        case 4:
          MetaSet();
          break;
        default:
          TextStorage();
          break;
      }
      stream += "mn\r\n";
    }
  }

 private:
  std::string Key() {
    switch (fdp_->ConsumeIntegralInRange(0, 9)) {
      case 0: {  // fuzzed printable bytes
        std::string k = "k";
        size_t n = fdp_->ConsumeIntegralInRange<size_t>(0, 20);
        for (size_t i = 0; i < n; ++i) k.push_back(fdp_->ConsumeIntegralInRange<char>('!', '~'));
        return k;
      }
      case 1:  // the longest key, or one byte more
        return "k" + std::string(fdp_->ConsumeBool() ? 249 : 250, 'x');
      default:
        return "k" + std::to_string(fdp_->ConsumeIntegralInRange(0, 7));
    }
  }

  template <size_t N>
  const Field& Pick(const Field (&list)[N]) {
    // Valid fields most of the time, so that the store path runs.
    if (fdp_->ConsumeIntegralInRange(0, 7) != 0) return list[0];
    return list[fdp_->ConsumeIntegralInRange<size_t>(0, N - 1)];
  }

  // A value length: small, large enough to be read straight into item
  // memory when it arrives in pieces, or more than an item holds.
  size_t Length() {
    switch (fdp_->ConsumeIntegralInRange(0, 15)) {
      case 0:
        if (big_ < 3) {
          ++big_;
          return 16384 + fdp_->ConsumeIntegralInRange<size_t>(0, 300);
        }
        return 0;
      case 1:
        if (big_ < 3) {
          ++big_;
          return kItemSizeMax + fdp_->ConsumeIntegralInRange<size_t>(0, 300);
        }
        return 1;
      default:
        return fdp_->ConsumeIntegralInRange<size_t>(0, 64);
    }
  }

  // The <bytes> token for n: n itself mostly, or another spelling that
  // parses to n, or (sometimes) one that does not parse at all.
  std::string LengthToken(size_t n) {
    std::string dec = std::to_string(n);
    switch (fdp_->ConsumeIntegralInRange(0, 15)) {
      case 0:  // leading zeros, up to 12 characters (11 parse, 12 do not)
        return std::string(fdp_->ConsumeIntegralInRange<size_t>(1, 12 - dec.size()), '0') + dec;
      case 1:
        return n == 0 ? (fdp_->ConsumeBool() ? "-" : "-0") : dec;
      case 2: {
        static const char* kBad[] = {"abc", "-5", "2147483646", "99999999999", "+5", "5x", "1e3",
                                     "-00000000001"};
        return kBad[fdp_->ConsumeIntegralInRange<size_t>(0, std::size(kBad) - 1)];
      }
      default:
        return dec;
    }
  }

  // n bytes of block: fuzzed bytes with hostile requests spliced in; long
  // blocks repeat a hostile pattern.
  std::string Block(size_t n) {
    std::string b;
    if (n > 1024) {
      std::string unit = kPoison[fdp_->ConsumeIntegralInRange<size_t>(0, std::size(kPoison) - 1)];
      while (b.size() < n) b += unit;
      b.resize(n);
      return b;
    }
    while (b.size() < n) {
      if (fdp_->ConsumeBool()) {
        b += kPoison[fdp_->ConsumeIntegralInRange<size_t>(0, std::size(kPoison) - 1)];
      } else {
        b += fdp_->ConsumeBytesAsString(fdp_->ConsumeIntegralInRange<size_t>(1, 16));
        if (fdp_->remaining_bytes() == 0) b += "\r\n";  // still grow to n
      }
    }
    b.resize(n);
    return b;
  }

  // The two bytes after a block: CRLF, or not.
  std::string Terminator(bool* good) {
    static const char* kBad[] = {"xx", "\n\r", "\r\r", "\nX", " \n", "\r "};
    *good = fdp_->ConsumeIntegralInRange(0, 9) != 0;
    return *good ? "\r\n" : kBad[fdp_->ConsumeIntegralInRange<size_t>(0, std::size(kBad) - 1)];
  }

  void TextStorage() {
    static const char* kCmds[] = {"set", "add", "replace", "append", "prepend", "cas"};
    const std::string cmd = kCmds[fdp_->ConsumeIntegralInRange<size_t>(0, std::size(kCmds) - 1)];
    const bool is_cas = cmd == "cas";
    const std::string key = Key();
    const Field& flags = Pick(kFlags);
    const Field& exptime = Pick(kExptimes);
    const Field& cas = Pick(kCasUniques);
    const size_t n = Length();
    std::vector<std::string> t = {cmd, key, flags.text, exptime.text, LengthToken(n)};
    if (is_cas && fdp_->ConsumeIntegralInRange(0, 15) != 0) t.push_back(cas.text);
    // Up to two more words; memcached looks only at whether the last is noreply.
    for (int extra = fdp_->ConsumeIntegralInRange(-4, 2); extra > 0; --extra) {
      t.push_back(fdp_->ConsumeBool() ? "noreply" : "junk");
    }
    if (fdp_->ConsumeIntegralInRange(0, 31) == 0) t.resize(fdp_->ConsumeIntegralInRange(1, 4));

    std::string line;
    for (const std::string& w : t) line += (line.empty() ? "" : " ") + w;
    stream += line + "\r\n";

    size_t len = 0;
    if (t.size() < 5 || !ValueLengthParses(t[4], &len)) {
      // The block cannot be sized: the line alone is the request, and no
      // block follows (its bytes would be commands, legitimately).
      rules.push_back(Lines(t.back() == "noreply" ? 0 : 1, 1,
                            {"CLIENT_ERROR bad command line format"}));
      return;
    }
    bool good_end = true;
    std::string end = Terminator(&good_end);
    stream += Block(len) + end;
    const bool quiet = t.back() == "noreply";
    const bool fields_ok = t[1].size() <= 250 && flags.valid && exptime.valid &&
                           (!is_cas || (t.size() >= 6 && t[5] == cas.text && cas.valid));
    std::vector<std::string> allowed;
    if (!fields_ok) {
      allowed = {"CLIENT_ERROR bad command line format"};
    } else if (len >= kItemSizeMax) {
      allowed = {"SERVER_ERROR object too large for cache"};
    } else if (!good_end) {
      allowed = {"CLIENT_ERROR bad data chunk"};
    } else {
      allowed = StoreOutcomes();
    }
    rules.push_back(Lines(quiet ? 0 : 1, quiet ? 0 : 1, allowed));
  }

  void MetaSet() {
    std::string key;
    bool b64 = fdp_->ConsumeIntegralInRange(0, 7) == 0;
    key = b64 ? kBase64Keys[fdp_->ConsumeIntegralInRange(0, 3)] : Key();
    const size_t n = Length();
    std::vector<std::string> t = {"ms", key, LengthToken(n)};
    if (b64) t.push_back("b");
    static const char* kMetaFlags[] = {"T0", "T60", "T-1", "F5", "F4294967295", "C1", "C12345",
                                       "E77", "I", "k", "c", "O123", "Oopaque", "q", "MS", "ME",
                                       "MA", "MP", "MR", "MX", "N30", "s", "Tabc", "Z", "b", "v"};
    for (int i = fdp_->ConsumeIntegralInRange(-2, 5); i > 0; --i) {
      t.push_back(kMetaFlags[fdp_->ConsumeIntegralInRange<size_t>(0, std::size(kMetaFlags) - 1)]);
    }
    if (fdp_->ConsumeIntegralInRange(0, 31) == 0) t.resize(fdp_->ConsumeIntegralInRange(1, 2));
    if (fdp_->ConsumeIntegralInRange(0, 63) == 0) t.resize(24, "T1");  // too many flags

    std::string line;
    for (const std::string& w : t) line += (line.empty() ? "" : " ") + w;
    stream += line + "\r\n";

    size_t len = 0;
    if (t.size() < 3 || !ValueLengthParses(t[2], &len)) {
      rules.push_back(Lines(1, 1, {"CLIENT_ERROR bad command line format", "ERROR"}));
      return;
    }
    bool good_end = true;
    stream += Block(len) + Terminator(&good_end);
    bool q = false;
    for (size_t i = 3; i < t.size(); ++i) q = q || t[i] == "q";
    rules.push_back(Lines(q ? 0 : 1, 1, {"HD*", "NS*", "EX*", "NF*", "CLIENT_ERROR *",
                                         "SERVER_ERROR *"}));
  }

  void Get() {
    std::string line = fdp_->ConsumeBool() ? "get" : "gets";
    for (int i = fdp_->ConsumeIntegralInRange(1, 4); i > 0; --i) line += " " + Key();
    stream += line + "\r\n";
    Rule r;
    r.kind = Rule::kGet;
    // A key over 250 bytes fails the whole request.
    r.allowed = {"CLIENT_ERROR bad command line format"};
    rules.push_back(r);
  }

  void MetaGet() {
    stream += "mg " + Key() + " v f t c\r\n";
    Rule r;
    r.kind = Rule::kMetaGet;
    r.allowed = {"EN", "CLIENT_ERROR bad command line format"};
    rules.push_back(r);
  }

  void Other() {
    const std::string key = Key();
    switch (fdp_->ConsumeIntegralInRange(0, 15)) {
      case 0:
        if (fdp_->ConsumeBool()) {
          stream += "flush_all noreply\r\n";
          rules.push_back(Lines(0, 0, {}));
        } else {
          stream += fdp_->ConsumeBool() ? "flush_all\r\n" : "flush_all 0\r\n";
          rules.push_back(Lines(1, 1, {"OK"}));
        }
        flushed = true;
        break;
      case 1:
      case 2:
      case 3:
        stream += "incr " + key + " " + std::to_string(fdp_->ConsumeIntegral<uint8_t>()) + "\r\n";
        rules.push_back(Lines(1, 1, {"0*", "1*", "2*", "3*", "4*", "5*", "6*", "7*", "8*", "9*",
                                     "NOT_FOUND", "CLIENT_ERROR *", "SERVER_ERROR *"}));
        break;
      case 4:
      case 5:
        stream += "touch " + key + " 60\r\n";
        rules.push_back(Lines(1, 1, {"TOUCHED", "NOT_FOUND", "CLIENT_ERROR *"}));
        break;
      case 6:
        stream += "version\r\n";
        rules.push_back(Lines(1, 1, {"VERSION *"}));
        break;
      default:
        stream += "delete " + key + "\r\n";
        rules.push_back(Lines(1, 1, {"DELETED", "NOT_FOUND", "CLIENT_ERROR *"}));
        break;
    }
  }

  FuzzedDataProvider* fdp_;
  int big_ = 0;  // large blocks so far (bounded, to keep runs fast)
};

// Reads the line at *pos (without CRLF); false if there is no complete one.
bool NextLine(std::string_view s, size_t* pos, std::string_view* line) {
  size_t eol = s.find("\r\n", *pos);
  if (eol == std::string_view::npos) return false;
  *line = s.substr(*pos, eol - *pos);
  *pos = eol + 2;
  return true;
}

// Skips a value of the length in word `index` of `line`, and its CRLF.
bool SkipValue(std::string_view s, size_t* pos, std::string_view line, size_t index) {
  size_t start = 0;
  for (size_t i = 0; i < index; ++i) {
    start = line.find(' ', start);
    if (start == std::string_view::npos) return false;
    ++start;
  }
  size_t end = line.find(' ', start);
  std::string_view word = line.substr(start, end == std::string_view::npos ? end : end - start);
  size_t n = 0;
  if (word.empty() || word.size() > 9) return false;
  for (char c : word) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + static_cast<size_t>(c - '0');
  }
  if (s.size() - *pos < n + 2 || s.substr(*pos + n, 2) != "\r\n") return false;
  *pos += n + 2;
  return true;
}

// Checks the replies of request i, up to and including its "MN".
void CheckGroup(std::string_view s, size_t* pos, const Rule& r, size_t i) {
  std::string_view line;
  size_t lines = 0;
  bool ended = false;  // get: END seen; mg: its one reply seen
  while (true) {
    if (!NextLine(s, pos, &line)) Fail("reply cut short", i, s.substr(*pos));
    if (line == "MN") break;
    switch (r.kind) {
      case Rule::kLines:
        if (!Allowed(r, line)) Fail("unexpected reply", i, line);
        ++lines;
        break;
      case Rule::kGet:
        if (ended) Fail("reply after END", i, line);
        if (line.substr(0, 6) == "VALUE ") {
          if (!SkipValue(s, pos, line, 3)) Fail("bad VALUE block", i, line);
        } else if (line == "END" || Allowed(r, line)) {
          ended = true;
        } else {
          Fail("unexpected get reply", i, line);
        }
        break;
      case Rule::kMetaGet:
        if (ended) Fail("second mg reply", i, line);
        ended = true;
        if (line.substr(0, 3) == "VA ") {
          if (!SkipValue(s, pos, line, 1)) Fail("bad VA block", i, line);
        } else if (!Allowed(r, line)) {
          Fail("unexpected mg reply", i, line);
        }
        break;
    }
  }
  if (r.kind == Rule::kLines && (lines < r.min || lines > r.max)) {
    Fail("wrong number of reply lines", i, s.substr(0, 0));
  }
  if (r.kind != Rule::kLines && !ended) Fail("no reply before MN", i, s.substr(0, 0));
}

struct World {
  trove::ManualClock clock;
  std::unique_ptr<trove::engine::Engine> engine;
  std::unique_ptr<trove::net::ProtocolFactory> factory;
  trove::engine::ThreadStats* ts = nullptr;
  World(int reqs_per_event) {
    trove::engine::EngineOptions eo;
    eo.mem_limit = 8u << 20;
    eo.item_size_max = kItemSizeMax;
    // A small table and few lock stripes: cheap to build and tear down for
    // every input, and keys share stripes often.
    eo.hashpower_init = 4;
    eo.item_lock_power = 2;
    eo.lru_maintainer = false;
    eo.lru_crawler = false;
    eo.slab_reassign = false;
    eo.clock = &clock;
    engine = std::move(trove::engine::Engine::Create(eo)).value();
    ts = engine->NewThreadStats();
    trove::memcache::ProtocolOptions po;
    po.item_size_max = eo.item_size_max;
    po.reqs_per_event = reqs_per_event;
    factory = trove::memcache::NewMemcacheFactory(engine.get(), nullptr, po);
  }
  bool SentinelIntact() {
    trove::engine::ItemRef ref = engine->Get(kSentinelKey, ts);
    if (!ref || ref.value_length() != kSentinelValue.size()) return false;
    std::string v;
    ref.CopyValue(&v);
    return v == kSentinelValue;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  const uint8_t split = fdp.ConsumeIntegral<uint8_t>();
  const int reqs_per_event = fdp.ConsumeIntegralInRange(1, 20);
  Generator gen(&fdp);
  gen.Run();
  const std::string& in = gen.stream;
  // Pieces of 1..128 bytes, of 64..4096, or the whole pipeline at once.
  const size_t step = split < 128   ? split + 1u
                      : split < 192 ? (split - 127u) * 64u
                                    : in.size() + 1;

  World world(reqs_per_event);
  trove::engine::StoreArgs set;
  if (world.engine->Store(kSentinelKey, 7, 0, kSentinelValue, set, world.ts) !=
          trove::engine::StoreResult::kStored ||
      !world.SentinelIntact()) {
    Fail("harness: cannot store the sentinel", 0, kSentinelKey);
  }

  trove::net::ConnInfoView ci;
  auto handler = world.factory->Create(0, ci);
  trove::net::OutputBuffer out;
  std::string replies;
  std::string pending;
  size_t pos = 0;
  while (pos < in.size() && !handler->WantsClose()) {
    size_t take = step < in.size() - pos ? step : in.size() - pos;
    pending.append(in.data() + pos, take);
    pos += take;
    while (!pending.empty() && !handler->WantsClose()) {
      size_t used = handler->OnData(pending.data(), pending.size(), out);
      if (used > pending.size()) Fail("consumed more than offered", 0, {});
      if (used == 0) {
        size_t want = handler->BytesWanted();
        if (want != 0 && want <= pending.size()) Fail("asks for bytes it has", 0, {});
        break;
      }
      pending.erase(0, used);
    }
    replies += out.ToString();
    out.Clear();
  }
  if (handler->WantsClose()) Fail("handler closed the connection", 0, pending);
  if (!pending.empty()) Fail("bytes left unconsumed", 0, pending);

  size_t rpos = 0;
  for (size_t i = 0; i < gen.rules.size(); ++i) CheckGroup(replies, &rpos, gen.rules[i], i);
  if (rpos != replies.size()) Fail("replies after the last request", 0, replies.substr(rpos));
  if (!gen.flushed && !world.SentinelIntact()) Fail("Sentinel lost or rewritten", 0, {});
  return 0;
}
