// The Lua side of function generators and request contexts: mcp.funcgen_new,
// fg:new_handle, fg:ready, and the rctx methods (enqueue, the waits, sleep,
// results). A wait is a C function that queues and sets the wait, then a
// Lua wrapper yields: Lua's longjmp crosses only Lua frames, never C++
// ones (see rctx.h for the engine).
#include "proxy/inspect_mutate.h"
#include "proxy/lua_vm.h"
#include "proxy/rctx.h"
#include "proxy/router.h"
#include "proxy/worker.h"

namespace trove::proxy {
namespace {

Rctx* CheckRctx(lua_State* L) {
  return static_cast<Rctx*>(CheckUd(L, 1, Ctx(L)->rctx_mt, kRctxMt));
}

// Handles are 1-based in Lua; the slot's vector is 0-based.
size_t HandleArg(lua_State* L, Rctx* rc, int idx, const char* fn) {
  int isnum = 0;
  const lua_Integer h = lua_tointegerx(L, idx, &isnum);
  if (!isnum || h < 1 || static_cast<size_t>(h) > rc->h.size()) {
    luaL_error(L, "invalid handle passed to %s", fn);
  }
  return static_cast<size_t>(h - 1);
}

void RequireIdle(lua_State* L, Rctx* rc, const char* fn) {
  if (rc->wait_mode != kWaitIdle) luaL_error(L, "%s: cannot call while already in wait mode", fn);
  if (!lua_isyieldable(L)) luaL_error(L, "%s: not inside a request", fn);
}

// --- function generators ----------------------------------------------------

int FuncgenNew(lua_State* L) {
  VmContext* ctx = Ctx(L);
  if (ctx->worker == nullptr) {
    return luaL_error(L, "mcp.funcgen_new may only be called from mcp_config_routes (a worker VM)");
  }
  auto* fg = new (lua_newuserdatauv(L, sizeof(FuncgenUd), 2)) FuncgenUd{};
  fg->worker = ctx->worker;
  luaL_setmetatable(L, kFuncgenMt);
  lua_createtable(L, 0, 3);
  lua_newtable(L);
  lua_setfield(L, -2, "handles");
  lua_setiuservalue(L, -2, 1);
  lua_newtable(L);
  lua_setiuservalue(L, -2, 2);
  return 1;
}

int FuncgenNewHandle(lua_State* L) {
  auto* fg = static_cast<FuncgenUd*>(luaL_checkudata(L, 1, kFuncgenMt));
  if (fg->router != nullptr) return luaL_error(L, "new_handle: not on a router");
  if (fg->ready) return luaL_error(L, "new_handle: the function generator is already ready");
  if (luaL_testudata(L, 2, kPoolProxyMt) == nullptr && luaL_testudata(L, 2, kInternalMt) == nullptr) {
    auto* child = static_cast<FuncgenUd*>(luaL_testudata(L, 2, kFuncgenMt));
    if (child == nullptr) {
      return luaL_error(L, "new_handle: expected a pool, mcp.internal_handler or a function generator");
    }
    if (child->router != nullptr) return luaL_error(L, "new_handle: a router cannot be a handle");
    if (!child->ready) return luaL_error(L, "new_handle: the function generator is not ready");
  }
  lua_getiuservalue(L, 1, 1);
  lua_getfield(L, -1, "handles");
  const lua_Integer n = luaL_len(L, -1) + 1;
  lua_pushvalue(L, 2);
  lua_rawseti(L, -2, n);
  lua_pushinteger(L, n);
  return 1;
}

int FuncgenReady(lua_State* L) {
  auto* fg = static_cast<FuncgenUd*>(luaL_checkudata(L, 1, kFuncgenMt));
  luaL_checktype(L, 2, LUA_TTABLE);
  if (fg->ready) return luaL_error(L, "ready: called twice on one function generator");
  lua_getiuservalue(L, 1, 1);
  const int ut = lua_gettop(L);
  lua_getfield(L, 2, "f");
  if (!lua_isfunction(L, -1)) return luaL_error(L, "ready: 'f' must be a generator function");
  lua_setfield(L, ut, "gen");
  lua_getfield(L, 2, "a");
  lua_setfield(L, ut, "arg");
  lua_getfield(L, 2, "n");
  if (lua_isstring(L, -1)) {
    fg->name = lua_tostring(L, -1);
  } else if (!lua_isnil(L, -1)) {
    return luaL_error(L, "ready: 'n' must be a string");
  }
  lua_pop(L, 1);
  if (fg->name.empty()) fg->name = "anonymous";
  // u: user objects per slot (rctx:request_new / response_new); a value
  // that is not a number is ignored, as memcached does.
  if (lua_getfield(L, 2, "u") == LUA_TNUMBER) {
    const lua_Integer u = luaL_checkinteger(L, -1);
    if (u < 1 || u > kMaxUserObjs) {
      return RaisePlain(L, "user obj ('u') in fgen:ready must be between 1 and %d", kMaxUserObjs);
    }
    fg->user_objs = static_cast<int>(u);
  }
  lua_pop(L, 1);
  lua_getfield(L, 2, "l");
  if (!lua_isnil(L, -1)) return luaL_error(L, "ready: option 'l' is not supported by Trove yet");
  lua_pop(L, 1);
  fg->ready = true;
  fg->worker->CountFuncgen(fg->name, 1, 0);
  // memcached makes the first slot at once, so a broken generator fails
  // the (re)load rather than the first request.
  fg->worker->NewSlot(L, 1);  // pushes the rctx
  lua_getiuservalue(L, 1, 2);
  lua_pushvalue(L, -2);
  lua_rawseti(L, -2, static_cast<lua_Integer>(lua_rawlen(L, -2)) + 1);
  return 0;
}

int FuncgenGc(lua_State* L) {
  auto* fg = static_cast<FuncgenUd*>(lua_touserdata(L, 1));
  if (fg->ready) fg->worker->CountFuncgen(fg->name, fg->retired ? 0 : -1, -fg->slots);
  if (fg->router != nullptr) {
    fg->router->Unref(L);
    delete fg->router;
    fg->router = nullptr;
  }
  fg->~FuncgenUd();
  return 0;
}

// A plain function given to mcp.attach: a funcgen whose generator returns it.
int BareGen(lua_State* L) {
  lua_pushvalue(L, lua_upvalueindex(1));
  return 1;
}

// --- rctx ---------------------------------------------------------------------

int RctxGc(lua_State* L) {
  auto* rc = static_cast<Rctx*>(lua_touserdata(L, 1));
  rc->worker->ForgetSlot(rc);
  rc->~Rctx();
  return 0;
}

// rctx:enqueue(r, h | {h...})
int RctxEnqueue(lua_State* L) {
  Rctx* rc = CheckRctx(L);
  (void)CheckUd(L, 2, Ctx(L)->request_mt, kRequestMt);
  if (rc->wait_mode != kWaitIdle) return luaL_error(L, "enqueue: cannot enqueue new requests while in a wait");
  if (lua_type(L, 3) == LUA_TNUMBER) {
    rc->worker->Enqueue(L, rc, HandleArg(L, rc, 3, "enqueue"), 2);
  } else if (lua_type(L, 3) == LUA_TTABLE) {
    const auto n = static_cast<lua_Integer>(lua_rawlen(L, 3));
    for (lua_Integer i = 1; i <= n; ++i) {
      lua_rawgeti(L, 3, i);
      if (lua_type(L, -1) != LUA_TNUMBER) return luaL_error(L, "invalid handle passed to queue via array table");
      rc->worker->Enqueue(L, rc, HandleArg(L, rc, lua_gettop(L), "enqueue"), 2);
      lua_pop(L, 1);
    }
  } else {
    return luaL_error(L, "must pass a handle or a table to queue");
  }
  return 0;
}

// The C halves of the waits (the Lua wrappers yield).
int SubmitEnqueueAndWait(lua_State* L) {
  Rctx* rc = CheckRctx(L);
  (void)CheckUd(L, 2, Ctx(L)->request_mt, kRequestMt);
  RequireIdle(L, rc, "enqueue_and_wait");
  const size_t hi = HandleArg(L, rc, 3, "enqueue_and_wait");
  rc->worker->Enqueue(L, rc, hi, 2);
  rc->worker->PrepareWait(L, rc, kWaitHandle, 1, hi, lua_gettop(L) > 3 ? 4 : 0);
  return 0;
}

int SubmitWaitCond(lua_State* L) {
  Rctx* rc = CheckRctx(L);
  RequireIdle(L, rc, "wait_cond");
  int isnum = 0;
  const lua_Integer n = lua_tointegerx(L, 2, &isnum);
  if (!isnum || n < 0) return luaL_error(L, "wait count for wait_cond must be a positive integer");
  lua_Integer mode = kWaitAny;
  if (!lua_isnoneornil(L, 3)) mode = lua_tointeger(L, 3);
  if (mode < kWaitAny || mode > kWaitFastGood) return luaL_error(L, "invalid mode sent to wait_cond");
  rc->worker->PrepareWait(L, rc, n == 0 ? kWaitZero : static_cast<WaitMode>(mode),
                          static_cast<int>(n), 0, lua_gettop(L) > 3 ? 4 : 0);
  return 0;
}

int SubmitWaitHandle(lua_State* L) {
  Rctx* rc = CheckRctx(L);
  RequireIdle(L, rc, "wait_handle");
  const size_t hi = HandleArg(L, rc, 2, "wait_handle");
  if (rc->h[hi].state == HandleSlot::kIdle) return luaL_error(L, "wait_handle called on unqueued handle");
  rc->worker->PrepareWait(L, rc, kWaitHandle, 1, hi, lua_gettop(L) > 2 ? 3 : 0);
  return 0;
}

int SubmitSleep(lua_State* L) {
  Rctx* rc = CheckRctx(L);
  RequireIdle(L, rc, "sleep");
  luaL_checknumber(L, 2);
  rc->worker->PrepareWait(L, rc, kWaitSleep, 0, 0, 2);
  return 0;
}

void PushResult(lua_State* L, const HandleSlot& hs) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, hs.result_ref != LUA_NOREF ? hs.result_ref : hs.res_ref);
}

int ResWith(lua_State* L, uint8_t mask, const char* fn) {
  Rctx* rc = CheckRctx(L);
  const HandleSlot& hs = rc->h[HandleArg(L, rc, 2, fn)];
  if (hs.flags & mask) {
    PushResult(L, hs);
  } else {
    lua_pushnil(L);
  }
  return 1;
}
int RctxResGood(lua_State* L) { return ResWith(L, kResGood, "res_good"); }
int RctxResOk(lua_State* L) { return ResWith(L, kResGood | kResOk, "res_ok"); }
int RctxResAny(lua_State* L) { return ResWith(L, kResGood | kResOk | kResAny, "res_any"); }

constexpr uint8_t kResMask = kResGood | kResOk | kResAny;

int RctxResult(lua_State* L) {
  Rctx* rc = CheckRctx(L);
  const HandleSlot& hs = rc->h[HandleArg(L, rc, 2, "result")];
  if (hs.flags & kResMask) {
    PushResult(L, hs);
    lua_pushinteger(L, hs.flags & kResMask);
  } else {
    lua_pushnil(L);
    lua_pushnil(L);
  }
  return 2;
}

// best_result({h...}): the first GOOD, else the last OK, else the last error.
// worst_result({h...}): the highest flags (error > miss > hit), last on ties.
int BestWorst(lua_State* L, bool best) {
  Rctx* rc = CheckRctx(L);
  if (!lua_istable(L, 2)) return luaL_error(L, "must pass a table to :%s", best ? "best_result" : "worst_result");
  const auto n = static_cast<lua_Integer>(lua_rawlen(L, 2));
  const HandleSlot* pick = nullptr;
  bool have_ok = false;
  uint8_t worst = 0;
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_rawgeti(L, 2, i);
    const HandleSlot& hs = rc->h[HandleArg(L, rc, lua_gettop(L), "best_result")];
    lua_pop(L, 1);
    if (hs.flags == 0) continue;
    if (best) {
      if (hs.flags & kResGood) {
        pick = &hs;
        break;
      }
      if (hs.flags & kResOk) {
        pick = &hs;
        have_ok = true;
      } else if (!have_ok) {
        pick = &hs;
      }
    } else if (worst <= hs.flags) {
      worst = hs.flags;
      pick = &hs;
    }
  }
  if (pick == nullptr) {
    lua_pushnil(L);
    lua_pushnil(L);
  } else {
    PushResult(L, *pick);
    lua_pushinteger(L, pick->flags & kResMask);
  }
  return 2;
}
int RctxBestResult(lua_State* L) { return BestWorst(L, true); }
int RctxWorstResult(lua_State* L) { return BestWorst(L, false); }

int RctxCfd(lua_State* L) {
  Rctx* rc = CheckRctx(L);
  while (rc->is_child && rc->parent != nullptr) rc = rc->parent;
  lua_pushinteger(L, rc->cfd);
  return 1;
}

// memcached's rctx:tls_peer_cn(): the client's verified certificate's
// subject CN, or nil (no TLS, no certificate, no CN).
int RctxTlsPeerCn(lua_State* L) {
  Rctx* rc = CheckRctx(L);
  while (rc->is_child && rc->parent != nullptr) rc = rc->parent;
  if (rc->peer_cn == nullptr) {
    lua_pushnil(L);
  } else {
    lua_pushlstring(L, rc->peer_cn->data(), rc->peer_cn->size());
  }
  return 1;
}

int RctxHandleSetCb(lua_State* L) {
  Rctx* rc = CheckRctx(L);
  HandleSlot& hs = rc->h[HandleArg(L, rc, 2, "handle_set_cb")];
  luaL_checktype(L, 3, LUA_TFUNCTION);
  if (hs.cb_ref != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, hs.cb_ref);
  lua_pushvalue(L, 3);
  hs.cb_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

// The waits: submit, then yield from Lua (captured when the VM is made, so
// a config that replaces `coroutine` changes nothing).
void SetWaitWrappers(lua_State* L, int methods) {
  static const char kSrc[] =
      "local eaw, wc, wh, sl, yield = ...\n"
      "return function(rctx, r, h, t) eaw(rctx, r, h, t) return yield() end,\n"
      "  function(rctx, n, m, t) wc(rctx, n, m, t) return yield() end,\n"
      "  function(rctx, h, t) wh(rctx, h, t) return yield() end,\n"
      "  function(rctx, t) sl(rctx, t) return yield() end\n";
  if (luaL_loadbuffer(L, kSrc, sizeof(kSrc) - 1, "=mcp.rctx") != LUA_OK) lua_error(L);
  lua_pushcfunction(L, SubmitEnqueueAndWait);
  lua_pushcfunction(L, SubmitWaitCond);
  lua_pushcfunction(L, SubmitWaitHandle);
  lua_pushcfunction(L, SubmitSleep);
  lua_getglobal(L, "coroutine");
  lua_getfield(L, -1, "yield");
  lua_remove(L, -2);
  lua_call(L, 5, 4);
  lua_setfield(L, methods, "sleep");
  lua_setfield(L, methods, "wait_handle");
  lua_setfield(L, methods, "wait_cond");
  lua_setfield(L, methods, "enqueue_and_wait");
}

}  // namespace

// Wraps the plain function at idx as an "anonymous" funcgen (pushed).
void PushBareFuncgen(lua_State* L, int idx) {
  idx = lua_absindex(L, idx);
  FuncgenNew(L);
  const int fgi = lua_gettop(L);
  lua_getiuservalue(L, fgi, 1);
  lua_pushvalue(L, idx);
  lua_pushcclosure(L, BareGen, 1);
  lua_setfield(L, -2, "gen");
  lua_pop(L, 1);
  auto* fg = static_cast<FuncgenUd*>(lua_touserdata(L, fgi));
  fg->name = "anonymous";
  fg->ready = true;
  fg->worker->CountFuncgen(fg->name, 1, 0);
  fg->worker->NewSlot(L, fgi);
  lua_getiuservalue(L, fgi, 2);
  lua_pushvalue(L, -2);
  lua_rawseti(L, -2, 1);
  lua_pop(L, 2);
}

void OpenRctxFunctions(lua_State* L) {
  static const luaL_Reg kFg[] = {
      {"new_handle", FuncgenNewHandle}, {"ready", FuncgenReady}, {nullptr, nullptr}};
  luaL_newmetatable(L, kFuncgenMt);
  lua_newtable(L);
  luaL_setfuncs(L, kFg, 0);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, FuncgenGc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  static const luaL_Reg kRctx[] = {
      {"enqueue", RctxEnqueue},         {"res_good", RctxResGood},
      {"res_ok", RctxResOk},            {"res_any", RctxResAny},
      {"result", RctxResult},           {"best_result", RctxBestResult},
      {"worst_result", RctxWorstResult}, {"cfd", RctxCfd},
      {"tls_peer_cn", RctxTlsPeerCn},
      {"handle_set_cb", RctxHandleSetCb}, {nullptr, nullptr}};
  luaL_newmetatable(L, kRctxMt);
  lua_newtable(L);
  luaL_setfuncs(L, kRctx, 0);
  SetWaitWrappers(L, lua_gettop(L));
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, RctxGc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  static const luaL_Reg kFns[] = {
      {"funcgen_new", FuncgenNew}, {"router_new", RouterNew}, {nullptr, nullptr}};
  luaL_setfuncs(L, kFns, 0);
}

}  // namespace trove::proxy
