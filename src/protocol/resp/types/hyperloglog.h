// Redis's HyperLogLog, byte for byte: the value PFADD/PFCOUNT/PFMERGE keep
// in a plain string, its dense and sparse register encodings, the element
// hash and the cardinality estimator. Pure functions over bytes (no engine,
// no connection): any thread.
//
// The layout (Redis's, so a value moves between Redis and Trove as it is):
//   bytes 0..3   "HYLL"
//   byte  4      encoding: 0 dense, 1 sparse
//   bytes 5..7   unused (kept as found)
//   bytes 8..15  cached cardinality, little-endian; the top bit of byte 15
//                set means "stale, recompute"
//   then the 16384 six-bit registers:
//   dense   exactly 12288 bytes; register i is bits [6i, 6i + 6) of the
//           array read as one little-endian number (least significant bit
//           of byte 0 first)
//   sparse  run-length opcodes covering the registers in order:
//           00xxxxxx          ZERO:  xxxxxx + 1 (1..64) registers at 0
//           01xxxxxx yyyyyyyy XZERO: xxxxxxyyyyyyyy + 1 (1..16384) at 0
//           1vvvvvxx          VAL:   xx + 1 (1..4) registers at vvvvv + 1
//                             (1..32)
//           A register above 32, or a sparse value that would grow past
//           hll-sparse-max-bytes (header included), turns the value dense.
//
// Every edit here makes exactly the bytes Redis's makes (down to the way
// it splits and re-merges opcodes), so the same elements added in the same
// order give the same value on both servers; PFDEBUG and the tests rely
// on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace trove::resp::hll {

inline constexpr int kPrecision = 14;                     // index bits of the hash
inline constexpr uint32_t kRegisters = 1u << kPrecision;  // 16384
inline constexpr int kRankBits = 64 - kPrecision;         // 50: a rank is 1..51
inline constexpr uint8_t kRegisterMax = 63;               // six bits
inline constexpr size_t kHeaderSize = 16;
inline constexpr size_t kDenseSize = kHeaderSize + kRegisters * 6 / 8;  // 12304
inline constexpr uint8_t kEncodingDense = 0;
inline constexpr uint8_t kEncodingSparse = 1;
inline constexpr uint8_t kSparseValueMax = 32;  // a VAL opcode's largest value
// Redis's hll-sparse-max-bytes default.
inline constexpr int64_t kDefaultSparseMaxBytes = 3000;

// MurmurHash2, 64-bit (MurmurHash64A) with little-endian word loads on any
// host, as Redis hashes HLL elements.
uint64_t MurmurHash64A(std::string_view data, uint64_t seed);

// Where an element lands: its register (the hash's low 14 bits) and its
// rank (1 + the trailing zero bits of the rest of the hash, at most 51).
struct Pattern {
  uint32_t index;
  uint8_t rank;
};
Pattern PatternOf(std::string_view element);

// Whether a string is a HyperLogLog as Redis accepts one (its
// isHLLObjectOrReply): at least a header, the magic, a known encoding, and
// a dense value exactly kDenseSize bytes long. `head` holds the value's
// first min(length, kHeaderSize) bytes; `length` is the whole value's. A
// sparse value's opcodes are checked only when they are walked (an error
// then is INVALIDOBJ, not WRONGTYPE).
bool IsHll(std::string_view head, size_t length);

// REQUIRES for everything below: the value passed IsHll.
inline uint8_t EncodingOf(std::string_view v) { return static_cast<uint8_t>(v[4]); }
// The cached cardinality; false when it is marked stale.
bool CachedCardinality(std::string_view v, uint64_t* card);
void SetCachedCardinality(std::string* v, uint64_t card);
// Marks the cache stale: sets the top bit only, as Redis does (the other
// cached bytes stay as they were).
void InvalidateCache(std::string* v);

// The empty HyperLogLog PFADD and PFMERGE create: sparse, one XZERO
// opcode over every register, cached cardinality 0 (valid). Assigns *v,
// reusing its capacity.
void MakeEmpty(std::string* v);

// Dense registers: regs points at the kRegisters * 6 / 8 register bytes.
uint8_t DenseRegister(const uint8_t* regs, uint32_t i);
void SetDenseRegister(uint8_t* regs, uint32_t i, uint8_t val);

enum class Change : uint8_t { kNone, kChanged, kCorrupt };

// Raises register `index` to `rank` if it is lower (PFADD's step, also
// PFMERGE's), editing the value in place; a sparse value may turn dense
// (a rank above 32, or more than sparse_max_bytes). kCorrupt: the sparse
// opcodes do not cover the register, or the value could not be made
// dense; *v is then unchanged. Leaves the cached cardinality alone: callers mark it stale
// once, after all their edits.
Change SetRegister(std::string* v, uint32_t index, uint8_t rank, size_t sparse_max_bytes);
inline Change Add(std::string* v, std::string_view element, size_t sparse_max_bytes) {
  const Pattern p = PatternOf(element);
  return SetRegister(v, p.index, p.rank, sparse_max_bytes);
}
// Whether SetRegister(index, rank) would change anything, without copying
// the value: true also when it would fail (the caller then finds out).
bool WouldRaise(std::string_view v, uint32_t index, uint8_t rank);

// Rewrites a sparse value as dense (header kept, encoding byte set); false
// when its opcodes do not cover exactly kRegisters registers. A dense value
// is left as it is.
bool ToDense(std::string* v);

// max[i] = max(max[i], register i of v) for every register (PFMERGE and
// multi-key PFCOUNT); false for sparse opcodes that do not cover exactly
// kRegisters registers. max has kRegisters bytes.
bool MergeInto(std::string_view v, uint8_t* max);

// PFMERGE's write into its destination: turns v dense first when `dense`
// (a source was dense), raises every register to max[i], and marks the
// cache stale. False when v's sparse opcodes are corrupt.
bool Absorb(std::string* v, const uint8_t* max, bool dense, size_t sparse_max_bytes);

// The estimated cardinality of v's registers (Ertl's improved estimator,
// as Redis computes it, to the last bit of the double). False for sparse
// opcodes that do not cover exactly kRegisters registers.
bool Count(std::string_view v, uint64_t* card);
// The same for kRegisters registers held one a byte (PFCOUNT of several keys).
uint64_t CountRaw(const uint8_t* regs);

// PFDEBUG DECODE's text for a sparse value: "z:<n>" per ZERO, "Z:<n>" per
// XZERO, "v:<value>,<n>" per VAL, space-separated.
std::string DecodeSparse(std::string_view v);

// PFSELFTEST: the register packing under random values, then the estimate
// of dense and sparse HyperLogLogs fed the same 10^7 elements (they must
// agree, stay sparse while small, and stay within six standard errors).
// Empty on success, else the TESTFAILED error text.
std::string SelfTest(uint64_t seed, size_t sparse_max_bytes);

}  // namespace trove::resp::hll
