// Per-slot user objects (rctx:request_new, rctx:response_new, at most
// fg:ready{u = N} per slot): blank request and response objects a route
// fills with mutators, reset to blank when their slot is released.
// Worker VMs, on their own thread.
#include <string>

#include "proxy/inspect_mutate.h"
#include "proxy/lua_vm.h"
#include "proxy/rctx.h"
#include "proxy/request.h"

namespace trove::proxy {
namespace {

// registry[&kUserObjsKey]: rctx -> {its user objects}, weak keys, so a
// slot's objects live exactly as long as the slot.
const char kUserObjsKey = 0;

// A user object's buffer past this is released when its slot is (a copied
// value may be large); smaller ones are kept for the next request.
constexpr size_t kUserObjKeepBytes = 16 * 1024;

int NewUserObject(lua_State* L, bool response) {
  auto* rc = static_cast<Rctx*>(CheckUd(L, 1, Ctx(L)->rctx_mt, kRctxMt));
  lua_getiuservalue(L, 1, 2);  // its funcgen
  const auto* fg = static_cast<const FuncgenUd*>(lua_touserdata(L, -1));
  const size_t have = rc->user_reqs.size() + rc->user_res.size();
  if (fg == nullptr || have >= static_cast<size_t>(fg->user_objs)) {
    return RaisePlain(L, "rctx request new: object count limit reached");
  }
  lua_pop(L, 1);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &kUserObjsKey);
  lua_pushvalue(L, 1);
  if (lua_rawget(L, -2) == LUA_TNIL) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, -2);
    lua_rawset(L, -4);
  }
  void* obj = nullptr;
  if (response) {
    obj = new (lua_newuserdatauv(L, sizeof(ResponseUd), 0)) ResponseUd{};
    luaL_setmetatable(L, kResponseMt);
  } else {
    obj = new (lua_newuserdatauv(L, sizeof(RequestUd), 0)) RequestUd{};
    luaL_setmetatable(L, kRequestMt);
  }
  lua_pushvalue(L, -1);
  lua_rawseti(L, -3, static_cast<lua_Integer>(lua_rawlen(L, -3)) + 1);
  // Anchored first: the slot never holds a pointer to a collectable object.
  if (response) {
    rc->user_res.push_back(static_cast<ResponseUd*>(obj));
  } else {
    rc->user_reqs.push_back(static_cast<RequestUd*>(obj));
  }
  return 1;
}

int RctxRequestNew(lua_State* L) { return NewUserObject(L, false); }
int RctxResponseNew(lua_State* L) { return NewUserObject(L, true); }

}  // namespace

void ResetUserObjects(Rctx* rc) {
  for (RequestUd* r : rc->user_reqs) {
    BlankRequest(r);
    if (r->bytes.capacity() > kUserObjKeepBytes) std::string().swap(r->bytes);
  }
  for (ResponseUd* r : rc->user_res) {
    BlankResponse(r);
    if (r->bytes.capacity() > kUserObjKeepBytes) std::string().swap(r->bytes);
  }
}

void OpenUserObjectFunctions(lua_State* L) {
  lua_newtable(L);  // the user objects of each slot
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &kUserObjsKey);
  static const luaL_Reg kRctx[] = {
      {"request_new", RctxRequestNew}, {"response_new", RctxResponseNew}, {nullptr, nullptr}};
  luaL_getmetatable(L, kRctxMt);
  lua_getfield(L, -1, "__index");
  luaL_setfuncs(L, kRctx, 0);
  lua_pop(L, 2);
}

}  // namespace trove::proxy
