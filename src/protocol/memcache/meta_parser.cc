// Meta flag parsing and base64 (see meta_parser.h).
#include "protocol/memcache/meta_parser.h"

namespace trove::memcache {
namespace {

constexpr char kB64Chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int B64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

constexpr const char* kBadToken = "bad token in command line format";

}  // namespace

size_t Base64Decode(std::string_view in, char* out, size_t cap) {
  if (in.empty() || in.size() % 4 != 0) return 0;
  size_t n = 0;
  for (size_t i = 0; i < in.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int j = 0; j < 4; ++j) {
      char c = in[i + static_cast<size_t>(j)];
      if (c == '=') {
        // Padding only in the last group's final one or two places.
        if (i + 4 != in.size() || j < 2) return 0;
        ++pad;
        v[j] = 0;
        continue;
      }
      if (pad > 0) return 0;
      v[j] = B64Value(c);
      if (v[j] < 0) return 0;
    }
    uint32_t bits = (static_cast<uint32_t>(v[0]) << 18) | (static_cast<uint32_t>(v[1]) << 12) |
                    (static_cast<uint32_t>(v[2]) << 6) | static_cast<uint32_t>(v[3]);
    size_t produce = 3 - static_cast<size_t>(pad);
    if (n + produce > cap) return 0;
    out[n++] = static_cast<char>((bits >> 16) & 0xff);
    if (produce > 1) out[n++] = static_cast<char>((bits >> 8) & 0xff);
    if (produce > 2) out[n++] = static_cast<char>(bits & 0xff);
  }
  return n;
}

size_t Base64Encode(std::string_view in, char* out) {
  size_t n = 0;
  size_t i = 0;
  auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(in[k])); };
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t bits = (byte(i) << 16) | (byte(i + 1) << 8) | byte(i + 2);
    out[n++] = kB64Chars[(bits >> 18) & 63];
    out[n++] = kB64Chars[(bits >> 12) & 63];
    out[n++] = kB64Chars[(bits >> 6) & 63];
    out[n++] = kB64Chars[bits & 63];
  }
  size_t left = in.size() - i;
  if (left > 0) {
    uint32_t bits = byte(i) << 16;
    if (left == 2) bits |= byte(i + 1) << 8;
    out[n++] = kB64Chars[(bits >> 18) & 63];
    out[n++] = kB64Chars[(bits >> 12) & 63];
    out[n++] = left == 2 ? kB64Chars[(bits >> 6) & 63] : '=';
    out[n++] = '=';
  }
  return n;
}

const char* ParseMetaFlags(const ParsedLine& line, size_t first, char* key_buf, MetaFlags* out) {
  out->key = line.tokens[1];
  const char* err = nullptr;
  for (size_t i = first; i < line.count; ++i) {
    std::string_view tok = line.tokens[i];
    unsigned char c = static_cast<unsigned char>(tok[0]);
    // memcached reports any byte outside 7-bit ASCII as a repeat.
    if (c >= 127) return "duplicate flag";
    bool letter = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
    if (letter) {
      if (out->Has(static_cast<char>(c))) return "duplicate flag";
      out->seen |= uint64_t{1} << MetaFlags::FlagBit(static_cast<char>(c));
    }
    std::string_view arg = tok.substr(1);
    switch (c) {
      case 'b': {
        size_t n = Base64Decode(line.tokens[1], key_buf, kMaxDecodedKey);
        if (n == 0) {
          err = "error decoding key";
        } else {
          out->key = std::string_view(key_buf, n);
        }
        out->key_binary = true;
        break;
      }
      case 'N':
        out->has_vivify = ParseInt(arg, &out->vivify_ttl);
        if (!out->has_vivify) err = kBadToken;
        break;
      case 'T':
        out->has_ttl = ParseInt(arg, &out->ttl);
        if (!out->has_ttl) err = kBadToken;
        break;
      case 'R':
        out->has_recache = ParseInt(arg, &out->recache_ttl);
        if (!out->has_recache) err = kBadToken;
        break;
      case 'F':
        if (!ParseFlags(arg, &out->client_flags)) err = "bad command line format";
        break;
      case 'C':
        out->has_cas = ParseUint(arg, &out->compare_cas);
        if (!out->has_cas) err = kBadToken;
        break;
      case 'E':
        out->has_explicit_cas = ParseUint(arg, &out->explicit_cas);
        if (!out->has_explicit_cas) err = kBadToken;
        break;
      case 'M':
        if (tok.size() != 2) {
          err = "incorrect length for M token";
        } else {
          out->mode = tok[1];
        }
        break;
      case 'J':
        if (!ParseUint(arg, &out->initial)) err = "invalid numeric initial value";
        break;
      case 'D':
        if (!ParseUint(arg, &out->delta)) err = "invalid numeric delta value";
        break;
      case 'O':
        out->opaque = tok;
        break;
      case 'P':
      case 'L':  // proxy hints, ignored
      case 'k':
      case 's':
      case 't':
      case 'c':
      case 'f':
      case 'v':
      case 'h':
      case 'l':
      case 'u':
      case 'q':
      case 'I':
        break;
      case 'x':  // md's remove-value; memcached 1.6.45's parser takes it on every command
        break;
      default:
        return "invalid flag";
    }
  }
  return err;
}

bool MetaTokensWellFormed(const ParsedLine& pl, size_t first) {
  for (size_t i = first; i < pl.count; ++i) {
    const unsigned char c = static_cast<unsigned char>(pl.tokens[i][0]);
    if (!(c >= 'A' && c <= 'z') && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}

}  // namespace trove::memcache
