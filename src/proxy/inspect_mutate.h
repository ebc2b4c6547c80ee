// Inspectors and mutators (memcached's proxy_inspector.c and
// proxy_mutator.c): step lists compiled once, when a route config makes
// them, into arrays of C++ step structs, then run over request and response
// objects with no allocation per call; and the per-slot user objects
// (rctx:request_new / rctx:response_new) mutators write into.
//
// Worker VMs only; each VM on its owner worker thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <lua5.4/lua.hpp>
#include <string_view>

namespace trove::proxy {

struct RequestUd;
struct ResponseUd;

// Adds mcp.req_mutator_new, mcp.res_mutator_new, the inspectors (through
// OpenInspectorFunctions) and rctx:request_new / rctx:response_new to the
// mcp table on the stack top. REQUIRES: the rctx metatable exists
// (OpenRctxFunctions ran).
void OpenInspectMutateFunctions(lua_State* L);
// mcp.req_inspector_new, mcp.res_inspector_new and their metatable.
void OpenInspectorFunctions(lua_State* L);
// rctx:request_new / rctx:response_new and the registry table that keeps
// each slot's user objects (user_objects.cc).
void OpenUserObjectFunctions(lua_State* L);
// Back to a blank object (no line, no reply); buffers keep their capacity.
void BlankRequest(RequestUd* r);
void BlankResponse(ResponseUd* r);

// --- shared by inspectors and mutators ---

// memcached's proxy_lua_ferror: raises a Lua error whose message is the
// formatted text alone (luaL_error would prefix the calling Lua line, which
// memcached's messages do not have). Never returns.
int RaisePlain(lua_State* L, const char* fmt, ...);

// The entry of `kinds` that step table `x` names in its "t" field (each
// Kind has name, req and res), raising memcached's error when there is none
// or it is not for this side (`response` or request). `what` is "inspector"
// or "mutator", as in the error text. Never returns nullptr.
template <typename Kind, size_t N>
const Kind* StepKindArg(lua_State* L, int x, const Kind (&kinds)[N], bool response,
                        const char* what) {
  if (lua_getfield(L, x, "t") == LUA_TNIL) RaisePlain(L, "%s step %d: unknown step type", what, x);
  const char* name = luaL_checkstring(L, -1);
  const Kind* kind = nullptr;
  for (const Kind& k : kinds) {
    if (std::strcmp(name, k.name) == 0) kind = &k;
  }
  lua_pop(L, 1);
  if (kind == nullptr) RaisePlain(L, "%s step %d: unknown step type", what, x);
  if (!(response ? kind->res : kind->req)) {
    RaisePlain(L, "%s step %d: step incompatible with %s type", what, x, what);
  }
  return kind;
}

// The number of step tables a *_new call got: every argument must be a
// table, and only a worker VM makes `what` ("inspectors", "mutators");
// otherwise a Lua error.
int StepTableArgs(lua_State* L, const char* what);

// The 'flag' field of step table `t`: one character from 'A' to 'z', or a
// Lua error in memcached's words, which name the step `what` ("inspector",
// "mutator"), but `what_alnum` in the alphanumeric one (memcached's
// inspector says "inspect" there).
char StepFlagField(lua_State* L, int t, const char* what, const char* what_alnum);

// A meta reply (mcmc's MCMC_RESP_META): HD, VA, EN, NF, NS, EX, MN, ME.
bool IsMetaReply(const ResponseUd& r);
// The flags of a meta reply: its line after the code (after a VA's
// length); empty for other replies.
std::string_view ReplyMetaFlags(const ResponseUd& r);
// The first space-separated token of `flags` that starts with f: *found,
// and the token without its flag (mcmc_token_get_flag).
std::string_view FlagTokenIn(std::string_view flags, char f, bool* found);
// The same over a request's meta flags (after its key, after an ms's
// length); never found for a text command.
std::string_view RequestFlagToken(const RequestUd& r, char f, bool* found);
// mcmc_tokto64: an optional '-' then only digits, at most 22 bytes, no
// overflow. ("-" alone is 0, as in mcmc.)
bool TokenToInt64(std::string_view s, int64_t* out);

}  // namespace trove::proxy
