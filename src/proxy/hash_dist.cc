// Key filters, key hashes and the jump and ring distributions (hash_dist.h).
#include "proxy/hash_dist.h"

#include <xxhash.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <string>

#include "common/limits.h"
#include "common/md5.h"
#include "proxy/proxy_types.h"

namespace trove::proxy {
namespace {

// memcached's "stop" filter copies the key and calls strstr, so both the key
// and the stop string end at their first NUL; a key past 250 bytes is
// hashed whole.
std::string_view StopFiltered(std::string_view key, std::string_view stop) {
  if (key.size() > limits::kMemcacheMaxKey) return key;
  const std::string_view hay = key.substr(0, key.find('\0'));
  const size_t at = hay.find(stop.substr(0, stop.find('\0')));
  return at == std::string_view::npos ? key : key.substr(0, at);
}

// memcached's "tags" filter: the bytes after the first open tag up to the
// next close tag (possibly none); the whole key when either is missing.
std::string_view TagsFiltered(std::string_view key, char open, char close) {
  const size_t a = key.find(open);
  if (a == std::string_view::npos || key.size() - a <= 1) return key;
  const size_t b = key.find(close, a + 1);
  if (b == std::string_view::npos) return key;
  return key.substr(a + 1, b - a - 1);
}

// The string a ring hashes for point group i of a server.
void PointName(const RingServer& s, RingMode mode, int64_t i, std::string* out) {
  out->clear();
  out->append(s.host);
  if (mode == RingMode::kEvcache) {
    out->push_back('/');
    out->append(s.host);
  }
  // twemproxy (after libmemcached) leaves the default port out.
  if (mode != RingMode::kTwemproxy || s.port != "11211") {
    out->push_back(':');
    out->append(s.port);
  }
  out->push_back('-');
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof(buf), i);
  out->append(buf, r.ptr);
}

}  // namespace

std::shared_ptr<const KeyDist> KeyDist::Jump(size_t buckets) {
  auto d = std::make_shared<KeyDist>();
  d->servers_ = static_cast<uint32_t>(buckets);
  return d;
}

std::shared_ptr<const KeyDist> KeyDist::Ring(const std::vector<RingServer>& servers, RingMode mode,
                                             int64_t buckets) {
  auto d = std::make_shared<KeyDist>();
  d->ring_ = true;
  d->servers_ = static_cast<uint32_t>(servers.size());
  const bool md5 = mode != RingMode::kDefault;
  d->points_.reserve(servers.size() * static_cast<size_t>(buckets));
  std::string name;
  for (size_t s = 0; s < servers.size(); ++s) {
    const auto server = static_cast<uint32_t>(s);
    // The MD5 modes make four points per digest, buckets/4 digests (what a
    // bucket count that is not a multiple of 4 leaves over is not made;
    // memcached leaves those points uninitialised).
    const int64_t groups = md5 ? buckets / 4 : buckets;
    for (int64_t i = 0; i < groups; ++i) {
      PointName(servers[s], mode, i, &name);
      if (md5) {
        const Md5Digest dg = Md5(name);
        for (int w = 0; w < 4; ++w) d->points_.push_back({Md5Word(dg, w), server});
      } else {
        d->points_.push_back(
            {static_cast<uint32_t>(XXH3_64bits(name.data(), name.size())), server});
      }
    }
  }
  std::stable_sort(d->points_.begin(), d->points_.end(),
                   [](const Point& a, const Point& b) { return a.value < b.value; });
  return d;
}

int32_t KeyDist::Select(uint64_t hash) const {
  if (!ring_) return JumpHash(hash, static_cast<int32_t>(servers_));
  if (points_.empty()) return -1;
  const auto h = static_cast<uint32_t>(hash);
  auto it = std::lower_bound(points_.begin(), points_.end(), h,
                             [](const Point& p, uint32_t v) { return p.value < v; });
  if (it == points_.end()) it = points_.begin();
  return static_cast<int32_t>(it->server);
}

std::string_view KeySelector::Filtered(std::string_view key) const {
  switch (filter) {
    case KeyFilter::kNone:
      return key;
    case KeyFilter::kStop:
      return StopFiltered(key, std::string_view(filter_conf, filter_len));
    case KeyFilter::kTags:
      return TagsFiltered(key, filter_conf[0], filter_conf[1]);
  }
  return key;
}

uint64_t KeySelector::Hash(std::string_view key) const {
  if (hash == KeyHash::kKetamaMd5) return Md5Word(Md5(key), 0);
  return XXH3_64bits_withSeed(key.data(), key.size(), seed);
}

uint64_t SeedOf(std::string_view seed) { return XXH3_64bits(seed.data(), seed.size()); }

}  // namespace trove::proxy
