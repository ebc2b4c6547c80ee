// The mcp functions of the config VM: backends, pools, the global tunables,
// crons, user stats, global rate limiters, and the helpers both kinds of VM
// have (log, time, start_arg).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "common/clock.h"
#include "proxy/hash_dist.h"
#include "proxy/lua_vm.h"
#include "proxy/runtime.h"
#include "proxy/worker.h"

namespace trove::proxy {
namespace {

ProxyRuntime* ConfigRuntime(lua_State* L, const char* fn) {
  VmContext* c = Ctx(L);
  if (!c->is_config) {
    luaL_error(L, "%s may only be called from mcp_config_pools (the config VM)", fn);
    return nullptr;
  }
  return c->runtime;
}

// A non-negative number of seconds (the tunables accept fractions).
double Seconds(lua_State* L, int idx, const char* what) {
  if (!lua_isnumber(L, idx)) luaL_error(L, "%s: expected a number of seconds", what);
  double v = lua_tonumber(L, idx);
  if (!(v >= 0) || v > 1e9) luaL_error(L, "%s: value out of range", what);
  return v;
}

int64_t Integer(lua_State* L, int idx, const char* what, int64_t lo, int64_t hi) {
  int ok = 0;
  lua_Integer v = lua_tointegerx(L, idx, &ok);
  if (!ok) luaL_error(L, "%s: expected an integer", what);
  if (v < lo || v > hi) luaL_error(L, "%s: value out of range", what);
  return v;
}

// Applies one backend option (table key `k`, value on the stack top).
void BackendOption(lua_State* L, const char* k, BackendOptions* o) {
  if (std::strcmp(k, "connecttimeout") == 0) {
    o->connect_timeout = Seconds(L, -1, "backend connecttimeout");
  } else if (std::strcmp(k, "retrytimeout") == 0 || std::strcmp(k, "retrywaittime") == 0) {
    o->retry_waittime = Seconds(L, -1, "backend retrytimeout");
  } else if (std::strcmp(k, "readtimeout") == 0) {
    o->read_timeout = Seconds(L, -1, "backend readtimeout");
  } else if (std::strcmp(k, "failurelimit") == 0) {
    o->failure_limit = static_cast<int>(Integer(L, -1, "backend failurelimit", 0, 1 << 30));
  } else if (std::strcmp(k, "depthlimit") == 0) {
    o->depth_limit = static_cast<int>(Integer(L, -1, "backend depthlimit", 0, 1 << 30));
  } else if (std::strcmp(k, "connections") == 0) {
    o->connections = static_cast<int>(Integer(L, -1, "backend connections", 1, 8));
  } else if (std::strcmp(k, "down") == 0) {
    luaL_checktype(L, -1, LUA_TBOOLEAN);
    o->down = lua_toboolean(L, -1) != 0;
  } else if (std::strcmp(k, "tcpkeepalive") == 0) {
    luaL_checktype(L, -1, LUA_TBOOLEAN);
    o->tcp_keepalive = lua_toboolean(L, -1) != 0;
  } else if (std::strcmp(k, "flaptime") == 0) {
    o->flap_time = Seconds(L, -1, "backend flaptime");
  } else if (std::strcmp(k, "flapbackofframp") == 0) {
    o->flap_backoff_ramp = Seconds(L, -1, "backend flapbackofframp");
  } else if (std::strcmp(k, "flapbackoffmax") == 0) {
    o->flap_backoff_max = static_cast<uint32_t>(Integer(L, -1, "backend flapbackoffmax", 0, 1 << 30));
  } else if (std::strcmp(k, "tls") == 0) {
    o->tls = lua_toboolean(L, -1) != 0;  // memcached reads it as a boolean
  } else if (std::strcmp(k, "log") == 0) {
    // log = { rate = N, errors = bool, deadline = ms, tag = "..." }: a
    // proxyreqs line per sampled / failed / slow backend request.
    luaL_checktype(L, -1, LUA_TTABLE);
    o->log = true;
    o->log_rate = 0;
    bool any = false;
    lua_getfield(L, -1, "rate");
    if (!lua_isnil(L, -1)) {
      o->log_rate = static_cast<int>(Integer(L, -1, "backend log rate", 0, 1 << 30));
      any = true;
    }
    lua_pop(L, 1);
    lua_getfield(L, -1, "errors");
    if (!lua_isnil(L, -1)) {
      luaL_checktype(L, -1, LUA_TBOOLEAN);
      o->log_errors = lua_toboolean(L, -1) != 0;
      any = true;
    }
    lua_pop(L, 1);
    lua_getfield(L, -1, "deadline");
    if (!lua_isnil(L, -1)) {
      o->log_deadline_ms = Integer(L, -1, "backend log deadline", 0, INT32_MAX);
      any = true;
    }
    lua_pop(L, 1);
    lua_getfield(L, -1, "tag");
    if (!lua_isnil(L, -1)) o->log_tag = luaL_checkstring(L, -1);
    lua_pop(L, 1);
    if (!any) o->log_rate = 1;  // memcached: with no condition, every request
  } else {
    luaL_error(L, "backend: unknown option '%s'", k);
  }
}

std::string PortString(lua_State* L, int idx) {
  if (lua_type(L, idx) == LUA_TNUMBER) {
    lua_Integer p = luaL_checkinteger(L, idx);
    if (p < 1 || p > 65535) luaL_error(L, "backend: port out of range");
    return std::to_string(p);
  }
  size_t n = 0;
  const char* s = luaL_checklstring(L, idx, &n);
  return std::string(s, n);
}

// mcp.backend(label, host, port) or mcp.backend{label=, host=, port=, ...}
int McpBackend(lua_State* L) {
  ProxyRuntime* rt = ConfigRuntime(L, "mcp.backend");
  auto spec = std::make_shared<BackendSpec>();
  spec->opts = rt->pending_settings().backend_defaults;
  if (lua_istable(L, 1)) {
    lua_pushnil(L);
    while (lua_next(L, 1) != 0) {
      if (lua_type(L, -2) != LUA_TSTRING) luaL_error(L, "backend: option names must be strings");
      const char* k = lua_tostring(L, -2);
      if (std::strcmp(k, "label") == 0) {
        spec->label = luaL_checkstring(L, -1);
      } else if (std::strcmp(k, "host") == 0) {
        spec->host = luaL_checkstring(L, -1);
      } else if (std::strcmp(k, "port") == 0) {
        spec->port = PortString(L, -1);
      } else {
        BackendOption(L, k, &spec->opts);
      }
      lua_pop(L, 1);
    }
  } else {
    spec->label = luaL_checkstring(L, 1);
    spec->host = luaL_checkstring(L, 2);
    spec->port = lua_isnoneornil(L, 3) ? "11211" : PortString(L, 3);
    if (!lua_isnoneornil(L, 4)) luaL_error(L, "backend: weights are not supported by Trove yet");
  }
  if (spec->host.empty()) luaL_error(L, "backend: a host is required");
  if (spec->opts.tls && rt->shared()->client_tls() == nullptr)
    luaL_error(L, "TLS requested but not initialized: call mcp.init_tls()");
  if (spec->port.empty()) spec->port = "11211";
  void* p = lua_newuserdatauv(L, sizeof(BackendUd), 0);
  new (p) BackendUd{std::move(spec)};
  luaL_setmetatable(L, kBackendMt);
  return 1;
}

// mcp.pool({backends...}[, {iothread=, beprefix=, dist=, omode=, obuckets=,
// filter=, filter_conf=, hash=, seed=}]): memcached's options (the key ones
// in hash_dist_lib.cc); an option memcached does not know is refused.
int McpPool(lua_State* L) {
  ProxyRuntime* rt = ConfigRuntime(L, "mcp.pool");
  luaL_checktype(L, 1, LUA_TTABLE);
  const bool has_opts = !lua_isnoneornil(L, 2);
  if (has_opts) luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  // The userdata owns the spec from here on, so a Lua error below frees it.
  auto* ud = new (lua_newuserdatauv(L, sizeof(PoolUd), 0)) PoolUd{};
  luaL_setmetatable(L, kPoolMt);
  PoolSpec* spec = nullptr;
  {
    auto made = std::make_shared<PoolSpec>();
    spec = made.get();
    ud->spec = std::move(made);
  }
  spec->use_iothread = rt->pending_settings().use_iothread;
  const lua_Integer n = luaL_len(L, 1);
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_geti(L, 1, i);
    auto* b = static_cast<BackendUd*>(luaL_testudata(L, -1, kBackendMt));
    if (b == nullptr) luaL_error(L, "pool: entry %d is not a backend", static_cast<int>(i));
    spec->backends.push_back(b->spec);
    lua_pop(L, 1);
  }
  if (has_opts) {
    static constexpr const char* kKnown[] = {"iothread", "beprefix", "dist", "omode", "obuckets",
                                             "filter", "filter_conf", "hash", "seed"};
    lua_pushnil(L);
    while (lua_next(L, 2) != 0) {
      const char* k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "?";
      bool known = false;
      for (const char* name : kKnown) known = known || std::strcmp(k, name) == 0;
      if (!known) luaL_error(L, "pool: unknown option '%s'", k);
      lua_pop(L, 1);
    }
    if (lua_getfield(L, 2, "iothread") != LUA_TNIL) {
      luaL_checktype(L, -1, LUA_TBOOLEAN);
      spec->use_iothread = lua_toboolean(L, -1) != 0;
    }
    lua_pop(L, 1);
    if (lua_getfield(L, 2, "beprefix") != LUA_TNIL) {
      if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "pool: beprefix must be a string");
      size_t len = 0;
      const char* pfx = lua_tolstring(L, -1, &len);
      // memcached keeps MAX_LABELLEN-1 bytes of it.
      len = std::min<size_t>(len, 511);
      for (auto& b : spec->backends) {
        auto copy = std::make_shared<BackendSpec>(*b);
        copy->key_prefix.assign(pfx, len);
        b = std::move(copy);
      }
    }
    lua_pop(L, 1);
  }
  ReadPoolKeyOptions(L, has_opts ? 2 : 0, spec);
  return 1;
}

// The global tunables: mcp.backend_connect_timeout(s) and friends.
template <double BackendOptions::*F>
int SetSeconds(lua_State* L) {
  ProxyRuntime* rt = ConfigRuntime(L, "mcp.backend_*_timeout");
  rt->pending_settings().backend_defaults.*F = Seconds(L, 1, "timeout");
  return 0;
}

// A whole-number tunable from 0 to 2^30: `fn` is "mcp.<its name>" (errors
// name the value by the part after "mcp.").
template <typename T>
int SetCount(lua_State* L, const char* fn, T BackendOptions::*field) {
  ProxyRuntime* rt = ConfigRuntime(L, fn);
  rt->pending_settings().backend_defaults.*field =
      static_cast<T>(Integer(L, 1, fn + std::strlen("mcp."), 0, 1 << 30));
  return 0;
}

int SetFailureLimit(lua_State* L) {
  return SetCount(L, "mcp.backend_failure_limit", &BackendOptions::failure_limit);
}

int SetDepthLimit(lua_State* L) {
  return SetCount(L, "mcp.backend_depth_limit", &BackendOptions::depth_limit);
}

int SetFlapBackoffMax(lua_State* L) {
  return SetCount(L, "mcp.backend_flap_backoff_max", &BackendOptions::flap_backoff_max);
}

int SetUseIothread(lua_State* L) {
  ProxyRuntime* rt = ConfigRuntime(L, "mcp.backend_use_iothread");
  luaL_checktype(L, 1, LUA_TBOOLEAN);
  rt->pending_settings().use_iothread = lua_toboolean(L, 1) != 0;
  return 0;
}

int SetTcpKeepalive(lua_State* L) {
  ProxyRuntime* rt = ConfigRuntime(L, "mcp.tcp_keepalive");
  luaL_checktype(L, 1, LUA_TBOOLEAN);
  rt->pending_settings().backend_defaults.tcp_keepalive = lua_toboolean(L, 1) != 0;
  return 0;
}

int SetActiveReqLimit(lua_State* L) {
  ProxyRuntime* rt = ConfigRuntime(L, "mcp.active_req_limit");
  rt->pending_settings().active_req_limit = Integer(L, 1, "active_req_limit", 0, INT64_MAX);
  return 0;
}

// In kilobytes, for the whole proxy (each worker gets its share); 0: none.
int SetBufferMemoryLimit(lua_State* L) {
  ProxyRuntime* rt = ConfigRuntime(L, "mcp.buffer_memory_limit");
  rt->pending_settings().buffer_memory_limit_kb =
      Integer(L, 1, "buffer_memory_limit", 0, INT64_MAX / 1024);
  return 0;
}

// mcp.luagc_ratio(r): memcached starts a worker VM's collection when the VM
// has grown to r times its size after the last one (r below 1.1 counts as
// 1.1). Trove's worker VMs run Lua's generational collector, whose major
// multiplier is that same growth in percent: (r - 1) * 100, applied by each
// worker after a load (ProxyWorker::Load).
int SetLuagcRatio(lua_State* L) {
  const lua_Number r = luaL_checknumber(L, -1);  // memcached's argument check
  ProxyRuntime* rt = ConfigRuntime(L, "mcp.luagc_ratio");
  rt->pending_settings().gc_ratio = r < 1.1 ? 1.1 : r;
  return 0;
}

// mcp.stat_limit(n): the highest index mcp.add_stat takes from here on (0:
// memcached's default, 1024). memcached warns above the default; Trove's
// counters are fixed arrays of kMaxUstatsCap, so more is refused.
int SetStatLimit(lua_State* L) {
  ProxyRuntime* rt = ConfigRuntime(L, "mcp.stat_limit");
  lua_Integer n = luaL_checkinteger(L, -1);
  if (n == 0) n = kMaxUstats;
  if (n > kMaxUstatsCap) return luaL_error(L, "stat_limit must be %d or less in Trove", kMaxUstatsCap);
  if (n > kMaxUstats) {
    std::fprintf(stderr, "PROXY WARNING: setting ustats limit above default may cause performance problems\n");
  }
  rt->pending_settings().max_ustats = n;
  return 0;
}

// TLS to backends, as memcached's proxy: mcp.init_tls() makes the client
// context (once; later calls keep it), mcp.backend_use_tls(bool) is the
// default of backends made afterwards, tls=bool a backend's own.
int SetUseTls(lua_State* L) {
  luaL_checktype(L, 1, LUA_TBOOLEAN);
  ProxyRuntime* rt = ConfigRuntime(L, "mcp.backend_use_tls");
  rt->pending_settings().backend_defaults.tls = lua_toboolean(L, 1) != 0;
  return 0;
}

int InitTls(lua_State* L) {
  ProxyRuntime* rt = ConfigRuntime(L, "mcp.init_tls");
  std::string err;
  if (!rt->shared()->InitClientTls(&err)) return luaL_error(L, "mcp.init_tls: %s", err.c_str());
  return 0;
}

// mcp.register_cron(name, { every = s, rerun = bool, func = f })
int RegisterCron(lua_State* L) {
  ProxyRuntime* rt = ConfigRuntime(L, "mcp.register_cron");
  std::string name = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_getfield(L, 2, "every");
  const int64_t every = Integer(L, -1, "register_cron every", 1, INT32_MAX);
  lua_pop(L, 1);
  bool rerun = true;
  lua_getfield(L, 2, "rerun");
  if (!lua_isnil(L, -1)) {
    luaL_checktype(L, -1, LUA_TBOOLEAN);
    rerun = lua_toboolean(L, -1) != 0;
  }
  lua_pop(L, 1);
  lua_getfield(L, 2, "func");
  luaL_checktype(L, -1, LUA_TFUNCTION);
  rt->AddCron(L, std::move(name), every, rerun);
  return 0;
}

int ScheduleReload(lua_State* L) {
  ProxyRuntime* rt = ConfigRuntime(L, "mcp.schedule_config_reload");
  rt->RequestReload();
  return 0;
}

// mcp.add_stat(index, name): `stats proxy` shows user_<name>.
int AddStat(lua_State* L) {
  ProxyRuntime* rt = ConfigRuntime(L, "mcp.add_stat");
  const lua_Integer idx = luaL_checkinteger(L, 1);
  if (idx < 1) return luaL_error(L, "stat index must be 1 or higher");
  const int64_t limit = rt->pending_settings().max_ustats;
  if (idx > limit) return luaL_error(L, "stat index must be %d or less", static_cast<int>(limit));
  size_t n = 0;
  const char* name = luaL_checklstring(L, 2, &n);
  if (n > kMaxUstatName) luaL_error(L, "add_stat: name too long");
  for (size_t i = 0; i < n; ++i) {
    const unsigned char ch = static_cast<unsigned char>(name[i]);
    if (ch <= ' ' || ch >= 127) luaL_error(L, "add_stat: name cannot contain spaces or control characters");
  }
  std::vector<std::string>& names = rt->pending_ustats();
  if (names.size() <= static_cast<size_t>(idx)) names.resize(static_cast<size_t>(idx) + 1);
  names[static_cast<size_t>(idx)].assign(name, n);
  return 0;
}

// mcp.ratelim_global_tbf{ limit =, fillrate =, tickrate = }
int GlobalTbfNew(lua_State* L) {
  (void)ConfigRuntime(L, "mcp.ratelim_global_tbf");
  int64_t v[3];
  CheckTbfTable(L, 1, v);
  void* p = lua_newuserdatauv(L, sizeof(GlobalTbfUd), 0);
  new (p) GlobalTbfUd{std::make_shared<GlobalTbf>(v[0], v[1], v[2], NowMs())};
  luaL_setmetatable(L, kGlobalTbfMt);
  return 1;
}

int LogUser(lua_State* L) {
  size_t n = 0;
  const char* s = luaL_checklstring(L, 1, &n);
  ProxyRuntime* rt = Ctx(L)->runtime;
  if (rt != nullptr && rt->shared()->Watching(net::kLogProxyuser)) {
    std::string body = "type=proxy_user msg=";
    body.append(s, n);
    rt->shared()->Log(net::kLogProxyuser, body);
  }
  return 0;
}

int TimeRealMillis(lua_State* L) {
  lua_pushinteger(L, SystemClock::Default()->UnixMicros() / 1000);
  return 1;
}

int TimeMonoMillis(lua_State* L) {
  lua_pushinteger(L, NowMs());
  return 1;
}

}  // namespace

void OpenConfigFunctions(lua_State* L) {
  NewUdMetatable(L, kBackendMt, GcUd<BackendUd>);
  NewUdMetatable(L, kPoolMt, GcUd<PoolUd>);
  static const luaL_Reg kFns[] = {
      {"backend", McpBackend},
      {"pool", McpPool},
      {"backend_connect_timeout", SetSeconds<&BackendOptions::connect_timeout>},
      {"backend_read_timeout", SetSeconds<&BackendOptions::read_timeout>},
      {"backend_retry_timeout", SetSeconds<&BackendOptions::retry_waittime>},
      {"backend_retry_waittime", SetSeconds<&BackendOptions::retry_waittime>},
      {"backend_flap_time", SetSeconds<&BackendOptions::flap_time>},
      {"backend_flap_backoff_ramp", SetSeconds<&BackendOptions::flap_backoff_ramp>},
      {"backend_flap_backoff_max", SetFlapBackoffMax},
      {"backend_failure_limit", SetFailureLimit},
      {"backend_depth_limit", SetDepthLimit},
      {"backend_use_iothread", SetUseIothread},
      {"tcp_keepalive", SetTcpKeepalive},
      {"active_req_limit", SetActiveReqLimit},
      {"buffer_memory_limit", SetBufferMemoryLimit},
      {"register_cron", RegisterCron},
      {"schedule_config_reload", ScheduleReload},
      {"add_stat", AddStat},
      {"luagc_ratio", SetLuagcRatio},
      {"stat_limit", SetStatLimit},
      {"backend_use_tls", SetUseTls},
      {"init_tls", InitTls},
      {"ratelim_global_tbf", GlobalTbfNew},
      {"log", LogUser},
      {"time_real_millis", TimeRealMillis},
      {"time_mono_millis", TimeMonoMillis},
      {nullptr, nullptr},
  };
  luaL_setfuncs(L, kFns, 0);
  // mcp.start_arg: -o proxy_arg, false without one.
  VmContext* c = Ctx(L);
  if (c->runtime != nullptr && c->runtime->options().has_arg) {
    PushStartArg(L, c->runtime->options().arg);  // a table for "k_v:k2" (internal.h)
  } else {
    lua_pushboolean(L, 0);
  }
  lua_setfield(L, -2, "start_arg");
  OpenHashDistFunctions(L);
}

}  // namespace trove::proxy
