// The mcp functions of the worker VMs: attach, rate limiters and user
// stats; function generators and request contexts are in rctx_lib.cc,
// request and response objects in request_lib.cc.
#include <cstring>
#include <string>

#include "protocol/memcache/text_parser.h"
#include "proxy/inspect_mutate.h"
#include "proxy/lua_vm.h"
#include "proxy/runtime.h"
#include "proxy/worker.h"

namespace trove::proxy {
namespace {

ProxyWorker* WorkerOf(lua_State* L, const char* fn) {
  VmContext* c = Ctx(L);
  if (c->worker == nullptr) {
    luaL_error(L, "%s may only be called from mcp_config_routes or a route (a worker VM)", fn);
    return nullptr;
  }
  return c->worker;
}


}  // namespace

void PushBareFuncgen(lua_State* L, int idx);
void OpenRctxFunctions(lua_State* L);
void OpenRequestFunctions(lua_State* L);

namespace {

// --- mcp.attach -----------------------------------------------------------

void AttachOne(lua_State* L, int tags_idx, const std::string& tag, int cmd, int fn_idx) {
  lua_getfield(L, tags_idx, tag.c_str());
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, tags_idx, tag.c_str());
  }
  lua_pushvalue(L, fn_idx);
  lua_rawseti(L, -2, cmd);
  lua_pop(L, 1);
}

// mcp.attach(cmd, funcgen | function[, tag])
int Attach(lua_State* L) {
  ProxyWorker* w = WorkerOf(L, "mcp.attach");
  const lua_Integer cmd = luaL_checkinteger(L, 1);
  if (!lua_isfunction(L, 2) && luaL_testudata(L, 2, kFuncgenMt) == nullptr) {
    return luaL_error(L, "mcp.attach: must pass a function");
  }
  if (luaL_testudata(L, 2, kFuncgenMt) != nullptr) {
    auto* fg = static_cast<FuncgenUd*>(lua_touserdata(L, 2));
    if (!fg->ready) return luaL_error(L, "mcp.attach: function generator is not ready (call fg:ready first)");
  } else {
    // A plain function: an "anonymous" funcgen around it, as memcached does.
    PushBareFuncgen(L, 2);
    lua_replace(L, 2);
  }
  std::string tag;
  if (!lua_isnoneornil(L, 3)) {
    size_t n = 0;
    const char* t = luaL_checklstring(L, 3, &n);
    if (n == 0 || n > 8) return luaL_error(L, "mcp.attach: tag must be 1 to 8 characters");
    tag.assign(t, n);
  }
  if (w->pending_hooks_ref() == LUA_NOREF) {
    return luaL_error(L, "mcp.attach may only be called from mcp_config_routes");
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, w->pending_hooks_ref());
  const int tags_idx = lua_gettop(L);
  // As memcached: every command number takes a hook but mn, which is
  // skipped without an error (the client's pipeline flushes rely on it).
  // Only what the request parser knows ever runs one: the storage commands
  // and version, stats, watch and quit; a hook on shutdown, flush_all,
  // slabs... is kept and never reached (memcached's proxy does not parse
  // them; Trove serves them itself).
  int first = static_cast<int>(cmd), end = first + 1;
  if (cmd == kCmdAny || cmd == kCmdAnyStorage) {
    first = 1;
    end = cmd == kCmdAnyStorage ? kCmdEndStorage : kCmdSize;
  } else if (cmd <= 0 || cmd >= kCmdSize) {
    // memcached writes past its hook array here.
    return luaL_error(L, "mcp.attach: unknown command number %d", static_cast<int>(cmd));
  }
  for (int c = first; c < end; ++c) {
    if (c != kCmdMn) AttachOne(L, tags_idx, tag, c, 2);
  }
  lua_pop(L, 1);
  return 0;
}

// --- rate limiters and stats ----------------------------------------------

struct TbfUd {
  int64_t limit, fill, tick, bucket, last;
};

int TbfNew(lua_State* L) {
  (void)WorkerOf(L, "mcp.ratelim_tbf");
  int64_t v[3];
  CheckTbfTable(L, 1, v);
  void* p = lua_newuserdatauv(L, sizeof(TbfUd), 0);
  new (p) TbfUd{v[0], v[1], v[2], v[0], NowMs()};
  luaL_setmetatable(L, kTbfMt);
  return 1;
}

int TbfCall(lua_State* L) {
  auto* t = static_cast<TbfUd*>(luaL_checkudata(L, 1, kTbfMt));
  const lua_Integer n = luaL_optinteger(L, 2, 1);
  lua_pushboolean(L, GlobalTbf::TbfTake(&t->bucket, &t->last, t->limit, t->fill, t->tick, n, NowMs()));
  return 1;
}

int GlobalTbfCall(lua_State* L) {
  auto* t = static_cast<GlobalTbfUd*>(luaL_checkudata(L, 1, kGlobalTbfMt));
  const lua_Integer n = luaL_optinteger(L, 2, 1);
  lua_pushboolean(L, t->tbf->Take(n, NowMs()));
  return 1;
}

// mcp.stat(index, delta): adds to a user stat (wrapping as memcached's uint64).
int Stat(lua_State* L) {
  ProxyWorker* w = WorkerOf(L, "mcp.stat");
  const lua_Integer idx = luaL_checkinteger(L, 1);
  const lua_Integer d = luaL_checkinteger(L, 2);
  // memcached's bound: the highest index mcp.add_stat was given.
  if (idx < 1 || idx > w->ustat_max()) return luaL_error(L, "stat index out of range");
  w->ustat(static_cast<int>(idx)).fetch_add(static_cast<uint64_t>(d), std::memory_order_relaxed);
  return 0;
}

}  // namespace

void OpenWorkerFunctions(lua_State* L) {
  OpenRctxFunctions(L);
  OpenRequestFunctions(L);
  OpenInspectMutateFunctions(L);
  VmContext* ctx = Ctx(L);
  for (auto [name, slot] : {std::pair{kRequestMt, &ctx->request_mt},
                            std::pair{kResponseMt, &ctx->response_mt},
                            std::pair{kRctxMt, &ctx->rctx_mt}}) {
    luaL_getmetatable(L, name);
    *slot = lua_topointer(L, -1);
    lua_pop(L, 1);
  }
  static const luaL_Reg kNone[] = {{nullptr, nullptr}};
  RegisterMethods(L, kPoolProxyMt, kNone, GcUd<PoolProxyUd>);
  NewUdMetatable(L, kTbfMt, nullptr, TbfCall);
  NewUdMetatable(L, kGlobalTbfMt, GcUd<GlobalTbfUd>, GlobalTbfCall);
  static const luaL_Reg kFns[] = {
      {"attach", Attach},      {"ratelim_tbf", TbfNew},
      {"stat", Stat},          {nullptr, nullptr},
  };
  luaL_setfuncs(L, kFns, 0);
  OpenInternalFunctions(L);  // mcp.internal, mcp.internal_handler, mcp.server_stats
}

}  // namespace trove::proxy
