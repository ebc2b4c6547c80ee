// The mcp functions of the worker VMs: attach, function generators, the
// request context (enqueue_and_wait), request and response objects, rate
// limiters and user stats.
#include <cstring>
#include <string>

#include "protocol/memcache/text_parser.h"
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

template <typename T>
int Gc(lua_State* L) {
  static_cast<T*>(lua_touserdata(L, 1))->~T();
  return 0;
}

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
    return luaL_error(L, "mcp.attach: expected a function generator or a function");
  }
  if (luaL_testudata(L, 2, kFuncgenMt) != nullptr) {
    auto* fg = static_cast<FuncgenUd*>(lua_touserdata(L, 2));
    if (!fg->ready) return luaL_error(L, "mcp.attach: function generator is not ready (call fg:ready first)");
  }
  std::string tag;
  if (!lua_isnoneornil(L, 3)) {
    size_t n = 0;
    const char* t = luaL_checklstring(L, 3, &n);
    if (n == 0 || n > 8) return luaL_error(L, "mcp.attach: a tag is 1 to 8 characters");
    tag.assign(t, n);
  }
  if (w->pending_hooks_ref() == LUA_NOREF) {
    return luaL_error(L, "mcp.attach may only be called from mcp_config_routes");
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, w->pending_hooks_ref());
  const int tags_idx = lua_gettop(L);
  if (cmd == kCmdAny || cmd == kCmdAnyStorage) {
    const int end = cmd == kCmdAnyStorage ? kCmdEndStorage : kCmdSize;
    for (int c = 1; c < end; ++c) {
      if (c == kCmdMn || c == kCmdEndStorage || c == kCmdVersion || c == kCmdStats ||
          c == kCmdWatch || c == kCmdQuit || c == kCmdShutdown) {
        continue;
      }
      AttachOne(L, tags_idx, tag, c, 2);
    }
  } else {
    if (cmd <= 0 || cmd >= kCmdSize || cmd == kCmdEndStorage) {
      return luaL_error(L, "mcp.attach: unknown command number %d", static_cast<int>(cmd));
    }
    if (cmd == kCmdMn || cmd == kCmdVersion || cmd == kCmdStats || cmd == kCmdWatch ||
        cmd == kCmdQuit || cmd == kCmdShutdown) {
      return luaL_error(L, "mcp.attach: this command is always served by the server itself");
    }
    AttachOne(L, tags_idx, tag, static_cast<int>(cmd), 2);
  }
  lua_pop(L, 1);
  return 0;
}

// --- function generators --------------------------------------------------
// A funcgen's uservalue 1 is a table: { handles = {pool proxies},
// gen = f, arg = a }; uservalue 2 is its free slots {rctx...}.

int FuncgenNew(lua_State* L) {
  (void)WorkerOf(L, "mcp.funcgen_new");
  void* p = lua_newuserdatauv(L, sizeof(FuncgenUd), 2);
  new (p) FuncgenUd{};
  static_cast<FuncgenUd*>(p)->worker = Ctx(L)->worker;
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
  if (fg->ready) return luaL_error(L, "new_handle: the function generator is already ready");
  if (luaL_testudata(L, 2, kPoolProxyMt) == nullptr) {
    return luaL_error(L, "new_handle: expected a pool");
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
  for (const char* k : {"u", "l"}) {  // uobj / lazy slot options of 1.6.45 we lack
    lua_getfield(L, 2, k);
    if (!lua_isnil(L, -1)) return luaL_error(L, "ready: option '%s' is not supported by Trove yet", k);
    lua_pop(L, 1);
  }
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
  if (fg->ready) fg->worker->CountFuncgen(fg->name, -1, -fg->slots);
  fg->~FuncgenUd();
  return 0;
}

// rctx:enqueue_and_wait(r, handle) -> response, in two halves: this C
// function queues the request, then a Lua wrapper calls coroutine.yield,
// which OnOpDone resumes with the response. Yielding from Lua rather than
// from C means Lua's longjmp crosses only Lua's own frames, never a C++ one
// (no destructor skipped, and no frame lost from TSan's shadow stack, which
// cannot follow glibc's fortified longjmp).
int RctxSubmit(lua_State* L) {
  VmContext* ctx = Ctx(L);
  auto* rc = static_cast<RctxUd*>(CheckUd(L, 1, ctx->rctx_mt, kRctxMt));
  auto* req = static_cast<RequestUd*>(CheckUd(L, 2, ctx->request_mt, kRequestMt));
  const lua_Integer h = luaL_checkinteger(L, 3);
  if (!lua_isyieldable(L)) return luaL_error(L, "enqueue_and_wait: not inside a request");
  return rc->worker->Enqueue(L, rc, h, *req);
}

// Builds rctx:enqueue_and_wait from RctxSubmit and coroutine.yield (captured
// when the VM is made, so a config that replaces `coroutine` changes nothing).
void PushEnqueueAndWait(lua_State* L) {
  static const char kSrc[] =
      "local submit, yield = ...\n"
      "return function(rctx, r, h) submit(rctx, r, h) return yield() end\n";
  if (luaL_loadbuffer(L, kSrc, sizeof(kSrc) - 1, "=mcp.rctx") != LUA_OK) lua_error(L);
  lua_pushcfunction(L, RctxSubmit);
  lua_getglobal(L, "coroutine");
  lua_getfield(L, -1, "yield");
  lua_remove(L, -2);
  lua_call(L, 2, 1);
}

int RctxGc(lua_State* L) {
  auto* rc = static_cast<RctxUd*>(lua_touserdata(L, 1));
  luaL_unref(L, LUA_REGISTRYINDEX, rc->req_ref);
  for (const auto& r : rc->res) luaL_unref(L, LUA_REGISTRYINDEX, r.second);
  rc->~RctxUd();
  return 0;
}

// --- requests -------------------------------------------------------------

RequestUd* Req(lua_State* L) {
  return static_cast<RequestUd*>(CheckUd(L, 1, Ctx(L)->request_mt, kRequestMt));
}

// Token n (1-based) of the request line, as memcached's r:token(n).
std::string_view Token(const RequestUd& r, lua_Integer n) {
  return n < 1 ? std::string_view() : memcache::NthWord(r.line(), static_cast<size_t>(n - 1));
}

int ReqKey(lua_State* L) {
  RequestUd* r = Req(L);
  std::string_view k = r->key();
  lua_pushlstring(L, k.data(), k.size());
  return 1;
}

int ReqCommand(lua_State* L) {
  RequestUd* r = Req(L);
  lua_pushinteger(L, r->cmd);
  return 1;
}

int ReqNtokens(lua_State* L) {
  RequestUd* r = Req(L);
  lua_Integer n = 0;
  while (!Token(*r, n + 1).empty()) ++n;
  lua_pushinteger(L, n);
  return 1;
}

int ReqToken(lua_State* L) {
  RequestUd* r = Req(L);
  const lua_Integer n = luaL_checkinteger(L, 2);
  if (lua_gettop(L) > 2) return luaL_error(L, "r:token: changing a token is not supported by Trove yet");
  std::string_view t = Token(*r, n);
  if (t.empty()) {
    lua_pushnil(L);
  } else {
    lua_pushlstring(L, t.data(), t.size());
  }
  return 1;
}

// --- responses ------------------------------------------------------------

ResponseUd* Res(lua_State* L) {
  return static_cast<ResponseUd*>(CheckUd(L, 1, Ctx(L)->response_mt, kResponseMt));
}

int ResOk(lua_State* L) {
  ResponseUd* r = Res(L);
  lua_pushboolean(L, !r->failed && !r->parsed.is_error());
  return 1;
}

int ResHit(lua_State* L) {
  ResponseUd* r = Res(L);
  const std::string_view b = r->bytes;
  bool hit = false;
  if (!r->failed) {
    hit = b.rfind("VALUE ", 0) == 0 || b.rfind("VA ", 0) == 0 ||
          (r->cmd == kCmdMg && (b.rfind("HD", 0) == 0));
  }
  lua_pushboolean(L, hit);
  return 1;
}

int ResVlen(lua_State* L) {
  ResponseUd* r = Res(L);
  lua_pushinteger(L, r->failed ? 0 : static_cast<lua_Integer>(r->parsed.vlen));
  return 1;
}

int ResCode(lua_State* L) {
  ResponseUd* r = Res(L);
  lua_pushinteger(L, r->failed ? memcache::kCodeServerError : r->parsed.code);
  return 1;
}

int ResLine(lua_State* L) {
  ResponseUd* r = Res(L);
  if (r->failed) {
    lua_pushnil(L);
    return 1;
  }
  std::string_view line = std::string_view(r->bytes).substr(0, r->parsed.line_len);
  // The line after the status word, as memcached's r:line().
  const size_t sp = line.find(' ');
  line = sp == std::string_view::npos ? std::string_view() : line.substr(sp + 1);
  lua_pushlstring(L, line.data(), line.size());
  return 1;
}

int ResElapsed(lua_State* L) {
  lua_pushinteger(L, Res(L)->elapsed_us);
  return 1;
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
  if (idx < 1 || idx > kMaxUstats) return luaL_error(L, "mcp.stat: index out of range");
  w->ustat(static_cast<int>(idx)).fetch_add(static_cast<uint64_t>(d), std::memory_order_relaxed);
  return 0;
}

void Methods(lua_State* L, const char* mt, const luaL_Reg* fns, lua_CFunction gc) {
  luaL_newmetatable(L, mt);
  lua_newtable(L);
  luaL_setfuncs(L, fns, 0);
  lua_setfield(L, -2, "__index");
  if (gc != nullptr) {
    lua_pushcfunction(L, gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
}

}  // namespace

void OpenWorkerFunctions(lua_State* L) {
  static const luaL_Reg kFg[] = {
      {"new_handle", FuncgenNewHandle}, {"ready", FuncgenReady}, {nullptr, nullptr}};
  Methods(L, kFuncgenMt, kFg, FuncgenGc);
  static const luaL_Reg kRctx[] = {{nullptr, nullptr}};
  Methods(L, kRctxMt, kRctx, RctxGc);
  luaL_getmetatable(L, kRctxMt);
  lua_getfield(L, -1, "__index");
  PushEnqueueAndWait(L);
  lua_setfield(L, -2, "enqueue_and_wait");
  lua_pop(L, 2);
  static const luaL_Reg kReq[] = {{"key", ReqKey}, {"command", ReqCommand},
                                  {"ntokens", ReqNtokens}, {"token", ReqToken},
                                  {nullptr, nullptr}};
  Methods(L, kRequestMt, kReq, Gc<RequestUd>);
  static const luaL_Reg kRes[] = {{"ok", ResOk},     {"hit", ResHit},   {"vlen", ResVlen},
                                  {"code", ResCode}, {"line", ResLine}, {"elapsed", ResElapsed},
                                  {nullptr, nullptr}};
  Methods(L, kResponseMt, kRes, Gc<ResponseUd>);
  VmContext* ctx = Ctx(L);
  for (auto [name, slot] : {std::pair{kRequestMt, &ctx->request_mt},
                            std::pair{kResponseMt, &ctx->response_mt},
                            std::pair{kRctxMt, &ctx->rctx_mt}}) {
    luaL_getmetatable(L, name);
    *slot = lua_topointer(L, -1);
    lua_pop(L, 1);
  }
  static const luaL_Reg kNone[] = {{nullptr, nullptr}};
  Methods(L, kPoolProxyMt, kNone, Gc<PoolProxyUd>);
  luaL_newmetatable(L, kTbfMt);
  lua_pushcfunction(L, TbfCall);
  lua_setfield(L, -2, "__call");
  lua_pop(L, 1);
  luaL_newmetatable(L, kGlobalTbfMt);
  lua_pushcfunction(L, GlobalTbfCall);
  lua_setfield(L, -2, "__call");
  lua_pushcfunction(L, Gc<GlobalTbfUd>);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  static const luaL_Reg kFns[] = {
      {"attach", Attach},      {"funcgen_new", FuncgenNew}, {"ratelim_tbf", TbfNew},
      {"stat", Stat},          {nullptr, nullptr},
  };
  luaL_setfuncs(L, kFns, 0);
}

}  // namespace trove::proxy
