// The conversions between RESP and Lua, as Redis documents them ("Scripting
// with Lua", data type conversion): a redis.call reply into Lua values, and a
// script's return value into a reply. Runs on the connection's worker.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>

#include "protocol/resp/commands/scripting_internal.h"

namespace trove::resp {
namespace {

// Deeper nesting in a script's return value is answered with null: a table
// holding itself would otherwise recurse without end.
constexpr int kMaxReplyDepth = 256;

// Reads a line of s from *pos (up to CR LF), advancing past it.
std::string_view Line(std::string_view s, size_t* pos) {
  const size_t eol = s.find("\r\n", *pos);
  const size_t end = eol == std::string_view::npos ? s.size() : eol;
  std::string_view l = s.substr(*pos, end - *pos);
  *pos = std::min(s.size(), end + 2);
  return l;
}

int64_t ToInt(std::string_view v) { return std::strtoll(std::string(v).c_str(), nullptr, 10); }

void PushWrapped(lua_State* L, const char* field) {  // {field = <top>}
  lua_newtable(L);
  lua_insert(L, -2);
  lua_setfield(L, -2, field);
}

// Field `name` of the table at idx, if it has type t (pushed), else false.
// Raw: a script's table may carry metamethods that raise, and this runs
// outside the script's protected call.
bool Field(lua_State* L, int idx, const char* name, int t) {
  idx = lua_absindex(L, idx);
  lua_pushstring(L, name);
  lua_rawget(L, idx);
  if (lua_type(L, -1) == t) return true;
  lua_pop(L, 1);
  return false;
}

}  // namespace

void PushErrTable(lua_State* L, std::string_view msg) {
  lua_newtable(L);
  lua_pushlstring(L, msg.data(), msg.size());
  lua_setfield(L, -2, "err");
}

// Pushes the RESP value at s[*pos] as Redis converts replies for Lua.
void PushReply(lua_State* L, std::string_view s, size_t* pos) {
  if (*pos >= s.size() || lua_checkstack(L, 4) == 0) {
    lua_pushnil(L);
    return;
  }
  const char type = s[(*pos)++];
  const std::string_view line = Line(s, pos);
  switch (type) {
    case '+':
      lua_pushlstring(L, line.data(), line.size());
      PushWrapped(L, "ok");
      return;
    case '-':
      PushErrTable(L, line);
      return;
    case ':':
      lua_pushinteger(L, ToInt(line));
      return;
    case '$':
    case '=': {
      const int64_t n = ToInt(line);
      if (n < 0) {
        lua_pushboolean(L, 0);
        return;
      }
      const std::string_view body = s.substr(*pos, static_cast<size_t>(n));
      *pos = std::min(s.size(), *pos + static_cast<size_t>(n) + 2);
      if (type == '$') {
        lua_pushlstring(L, body.data(), body.size());
        return;
      }
      lua_newtable(L);  // verbatim: "fmt:text"
      lua_pushlstring(L, body.data(), std::min<size_t>(3, body.size()));
      lua_setfield(L, -2, "format");
      const std::string_view text = body.size() > 4 ? body.substr(4) : std::string_view();
      lua_pushlstring(L, text.data(), text.size());
      lua_setfield(L, -2, "string");
      PushWrapped(L, "verbatim_string");
      return;
    }
    case '*':
    case '>':
    case '~':
    case '%': {
      const int64_t n = ToInt(line);
      if (n < 0) {
        lua_pushboolean(L, 0);
        return;
      }
      lua_newtable(L);
      for (int64_t i = 0; i < n; ++i) {
        PushReply(L, s, pos);
        if (type == '%') {
          PushReply(L, s, pos);
          lua_rawset(L, -3);
        } else if (type == '~') {
          lua_pushboolean(L, 1);
          lua_rawset(L, -3);
        } else {
          lua_rawseti(L, -2, i + 1);
        }
      }
      if (type == '%') PushWrapped(L, "map");
      if (type == '~') PushWrapped(L, "set");
      return;
    }
    case '_':
      lua_pushnil(L);
      return;
    case '#':
      lua_pushboolean(L, !line.empty() && line[0] == 't');
      return;
    case ',':
      lua_pushnumber(L, std::strtod(std::string(line).c_str(), nullptr));
      PushWrapped(L, "double");
      return;
    case '(':
      lua_pushlstring(L, line.data(), line.size());
      PushWrapped(L, "big_number");
      return;
    case '|': {  // attributes: skipped, the value follows
      for (int64_t i = 0; i < 2 * ToInt(line); ++i) {
        PushReply(L, s, pos);
        lua_pop(L, 1);
      }
      PushReply(L, s, pos);
      return;
    }
    default:
      lua_pushnil(L);
  }
}

// Writes the Lua value at idx as a reply (Redis's Lua-to-RESP rules; the
// writer gives RESP2 forms to a RESP2 caller).
void ReplyFromLua(lua_State* L, int idx, RespWriter* w, int resp, int depth) {
  idx = lua_absindex(L, idx);
  if (depth > kMaxReplyDepth || lua_checkstack(L, 4) == 0) {
    w->Error("ERR reached lua stack limit");  // Redis's answer to a too deep (or cyclic) value
    return;
  }
  switch (lua_type(L, idx)) {
    case LUA_TSTRING: {
      size_t n;
      const char* s = lua_tolstring(L, idx, &n);
      w->Bulk(std::string_view(s, n));
      return;
    }
    case LUA_TBOOLEAN:
      if (resp == 2) {
        if (lua_toboolean(L, idx))
          w->Integer(1);
        else
          w->Null();
      } else {
        w->Bool(lua_toboolean(L, idx) != 0);
      }
      return;
    case LUA_TNUMBER: {
      if (lua_isinteger(L, idx)) {
        w->Integer(lua_tointeger(L, idx));
        return;
      }
      const double d = lua_tonumber(L, idx);
      constexpr double kLim = 9223372036854775807.0;
      w->Integer(std::isnan(d) ? 0 : d >= kLim ? std::numeric_limits<int64_t>::max()
                                 : d <= -kLim ? std::numeric_limits<int64_t>::min()
                                              : static_cast<int64_t>(d));
      return;
    }
    case LUA_TTABLE:
      break;
    default:
      w->Null();
      return;
  }
  idx = lua_absindex(L, idx);
  if (Field(L, idx, "err", LUA_TSTRING)) {
    // A called command's error passed on: counted in errorstats already.
    bool counted = false;
    if (Field(L, idx, "ignore_error_stats_update", LUA_TBOOLEAN)) {
      counted = lua_toboolean(L, -1) != 0;
      lua_pop(L, 1);
    }
    if (counted) {
      w->ErrorCounted(lua_tostring(L, -1));
    } else {
      w->Error(lua_tostring(L, -1));
    }
    lua_pop(L, 1);
    return;
  }
  if (Field(L, idx, "ok", LUA_TSTRING)) {
    w->Simple(lua_tostring(L, -1));
    lua_pop(L, 1);
    return;
  }
  if (Field(L, idx, "double", LUA_TNUMBER)) {
    w->Double(lua_tonumber(L, -1));
    lua_pop(L, 1);
    return;
  }
  if (Field(L, idx, "big_number", LUA_TSTRING)) {
    w->BigNumber(lua_tostring(L, -1));
    lua_pop(L, 1);
    return;
  }
  if (Field(L, idx, "verbatim_string", LUA_TTABLE)) {
    lua_pushliteral(L, "format");
    lua_rawget(L, -2);
    lua_pushliteral(L, "string");
    lua_rawget(L, -3);
    size_t n = 0;
    const char* s = lua_tolstring(L, -1, &n);
    const char* fmt = lua_tostring(L, -2);
    w->Verbatim(s != nullptr ? std::string_view(s, n) : std::string_view(),
                fmt != nullptr ? fmt : "txt");
    lua_pop(L, 3);
    return;
  }
  const bool is_map = Field(L, idx, "map", LUA_TTABLE);
  if (is_map || Field(L, idx, "set", LUA_TTABLE)) {
    size_t count = 0;
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) {
      ++count;
      lua_pop(L, 1);
    }
    if (is_map)
      w->MapHeader(count);
    else
      w->SetHeader(count);
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) {
      lua_pushvalue(L, -2);  // a copy: converting the key must not disturb lua_next
      ReplyFromLua(L, -1, w, resp, depth + 1);
      lua_pop(L, 1);
      if (is_map) ReplyFromLua(L, -1, w, resp, depth + 1);
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return;
  }
  size_t n = 0;  // an array, up to its first nil
  while (lua_rawgeti(L, idx, static_cast<lua_Integer>(n + 1)) != LUA_TNIL) {
    ++n;
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  w->ArrayHeader(n);
  for (size_t i = 1; i <= n; ++i) {
    lua_rawgeti(L, idx, static_cast<lua_Integer>(i));
    ReplyFromLua(L, -1, w, resp, depth + 1);
    lua_pop(L, 1);
  }
}

}  // namespace trove::resp
