// VM creation, the constants every VM has, and the copy of values from the
// config VM into the worker VMs.
#include "proxy/lua_vm.h"

#include "common/clock.h"
#include "proxy/worker.h"

namespace trove::proxy {

void CheckTbfTable(lua_State* L, int idx, int64_t out[3]) {
  luaL_checktype(L, idx, LUA_TTABLE);
  static constexpr const char* kNames[3] = {"limit", "fillrate", "tickrate"};
  for (int i = 0; i < 3; ++i) {
    lua_getfield(L, idx, kNames[i]);
    int ok = 0;
    out[i] = lua_tointegerx(L, -1, &ok);
    if (!ok || out[i] < 0 || out[i] > INT64_MAX / 4) {
      luaL_error(L, "rate limiter: '%s' must be a non-negative integer", kNames[i]);
    }
    lua_pop(L, 1);
  }
}

int64_t NowMs() { return SystemClock::Default()->MonoNanos() / 1000000; }

namespace {

struct NamedInt {
  const char* name;
  lua_Integer v;
};

constexpr NamedInt kConstants[] = {
    {"CMD_MG", kCmdMg}, {"CMD_MS", kCmdMs}, {"CMD_MD", kCmdMd}, {"CMD_MN", kCmdMn},
    {"CMD_MA", kCmdMa}, {"CMD_ME", kCmdMe}, {"CMD_GET", kCmdGet}, {"CMD_GAT", kCmdGat},
    {"CMD_SET", kCmdSet}, {"CMD_ADD", kCmdAdd}, {"CMD_CAS", kCmdCas}, {"CMD_GETS", kCmdGets},
    {"CMD_GATS", kCmdGats}, {"CMD_INCR", kCmdIncr}, {"CMD_DECR", kCmdDecr},
    {"CMD_TOUCH", kCmdTouch}, {"CMD_APPEND", kCmdAppend}, {"CMD_DELETE", kCmdDelete},
    {"CMD_REPLACE", kCmdReplace}, {"CMD_PREPEND", kCmdPrepend},
    {"CMD_END_STORAGE", kCmdEndStorage}, {"CMD_QUIT", kCmdQuit}, {"CMD_STATS", kCmdStats},
    {"CMD_SLABS", kCmdSlabs}, {"CMD_WATCH", kCmdWatch}, {"CMD_LRU", kCmdLru},
    {"CMD_VERSION", kCmdVersion}, {"CMD_SHUTDOWN", kCmdShutdown},
    {"CMD_EXTSTORE", kCmdExtstore}, {"CMD_FLUSH_ALL", kCmdFlushAll},
    {"CMD_VERBOSITY", kCmdVerbosity}, {"CMD_LRU_CRAWLER", kCmdLruCrawler},
    {"CMD_REFRESH_CERTS", kCmdRefreshCerts}, {"CMD_CACHE_MEMLIMIT", kCmdCacheMemlimit},
    {"CMD_ANY", kCmdAny}, {"CMD_ANY_STORAGE", kCmdAnyStorage},
    // mcmc reply codes and types
    {"MCMC_CODE_STORED", 8}, {"MCMC_CODE_EXISTS", 9}, {"MCMC_CODE_DELETED", 10},
    {"MCMC_CODE_TOUCHED", 11}, {"MCMC_CODE_VERSION", 12}, {"MCMC_CODE_NOT_FOUND", 13},
    {"MCMC_CODE_NOT_STORED", 14}, {"MCMC_CODE_OK", 15}, {"MCMC_CODE_NOP", 16},
    {"MCMC_CODE_END", 17}, {"MCMC_CODE_ERROR", 21}, {"MCMC_CODE_CLIENT_ERROR", 22},
    {"MCMC_CODE_SERVER_ERROR", 23},
    // mcmc's status of a failed call and memcached's P_OK (both exported by
    // memcached's proxy_register_defines)
    {"MCMC_ERR", -1}, {"P_OK", 0},
    // result classes (rctx:result) and wait modes (memcached's values)
    {"RES_GOOD", 1 << 3}, {"RES_OK", 1 << 4}, {"RES_ANY", 1 << 5},
    {"WAIT_ANY", 1}, {"WAIT_OK", 2}, {"WAIT_GOOD", 3}, {"WAIT_FASTGOOD", 4},
};

}  // namespace

void RegisterMethods(lua_State* L, const char* mt, const luaL_Reg* fns, lua_CFunction gc) {
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

const void* NewUdMetatable(lua_State* L, const char* mt, lua_CFunction gc, lua_CFunction call) {
  luaL_newmetatable(L, mt);
  if (call != nullptr) {
    lua_pushcfunction(L, call);
    lua_setfield(L, -2, "__call");
  }
  if (gc != nullptr) {
    lua_pushcfunction(L, gc);
    lua_setfield(L, -2, "__gc");
  }
  const void* p = lua_topointer(L, -1);
  lua_pop(L, 1);
  return p;
}

lua_State* NewVm(VmContext* ctx) {
  lua_State* L = luaL_newstate();
  if (L == nullptr) return nullptr;
  *static_cast<VmContext**>(lua_getextraspace(L)) = ctx;
  luaL_openlibs(L);
  lua_newtable(L);  // mcp
  for (const NamedInt& c : kConstants) {
    lua_pushinteger(L, c.v);
    lua_setfield(L, -2, c.name);
  }
  lua_pushboolean(L, 1);
  lua_setfield(L, -2, "WAIT_RESUME");
  OpenConfigFunctions(L);
  OpenWorkerFunctions(L);
  lua_setglobal(L, "mcp");
  return L;
}

bool CopyOut(lua_State* L, int idx, CopiedValue* out, std::string* err, int depth) {
  idx = lua_absindex(L, idx);
  if (depth > 32) {
    *err = "config value nested too deeply";
    return false;
  }
  switch (lua_type(L, idx)) {
    case LUA_TNIL: out->kind = CopiedValue::kNil; return true;
    case LUA_TBOOLEAN:
      out->kind = CopiedValue::kBool;
      out->b = lua_toboolean(L, idx) != 0;
      return true;
    case LUA_TNUMBER:
      if (lua_isinteger(L, idx)) {
        out->kind = CopiedValue::kInt;
        out->i = lua_tointeger(L, idx);
      } else {
        out->kind = CopiedValue::kNum;
        out->d = lua_tonumber(L, idx);
      }
      return true;
    case LUA_TSTRING: {
      size_t n = 0;
      const char* s = lua_tolstring(L, idx, &n);
      out->kind = CopiedValue::kStr;
      out->s.assign(s, n);
      return true;
    }
    case LUA_TTABLE: {
      out->kind = CopiedValue::kTable;
      // The sequence 1..n first and in order (PushCopy rebuilds it as the
      // table's array part, so pairs() visits it in order, as in the config
      // VM and in memcached), then every other key.
      const auto seq = static_cast<lua_Integer>(lua_rawlen(L, idx));
      for (lua_Integer i = 1; i <= seq; ++i) {
        CopiedValue k, v;
        k.kind = CopiedValue::kInt;
        k.i = i;
        lua_rawgeti(L, idx, i);
        if (!CopyOut(L, -1, &v, err, depth + 1)) {
          lua_pop(L, 1);
          return false;
        }
        lua_pop(L, 1);
        out->table.emplace_back(std::move(k), std::move(v));
      }
      lua_pushnil(L);
      while (lua_next(L, idx) != 0) {
        if (lua_isinteger(L, -2) && lua_tointeger(L, -2) >= 1 && lua_tointeger(L, -2) <= seq) {
          lua_pop(L, 1);
          continue;
        }
        const int kt = lua_type(L, -2);
        if (kt != LUA_TSTRING && kt != LUA_TNUMBER) {
          lua_pop(L, 2);
          *err = "config table keys must be strings or numbers";
          return false;
        }
        CopiedValue k, v;
        if (!CopyOut(L, -2, &k, err, depth + 1) || !CopyOut(L, -1, &v, err, depth + 1)) {
          lua_pop(L, 2);
          return false;
        }
        out->table.emplace_back(std::move(k), std::move(v));
        lua_pop(L, 1);
      }
      return true;
    }
    case LUA_TUSERDATA: {
      if (void* p = luaL_testudata(L, idx, kPoolMt)) {
        out->kind = CopiedValue::kPool;
        out->pool = static_cast<PoolUd*>(p)->spec;
        return true;
      }
      if (void* p = luaL_testudata(L, idx, kGlobalTbfMt)) {
        out->kind = CopiedValue::kGlobalTbf;
        out->tbf = static_cast<GlobalTbfUd*>(p)->tbf;
        return true;
      }
      *err = "config value holds a userdata that cannot be copied to workers";
      return false;
    }
    default:
      *err = std::string("config value of type ") + luaL_typename(L, idx) +
             " cannot be copied to workers";
      return false;
  }
}

void PushCopy(lua_State* L, const CopiedValue& v) {
  switch (v.kind) {
    case CopiedValue::kNil: lua_pushnil(L); break;
    case CopiedValue::kBool: lua_pushboolean(L, v.b ? 1 : 0); break;
    case CopiedValue::kInt: lua_pushinteger(L, v.i); break;
    case CopiedValue::kNum: lua_pushnumber(L, v.d); break;
    case CopiedValue::kStr: lua_pushlstring(L, v.s.data(), v.s.size()); break;
    case CopiedValue::kTable: {
      // CopyOut put the sequence 1..n first: it becomes the array part.
      size_t seq = 0;
      while (seq < v.table.size() && v.table[seq].first.kind == CopiedValue::kInt &&
             v.table[seq].first.i == static_cast<int64_t>(seq) + 1) {
        ++seq;
      }
      lua_createtable(L, static_cast<int>(seq), static_cast<int>(v.table.size() - seq));
      for (size_t i = 0; i < v.table.size(); ++i) {
        if (i < seq) {
          PushCopy(L, v.table[i].second);
          lua_rawseti(L, -2, static_cast<lua_Integer>(i) + 1);
          continue;
        }
        PushCopy(L, v.table[i].first);
        PushCopy(L, v.table[i].second);
        lua_rawset(L, -3);
      }
      break;
    }
    case CopiedValue::kPool: Ctx(L)->worker->PushPoolProxy(L, v.pool); break;
    case CopiedValue::kGlobalTbf: {
      void* p = lua_newuserdatauv(L, sizeof(GlobalTbfUd), 0);
      new (p) GlobalTbfUd{v.tbf};
      luaL_setmetatable(L, kGlobalTbfMt);
      break;
    }
  }
}

}  // namespace trove::proxy
