// The Lua side of key placement: mcp.hash_xxhash, mcp.dist_jump_hash,
// mcp.dist_ring_hash (every VM) and mcp.pool's key options (config VM).
// Each VM's own thread.
#include <cstring>
#include <lua5.4/lua.hpp>
#include <new>

#include "proxy/hash_dist.h"
#include "proxy/lua_vm.h"
#include "proxy/proxy_types.h"

namespace trove::proxy {
namespace {

// What a distribution's `new` returns, as memcached's do: a userdata that
// owns it and a light userdata that points at it.
constexpr const char* kKeyDistMt = "mcp.key_dist";
struct KeyDistUd {
  std::shared_ptr<const KeyDist> dist;
};

// mcp.hash_xxhash and mcp.dist_ring_hash.hash are light userdata pointing
// here (memcached's point at its hash functions).
constexpr KeyHash kHashes[2] = {KeyHash::kXxh3, KeyHash::kKetamaMd5};

void* HashTag(KeyHash h) {
  return const_cast<KeyHash*>(
      &kHashes[h == KeyHash::kXxh3 ? 0 : 1]);  // NOLINT: Lua's API is not const
}

KeyDistUd* NewDistUd(lua_State* L) {
  auto* ud = new (lua_newuserdatauv(L, sizeof(KeyDistUd), 0)) KeyDistUd{};
  luaL_setmetatable(L, kKeyDistMt);
  return ud;
}

int PushDist(lua_State* L, const KeyDistUd* ud) {
  lua_pushlightuserdata(L, const_cast<KeyDist*>(ud->dist.get()));  // NOLINT: as above
  return 2;
}

// mcp.dist_jump_hash.new(pool_table[, options]): only the pool's length.
int JumpNew(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  const lua_Unsigned n = lua_rawlen(L, 1);
  KeyDistUd* ud = NewDistUd(L);
  ud->dist = KeyDist::Jump(n);
  return PushDist(L, ud);
}

RingMode ParseMode(lua_State* L, const char* s) {
  if (std::strcmp(s, "default") == 0) return RingMode::kDefault;
  if (std::strcmp(s, "ketama") == 0) return RingMode::kKetama;
  if (std::strcmp(s, "twemproxy") == 0) return RingMode::kTwemproxy;
  if (std::strcmp(s, "evcache") == 0) return RingMode::kEvcache;
  luaL_error(L, "ring_hash: bad omode argument");
  return RingMode::kDefault;
}

// mcp.dist_ring_hash.new(pool_table[, { omode =, obuckets = }]), where the
// pool table lists { id = i, addr = host, port = port } for i = 1..n.
int RingNew(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  const auto n = static_cast<int64_t>(lua_rawlen(L, 1));
  RingMode mode = RingMode::kDefault;
  int64_t buckets = kRingDefaultBuckets;
  if (lua_gettop(L) > 1) {
    luaL_checktype(L, 2, LUA_TTABLE);
    if (lua_getfield(L, 2, "omode") != LUA_TNIL) {
      if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "ring_hash: omode must be a string");
      mode = ParseMode(L, lua_tostring(L, -1));
    }
    lua_pop(L, 1);
    if (lua_getfield(L, 2, "obuckets") != LUA_TNIL) {
      int ok = 0;
      buckets = lua_tointegerx(L, -1, &ok);
      if (ok == 0 || buckets < 1)
        luaL_error(L, "ring_hash: option argument must be a positive integer");
    }
    lua_pop(L, 1);
  }
  // Trove's own limits (memcached reads points it never made here, or
  // fails its allocation).
  if (mode != RingMode::kDefault && buckets < 4) {
    luaL_error(L,
               "ring_hash: obuckets must be at least 4 in the ketama, twemproxy and evcache modes");
  }
  if (n > 0 && buckets > kRingMaxPoints / n) {
    luaL_error(L, "ring_hash: %d servers of %d points is more than %d points", static_cast<int>(n),
               static_cast<int>(buckets), static_cast<int>(kRingMaxPoints));
  }
  // Every host and port string stays on the stack while the ring is made,
  // so that no C++ object is alive across a call that can raise.
  lua_settop(L, 2);
  luaL_checkstack(L, static_cast<int>(2 * n + 8), "ring_hash: too many servers");
  const int base = lua_gettop(L);
  for (int64_t i = 1; i <= n; ++i) {
    if (lua_rawgeti(L, 1, i) != LUA_TTABLE)
      luaL_error(L, "ring_hash: server %d is not a table", static_cast<int>(i));
    lua_getfield(L, -1, "id");
    int ok = 0;
    if (lua_tointegerx(L, -1, &ok) != i || ok == 0) {
      luaL_error(L, "ring_hash: server %d must have id = %d", static_cast<int>(i),
                 static_cast<int>(i));
    }
    lua_pop(L, 1);
    lua_getfield(L, -1, "addr");
    lua_getfield(L, -2, "port");
    if (lua_tostring(L, -2) == nullptr || lua_tostring(L, -1) == nullptr) {
      luaL_error(L, "ring_hash: server %d needs addr and port strings", static_cast<int>(i));
    }
    lua_remove(L, -3);
  }
  KeyDistUd* ud = NewDistUd(L);
  {
    std::vector<RingServer> servers(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      size_t hl = 0, pl = 0;
      const char* h = lua_tolstring(L, base + static_cast<int>(2 * i) + 1, &hl);
      const char* p = lua_tolstring(L, base + static_cast<int>(2 * i) + 2, &pl);
      servers[static_cast<size_t>(i)] = {std::string_view(h, hl), std::string_view(p, pl)};
    }
    ud->dist = KeyDist::Ring(servers, mode, buckets);
  }
  return PushDist(L, ud);
}

// The table a distribution's `new` gets: { id = i, addr = host, port = port }
// per backend, as memcached passes it (the host as configured).
void PushPoolTable(lua_State* L, const PoolSpec& pool) {
  lua_createtable(L, static_cast<int>(pool.backends.size()), 0);
  lua_Integer i = 0;
  for (const auto& b : pool.backends) {
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, ++i);
    lua_setfield(L, -2, "id");
    lua_pushlstring(L, b->host.data(), b->host.size());
    lua_setfield(L, -2, "addr");
    lua_pushlstring(L, b->port.data(), b->port.size());
    lua_setfield(L, -2, "port");
    lua_rawseti(L, -2, i);
  }
}

}  // namespace

void OpenHashDistFunctions(lua_State* L) {
  NewUdMetatable(L, kKeyDistMt, GcUd<KeyDistUd>);
  lua_pushlightuserdata(L, HashTag(KeyHash::kXxh3));
  lua_setfield(L, -2, "hash_xxhash");
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, JumpNew);
  lua_setfield(L, -2, "new");
  lua_setfield(L, -2, "dist_jump_hash");
  lua_createtable(L, 0, 2);
  lua_pushcfunction(L, RingNew);
  lua_setfield(L, -2, "new");
  lua_pushlightuserdata(L, HashTag(KeyHash::kKetamaMd5));
  lua_setfield(L, -2, "hash");
  lua_setfield(L, -2, "dist_ring_hash");
}

void ReadPoolKeyOptions(lua_State* L, int opts_idx, PoolSpec* pool) {
  KeySelector& sel = pool->selector;
  const size_t n = pool->backends.size();
  if (opts_idx == 0) {
    sel.dist = KeyDist::Jump(n);  // memcached's default, mcp.dist_jump_hash
    return;
  }
  opts_idx = lua_absindex(L, opts_idx);
  // In memcached's order: dist, filter, hash, seed.
  if (lua_getfield(L, opts_idx, "dist") != LUA_TNIL) {
    if (!lua_istable(L, -1))
      luaL_error(L, "pool: dist must be mcp.dist_jump_hash or mcp.dist_ring_hash");
    if (lua_getfield(L, -1, "new") != LUA_TFUNCTION) {
      luaL_error(L, "key distribution object missing 'new' function");
    }
    PushPoolTable(L, *pool);
    lua_pushvalue(L, opts_idx);
    lua_call(L, 2, 2);
    const auto* ud = static_cast<KeyDistUd*>(luaL_testudata(L, -2, kKeyDistMt));
    if (ud == nullptr || lua_type(L, -1) != LUA_TLIGHTUSERDATA ||
        lua_touserdata(L, -1) != static_cast<const void*>(ud->dist.get())) {
      luaL_error(
          L,
          "pool: dist.new must return a distribution of mcp.dist_jump_hash or mcp.dist_ring_hash");
    }
    if (ud->dist->servers() != n) {
      luaL_error(L, "pool: the distribution was made for %d backends, the pool has %d",
                 static_cast<int>(ud->dist->servers()), static_cast<int>(n));
    }
    sel.dist = ud->dist;
    lua_pop(L, 2);
  } else {
    sel.dist = KeyDist::Jump(n);
  }
  lua_pop(L, 1);

  if (lua_getfield(L, opts_idx, "filter") != LUA_TNIL) {
    if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "pool: filter must be a string");
    const char* f = lua_tostring(L, -1);
    if (std::strcmp(f, "stop") == 0) {
      sel.filter = KeyFilter::kStop;
    } else if (std::strcmp(f, "tags") == 0) {
      sel.filter = KeyFilter::kTags;
    } else {
      luaL_error(L, "unknown hash filter specified: %s", f);
    }
    if (lua_getfield(L, opts_idx, "filter_conf") != LUA_TSTRING) {
      luaL_error(L, "hash filter requires 'filter_conf' string");
    }
    size_t len = 0;
    const char* conf = lua_tolstring(L, -1, &len);
    if (len < 2 || len > kKeyFilterMax) {
      luaL_error(L, "hash filter conf must be between 2 and %d characters",
                 static_cast<int>(kKeyFilterMax));
    }
    std::memcpy(sel.filter_conf, conf, len);
    sel.filter_len = static_cast<uint8_t>(len);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);

  if (lua_getfield(L, opts_idx, "hash") != LUA_TNIL) {
    const void* h = lua_type(L, -1) == LUA_TLIGHTUSERDATA ? lua_touserdata(L, -1) : nullptr;
    if (h == HashTag(KeyHash::kXxh3)) {
      sel.hash = KeyHash::kXxh3;
    } else if (h == HashTag(KeyHash::kKetamaMd5)) {
      sel.hash = KeyHash::kKetamaMd5;
    } else {
      luaL_error(L, "pool: hash must be mcp.hash_xxhash or mcp.dist_ring_hash.hash");
    }
  }
  lua_pop(L, 1);

  if (lua_getfield(L, opts_idx, "seed") != LUA_TNIL) {
    if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "pool: seed must be a string");
    size_t len = 0;
    const char* s = lua_tolstring(L, -1, &len);
    sel.seed = SeedOf(std::string_view(s, len));
  }
  lua_pop(L, 1);
}

}  // namespace trove::proxy
