// ValueGen: key text and verifiable values (see value_gen.h; any thread).
#include "value_gen.h"

#include <charconv>
#include <cstring>

#include "common/check.h"

namespace trove::bench {

namespace {
constexpr size_t kPatternSpan = 65536;
constexpr char kHex[] = "0123456789abcdef";
}  // namespace

ValueGen::ValueGen(std::string key_prefix, size_t min_size, size_t max_size)
    : prefix_(std::move(key_prefix)), min_size_(min_size), max_size_(max_size) {
  CHECK(min_size_ >= 1 && min_size_ <= max_size_);
  pattern_.resize(kPatternSpan + max_size_);
  uint64_t x = 0x2545f4914f6cdd1dULL;
  for (auto& c : pattern_) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    // Printable letters and digits only: values stay readable in a capture
    // and never contain CR or LF.
    c = static_cast<char>('0' + (x >> 40) % 75);
  }
}

uint64_t ValueGen::Mix(uint64_t k, uint32_t version) {
  uint64_t z = k * 0x9e3779b97f4a7c15ULL + version * 0xc2b2ae3d27d4eb4fULL + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

size_t ValueGen::FormatKey(uint64_t k, char* out) const {
  std::memcpy(out, prefix_.data(), prefix_.size());
  char* end = std::to_chars(out + prefix_.size(), out + prefix_.size() + 20, k).ptr;
  return static_cast<size_t>(end - out);
}

size_t ValueGen::SizeFor(uint64_t k, uint32_t version) const {
  if (min_size_ == max_size_) return min_size_;
  return min_size_ + (Mix(k, version) >> 8) % (max_size_ - min_size_ + 1);
}

const char* ValueGen::Slice(uint64_t k, uint32_t version) const {
  return pattern_.data() + Mix(k ^ 0x5bd1e995, version) % kPatternSpan;
}

size_t ValueGen::Make(uint64_t k, uint32_t version, char* out) const {
  size_t n = SizeFor(k, version);
  if (n <= kHeaderLen) {
    // Too short for a version: such values are always version 0.
    std::memcpy(out, Slice(k, 0), n);
    return n;
  }
  for (size_t i = 0; i < kHeaderLen; ++i) {
    out[i] = kHex[(version >> (4 * (kHeaderLen - 1 - i))) & 0xf];
  }
  std::memcpy(out + kHeaderLen, Slice(k, version), n - kHeaderLen);
  return n;
}

VerifyResult ValueGen::Verify(uint64_t k, std::string_view v) const {
  if (v.size() < min_size_ || v.size() > max_size_) return VerifyResult::kBadLength;
  uint32_t version = 0;
  if (v.size() > kHeaderLen) {
    for (size_t i = 0; i < kHeaderLen; ++i) {
      char c = v[i];
      uint32_t d;
      if (c >= '0' && c <= '9') {
        d = static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        d = static_cast<uint32_t>(c - 'a' + 10);
      } else {
        return VerifyResult::kBadContent;
      }
      version = (version << 4) | d;
    }
  }
  if (v.size() <= kHeaderLen) {
    // A short value carries no version, so its length can't be recomputed;
    // the range check above and the content are all we can check.
    return std::memcmp(v.data(), Slice(k, 0), v.size()) == 0 ? VerifyResult::kOk
                                                             : VerifyResult::kBadContent;
  }
  if (SizeFor(k, version) != v.size()) return VerifyResult::kBadLength;
  return std::memcmp(v.data() + kHeaderLen, Slice(k, version), v.size() - kHeaderLen) == 0
             ? VerifyResult::kOk
             : VerifyResult::kBadContent;
}

}  // namespace trove::bench
