// The `redis` table scripts see: call, pcall, acl_check_cmd (with the
// command seam, scripting_call.cc), error_reply, status_reply, sha1hex,
// log, setresp, set_repl and replicate_commands (no-ops), the LOG_* and
// REPL_* constants and the version fields. Runs on the worker's VM. Lua
// errors longjmp: no C++ object with a destructor lives in a frame that
// luaL_error leaves.
#include <cstdio>
#include <cstring>
#include <string>

#include "common/sha1.h"
#include "protocol/resp/commands/scripting_internal.h"
#include "protocol/resp/commands/server_commands.h"

namespace trove::resp {
namespace {

// {err=<msg>}, <msg> given a code: "-CODE msg" and "msg" (ERR added when
// it has no space) as Redis's redis.error_reply accepts.
int LuaErrorReply(lua_State* L) {
  if (lua_gettop(L) != 1 || lua_type(L, 1) != LUA_TSTRING)
    return luaL_error(L, "wrong number or type of arguments");
  size_t n;
  const char* s = lua_tolstring(L, 1, &n);
  if (n > 0 && s[0] == '-') {
    ++s;
    --n;
  }
  lua_newtable(L);
  if (std::memchr(s, ' ', n) == nullptr) {
    lua_pushliteral(L, "ERR ");
    lua_pushlstring(L, s, n);
    lua_concat(L, 2);
  } else {
    lua_pushlstring(L, s, n);
  }
  lua_setfield(L, -2, "err");
  return 1;
}

int LuaStatusReply(lua_State* L) {
  if (lua_gettop(L) != 1 || lua_type(L, 1) != LUA_TSTRING)
    return luaL_error(L, "wrong number or type of arguments");
  lua_newtable(L);
  lua_pushvalue(L, 1);
  lua_setfield(L, -2, "ok");
  return 1;
}

int LuaSha1Hex(lua_State* L) {
  if (lua_gettop(L) != 1) return luaL_error(L, "wrong number of arguments");
  size_t n;
  const char* s = lua_tolstring(L, 1, &n);
  if (s == nullptr) return luaL_error(L, "wrong number of arguments");
  char hex[41];
  {
    const std::string h = Sha1Hex(std::string_view(s, n));
    std::memcpy(hex, h.data(), 40);
  }
  lua_pushlstring(L, hex, 40);
  return 1;
}

int LuaSetResp(lua_State* L) {
  if (lua_gettop(L) != 1) return luaL_error(L, "redis.setresp() requires one argument.");
  const lua_Integer v = lua_tointeger(L, 1);
  if (v != 2 && v != 3) return luaL_error(L, "RESP version must be 2 or 3.");
  if (ScriptRun* run = CurrentRun(L)) run->resp = static_cast<int>(v);
  return 0;
}

int LuaSetRepl(lua_State*) { return 0; }  // no replication in Trove

int LuaReplicateCommands(lua_State* L) {
  lua_pushboolean(L, 1);
  return 1;
}

void SetInt(lua_State* L, const char* name, lua_Integer v) {
  lua_pushinteger(L, v);
  lua_setfield(L, -2, name);
}

}  // namespace

void OpenRedisTable(lua_State* L) {
  static const luaL_Reg kFns[] = {{"call", LuaRedisCall},
                                  {"pcall", LuaRedisPCall},
                                  {"acl_check_cmd", LuaAclCheckCmd},
                                  {"error_reply", LuaErrorReply},
                                  {"status_reply", LuaStatusReply},
                                  {"sha1hex", LuaSha1Hex},
                                  {"log", LuaLog},
                                  {"setresp", LuaSetResp},
                                  {"set_repl", LuaSetRepl},
                                  {"replicate_commands", LuaReplicateCommands},
                                  {nullptr, nullptr}};
  luaL_newlib(L, kFns);
  SetInt(L, "LOG_DEBUG", 0);
  SetInt(L, "LOG_VERBOSE", 1);
  SetInt(L, "LOG_NOTICE", 2);
  SetInt(L, "LOG_WARNING", 3);
  SetInt(L, "REPL_NONE", 0);
  SetInt(L, "REPL_AOF", 1);
  SetInt(L, "REPL_SLAVE", 2);
  SetInt(L, "REPL_REPLICA", 2);
  SetInt(L, "REPL_ALL", 3);
  lua_pushstring(L, kRedisVersion);
  lua_setfield(L, -2, "REDIS_VERSION");
  int major = 0, minor = 0, patch = 0;
  std::sscanf(kRedisVersion, "%d.%d.%d", &major, &minor, &patch);
  SetInt(L, "REDIS_VERSION_NUM", (major << 16) | (minor << 8) | patch);
  lua_setglobal(L, "redis");
}


// redis.log: accepted and dropped (Trove has no server log for scripts yet).
int LuaLog(lua_State* L) {
  if (lua_gettop(L) < 2) return luaL_error(L, "redis.log() requires two arguments or more.");
  if (!lua_isnumber(L, 1)) return luaL_error(L, "First argument must be a number (log level).");
  const lua_Integer level = lua_tointeger(L, 1);
  if (level < 0 || level > 3) return luaL_error(L, "Invalid debug level.");
  // Redis's default loglevel, notice: LOG_NOTICE and LOG_WARNING are
  // written (to stderr, Trove's log), LOG_DEBUG and LOG_VERBOSE are not.
  // The arguments are joined with spaces, as Redis does.
  if (level < 2) return 0;
  const int n = lua_gettop(L);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, level == 3 ? "# " : "* ");
  for (int i = 2; i <= n; ++i) {
    if (i > 2) luaL_addchar(&b, ' ');
    const int t = lua_type(L, i);
    if (t != LUA_TSTRING && t != LUA_TNUMBER) continue;  // skipped, as Redis does
    lua_pushvalue(L, i);
    luaL_addvalue(&b);  // a number is converted
  }
  luaL_addchar(&b, '\n');
  luaL_pushresult(&b);
  size_t len;
  const char* line = lua_tolstring(L, -1, &len);
  std::fwrite(line, 1, len, stderr);
  lua_pop(L, 1);
  return 0;
}

// The message handler of a script's pcall: the error as a table {err=,
// source=, line=} naming the script's line (the caller of a C function
// such as error or redis.call), as Redis reports it.
}  // namespace trove::resp
