// Key placement in the proxy's pools, as memcached's proxy does it: a key
// filter ("stop", "tags"), a key hash (mcp.hash_xxhash with the pool's
// seed, or mcp.dist_ring_hash.hash: MD5 as libketama hashes keys) and a
// distribution (mcp.dist_jump_hash, or mcp.dist_ring_hash in its default,
// ketama, twemproxy and evcache modes). Made by the config VM (mcp.pool),
// then read-only: any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

struct lua_State;

namespace trove::proxy {

struct PoolSpec;

enum class KeyHash : uint8_t {
  kXxh3,       // XXH3-64 of the filtered key, with the pool's seed
  kKetamaMd5,  // the first four bytes of its MD5, little-endian; no seed
};

enum class KeyFilter : uint8_t {
  kNone,
  kStop,  // the key up to the first occurrence of the filter string
  kTags,  // the part between its first two characters, "{}" in "a{b}c"
};

enum class RingMode : uint8_t {
  kDefault,    // XXH3-64 of "host:port-i", one point each (memcached's own)
  kKetama,     // MD5 of "host:port-i", four points per digest (libketama)
  kTwemproxy,  // as kKetama, without ":11211" (twemproxy, libmemcached)
  kEvcache,    // MD5 of "host/host:port-i" (EVCache's client)
};

// memcached's limit on a filter string (KEY_HASH_FILTER_MAX).
inline constexpr size_t kKeyFilterMax = 5;
// Points per server on a ring without `obuckets` (libketama's 160).
inline constexpr int64_t kRingDefaultBuckets = 160;
// At most this many points on one ring: memcached has no limit and fails
// when the allocation does; 2^24 points is 128 MiB, far past any real ring.
inline constexpr int64_t kRingMaxPoints = int64_t{1} << 24;

// A server as a ring names it: the backend's host as configured (never
// resolved) and its port string, as memcached hands them to the ring.
struct RingServer {
  std::string_view host, port;
};

// A distribution: from a key's 64-bit hash to a backend index.
// Thread safety: immutable once made; any thread.
class KeyDist {
 public:
  // Lamping and Veach's jump hash over `buckets` backends.
  static std::shared_ptr<const KeyDist> Jump(size_t buckets);
  // A continuum of points, `buckets` per server in the default mode and
  // buckets/4 MD5 digests (four points each) in the others.
  // REQUIRES: buckets >= 1 (>= 4 in the MD5 modes), servers.size() *
  // buckets <= kRingMaxPoints (mcp.dist_ring_hash.new checks both).
  static std::shared_ptr<const KeyDist> Ring(const std::vector<RingServer>& servers, RingMode mode,
                                             int64_t buckets);

  // The backend index in [0, servers) for `hash`, or -1 with no servers.
  // A ring takes the hash's low 32 bits and the first point at or after
  // them, wrapping to the first point (libketama's lookup).
  int32_t Select(uint64_t hash) const;

  struct Point {
    uint32_t value;
    uint32_t server;  // index into the pool's backends
  };
  // A ring's points in ascending order (ties in the order made); empty for
  // a jump hash.
  const std::vector<Point>& points() const { return points_; }
  bool is_ring() const { return ring_; }
  // The backends it was made for.
  size_t servers() const { return servers_; }

 private:
  bool ring_ = false;
  uint32_t servers_ = 0;
  std::vector<Point> points_;
};

// The whole key-to-backend mapping of one pool (its mcp.pool options).
// Thread safety: immutable once the pool is published; any thread.
struct KeySelector {
  KeyFilter filter = KeyFilter::kNone;
  uint8_t filter_len = 0;
  char filter_conf[kKeyFilterMax] = {};
  KeyHash hash = KeyHash::kXxh3;
  uint64_t seed = 0;  // XXH3-64 of the `seed` string (0 without one)
  std::shared_ptr<const KeyDist> dist;

  // The part of `key` that is hashed (memcached's filters, quirks and all).
  std::string_view Filtered(std::string_view key) const;
  uint64_t Hash(std::string_view key) const;
  // The backend index for `key`; allocates nothing.
  // REQUIRES: dist set and made for a non-empty pool.
  int32_t Select(std::string_view key) const { return dist->Select(Hash(Filtered(key))); }
};

// The pool option `seed`: memcached hashes the string to the 64-bit seed.
uint64_t SeedOf(std::string_view seed);

// --- The Lua side (hash_dist_lib.cc) ---

// Adds mcp.hash_xxhash, mcp.dist_jump_hash and mcp.dist_ring_hash to the
// mcp table on the stack top (every VM has them, as in memcached).
void OpenHashDistFunctions(lua_State* L);

// Reads mcp.pool's key options (dist with its omode/obuckets, filter,
// filter_conf, hash, seed) from the table at `opts_idx` (0: none, so the
// jump hash) into pool->selector, for pool->backends; raises a Lua error
// with memcached's message on a bad option. REQUIRES: *pool is owned by a
// Lua value (the pool's userdata), since an error unwinds past this call.
void ReadPoolKeyOptions(lua_State* L, int opts_idx, PoolSpec* pool);

}  // namespace trove::proxy
