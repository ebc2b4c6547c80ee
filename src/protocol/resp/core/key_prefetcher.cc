// KeyPrefetcher: the look-ahead scan over pipelined RESP requests.
#include "protocol/resp/core/key_prefetcher.h"

#include <cstring>
#include <string_view>

#include "protocol/resp/types/keyspace.h"

namespace trove::resp {
namespace {

// Reads "<prefix><digits>\r\n" at data[*pos, len); false if incomplete or
// not that shape.
bool ReadCount(const char* data, size_t len, size_t* pos, char prefix, size_t* n) {
  size_t p = *pos;
  if (p >= len || data[p] != prefix) return false;
  ++p;
  size_t v = 0;
  size_t digits = 0;
  while (p < len && data[p] >= '0' && data[p] <= '9') {
    v = v * 10 + static_cast<size_t>(data[p] - '0');
    ++p;
    if (++digits > 9) return false;
  }
  if (digits == 0 || p + 1 >= len || data[p] != '\r' || data[p + 1] != '\n') return false;
  *pos = p + 2;
  *n = v;
  return true;
}

constexpr size_t kMaxArgs = 64;       // longer requests are not worth scanning
constexpr size_t kMaxPrefixedKey = 250;  // keys encoded on the stack for db != 0

}  // namespace

bool KeyPrefetcher::ScanRequest(int db, const char* data, size_t len, size_t start, size_t* end,
                                uint64_t* hv) {
  size_t pos = start;
  size_t argc = 0;
  if (!ReadCount(data, len, &pos, '*', &argc) || argc < 2 || argc > kMaxArgs) return false;
  std::string_view key;
  for (size_t i = 0; i < argc; ++i) {
    size_t n = 0;
    if (!ReadCount(data, len, &pos, '$', &n)) return false;
    if (n > len || pos + n + 2 > len) return false;
    if (i == 1) key = std::string_view(data + pos, n);
    pos += n + 2;
  }
  *end = pos;
  // The engine key as CommandContext::Key encodes it, without allocating.
  char buf[kMaxPrefixedKey + 2];
  size_t n = DbKeyPrefix(db, key, buf);
  if (n == 0) {
    *hv = engine::Engine::KeyHash(key);
    return true;
  }
  if (key.size() > kMaxPrefixedKey) return false;
  std::memcpy(buf + n, key.data(), key.size());
  *hv = engine::Engine::KeyHash(std::string_view(buf, key.size() + n));
  return true;
}

}  // namespace trove::resp
