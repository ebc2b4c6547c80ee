// Redis's HyperLogLog encodings, element hash and estimator
// (hyperloglog.h). Pure functions over bytes; any thread.
#include "protocol/resp/types/hyperloglog.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/str_append.h"

namespace trove::resp::hll {
namespace {

constexpr uint64_t kHashSeed = 0xadc83b19ULL;
// 1 / (2 ln 2): the estimator's bias constant as the register count grows.
constexpr double kAlphaInf = 0.721347520444481703680;
constexpr uint8_t kStaleBit = 0x80;  // in the last byte of the cached cardinality
constexpr size_t kNoOp = std::numeric_limits<size_t>::max();
constexpr size_t kRegisterBytes = kDenseSize - kHeaderSize;

// Sparse opcodes (hyperloglog.h has the layout).
constexpr uint64_t kZeroMaxRun = 64;
constexpr uint32_t kValMaxRun = 4;
bool IsZeroOp(uint8_t b) { return (b & 0xC0) == 0x00; }
bool IsXZeroOp(uint8_t b) { return (b & 0xC0) == 0x40; }
bool IsValOp(uint8_t b) { return (b & 0x80) != 0; }
uint8_t ValValue(uint8_t b) { return static_cast<uint8_t>(((b >> 2) & 0x1F) + 1); }
uint32_t ValRun(uint8_t b) { return (b & 0x3u) + 1; }
uint8_t ValOp(uint32_t value, uint32_t run) {
  return static_cast<uint8_t>(0x80u | ((value - 1) << 2) | (run - 1));
}

const uint8_t* Bytes(std::string_view v) { return reinterpret_cast<const uint8_t*>(v.data()); }
uint8_t* Bytes(std::string* v) { return reinterpret_cast<uint8_t*>(v->data()); }

// One sparse opcode, decoded.
struct Op {
  uint32_t run;   // registers covered
  uint8_t value;  // 0 for ZERO and XZERO
  uint8_t size;   // its bytes: 2 for XZERO
  bool xzero;
};

// The opcode at p[pos] of the n opcode bytes at p. An XZERO cut short by
// the end of the value reads 0 as its second byte, which is what Redis
// reads there (the terminator its strings carry), so a truncated value
// walks, and fails or not, the same way on both servers.
Op ReadOp(const uint8_t* p, size_t n, size_t pos) {
  const uint8_t b = p[pos];
  if (IsZeroOp(b)) return {(b & 0x3Fu) + 1, 0, 1, false};
  if (IsValOp(b)) return {ValRun(b), ValValue(b), 1, false};
  const uint32_t low = pos + 1 < n ? p[pos + 1] : 0;
  return {(((b & 0x3Fu) << 8) | low) + 1, 0, 2, true};
}

// Calls fn(first, run, value) for each VAL opcode of a sparse value, in
// register order; false unless the opcodes cover exactly kRegisters
// registers. A VAL that would reach past the last register ends the walk
// before fn sees it.
template <class Fn>
bool ForEachValRun(std::string_view v, Fn&& fn) {
  const uint8_t* p = Bytes(v) + kHeaderSize;
  const size_t n = v.size() - kHeaderSize;
  uint64_t idx = 0;
  for (size_t pos = 0; pos < n;) {
    const Op op = ReadOp(p, n, pos);
    pos += op.size;
    if (idx + op.run > kRegisters) return false;  // never covered again
    if (op.value != 0) fn(static_cast<uint32_t>(idx), op.run, op.value);
    idx += op.run;
  }
  return idx == kRegisters;
}

// How many registers hold each value (0..63); false for a sparse value
// that does not cover exactly kRegisters registers.
bool Histogram(std::string_view v, int* hist) {
  if (EncodingOf(v) == kEncodingDense) {
    const uint8_t* r = Bytes(v) + kHeaderSize;
    // Four registers are exactly three bytes.
    for (size_t b = 0; b < kRegisterBytes; b += 3) {
      const uint32_t w = r[b] | (uint32_t{r[b + 1]} << 8) | (uint32_t{r[b + 2]} << 16);
      ++hist[w & 63];
      ++hist[(w >> 6) & 63];
      ++hist[(w >> 12) & 63];
      ++hist[(w >> 18) & 63];
    }
    return true;
  }
  int nonzero = 0;
  const bool ok = ForEachValRun(v, [&](uint32_t, uint32_t run, uint8_t value) {
    hist[value] += static_cast<int>(run);
    nonzero += static_cast<int>(run);
  });
  hist[0] += static_cast<int>(kRegisters) - nonzero;
  return ok;
}

// Ertl's sigma and tau ("New cardinality estimation algorithms for
// HyperLogLog sketches", arXiv:1702.01284), iterated to a fixed point.
// The operations and their order are Redis's, so estimates agree exactly.
double Sigma(double x) {
  if (x == 1.) return INFINITY;
  double y = 1;
  double z = x;
  double before;
  do {
    x *= x;
    before = z;
    z += x * y;
    y += y;
  } while (before != z);
  return z;
}

double Tau(double x) {
  if (x == 0. || x == 1.) return 0.;
  double y = 1.0;
  double z = 1 - x;
  double before;
  do {
    x = std::sqrt(x);
    before = z;
    y *= 0.5;
    z -= std::pow(1 - x, 2) * y;
  } while (before != z);
  return z / 3;
}

// Registers above kRankBits + 1 (only in hand-made dense values) are in
// the histogram but, as in Redis, weigh nowhere in the estimate.
uint64_t Estimate(const int* hist) {
  const double m = kRegisters;
  double z = m * Tau((m - hist[kRankBits + 1]) / m);
  for (int j = kRankBits; j >= 1; --j) {
    z += hist[j];
    z *= 0.5;
  }
  z += m * Sigma(hist[0] / m);
  const double e = kAlphaInf * m * m / z;
  // Past 2^63 (infinite when every register holds the top rank), Redis's
  // llroundl gives LLONG_MIN on x86-64: 2^63 here, which PFCOUNT replies as
  // -9223372036854775808 and caches with the stale bit set, as Redis does.
  if (!(e < 9223372036854775808.0)) return uint64_t{1} << 63;
  return static_cast<uint64_t>(std::llround(e));
}

Change Promote(std::string* v, uint32_t index, uint8_t rank) {
  if (!ToDense(v)) return Change::kCorrupt;
  uint8_t* regs = Bytes(v) + kHeaderSize;
  if (DenseRegister(regs, index) < rank) SetDenseRegister(regs, index, rank);
  return Change::kChanged;
}

// Appends a run of zero registers as ZERO (up to 64) or XZERO.
void PutZeros(uint8_t* seq, size_t* len, uint64_t run) {
  if (run > kZeroMaxRun) {
    seq[(*len)++] = static_cast<uint8_t>(0x40 | ((run - 1) >> 8));
    seq[(*len)++] = static_cast<uint8_t>((run - 1) & 0xFF);
  } else {
    seq[(*len)++] = static_cast<uint8_t>(run - 1);
  }
}

// SetRegister on a sparse value: find the opcode covering the register,
// rewrite it (in place, or split in up to three), then join equal VAL
// neighbours over the next few opcodes; promote when the value cannot say
// it sparsely in sparse_max_bytes.
Change SparseSet(std::string* v, uint32_t index, uint8_t rank, size_t sparse_max_bytes) {
  if (rank > kSparseValueMax) return Promote(v, index, rank);
  uint8_t* p = Bytes(v) + kHeaderSize;
  size_t n = v->size() - kHeaderSize;
  size_t pos = 0, prev = kNoOp;
  uint64_t first = 0;
  Op op{};
  bool found = false;
  while (pos < n) {
    op = ReadOp(p, n, pos);
    if (index < first + op.run) {
      found = true;
      break;
    }
    prev = pos;
    pos += op.size;
    first += op.run;
  }
  if (!found) return Change::kCorrupt;

  if (op.value >= rank) return Change::kNone;  // a VAL already as high (0 for zeros)
  if (op.run == 1 && !op.xzero) {
    p[pos] = ValOp(rank, 1);  // a one-register VAL or ZERO: one byte changes
  } else {
    // Split: [zeros or old value before] VAL(rank) [zeros or old value after].
    uint8_t seq[5];
    size_t len = 0;
    const uint64_t last = first + op.run - 1;
    if (op.value == 0) {
      if (index != first) PutZeros(seq, &len, index - first);
      seq[len++] = ValOp(rank, 1);
      if (index != last) PutZeros(seq, &len, last - index);
    } else {
      if (index != first) seq[len++] = ValOp(op.value, static_cast<uint32_t>(index - first));
      seq[len++] = ValOp(rank, 1);
      if (index != last) seq[len++] = ValOp(op.value, static_cast<uint32_t>(last - index));
    }
    if (len > op.size && v->size() + (len - op.size) > sparse_max_bytes)
      return Promote(v, index, rank);
    // A truncated XZERO (its second byte past the end) is replaced as if
    // that byte were there, and the value keeps its length plus the
    // difference: the bytes Redis leaves.
    const bool truncated = op.xzero && pos + 1 == n;
    if (truncated) v->push_back('\0');
    v->replace(kHeaderSize + pos, op.size, reinterpret_cast<const char*>(seq), len);
    if (truncated) v->pop_back();
    p = Bytes(v) + kHeaderSize;
    n = v->size() - kHeaderSize;
  }

  // Join equal adjacent VALs whose runs fit one opcode, looking at five
  // opcodes from the one before the edit (Redis's window, so the bytes
  // match). After a join the same opcode is tried again with its new
  // right neighbour.
  size_t q = prev == kNoOp ? 0 : prev;
  for (int window = 5; q < n && window > 0; --window) {
    const uint8_t b = p[q];
    if (IsXZeroOp(b)) {
      q += 2;
      continue;
    }
    if (IsZeroOp(b)) {
      q += 1;
      continue;
    }
    if (q + 1 < n && IsValOp(p[q + 1]) && ValValue(b) == ValValue(p[q + 1])) {
      const uint32_t run = ValRun(b) + ValRun(p[q + 1]);
      if (run <= kValMaxRun) {
        p[q + 1] = ValOp(ValValue(b), run);
        v->erase(kHeaderSize + q, 1);
        p = Bytes(v) + kHeaderSize;
        n = v->size() - kHeaderSize;
        continue;
      }
    }
    ++q;
  }
  return Change::kChanged;
}

uint64_t NextRandom(uint64_t* state) {  // splitmix64
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

uint64_t MurmurHash64A(std::string_view data, uint64_t seed) {
  constexpr uint64_t m = 0xc6a4a7935bd1e995ULL;
  constexpr int r = 47;
  const uint8_t* p = Bytes(data);
  const size_t len = data.size();
  uint64_t h = seed ^ (static_cast<uint64_t>(len) * m);
  const size_t whole = len - (len & 7);
  for (size_t i = 0; i < whole; i += 8) {
    uint64_t k = 0;
    for (int b = 7; b >= 0; --b) k = (k << 8) | p[i + static_cast<size_t>(b)];  // little-endian
    k *= m;
    k ^= k >> r;
    k *= m;
    h ^= k;
    h *= m;
  }
  const size_t tail = len & 7;
  if (tail != 0) {
    for (size_t b = tail; b-- > 0;) h ^= uint64_t{p[whole + b]} << (8 * b);
    h *= m;
  }
  h ^= h >> r;
  h *= m;
  h ^= h >> r;
  return h;
}

Pattern PatternOf(std::string_view element) {
  uint64_t hash = MurmurHash64A(element, kHashSeed);
  const auto index = static_cast<uint32_t>(hash & (kRegisters - 1));
  hash >>= kPrecision;
  hash |= uint64_t{1} << kRankBits;  // bounds the rank at kRankBits + 1
  return {index, static_cast<uint8_t>(std::countr_zero(hash) + 1)};
}

bool IsHll(std::string_view head, size_t length) {
  if (length < kHeaderSize || head.size() < kHeaderSize) return false;
  if (head.substr(0, 4) != "HYLL") return false;
  const auto enc = static_cast<uint8_t>(head[4]);
  if (enc > kEncodingSparse) return false;
  return enc != kEncodingDense || length == kDenseSize;
}

bool CachedCardinality(std::string_view v, uint64_t* card) {
  const uint8_t* c = Bytes(v) + 8;
  if ((c[7] & kStaleBit) != 0) return false;
  uint64_t x = 0;
  for (int i = 7; i >= 0; --i) x = (x << 8) | c[i];
  *card = x;
  return true;
}

void SetCachedCardinality(std::string* v, uint64_t card) {
  uint8_t* c = Bytes(v) + 8;
  for (int i = 0; i < 8; ++i) c[i] = static_cast<uint8_t>(card >> (8 * i));
}

void InvalidateCache(std::string* v) { Bytes(v)[15] |= kStaleBit; }

void MakeEmpty(std::string* v) {
  v->assign(kHeaderSize + 2, '\0');
  std::memcpy(v->data(), "HYLL", 4);
  (*v)[4] = static_cast<char>(kEncodingSparse);
  // One XZERO for all 16384 registers: run - 1 = 0x3FFF.
  (*v)[kHeaderSize] = static_cast<char>(0x7F);
  (*v)[kHeaderSize + 1] = static_cast<char>(0xFF);
}

uint8_t DenseRegister(const uint8_t* regs, uint32_t i) {
  const size_t bit = size_t{i} * 6;
  const size_t byte = bit >> 3;
  const unsigned shift = static_cast<unsigned>(bit & 7);
  unsigned x = regs[byte] >> shift;
  if (shift > 2) x |= unsigned{regs[byte + 1]} << (8 - shift);  // spills into the next byte
  return static_cast<uint8_t>(x & kRegisterMax);
}

void SetDenseRegister(uint8_t* regs, uint32_t i, uint8_t val) {
  const size_t bit = size_t{i} * 6;
  const size_t byte = bit >> 3;
  const unsigned shift = static_cast<unsigned>(bit & 7);
  const unsigned x = val & 63u;
  regs[byte] = static_cast<uint8_t>((regs[byte] & ~(63u << shift)) | (x << shift));
  if (shift > 2) {
    const unsigned spill = 8 - shift;
    regs[byte + 1] = static_cast<uint8_t>((regs[byte + 1] & ~(63u >> spill)) | (x >> spill));
  }
}

Change SetRegister(std::string* v, uint32_t index, uint8_t rank, size_t sparse_max_bytes) {
  if (EncodingOf(*v) == kEncodingSparse) return SparseSet(v, index, rank, sparse_max_bytes);
  uint8_t* regs = Bytes(v) + kHeaderSize;
  if (DenseRegister(regs, index) >= rank) return Change::kNone;
  SetDenseRegister(regs, index, rank);
  return Change::kChanged;
}

bool WouldRaise(std::string_view v, uint32_t index, uint8_t rank) {
  if (EncodingOf(v) == kEncodingDense) return DenseRegister(Bytes(v) + kHeaderSize, index) < rank;
  if (rank > kSparseValueMax) return true;
  const uint8_t* p = Bytes(v) + kHeaderSize;
  const size_t n = v.size() - kHeaderSize;
  uint64_t first = 0;
  for (size_t pos = 0; pos < n;) {
    const Op op = ReadOp(p, n, pos);
    if (index < first + op.run) return op.value < rank;
    pos += op.size;
    first += op.run;
  }
  return true;  // not covered: SetRegister reports it
}

bool ToDense(std::string* v) {
  if (EncodingOf(*v) == kEncodingDense) return true;
  std::string dense(kDenseSize, '\0');
  std::memcpy(dense.data(), v->data(), kHeaderSize);  // magic, unused bytes, cache
  dense[4] = static_cast<char>(kEncodingDense);
  uint8_t* regs = Bytes(&dense) + kHeaderSize;
  const bool ok = ForEachValRun(*v, [&](uint32_t first, uint32_t run, uint8_t value) {
    for (uint32_t k = 0; k < run; ++k) SetDenseRegister(regs, first + k, value);
  });
  if (!ok) return false;
  v->swap(dense);
  return true;
}

bool MergeInto(std::string_view v, uint8_t* max) {
  if (EncodingOf(v) == kEncodingDense) {
    const uint8_t* regs = Bytes(v) + kHeaderSize;
    for (uint32_t i = 0; i < kRegisters; ++i) max[i] = std::max(max[i], DenseRegister(regs, i));
    return true;
  }
  return ForEachValRun(v, [&](uint32_t first, uint32_t run, uint8_t value) {
    for (uint32_t k = 0; k < run; ++k) max[first + k] = std::max(max[first + k], value);
  });
}

bool Absorb(std::string* v, const uint8_t* max, bool dense, size_t sparse_max_bytes) {
  if (dense && !ToDense(v)) return false;
  for (uint32_t i = 0; i < kRegisters; ++i) {
    if (max[i] == 0) continue;
    // A sparse value may turn dense part way; SetRegister follows it.
    if (SetRegister(v, i, max[i], sparse_max_bytes) == Change::kCorrupt) return false;
  }
  InvalidateCache(v);
  return true;
}

bool Count(std::string_view v, uint64_t* card) {
  int hist[64] = {};
  if (!Histogram(v, hist)) return false;
  *card = Estimate(hist);
  return true;
}

uint64_t CountRaw(const uint8_t* regs) {
  int hist[64] = {};
  for (uint32_t i = 0; i < kRegisters; ++i) ++hist[regs[i] & 63];
  return Estimate(hist);
}

std::string DecodeSparse(std::string_view v) {
  std::string out;
  const uint8_t* p = Bytes(v) + kHeaderSize;
  const size_t n = v.size() - kHeaderSize;
  for (size_t pos = 0; pos < n;) {
    const Op op = ReadOp(p, n, pos);
    if (!out.empty()) out += ' ';
    if (op.value != 0) {
      out += "v:";
      AppendU64(out, op.value);
      out += ',';
    } else {
      out += op.xzero ? "Z:" : "z:";
    }
    AppendU64(out, op.run);
    pos += op.size;
  }
  return out;
}

std::string SelfTest(uint64_t seed, size_t sparse_max_bytes) {
  uint64_t rng = seed;
  // 1. Every register keeps its own value and leaves its neighbours alone.
  std::string dense(kDenseSize, '\0');
  std::memcpy(dense.data(), "HYLL", 4);
  uint8_t* regs = Bytes(&dense) + kHeaderSize;
  std::string expect(kRegisters, '\0');
  for (int cycle = 0; cycle < 1000; ++cycle) {
    for (uint32_t i = 0; i < kRegisters; ++i) {
      const auto val = static_cast<uint8_t>(NextRandom(&rng) & kRegisterMax);
      expect[i] = static_cast<char>(val);
      SetDenseRegister(regs, i, val);
    }
    for (uint32_t i = 0; i < kRegisters; ++i) {
      const uint8_t got = DenseRegister(regs, i);
      const auto want = static_cast<uint8_t>(expect[i]);
      if (got == want) continue;
      std::string e = "TESTFAILED Register ";
      AppendU64(e, i);
      e += " should be ";
      AppendU64(e, want);
      e += " but is ";
      AppendU64(e, got);
      return e;
    }
  }
  // 2. Dense and sparse fed the same elements agree, the sparse one stays
  // sparse while small, and the error stays under six standard errors
  // (1.04 / sqrt(m) each) at every power of ten.
  std::memset(regs, 0, kRegisterBytes);
  std::string sparse;
  MakeEmpty(&sparse);
  const double relerr = 1.04 / std::sqrt(static_cast<double>(kRegisters));
  const uint64_t base = NextRandom(&rng);
  uint64_t checkpoint = 1;
  for (uint64_t j = 1; j <= 10'000'000; ++j) {
    const uint64_t ele = j ^ base;
    char buf[8];
    for (int b = 0; b < 8; ++b) buf[b] = static_cast<char>(ele >> (8 * b));
    const std::string_view e(buf, sizeof buf);
    (void)Add(&dense, e, sparse_max_bytes);
    if (Add(&sparse, e, sparse_max_bytes) == Change::kCorrupt) return "TESTFAILED sparse update";
    if (j != checkpoint) continue;
    if (j < sparse_max_bytes / 2 && EncodingOf(sparse) != kEncodingSparse)
      return "TESTFAILED sparse encoding not used";
    uint64_t dense_card = 0, sparse_card = 0;
    if (!Count(dense, &dense_card) || !Count(sparse, &sparse_card) || dense_card != sparse_card)
      return "TESTFAILED dense/sparse disagree";
    const uint64_t abserr =
        dense_card > checkpoint ? dense_card - checkpoint : checkpoint - dense_card;
    uint64_t maxerr =
        static_cast<uint64_t>(std::ceil(relerr * 6 * static_cast<double>(checkpoint)));
    if (j == 10) maxerr = 1;  // collisions at ten elements are likely enough to flake
    if (abserr > maxerr) {
      std::string err = "TESTFAILED Too big error. card:";
      AppendU64(err, checkpoint);
      err += " abserr:";
      AppendU64(err, abserr);
      return err;
    }
    checkpoint *= 10;
  }
  return {};
}

}  // namespace trove::resp::hll
