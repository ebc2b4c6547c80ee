// AuthTable: loading memcached's authfile and checking a user/password pair.
#include "protocol/memcache/ascii_auth.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/sha256.h"

namespace trove::memcache {
namespace {

bool SafeEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

}  // namespace

Result<std::shared_ptr<AuthTable>> AuthTable::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::Invalid("Could not open authfile [" + path + "] for reading, error " +
                           std::strerror(errno));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  auto t = std::make_shared<AuthTable>();
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      return Status::Invalid("Authfile [" + path +
                             "] has a malformed entry. Should be 'user:password'");
    }
    // Only the password's SHA-256 is kept (hex, as ACL users keep theirs).
    t->entries_.emplace_back(std::string(line.substr(0, colon)),
                             Sha256Hex(line.substr(colon + 1)));
    pos = end + 1;
  }
  return t;
}

bool AuthTable::Check(std::string_view user, std::string_view pass) const {
  const std::string digest = Sha256Hex(pass);
  bool ok = false;
  for (const auto& [u, p] : entries_) {
    // Every entry is compared, so the time does not tell which user matched.
    // Both compared (no short circuit): `&` on ints, not `&&`.
    const bool match =
        (static_cast<unsigned>(SafeEqual(user, u)) & static_cast<unsigned>(SafeEqual(digest, p))) != 0;
    ok = ok || match;
  }
  return ok;
}

}  // namespace trove::memcache
