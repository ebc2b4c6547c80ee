// The internal cache (internal.h): InternalCache, the mcp functions that
// reach it (mcp.internal, mcp.internal_handler), mcp.server_stats and the
// shape of mcp.start_arg.
#include "proxy/internal.h"

#include <sys/uio.h>

#include <algorithm>
#include <cstring>

#include "protocol/memcache/response_parser.h"
#include "proxy/lua_vm.h"
#include "proxy/rctx.h"
#include "proxy/request.h"
#include "proxy/runtime.h"
#include "proxy/worker.h"

namespace trove::proxy {

InternalCache::InternalCache(LocalServer* local, int worker_id)
    : local_(local), worker_id_(worker_id), handler_(local->NewHandler(worker_id)) {}

InternalCache::~InternalCache() { out_.Clear(); }

void InternalCache::Run(const RequestUd& r, ResponseUd* res) {
  BackendBytes(r, &req_);  // invariant 3
  const size_t used = handler_->OnData(req_.data(), req_.size(), out_);
  handler_->OnOutputDrained();
  std::string& b = res->bytes;
  b.clear();
  iovec iov[64];
  while (!out_.empty()) {
    const int n = out_.PendingIov(iov, 64);
    size_t got = 0;
    for (int i = 0; i < n; ++i) {
      b.append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
      got += iov[i].iov_len;
    }
    out_.Advance(got);
  }
  out_.Clear();  // invariant 1: runs any releaser Advance did not reach
  if (used != req_.size() || handler_->WantsClose() || handler_->IsWatcher()) {
    handler_ = local_->NewHandler(worker_id_);  // invariant 2
  }
  res->cmd = r.info.cmd;
  res->elapsed_us = 0;
  res->be = nullptr;
  res->parsed = {};
  memcache::ParsedReply pr;
  res->failed =
      b.empty() || memcache::ParseReply(b.data(), b.size(), &pr) != memcache::ReplyStatus::kOk;
  if (!res->failed) res->parsed = pr;
}

void ProxyWorker::RunInternal(const RequestUd& r, ResponseUd* res) {
  if (internal_ != nullptr) {
    internal_->Run(r, res);
    return;
  }
  // No cache behind this proxy (unit tests): a failed response.
  res->bytes.clear();
  res->parsed = {};
  res->failed = true;
  res->cmd = r.info.cmd;
  res->elapsed_us = 0;
  res->be = nullptr;
}

namespace {

// mcp.internal(r): the request run on the cache, a new response object.
int McpInternal(lua_State* L) {
  VmContext* c = Ctx(L);
  if (c->worker == nullptr) {
    return luaL_error(L, "mcp.internal may only be called from a route (a worker VM)");
  }
  auto* rq = static_cast<RequestUd*>(CheckUd(L, 1, c->request_mt, kRequestMt));
  auto* res = new (lua_newuserdatauv(L, sizeof(ResponseUd), 0)) ResponseUd{};
  luaL_setmetatable(L, kResponseMt);
  c->worker->RunInternal(*rq, res);
  return 1;
}

using StatList = std::vector<std::pair<std::string, std::string>>;

// The stats lines live in a userdata while Lua tables are built from them,
// so that a Lua error (out of memory) cannot skip their destructor.
constexpr const char* kStatsBoxMt = "trove.server_stats";

// memcached's groups for mcp.server_stats; `sections`: keys "<n>:<name>"
// and "items:<n>:<name>" go to subtable [n] (conns, items, slabs).
struct StatsSub {
  const char* name;
  bool sections;
};
constexpr StatsSub kStatsSubs[] = {
    {"settings", false}, {"conns", true},     {"extstore", false},
    {"proxy", false},    {"proxyfuncs", false}, {"proxybe", false},
    {"items", true},     {"slabs", true},     {"sizes", false},
};

// Splits "<digits>:<rest>" (after an optional "items:"); false otherwise.
bool SectionKey(std::string_view k, lua_Integer* n, std::string_view* rest) {
  if (k.substr(0, 6) == "items:") k.remove_prefix(6);
  size_t i = 0;
  lua_Integer v = 0;
  while (i < k.size() && k[i] >= '0' && k[i] <= '9' && i < 18) {
    v = v * 10 + (k[i] - '0');
    ++i;
  }
  if (i == 0 || i >= k.size() || k[i] != ':' || i + 1 == k.size()) return false;
  *n = v;
  *rest = k.substr(i + 1);
  return true;
}

// mcp.server_stats([sub]): a table of the server's stats, as memcached's
// proxy_lua.c builds it from its own stats functions.
int McpServerStats(lua_State* L) {
  VmContext* c = Ctx(L);
  if (!c->is_config) {
    return luaL_error(L, "mcp.server_stats may only be called from the config VM");
  }
  const StatsSub* sub = nullptr;
  if (!lua_isnoneornil(L, 1)) {
    const char* s = luaL_checkstring(L, 1);
    for (const StatsSub& k : kStatsSubs) {
      if (std::strcmp(s, k.name) == 0) sub = &k;
    }
    if (sub == nullptr) return luaL_error(L, "unknown subcommand passed to server_stats");
  }
  LocalServer* local = c->runtime != nullptr ? c->runtime->options().local.get() : nullptr;
  if (local == nullptr) return luaL_error(L, "mcp.server_stats: no server behind this proxy");
  auto* box = new (lua_newuserdatauv(L, sizeof(StatList), 0)) StatList();
  luaL_setmetatable(L, kStatsBoxMt);
  const int boxi = lua_gettop(L);
  // Trove has no extstore: its group is empty rather than an error, so a
  // config written for memcached's default build runs.
  const bool ok = sub != nullptr && std::strcmp(sub->name, "extstore") == 0
                      ? true
                      : local->Stats(sub != nullptr ? sub->name : "", box);
  if (!ok) return luaL_error(L, "unknown subcommand passed to server_stats");
  lua_createtable(L, 0, static_cast<int>(box->size()));
  const int t = lua_gettop(L);
  for (const auto& [k, v] : *box) {
    lua_Integer n = 0;
    std::string_view rest;
    if (sub != nullptr && sub->sections && SectionKey(k, &n, &rest)) {
      if (lua_rawgeti(L, t, n) == LUA_TNIL) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_rawseti(L, t, n);
      }
      lua_pushlstring(L, rest.data(), rest.size());
      lua_pushlstring(L, v.data(), v.size());
      lua_rawset(L, -3);
      lua_pop(L, 1);
    } else {
      lua_pushlstring(L, k.data(), k.size());
      lua_pushlstring(L, v.data(), v.size());
      lua_rawset(L, t);
    }
  }
  lua_remove(L, boxi);
  return 1;
}

}  // namespace

void OpenInternalFunctions(lua_State* L) {
  NewUdMetatable(L, kStatsBoxMt, GcUd<StatList>);
  luaL_newmetatable(L, kInternalMt);
  lua_pop(L, 1);
  static const luaL_Reg kFns[] = {
      {"internal", McpInternal}, {"server_stats", McpServerStats}, {nullptr, nullptr}};
  luaL_setfuncs(L, kFns, 0);
  // A marker with its own metatable; every new_handle of it is a handle
  // on this worker's internal cache.
  lua_newuserdatauv(L, 0, 0);
  luaL_setmetatable(L, kInternalMt);
  lua_setfield(L, -2, "internal_handler");
}

void PushStartArg(lua_State* L, std::string_view arg) {
  if (arg.find(':') == std::string_view::npos) {
    lua_pushlstring(L, arg.data(), arg.size());
    return;
  }
  // memcached splits on ':' then each part on '_' with strtok, so empty
  // pieces vanish and a third '_' piece is dropped.
  auto next = [](std::string_view* s, char sep) {
    while (!s->empty() && s->front() == sep) s->remove_prefix(1);
    const size_t e = std::min(s->find(sep), s->size());
    const std::string_view tok = s->substr(0, e);
    s->remove_prefix(e);
    return tok;
  };
  lua_newtable(L);
  std::string_view rest = arg;
  for (std::string_view part = next(&rest, ':'); !part.empty(); part = next(&rest, ':')) {
    const std::string_view name = next(&part, '_');
    if (name.empty()) continue;  // a part of underscores only
    const std::string_view value = next(&part, '_');
    lua_pushlstring(L, name.data(), name.size());
    if (value.empty()) {
      lua_pushboolean(L, 1);
    } else {
      lua_pushlstring(L, value.data(), value.size());
    }
    lua_settable(L, -3);
  }
}

}  // namespace trove::proxy
