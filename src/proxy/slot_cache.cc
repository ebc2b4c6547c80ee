// The slot cache of a worker's funcgens (memcached's _mcplib_funcgen_cache):
// when a finished slot goes back to its funcgen and when it is freed, and
// what a reload does to the funcgens it replaced.
//
// A funcgen keeps its idle slots in its free list (uservalue 2) so that a
// burst does not pay for new coroutines and closures twice. memcached's
// easing decides, each time a slot finishes, whether to keep it:
//  - a request that finds the free list empty resets the pressure
//    (SlotCacheMiss);
//  - a slot finishing while more than half of the funcgen's slots are idle
//    raises the pressure; past kPressureMax (and once the pressure has been
//    that high for kFreeWaitS seconds) the slot is freed and the pressure
//    drops by kPressureDrop, so a one-time burst is shed a slot at a time;
//  - otherwise the pressure halves and the wait starts again.
// The comparison is memcached's unsigned one, so a funcgen's last slot is
// never freed while the funcgen is in use: `stats proxyfuncs` slots_<name>
// falls back to one per funcgen.
//
// Freeing a slot frees the child slots it pins (one per child-funcgen
// handle) with it, as memcached does; counts drop at once and the Lua
// objects the slots held become garbage for the next collection.

#include "proxy/router.h"
#include "proxy/worker.h"

namespace trove::proxy {
namespace {

#ifndef NDEBUG
// memcached's MEMCACHED_DEBUG values, which its t/proxyslotcache.t assumes
// (the suite runs against memcached-debug): fewer rounds to see the easing.
constexpr uint64_t kPressureMax = 100;
constexpr uint64_t kPressureDrop = 10;
constexpr int64_t kFreeWaitS = 0;
#else
constexpr uint64_t kPressureMax = 5000;
constexpr uint64_t kPressureDrop = 200;
constexpr int64_t kFreeWaitS = 60;
#endif

// Adds the funcgen at the top of the stack, and every funcgen it reaches
// (child handles; a router's targets), to the set at set_idx. Pops it.
void MarkReachable(lua_State* L, int set_idx) {
  luaL_checkstack(L, 4, "funcgen graph too deep");
  const int fgi = lua_gettop(L);
  auto* fg = static_cast<FuncgenUd*>(luaL_testudata(L, fgi, kFuncgenMt));
  lua_pushvalue(L, fgi);
  if (fg == nullptr || lua_rawget(L, set_idx) != LUA_TNIL) {
    lua_settop(L, fgi - 1);
    return;
  }
  lua_pop(L, 1);
  lua_pushvalue(L, fgi);
  lua_pushboolean(L, 1);
  lua_rawset(L, set_idx);
  if (fg->router != nullptr) {
    fg->router->ForEachRef([L, set_idx](int ref) {
      lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
      MarkReachable(L, set_idx);
    });
  } else {
    lua_getiuservalue(L, fgi, 1);
    if (lua_istable(L, -1) && lua_getfield(L, -1, "handles") == LUA_TTABLE) {
      const auto n = static_cast<lua_Integer>(lua_rawlen(L, -1));
      for (lua_Integer i = 1; i <= n; ++i) {
        lua_rawgeti(L, -1, i);
        MarkReachable(L, set_idx);
      }
    }
  }
  lua_settop(L, fgi - 1);
}

}  // namespace

bool ProxyWorker::KeepSlot(FuncgenUd* fg, int64_t nfree) {
  if (fg->closed) return false;
  const auto total = static_cast<uint32_t>(fg->slots);
  if (static_cast<uint32_t>(nfree) > total / 2 - 1) {  // unsigned, as memcached
    if (fg->free_pressure++ > static_cast<int64_t>(kPressureMax)) {
      // Monotonic seconds of this loop turn (+1: 0 means "no wait set").
      const int64_t now = (loop_ != nullptr ? loop_->TurnNs() / 1000000000 : 0) + 1;
      if (fg->free_waiter_s == 0) fg->free_waiter_s = now + kFreeWaitS;
      fg->free_pressure -= static_cast<int64_t>(kPressureDrop);  // look again a little later
      return now < fg->free_waiter_s;
    }
  } else {
    fg->free_pressure >>= 1;
    fg->free_waiter_s = 0;  // too free for a whole wait before freeing
  }
  return true;
}

void ProxyWorker::FreeSlot(Rctx* rc) {
  for (HandleSlot& hs : rc->h) {
    if (hs.child != nullptr) {
      FreeSlot(hs.child);
      hs.child = nullptr;  // its ref goes in ForgetSlot
    }
  }
  FuncgenUd* fg = rc->fgen;
  if (fg != nullptr) {
    --fg->slots;
    CountFuncgen(fg->name, 0, -1);
    rc->fgen = nullptr;
    if (fg->closed) RetireIfIdle(fg);
  }
  ForgetSlot(rc);
}

void ProxyWorker::RetireIfIdle(FuncgenUd* fg) {
  if (fg->slots != 0 || fg->retired) return;
  fg->retired = true;
  CountFuncgen(fg->name, -1, 0);
}

void ProxyWorker::CloseUnreachable() {
  lua_State* L = L_;
  const int top = lua_gettop(L);
  lua_newtable(L);
  const int now_set = lua_gettop(L);
  auto mark = [&](const HookArray& arr) {
    for (int r : arr) {
      if (r == LUA_NOREF) continue;
      lua_rawgeti(L, LUA_REGISTRYINDEX, r);
      MarkReachable(L, now_set);
    }
  };
  mark(untagged_);
  for (const auto& [tag, arr] : hook_index_) mark(arr);
  // Reachable again (a funcgen kept in a global and attached anew).
  lua_pushnil(L);
  while (lua_next(L, now_set) != 0) {
    lua_pop(L, 1);
    auto* fg = static_cast<FuncgenUd*>(lua_touserdata(L, -1));
    fg->closed = false;
    if (fg->retired) {
      fg->retired = false;
      CountFuncgen(fg->name, 1, 0);
    }
  }
  if (live_fgens_ref_ != LUA_NOREF) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, live_fgens_ref_);
    const int old_set = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, old_set) != 0) {
      lua_pop(L, 1);
      lua_pushvalue(L, -1);
      if (lua_rawget(L, now_set) == LUA_TNIL) {
        // Replaced: idle slots go now, busy ones when they finish.
        auto* fg = static_cast<FuncgenUd*>(lua_touserdata(L, -2));
        fg->closed = true;
        lua_getiuservalue(L, -2, 2);  // the free list
        if (lua_istable(L, -1)) {
          const auto n = static_cast<lua_Integer>(lua_rawlen(L, -1));
          for (lua_Integer i = n; i >= 1; --i) {
            lua_rawgeti(L, -1, i);
            FreeSlot(static_cast<Rctx*>(lua_touserdata(L, -1)));
            lua_pop(L, 1);
            lua_pushnil(L);
            lua_rawseti(L, -2, i);
          }
        }
        lua_pop(L, 1);
        if (fg->router != nullptr || fg->ready) RetireIfIdle(fg);
      }
      lua_pop(L, 1);
    }
    luaL_unref(L, LUA_REGISTRYINDEX, live_fgens_ref_);
  }
  lua_pushvalue(L, now_set);
  live_fgens_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_settop(L, top);
}

}  // namespace trove::proxy
