// The Lua side of the proxy shared by its two kinds of VM: the config VM
// (on the config thread: mcp_config_pools, backends, pools, crons) and the
// worker VMs (one per worker: mcp_config_routes, hooks, request handling).
// Every VM has the full mcp table; a function used in the wrong kind of VM
// raises a Lua error. A VM is used only on its owner thread.
#pragma once

#include <lua5.4/lua.hpp>

#include <memory>
#include <string>

#include "proxy/proxy_types.h"

namespace trove::proxy {

class ProxyRuntime;
class ProxyWorker;

// Reached through lua_getextraspace (so coroutines see it too).
struct VmContext {
  bool is_config = false;
  ProxyRuntime* runtime = nullptr;
  ProxyWorker* worker = nullptr;  // worker VMs only
  // The metatables of the per-request types (worker VMs), for TestUd.
  const void* request_mt = nullptr;
  const void* response_mt = nullptr;
  const void* rctx_mt = nullptr;
  const void* inspector_mt = nullptr;
  const void* mutator_mt = nullptr;
};

inline VmContext* Ctx(lua_State* L) { return *static_cast<VmContext**>(lua_getextraspace(L)); }

// A new VM with the standard libraries and the mcp table.
lua_State* NewVm(VmContext* ctx);

// luaL_testudata without its registry lookup by name (a string hash and
// compare on every call): the value's metatable against one cached when the
// VM was set up (Lua's tables do not move).
inline void* TestUd(lua_State* L, int idx, const void* mt) {
  void* p = lua_touserdata(L, idx);
  if (p == nullptr || lua_getmetatable(L, idx) == 0) return nullptr;
  const bool ok = lua_topointer(L, -1) == mt;
  lua_pop(L, 1);
  return ok ? p : nullptr;
}
// TestUd or a Lua type error naming `tname`.
inline void* CheckUd(lua_State* L, int idx, const void* mt, const char* tname) {
  void* p = TestUd(L, idx, mt);
  if (p == nullptr) luaL_typeerror(L, idx, tname);
  return p;
}

// Userdata type names (metatables in the registry).
inline constexpr const char* kBackendMt = "mcp.backend";
inline constexpr const char* kPoolMt = "mcp.pool";
inline constexpr const char* kPoolProxyMt = "mcp.pool_proxy";
inline constexpr const char* kGlobalTbfMt = "mcp.ratelim_global_tbf";
inline constexpr const char* kTbfMt = "mcp.ratelim_tbf";
inline constexpr const char* kFuncgenMt = "mcp.funcgen";
inline constexpr const char* kRctxMt = "mcp.rctx";
inline constexpr const char* kRequestMt = "mcp.request";
inline constexpr const char* kResponseMt = "mcp.response";
inline constexpr const char* kInspectorMt = "mcp.inspector";
inline constexpr const char* kMutatorMt = "mcp.mutator";

// Userdata bodies (placement-new'd; __gc runs the destructor).
struct BackendUd {
  std::shared_ptr<const BackendSpec> spec;
};
struct PoolUd {
  std::shared_ptr<const PoolSpec> spec;
};
struct GlobalTbfUd {
  std::shared_ptr<GlobalTbf> tbf;
};

// A userdata type's metatable: `fns` as its methods (__index), `gc` (may be
// null) as __gc.
void RegisterMethods(lua_State* L, const char* mt, const luaL_Reg* fns, lua_CFunction gc);
// A userdata type's metatable without methods: `gc` as __gc and `call` as
// __call (either may be null). Returns its address (for the type checks that
// compare metatables by pointer).
const void* NewUdMetatable(lua_State* L, const char* mt, lua_CFunction gc,
                           lua_CFunction call = nullptr);
// __gc of a placement-new'd userdata body: runs its destructor.
template <typename T>
int GcUd(lua_State* L) {
  static_cast<T*>(lua_touserdata(L, 1))->~T();
  return 0;
}

// Registration of each library part (mcp_config_lib.cc, mcp_worker_lib.cc).
void OpenConfigFunctions(lua_State* L);  // adds to the mcp table on the stack top
void OpenWorkerFunctions(lua_State* L);

// Copies the value at `idx` of a config VM out; false (and *err) when it
// holds something that cannot cross VMs.
bool CopyOut(lua_State* L, int idx, CopiedValue* out, std::string* err, int depth = 0);
// Pushes `v` into a worker VM (pools become that worker's pool proxies).
void PushCopy(lua_State* L, const CopiedValue& v);

// The {limit, fillrate, tickrate} table of both rate limiters at `idx`:
// non-negative integers, or a Lua error naming the field.
void CheckTbfTable(lua_State* L, int idx, int64_t out[3]);

// Milliseconds on the monotonic clock (rate limiters).
int64_t NowMs();

}  // namespace trove::proxy
