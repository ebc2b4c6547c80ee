// The `cmsgpack` library Redis scripts use: pack(...) encodes its arguments
// as MessagePack one after another; unpack(s) decodes every object in s;
// unpack_one(s, offset) and unpack_limit(s, limit, offset) decode one or
// `limit` objects from offset and return the next offset first (-1 at the
// end). Lua values map as lua_cmsgpack maps them: integral numbers as the
// smallest integer form, others as float 32 when exact else float 64,
// strings as str 8/16/32, tables whose keys are 1..n as arrays and others
// as maps, nesting past 16 levels (a cycle) as nil, functions and other
// types as nil. Runs on the worker's VM; no state.
//
// Lua errors longjmp: unpack's frames hold only plain values. pack builds
// its output in a std::string and raises no error once it has started.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "protocol/resp/commands/scripting_internal.h"

namespace trove::resp {
namespace {

constexpr int kMaxNesting = 16;

void PutBig(std::string* out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void PackInteger(std::string* out, int64_t n) {
  if (n >= 0) {
    const uint64_t u = static_cast<uint64_t>(n);
    if (u < 128) {
      out->push_back(static_cast<char>(u));
    } else if (u <= 0xff) {
      out->push_back('\xcc');
      PutBig(out, u, 1);
    } else if (u <= 0xffff) {
      out->push_back('\xcd');
      PutBig(out, u, 2);
    } else if (u <= 0xffffffffULL) {
      out->push_back('\xce');
      PutBig(out, u, 4);
    } else {
      out->push_back('\xcf');
      PutBig(out, u, 8);
    }
    return;
  }
  const uint64_t u = static_cast<uint64_t>(n);
  if (n >= -32) {
    out->push_back(static_cast<char>(u & 0xff));
  } else if (n >= -128) {
    out->push_back('\xd0');
    PutBig(out, u, 1);
  } else if (n >= -32768) {
    out->push_back('\xd1');
    PutBig(out, u, 2);
  } else if (n >= -2147483648LL) {
    out->push_back('\xd2');
    PutBig(out, u, 4);
  } else {
    out->push_back('\xd3');
    PutBig(out, u, 8);
  }
}

void PackNumber(lua_State* L, int idx, std::string* out) {
  if (lua_isinteger(L, idx)) {
    PackInteger(out, lua_tointeger(L, idx));
    return;
  }
  const double d = lua_tonumber(L, idx);
  if (std::isfinite(d) && d == std::floor(d) && d >= -9.2e18 && d <= 9.2e18) {
    PackInteger(out, static_cast<int64_t>(d));  // as Lua 5.1's lua_cmsgpack: integral doubles
    return;
  }
  const float f = static_cast<float>(d);
  if (static_cast<double>(f) == d) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    out->push_back('\xca');
    PutBig(out, bits, 4);
  } else {
    uint64_t bits;
    std::memcpy(&bits, &d, 8);
    out->push_back('\xcb');
    PutBig(out, bits, 8);
  }
}

void PackLength(std::string* out, size_t n, uint8_t fix, size_t fix_max, uint8_t op16,
                uint8_t op32) {
  if (n <= fix_max) {
    out->push_back(static_cast<char>(fix | n));
  } else if (n <= 0xffff) {
    out->push_back(static_cast<char>(op16));
    PutBig(out, n, 2);
  } else {
    out->push_back(static_cast<char>(op32));
    PutBig(out, n, 4);
  }
}

// n when the table's keys are exactly 1..n, else -1.
lua_Integer ArrayLength(lua_State* L, int idx) {
  lua_Integer count = 0, max = 0;
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    lua_pop(L, 1);
    if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1) {
      lua_pop(L, 1);
      return -1;
    }
    max = std::max(max, lua_tointeger(L, -1));
    ++count;
  }
  return count == max ? max : -1;
}

void PackValue(lua_State* L, int idx, std::string* out, int level);

void PackTable(lua_State* L, int idx, std::string* out, int level) {
  const lua_Integer n = ArrayLength(L, idx);
  if (n >= 0) {
    PackLength(out, static_cast<size_t>(n), 0x90, 15, 0xdc, 0xdd);
    for (lua_Integer i = 1; i <= n; ++i) {
      lua_rawgeti(L, idx, i);
      PackValue(L, lua_gettop(L), out, level + 1);
      lua_pop(L, 1);
    }
    return;
  }
  size_t pairs = 0;
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    lua_pop(L, 1);
    ++pairs;
  }
  PackLength(out, pairs, 0x80, 15, 0xde, 0xdf);
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    const int v = lua_gettop(L);
    PackValue(L, v - 1, out, level + 1);
    PackValue(L, v, out, level + 1);
    lua_pop(L, 1);
  }
}

void PackValue(lua_State* L, int idx, std::string* out, int level) {
  switch (lua_type(L, idx)) {
    case LUA_TBOOLEAN:
      out->push_back(lua_toboolean(L, idx) ? '\xc3' : '\xc2');
      return;
    case LUA_TNUMBER:
      PackNumber(L, idx, out);
      return;
    case LUA_TSTRING: {
      size_t n;
      const char* s = lua_tolstring(L, idx, &n);
      if (n < 32) {
        out->push_back(static_cast<char>(0xa0 | n));
      } else if (n <= 0xff) {
        out->push_back('\xd9');
        PutBig(out, n, 1);
      } else {
        PackLength(out, n, 0, 0, 0xda, 0xdb);
      }
      out->append(s, n);
      return;
    }
    case LUA_TTABLE:
      if (level < kMaxNesting) {
        lua_checkstack(L, 4);
        PackTable(L, idx, out, level);
        return;
      }
      break;
    default:
      break;
  }
  out->push_back('\xc0');  // nil, too deep, or a type MessagePack has no form for
}

int Pack(lua_State* L) {
  const int n = lua_gettop(L);
  if (n == 0) return luaL_error(L, "MessagePack pack needs input.");
  {
    std::string out;
    for (int i = 1; i <= n; ++i) PackValue(L, i, &out, 0);
    lua_pushlstring(L, out.data(), out.size());
  }
  return 1;
}

struct Cursor {
  const unsigned char* p;
  size_t left;
};

uint64_t Take(lua_State* L, Cursor* c, int bytes) {
  if (c->left < static_cast<size_t>(bytes)) luaL_error(L, "Missing bytes in input.");
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | c->p[i];
  c->p += bytes;
  c->left -= static_cast<size_t>(bytes);
  return v;
}

void UnpackValue(lua_State* L, Cursor* c, int level);

void PushBytes(lua_State* L, Cursor* c, uint64_t n) {
  if (c->left < n) luaL_error(L, "Missing bytes in input.");
  lua_pushlstring(L, reinterpret_cast<const char*>(c->p), n);
  c->p += n;
  c->left -= n;
}

void UnpackArray(lua_State* L, Cursor* c, uint64_t n, int level) {
  lua_checkstack(L, 3);
  lua_createtable(L, n < 1024 ? static_cast<int>(n) : 1024, 0);
  for (uint64_t i = 1; i <= n; ++i) {
    UnpackValue(L, c, level + 1);
    lua_rawseti(L, -2, static_cast<lua_Integer>(i));
  }
}

void UnpackMap(lua_State* L, Cursor* c, uint64_t n, int level) {
  lua_checkstack(L, 4);
  lua_createtable(L, 0, n < 1024 ? static_cast<int>(n) : 1024);
  for (uint64_t i = 0; i < n; ++i) {
    UnpackValue(L, c, level + 1);
    UnpackValue(L, c, level + 1);
    if (lua_isnil(L, -2)) {
      lua_pop(L, 2);  // a nil key cannot be stored
      continue;
    }
    lua_rawset(L, -3);
  }
}

void UnpackValue(lua_State* L, Cursor* c, int level) {
  if (level > 1000) luaL_error(L, "Bad data format in input.");  // nesting a C stack cannot take
  const unsigned b = static_cast<unsigned>(Take(L, c, 1));
  if (b < 0x80) {
    lua_pushinteger(L, b);
  } else if (b >= 0xe0) {
    lua_pushinteger(L, static_cast<int8_t>(b));
  } else if ((b & 0xf0) == 0x80) {
    UnpackMap(L, c, b & 0x0f, level);
  } else if ((b & 0xf0) == 0x90) {
    UnpackArray(L, c, b & 0x0f, level);
  } else if ((b & 0xe0) == 0xa0) {
    PushBytes(L, c, b & 0x1f);
  } else {
    switch (b) {
      case 0xc0: lua_pushnil(L); break;
      case 0xc2: lua_pushboolean(L, 0); break;
      case 0xc3: lua_pushboolean(L, 1); break;
      case 0xc4: case 0xd9: PushBytes(L, c, Take(L, c, 1)); break;
      case 0xc5: case 0xda: PushBytes(L, c, Take(L, c, 2)); break;
      case 0xc6: case 0xdb: PushBytes(L, c, Take(L, c, 4)); break;
      case 0xca: {
        const uint32_t bits = static_cast<uint32_t>(Take(L, c, 4));
        float f;
        std::memcpy(&f, &bits, 4);
        lua_pushnumber(L, static_cast<double>(f));
        break;
      }
      case 0xcb: {
        const uint64_t bits = Take(L, c, 8);
        double d;
        std::memcpy(&d, &bits, 8);
        lua_pushnumber(L, d);
        break;
      }
      case 0xcc: lua_pushinteger(L, static_cast<lua_Integer>(Take(L, c, 1))); break;
      case 0xcd: lua_pushinteger(L, static_cast<lua_Integer>(Take(L, c, 2))); break;
      case 0xce: lua_pushinteger(L, static_cast<lua_Integer>(Take(L, c, 4))); break;
      case 0xcf: {
        const uint64_t u = Take(L, c, 8);
        if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          lua_pushnumber(L, static_cast<double>(u));
        } else {
          lua_pushinteger(L, static_cast<lua_Integer>(u));
        }
        break;
      }
      case 0xd0: lua_pushinteger(L, static_cast<int8_t>(Take(L, c, 1))); break;
      case 0xd1: lua_pushinteger(L, static_cast<int16_t>(Take(L, c, 2))); break;
      case 0xd2: lua_pushinteger(L, static_cast<int32_t>(Take(L, c, 4))); break;
      case 0xd3: lua_pushinteger(L, static_cast<int64_t>(Take(L, c, 8))); break;
      case 0xdc: UnpackArray(L, c, Take(L, c, 2), level); break;
      case 0xdd: UnpackArray(L, c, Take(L, c, 4), level); break;
      case 0xde: UnpackMap(L, c, Take(L, c, 2), level); break;
      case 0xdf: UnpackMap(L, c, Take(L, c, 4), level); break;
      default: luaL_error(L, "Bad data format in input.");
    }
  }
}

// Decodes up to limit objects (0: all) of the string at 1 from offset;
// pushes the next offset (-1 at the end) first when with_offset.
int UnpackFull(lua_State* L, lua_Integer limit, lua_Integer offset, bool with_offset) {
  size_t len;
  const char* s = luaL_checklstring(L, 1, &len);
  if (offset < 0 || limit < 0) return luaL_error(L, "Invalid request to unpack with offset of %d and limit of %d.", static_cast<int>(offset), static_cast<int>(limit));
  if (static_cast<size_t>(offset) > len) return luaL_error(L, "Start offset %d greater than input length %d.", static_cast<int>(offset), static_cast<int>(len));
  if (with_offset) lua_pushinteger(L, 0);  // replaced at the end
  const int first = lua_gettop(L);
  Cursor c{reinterpret_cast<const unsigned char*>(s) + offset, len - static_cast<size_t>(offset)};
  int count = 0;
  while (c.left > 0 && (limit == 0 || count < limit)) {
    if (!lua_checkstack(L, 2)) return luaL_error(L, "too many objects to unpack");
    UnpackValue(L, &c, 0);
    ++count;
  }
  if (with_offset) {
    const lua_Integer next = c.left == 0 ? -1 : static_cast<lua_Integer>(len - c.left);
    lua_pushinteger(L, next);
    lua_replace(L, first);
    return count + 1;
  }
  if (count == 0) return luaL_error(L, "MessagePack unpack needs input.");  // empty string
  return count;
}

int Unpack(lua_State* L) { return UnpackFull(L, 0, 0, false); }
int UnpackOne(lua_State* L) { return UnpackFull(L, 1, luaL_optinteger(L, 2, 0), true); }
int UnpackLimit(lua_State* L) {
  return UnpackFull(L, luaL_checkinteger(L, 2), luaL_optinteger(L, 3, 0), true);
}

}  // namespace

int OpenMsgpackLib(lua_State* L) {
  static const luaL_Reg kFns[] = {{"pack", Pack},
                                  {"unpack", Unpack},
                                  {"unpack_one", UnpackOne},
                                  {"unpack_limit", UnpackLimit},
                                  {nullptr, nullptr}};
  luaL_newlib(L, kFns);
  lua_pushliteral(L, "lua-cmsgpack");
  lua_setfield(L, -2, "_NAME");
  lua_pushliteral(L, "0.4.0");
  lua_setfield(L, -2, "_VERSION");
  return 1;
}

}  // namespace trove::resp
