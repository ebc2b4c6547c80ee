// The router's lookup (router.h), with memcached's rules
// (proxy_luafgen.c mcp_funcgen_route). mcp.router_new is in router_lib.cc.
#include "proxy/router.h"

namespace trove::proxy {

using namespace memcache::cmd;  // NOLINT: the CMD_* vocabulary

namespace {

// The prefix before `stop` in key, or empty when there is none.
std::string_view Before(std::string_view key, std::string_view stop) {
  const size_t p = stop.size() == 1 ? key.find(stop[0]) : key.find(stop);
  return p == std::string_view::npos ? std::string_view() : key.substr(0, p);
}

}  // namespace

int RouterConf::Route(std::string_view key, int cmd) const {
  auto fallback = [&] {
    if (cmd > 0 && cmd < kCmdEndStorage && cmap[static_cast<size_t>(cmd)] != LUA_NOREF) {
      return cmap[static_cast<size_t>(cmd)];
    }
    return def;
  };
  if (key.empty()) return LUA_NOREF;
  std::string_view prefix;
  switch (type) {
    case kCmdMap: return fallback();
    case kShortSep: prefix = Before(key, std::string_view(&sep, 1)); break;
    case kLongSep: prefix = Before(key, lstop); break;
    case kAnchorSmall:
      if (key[0] != astart) return fallback();
      prefix = Before(key.substr(1), std::string_view(&astop, 1));
      break;
    case kAnchorBig:
      if (lstart.size() + 2 > key.size() || key.compare(0, lstart.size(), lstart) != 0) {
        return fallback();
      }
      prefix = Before(key.substr(lstart.size()), lstop);
      break;
  }
  if (prefix.empty()) return fallback();
  auto it = map.find(prefix);
  if (it == map.end()) return fallback();
  const Entry& e = it->second;
  if (!e.by_cmd_map) return e.any;
  if (cmd > 0 && cmd < kCmdEndStorage && e.by_cmd[static_cast<size_t>(cmd)] != LUA_NOREF) {
    return e.by_cmd[static_cast<size_t>(cmd)];
  }
  return e.any != LUA_NOREF ? e.any : fallback();
}

void RouterConf::Unref(lua_State* L) {
  auto un = [L](int& r) {
    if (r != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, r);
    r = LUA_NOREF;
  };
  for (auto& [k, e] : map) {
    un(e.any);
    for (int& r : e.by_cmd) un(r);
  }
  for (int& r : cmap) un(r);
  un(def);
}

}  // namespace trove::proxy
