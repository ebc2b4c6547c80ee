// Deterministic keys and values for trove-bench, so any GET hit can be
// checked against what was written. Built once; read by every load thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace trove::bench {

enum class VerifyResult { kOk, kBadLength, kBadContent };

// A value is a function of (key index, version): its length is drawn from
// [min_size, max_size] by a hash of both, its first 8 bytes (when it has at
// least 9) spell the version in hex, and the rest is a slice of a fixed
// pseudo-random pattern at an offset hashed from both. A reader that sees
// any value can read the version back and recompute the whole value, so
// stale versions are accepted but a value stored under another key, a
// truncated value or flipped bytes are caught.
//
// Thread safety: immutable after construction; Make/Verify are const and
// allocate nothing.
class ValueGen {
 public:
  static constexpr size_t kHeaderLen = 8;

  ValueGen(std::string key_prefix, size_t min_size, size_t max_size);

  // Writes the key text for index k at out (needs KeyMaxLen() bytes); returns
  // its length.
  size_t FormatKey(uint64_t k, char* out) const;
  size_t KeyMaxLen() const { return prefix_.size() + 20; }

  size_t SizeFor(uint64_t k, uint32_t version) const;
  // Writes the value for (k, version) at out (SizeFor bytes); returns the size.
  size_t Make(uint64_t k, uint32_t version, char* out) const;
  VerifyResult Verify(uint64_t k, std::string_view value) const;

  size_t max_size() const { return max_size_; }

 private:
  static uint64_t Mix(uint64_t k, uint32_t version);
  const char* Slice(uint64_t k, uint32_t version) const;

  std::string prefix_;
  size_t min_size_;
  size_t max_size_;
  std::string pattern_;  // kPatternSpan + max_size_ printable bytes
};

}  // namespace trove::bench
