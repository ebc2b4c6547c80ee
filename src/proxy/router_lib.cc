// mcp.router_new (router.h): reads the Lua arguments into a RouterConf.
#include <cstring>
#include <memory>
#include <new>

#include "proxy/lua_vm.h"
#include "proxy/rctx.h"
#include "proxy/router.h"
#include "proxy/worker.h"

namespace trove::proxy {

using namespace memcache::cmd;  // NOLINT: the CMD_* vocabulary

namespace {

constexpr size_t kFilterMax = 5;  // memcached's KEY_HASH_FILTER_MAX

FuncgenUd* CheckFuncgen(lua_State* L, int idx, const char* what) {
  auto* fg = static_cast<FuncgenUd*>(luaL_testudata(L, idx, kFuncgenMt));
  if (fg == nullptr) luaL_error(L, "mcp.router_new: %s must be a function generator", what);
  if (!fg->ready) luaL_error(L, "mcp.router_new: %s is not ready (call fg:ready first)", what);
  return fg;
}

int Ref(lua_State* L, int idx) {
  lua_pushvalue(L, idx);
  return luaL_ref(L, LUA_REGISTRYINDEX);
}

// Reads a command map {[CMD_x] = fgen} at idx into by_cmd (and *any for
// CMD_ANY_STORAGE).
void ReadCmdMap(lua_State* L, int idx, std::array<int, kCmdEndStorage>* by_cmd, int* any) {
  idx = lua_absindex(L, idx);
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    if (!lua_isinteger(L, -2)) luaL_error(L, "Non integer key in router command map in router_new");
    const lua_Integer c = lua_tointeger(L, -2);
    if ((c <= 0 || c >= kCmdEndStorage) && c != kCmdAnyStorage) {
      luaL_error(L, "Bad command in router command map in router_new");
    }
    (void)CheckFuncgen(L, -1, "a command map value");
    if (c == kCmdAnyStorage) {
      if (any != nullptr) *any = Ref(L, -1);
    } else {
      (*by_cmd)[static_cast<size_t>(c)] = Ref(L, -1);
    }
    lua_pop(L, 1);
  }
}

const char* SepArg(lua_State* L, const char* name, size_t* len) {
  const int t = lua_getfield(L, 1, name);
  const char* s = nullptr;
  if (t == LUA_TSTRING) {
    s = lua_tolstring(L, -1, len);
    if (*len == 0) luaL_error(L, "must pass a non-zero length string to %s in mcp.router_new", name);
    if (*len > kFilterMax) luaL_error(L, "%s is too long in mcp.router_new", name);
  } else if (t != LUA_TNIL) {
    luaL_error(L, "must pass a string to %s in mcp.router_new", name);
  }
  lua_pop(L, 1);
  return s;
}

}  // namespace

int RouterNew(lua_State* L) {
  VmContext* ctx = Ctx(L);
  if (ctx->worker == nullptr) {
    return luaL_error(L, "mcp.router_new may only be called from mcp_config_routes (a worker VM)");
  }
  if (!lua_istable(L, 1)) return luaL_error(L, "Must pass a table of arguments to mcp.router_new");
  auto conf = std::make_unique<RouterConf>();
  const bool has_map = lua_getfield(L, 1, "map") != LUA_TNIL;
  if (has_map) {
    if (!lua_istable(L, -1)) return luaL_error(L, "Must pass a table to map argument of router_new");
    const int mi = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, mi) != 0) {
      if (lua_type(L, -2) != LUA_TSTRING) return luaL_error(L, "router_new map keys must be strings");
      std::string k = lua_tostring(L, -2);
      RouterConf::Entry e;
      if (lua_type(L, -1) == LUA_TUSERDATA) {
        (void)CheckFuncgen(L, -1, "a map value");
        e.any = Ref(L, -1);
      } else if (lua_type(L, -1) == LUA_TTABLE) {
        e.by_cmd_map = true;
        ReadCmdMap(L, -1, &e.by_cmd, &e.any);
      } else {
        return luaL_error(L, "unhandled data in router_new map");
      }
      conf->map.emplace(std::move(k), std::move(e));
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  const int ct = lua_getfield(L, 1, "cmap");
  if (ct != LUA_TNIL) {
    if (ct != LUA_TTABLE) return luaL_error(L, "Must pass a table to cmap argument of mcp.router_new");
    ReadCmdMap(L, -1, &conf->cmap, nullptr);
  } else if (!has_map) {
    return luaL_error(L, "Must pass map and/or cmap to mcp.router_new");
  }
  lua_pop(L, 1);
  if (!has_map) {
    conf->type = RouterConf::kCmdMap;
  } else if (lua_getfield(L, 1, "mode") == LUA_TSTRING) {
    const std::string mode = lua_tostring(L, -1);
    size_t sl = 0, el = 0;
    if (mode == "prefix") {
      const char* stop = SepArg(L, "stop", &el);
      if (stop == nullptr || el == 1) {
        conf->type = RouterConf::kShortSep;
        conf->sep = stop == nullptr ? '/' : stop[0];
      } else {
        conf->type = RouterConf::kLongSep;
        conf->lstop.assign(stop, el);
      }
    } else if (mode == "anchor") {
      const char* stop = SepArg(L, "stop", &el);
      const char* start = SepArg(L, "start", &sl);
      if (stop == nullptr && start == nullptr) {
        conf->type = RouterConf::kAnchorSmall;
      } else if (stop == nullptr || start == nullptr) {
        return luaL_error(L, "must specify start and stop if mode is anchor in mcp.router_new");
      } else if (sl == 1 && el == 1) {
        conf->type = RouterConf::kAnchorSmall;
        conf->astart = start[0];
        conf->astop = stop[0];
      } else {
        conf->type = RouterConf::kAnchorBig;
        conf->lstart.assign(start, sl);
        conf->lstop.assign(stop, el);
      }
    } else {
      return luaL_error(L, "unknown type passed to mcp.router_new");
    }
    lua_pop(L, 1);
  } else {
    lua_pop(L, 1);
  }
  if (lua_getfield(L, 1, "default") != LUA_TNIL) {
    (void)CheckFuncgen(L, -1, "default");
    conf->def = Ref(L, -1);
  }
  lua_pop(L, 1);
  auto* fg = new (lua_newuserdatauv(L, sizeof(FuncgenUd), 2)) FuncgenUd{};
  fg->worker = ctx->worker;
  fg->name = "mcp_router";
  fg->ready = true;
  fg->router = conf.release();
  luaL_setmetatable(L, kFuncgenMt);
  ctx->worker->CountFuncgen(fg->name, 1, 0);
  return 1;
}

}  // namespace trove::proxy
