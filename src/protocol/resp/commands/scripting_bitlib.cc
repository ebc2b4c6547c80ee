// The `bit` library Redis scripts use (LuaBitOp's API: 32-bit operations
// whose results are signed 32-bit integers), written for Lua 5.4: tobit,
// bnot, band, bor, bxor, lshift, rshift, arshift, rol, ror, bswap, tohex.
// Runs on the worker's VM; no state.
#include <cmath>
#include <cstdint>

#include "protocol/resp/commands/scripting_internal.h"

namespace trove::resp {
namespace {

// The argument at i as 32 bits: integers wrap, other numbers round to the
// nearest integer first (as LuaBitOp's 2^52+2^51 addition does).
uint32_t Arg(lua_State* L, int i) {
  int isint = 0;
  const lua_Integer v = lua_tointegerx(L, i, &isint);
  if (isint != 0) return static_cast<uint32_t>(v);
  const double d = luaL_checknumber(L, i);
  const double r = std::fmod(std::nearbyint(d), 4294967296.0);
  return static_cast<uint32_t>(static_cast<int64_t>(r));
}

int Push(lua_State* L, uint32_t v) {
  lua_pushinteger(L, static_cast<int32_t>(v));
  return 1;
}

int BitToBit(lua_State* L) { return Push(L, Arg(L, 1)); }
int BitNot(lua_State* L) { return Push(L, ~Arg(L, 1)); }

int BitAnd(lua_State* L) {
  uint32_t v = Arg(L, 1);
  for (int i = lua_gettop(L); i > 1; --i) v &= Arg(L, i);
  return Push(L, v);
}

int BitOr(lua_State* L) {
  uint32_t v = Arg(L, 1);
  for (int i = lua_gettop(L); i > 1; --i) v |= Arg(L, i);
  return Push(L, v);
}

int BitXor(lua_State* L) {
  uint32_t v = Arg(L, 1);
  for (int i = lua_gettop(L); i > 1; --i) v ^= Arg(L, i);
  return Push(L, v);
}

int BitLShift(lua_State* L) { return Push(L, Arg(L, 1) << (Arg(L, 2) & 31)); }
int BitRShift(lua_State* L) { return Push(L, Arg(L, 1) >> (Arg(L, 2) & 31)); }

int BitArShift(lua_State* L) {
  const int32_t v = static_cast<int32_t>(Arg(L, 1));
  return Push(L, static_cast<uint32_t>(v >> (Arg(L, 2) & 31)));
}

int BitRol(lua_State* L) {
  const uint32_t v = Arg(L, 1), n = Arg(L, 2) & 31;
  return Push(L, n == 0 ? v : (v << n) | (v >> (32 - n)));
}

int BitRor(lua_State* L) {
  const uint32_t v = Arg(L, 1), n = Arg(L, 2) & 31;
  return Push(L, n == 0 ? v : (v >> n) | (v << (32 - n)));
}

int BitSwap(lua_State* L) {
  const uint32_t v = Arg(L, 1);
  return Push(L, (v >> 24) | ((v >> 8) & 0xff00) | ((v & 0xff00) << 8) | (v << 24));
}

int BitToHex(lua_State* L) {
  uint32_t v = Arg(L, 1);
  int32_t n = lua_isnone(L, 2) ? 8 : static_cast<int32_t>(Arg(L, 2));
  const char* digits = "0123456789abcdef";
  if (n < 0) {
    n = -n;
    digits = "0123456789ABCDEF";
  }
  if (n > 8) n = 8;
  char buf[8];
  for (int i = n - 1; i >= 0; --i) {
    buf[i] = digits[v & 15];
    v >>= 4;
  }
  lua_pushlstring(L, buf, static_cast<size_t>(n));
  return 1;
}

}  // namespace

int OpenBitLib(lua_State* L) {
  static const luaL_Reg kFns[] = {{"tobit", BitToBit},     {"bnot", BitNot},
                                  {"band", BitAnd},        {"bor", BitOr},
                                  {"bxor", BitXor},        {"lshift", BitLShift},
                                  {"rshift", BitRShift},   {"arshift", BitArShift},
                                  {"rol", BitRol},         {"ror", BitRor},
                                  {"bswap", BitSwap},      {"tohex", BitToHex},
                                  {nullptr, nullptr}};
  luaL_newlib(L, kFns);
  return 1;
}

}  // namespace trove::resp
