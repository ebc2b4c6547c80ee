// libFuzzer target: the framing, tokenizer and meta flag parser on arbitrary
// bytes, plus a base64 round trip. Checks bounds and round-trip identity.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "protocol/memcache/meta_parser.h"
#include "protocol/memcache/text_parser.h"

namespace {
void Check(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trove::memcache;
  const char* p = reinterpret_cast<const char*>(data);
  size_t left = size;
  while (left > 0) {
    LineResult r = FindLine(p, left, 4096);
    if (r.status != LineStatus::kOk) break;
    Check(r.consumed <= left && r.line.size() < r.consumed);
    ParsedLine pl;
    Tokenize(r.line, &pl);
    Check(pl.count <= kMaxTokens);
    for (size_t i = 0; i < pl.count; ++i) {
      Check(!pl.tokens[i].empty());
      Check(pl.tokens[i].data() >= r.line.data() &&
            pl.tokens[i].data() + pl.tokens[i].size() <= r.line.data() + r.line.size());
    }
    if (pl.count >= 2) {
      char key_buf[kMaxDecodedKey];
      MetaFlags f;
      (void)ParseMetaFlags(pl, 2, key_buf, &f);
      Check(f.key.size() <= pl.tokens[1].size());
    }
    p += r.consumed;
    left -= r.consumed;
  }
  // Base64: decode(encode(x)) == x for inputs that fit.
  std::string_view raw(reinterpret_cast<const char*>(data), size < 180 ? size : 180);
  char enc[256];
  char dec[256];
  size_t e = Base64Encode(raw, enc);
  Check(e == (raw.size() + 2) / 3 * 4);
  size_t d = Base64Decode(std::string_view(enc, e), dec, sizeof dec);
  Check(raw.empty() ? d == 0 : (d == raw.size() && std::memcmp(dec, raw.data(), d) == 0));
  return 0;
}
