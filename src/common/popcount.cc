// PopCount (popcount.h): three versions of one count, one chosen per call by
// length from what the CPU has, decided once per process.
#include "common/popcount.h"

#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace trove {
namespace {

// The number of set bits in p[0, n). Three versions, one chosen once per
// process by what the CPU has: AVX2 (counts the two nibbles of 32 bytes at a
// time through a 16-entry table in a vector register, byte counters summed
// into 64-bit lanes every 31 blocks, before a byte counter could pass 255),
// the POPCNT instruction on 64-bit words, or the portable
// __builtin_popcountll (a libgcc routine when the build targets no POPCNT).
// Each runs over the bytes in place; the same total whichever runs.
// One word's count; always inlined, so inside a target("popcnt") function
// the builtin is the instruction.
struct CountWord {
  [[gnu::always_inline]] uint64_t operator()(uint64_t w) const {
    return static_cast<uint64_t>(__builtin_popcountll(w));
  }
};

// Always inlined into each version, so CountWord takes that version's target.
[[gnu::always_inline]] inline uint64_t PopCountWords(const uint8_t* p, size_t n) {
  const CountWord count;
  uint64_t c0 = 0, c1 = 0, c2 = 0, c3 = 0;  // four chains: no add waits on another
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    uint64_t w[4];
    std::memcpy(w, p + i, sizeof w);  // any alignment
    c0 += count(w[0]);
    c1 += count(w[1]);
    c2 += count(w[2]);
    c3 += count(w[3]);
  }
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, sizeof w);
    c0 += count(w);
  }
  for (; i < n; ++i) c1 += count(uint64_t{p[i]});
  return c0 + c1 + c2 + c3;
}

uint64_t PopCountPortable(const uint8_t* p, size_t n) { return PopCountWords(p, n); }

#if defined(__x86_64__)
__attribute__((target("popcnt"))) uint64_t PopCountPopcnt(const uint8_t* p, size_t n) {
  return PopCountWords(p, n);
}

__attribute__((target("avx2,popcnt"))) uint64_t PopCountAvx2(const uint8_t* p, size_t n) {
  // Bits set in each value 0..15, twice (one table per 128-bit lane).
  const __m256i table = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
                                         0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  const __m256i zero = _mm256_setzero_si256();
  __m256i total = zero;  // four 64-bit sums
  size_t i = 0;
  while (i + 32 <= n) {
    __m256i bytes = zero;  // 32 byte-sized counters, each at most 8 per block
    for (int k = 0; k < 31 && i + 32 <= n; ++k, i += 32) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
      const __m256i lo = _mm256_and_si256(v, nibble);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
      bytes = _mm256_add_epi8(bytes, _mm256_add_epi8(_mm256_shuffle_epi8(table, lo),
                                                     _mm256_shuffle_epi8(table, hi)));
    }
    total = _mm256_add_epi64(total, _mm256_sad_epu8(bytes, zero));
  }
  const uint64_t sum = static_cast<uint64_t>(_mm256_extract_epi64(total, 0)) +
                       static_cast<uint64_t>(_mm256_extract_epi64(total, 1)) +
                       static_cast<uint64_t>(_mm256_extract_epi64(total, 2)) +
                       static_cast<uint64_t>(_mm256_extract_epi64(total, 3));
  return sum + PopCountPopcnt(p + i, n - i);
}
#endif

using PopCountFn = uint64_t (*)(const uint8_t*, size_t);

// The version for short strings (the usual SETBIT-sized bitmap: no vector
// set-up) and the one for long ones.
struct PopCounters {
  PopCountFn small = PopCountPortable;
  PopCountFn large = PopCountPortable;
};

PopCounters ChoosePopCount() {
  PopCounters c;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("popcnt")) c.small = c.large = PopCountPopcnt;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt")) c.large = PopCountAvx2;
#endif
  return c;
}

}  // namespace

uint64_t PopCount(const uint8_t* p, size_t n) {
  static const PopCounters counters = ChoosePopCount();  // once, thread-safe
  return (n < 64 ? counters.small : counters.large)(p, n);
}

}  // namespace trove
