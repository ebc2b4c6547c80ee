// The `struct` library Redis scripts use (Roberto Ierusalimschy's struct,
// as Redis bundles it): struct.pack(fmt, ...), struct.unpack(fmt, s [, i])
// (the values, then the position after them) and struct.size(fmt).
// Format: '>' big-endian, '<' little-endian, '!n' align items to at most n
// bytes ('!' alone: 8), ' ' ignored; 'x' a zero byte; 'b'/'B' 1-byte,
// 'h'/'H' 2-byte, 'l'/'L' and 'T' 8-byte, 'i'/'I'[n] n-byte (default 4, at
// most 32) signed/unsigned integers; 'f' float, 'd' double; 'c'[n] n bytes
// of a string (c0: the string's length when packing, the previous value
// when unpacking); 's' a zero-terminated string. Native order (little) and
// alignment 1 by default. Written for Lua 5.4: integers unpack as integers.
// Runs on the worker's VM; no state. Lua errors longjmp: these frames hold
// only plain values.
#include <cctype>
#include <cstdint>
#include <cstring>

#include "protocol/resp/commands/scripting_internal.h"

namespace trove::resp {
namespace {

constexpr int kMaxIntSize = 32;

struct Header {
  bool little = true;
  size_t align = 1;
};

size_t ReadNumber(const char** fmt, size_t dflt) {
  if (!std::isdigit(static_cast<unsigned char>(**fmt))) return dflt;
  size_t a = 0;
  do {
    a = a * 10 + static_cast<size_t>(*((*fmt)++) - '0');
  } while (std::isdigit(static_cast<unsigned char>(**fmt)) && a < 100000);
  return a;
}

// The size of option opt (0 for control options and 's'), reading its
// count from *fmt.
size_t OptionSize(lua_State* L, char opt, const char** fmt) {
  switch (opt) {
    case 'B': case 'b': return 1;
    case 'H': case 'h': return 2;
    case 'L': case 'l': case 'T': return 8;
    case 'f': return sizeof(float);
    case 'd': return sizeof(double);
    case 'x': return 1;
    case 'c': return ReadNumber(fmt, 1);
    case 'i': case 'I': {
      const size_t n = ReadNumber(fmt, 4);
      if (n < 1 || n > kMaxIntSize)
        luaL_error(L, "integral size %d is larger than limit of %d", static_cast<int>(n), kMaxIntSize);
      return n;
    }
    default: return 0;
  }
}

// Padding before an item of `size` bytes at offset len.
size_t ToAlign(lua_State* L, size_t len, char opt, size_t size, const Header& h) {
  size_t a = size;
  if (a <= 1 || opt == 'c' || opt == 's') return 0;
  if (a > h.align) a = h.align;
  if ((a & (a - 1)) != 0) luaL_error(L, "alignment must be power of 2");
  return (a - (len & (a - 1))) & (a - 1);
}

// Handles a control option; false if opt is not one.
bool Control(lua_State* L, char opt, const char** fmt, Header* h) {
  switch (opt) {
    case ' ': return true;
    case '>': h->little = false; return true;
    case '<': h->little = true; return true;
    case '!': {
      const size_t a = ReadNumber(fmt, 8);
      if (a == 0 || (a & (a - 1)) != 0) luaL_error(L, "alignment %d is not a power of 2", static_cast<int>(a));
      h->align = a;
      return true;
    }
    default:
      return false;
  }
}

void PutInteger(luaL_Buffer* b, lua_State* L, int arg, bool little, size_t size) {
  int isint = 0;
  lua_Integer iv = lua_tointegerx(L, arg, &isint);
  if (isint == 0) iv = static_cast<lua_Integer>(luaL_checknumber(L, arg));
  uint64_t v = static_cast<uint64_t>(iv);
  char buf[kMaxIntSize];
  const bool negative = iv < 0;
  for (size_t i = 0; i < size; ++i) {
    buf[little ? i : size - 1 - i] = static_cast<char>(i < 8 ? (v >> (8 * i)) & 0xff : (negative ? 0xff : 0));
  }
  luaL_addlstring(b, buf, size);
}

void PutFloat(luaL_Buffer* b, const void* p, size_t size, bool little) {
  char buf[8];
  std::memcpy(buf, p, size);
  if (!little) {  // the host is little-endian (x86-64, arm64 as run)
    for (size_t i = 0; i < size / 2; ++i) std::swap(buf[i], buf[size - 1 - i]);
  }
  luaL_addlstring(b, buf, size);
}

int Pack(lua_State* L) {
  Header h;
  const char* fmt = luaL_checkstring(L, 1);
  int arg = 2;
  size_t total = 0;
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  while (*fmt != '\0') {
    const char opt = *fmt++;
    size_t size = OptionSize(L, opt, &fmt);
    const size_t pad = ToAlign(L, total, opt, size, h);
    for (size_t i = 0; i < pad; ++i) luaL_addchar(&b, '\0');
    total += pad;
    switch (opt) {
      case 'b': case 'B': case 'h': case 'H': case 'l': case 'L': case 'T': case 'i': case 'I':
        PutInteger(&b, L, arg++, h.little, size);
        break;
      case 'x':
        luaL_addchar(&b, '\0');
        break;
      case 'f': {
        const float f = static_cast<float>(luaL_checknumber(L, arg++));
        PutFloat(&b, &f, sizeof f, h.little);
        break;
      }
      case 'd': {
        const double d = luaL_checknumber(L, arg++);
        PutFloat(&b, &d, sizeof d, h.little);
        break;
      }
      case 'c': case 's': {
        size_t l;
        const char* s = luaL_checklstring(L, arg, &l);
        if (size == 0) size = l;
        luaL_argcheck(L, l >= size, arg, "string too short");
        luaL_addlstring(&b, s, size);
        if (opt == 's') {
          luaL_addchar(&b, '\0');
          ++size;
        }
        ++arg;
        break;
      }
      default:
        if (!Control(L, opt, &fmt, &h)) luaL_error(L, "invalid format option '%c'", opt);
    }
    total += size;
  }
  luaL_pushresult(&b);
  return 1;
}

lua_Integer GetInteger(const char* p, bool little, bool is_signed, size_t size) {
  uint64_t v = 0;
  const size_t used = size < 8 ? size : 8;  // bytes past 8 carry only sign
  for (size_t i = 0; i < used; ++i) {
    const size_t at = little ? i : size - 1 - i;
    v |= static_cast<uint64_t>(static_cast<unsigned char>(p[at])) << (8 * i);
  }
  if (is_signed && size < 8) {
    const uint64_t sign = uint64_t{1} << (size * 8 - 1);
    if ((v & sign) != 0) v |= ~uint64_t{0} << (size * 8);
  }
  return static_cast<lua_Integer>(v);
}

int Unpack(lua_State* L) {
  Header h;
  const char* fmt = luaL_checkstring(L, 1);
  size_t ld;
  const char* data = luaL_checklstring(L, 2, &ld);
  const lua_Integer init = luaL_optinteger(L, 3, 1);
  luaL_argcheck(L, init >= 1, 3, "offset must be 1 or greater");
  size_t pos = static_cast<size_t>(init) - 1;
  int n = 0;
  while (*fmt != '\0') {
    const char opt = *fmt++;
    size_t size = OptionSize(L, opt, &fmt);
    pos += ToAlign(L, pos, opt, size, h);
    luaL_argcheck(L, pos <= ld && size <= ld - pos, 2, "data string too short");
    luaL_checkstack(L, 2, "too many results");
    switch (opt) {
      case 'b': case 'B': case 'h': case 'H': case 'l': case 'L': case 'T': case 'i': case 'I':
        lua_pushinteger(L, GetInteger(data + pos, h.little, std::islower(static_cast<unsigned char>(opt)) != 0, size));
        ++n;
        break;
      case 'x':
        break;
      case 'f': case 'd': {
        char buf[8];
        std::memcpy(buf, data + pos, size);
        if (!h.little) {
          for (size_t i = 0; i < size / 2; ++i) std::swap(buf[i], buf[size - 1 - i]);
        }
        if (opt == 'f') {
          float f;
          std::memcpy(&f, buf, sizeof f);
          lua_pushnumber(L, static_cast<lua_Number>(f));
        } else {
          double d;
          std::memcpy(&d, buf, sizeof d);
          lua_pushnumber(L, d);
        }
        ++n;
        break;
      }
      case 'c': {
        if (size == 0) {
          if (n == 0 || !lua_isinteger(L, -1)) luaL_error(L, "format 'c0' needs a previous size");
          const lua_Integer want = lua_tointeger(L, -1);
          lua_pop(L, 1);
          --n;
          luaL_argcheck(L, want >= 0 && static_cast<size_t>(want) <= ld - pos, 2, "data string too short");
          size = static_cast<size_t>(want);
        }
        lua_pushlstring(L, data + pos, size);
        ++n;
        break;
      }
      case 's': {
        const void* e = std::memchr(data + pos, '\0', ld - pos);
        if (e == nullptr) luaL_error(L, "unfinished string in data");
        size = static_cast<size_t>(static_cast<const char*>(e) - (data + pos)) + 1;
        lua_pushlstring(L, data + pos, size - 1);
        ++n;
        break;
      }
      default:
        if (!Control(L, opt, &fmt, &h)) luaL_error(L, "invalid format option '%c'", opt);
    }
    pos += size;
  }
  lua_pushinteger(L, static_cast<lua_Integer>(pos) + 1);
  return n + 1;
}

int Size(lua_State* L) {
  Header h;
  const char* fmt = luaL_checkstring(L, 1);
  size_t pos = 0;
  while (*fmt != '\0') {
    const char opt = *fmt++;
    const size_t size = OptionSize(L, opt, &fmt);
    pos += ToAlign(L, pos, opt, size, h);
    if (opt == 's') luaL_argerror(L, 1, "option 's' has no fixed size");
    if (opt == 'c' && size == 0) luaL_argerror(L, 1, "option 'c0' has no fixed size");
    if (size == 0 && !Control(L, opt, &fmt, &h)) luaL_error(L, "invalid format option '%c'", opt);
    pos += size;
  }
  lua_pushinteger(L, static_cast<lua_Integer>(pos));
  return 1;
}

}  // namespace

int OpenStructLib(lua_State* L) {
  static const luaL_Reg kFns[] = {
      {"pack", Pack}, {"unpack", Unpack}, {"size", Size}, {nullptr, nullptr}};
  luaL_newlib(L, kFns);
  return 1;
}

}  // namespace trove::resp
