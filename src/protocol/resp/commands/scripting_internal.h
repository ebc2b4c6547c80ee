// What the scripting family's files share (scripting.cc: EVAL and SCRIPT;
// scripting_lua.cc: the worker's Lua VM and a script's run;
// scripting_call.cc: redis.call through the command seam;
// scripting_convert.cc: RESP to Lua and back). Runs on the connection's
// worker.
#pragma once

#include <lua5.4/lua.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "protocol/resp/core/command.h"

namespace trove::resp {

// One script's run, reached from Lua (redis.call) through the VM's extra
// space. Owner: the EVAL handler's stack frame; owner thread only.
struct ScriptRun {
  CommandContext* ctx = nullptr;  // the EVAL's context (its caller, writer, effects)
  std::vector<std::string> keys;  // the declared KEYS, as engine keys (sorted)
  bool read_only = false;         // EVAL_RO, EVALSHA_RO or a no-writes shebang
  bool allow_oom = false;         // an allow-oom shebang: writes run over maxmemory
  int resp = 2;                   // redis.setresp: the protocol of redis.call's replies
  bool wrote = false;             // a write ran: later writes skip the OOM check
};

// The run in progress on L's VM; null outside a script.
ScriptRun* CurrentRun(lua_State* L);

// Runs the script named sha on this worker's VM for ctx (EVAL and EVALSHA),
// its keys at argv[3 .. 3+numkeys) and arguments after them, and replies.
// body: the source when known (EVAL), else taken from the server's cache
// (EVALSHA: NOSCRIPT when absent). REQUIRES: the declared keys' stripes
// held (the seam locks EVAL's keys), numkeys checked.
void RunScript(CommandContext& ctx, const std::string& sha, const std::string* body,
               size_t numkeys, bool read_only);
// Compiles body into this worker's VM (SCRIPT LOAD); false with the error
// reply's text on a syntax error.
bool CompileScript(CommandContext& ctx, const std::string& sha, std::string_view body,
                   std::string* err);

// redis.call (raises a command's error) and redis.pcall (returns it as
// {err=...}); scripting_call.cc.
int LuaRedisCall(lua_State* L);
int LuaRedisPCall(lua_State* L);

// {err=msg}, pushed.
void PushErrTable(lua_State* L, std::string_view msg);
// Pushes the RESP value at s[*pos] as Redis converts a reply for Lua
// (RESP2 and RESP3 types), advancing *pos past it.
void PushReply(lua_State* L, std::string_view s, size_t* pos);
// Writes the Lua value at idx as a reply, as Redis converts a script's
// return value; resp is the script's redis.setresp (it decides booleans),
// and w's protocol gives a RESP2 caller the RESP2 forms.
void ReplyFromLua(lua_State* L, int idx, RespWriter* w, int resp, int depth = 0);

}  // namespace trove::resp
