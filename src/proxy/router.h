// mcp.router_new: a funcgen that picks another funcgen from the request's
// key prefix (and command), as memcached's router does: prefix mode (up to
// a 1-5 byte stop), anchor mode (a start, then up to the stop), map values
// that are funcgens or per-command maps, then the command map, then the
// default. Routers hold registry references to every funcgen they name.
//
// Thread safety: one worker VM's thread.
#pragma once

#include <lua5.4/lua.hpp>

#include <array>
#include <string>
#include <string_view>
#include <unordered_map>

#include "protocol/memcache/request_classify.h"

namespace trove::proxy {

struct RouterConf {
  enum Type : uint8_t { kCmdMap, kShortSep, kLongSep, kAnchorSmall, kAnchorBig };
  Type type = kShortSep;
  char sep = '/';
  std::string lstop, lstart;  // long separators
  char astart = '/', astop = '/';
  // A map value: one funcgen (any) or a command map (with an
  // CMD_ANY_STORAGE fallback in any).
  struct Entry {
    int any = LUA_NOREF;
    bool by_cmd_map = false;
    std::array<int, memcache::cmd::kCmdEndStorage> by_cmd;
    Entry() { by_cmd.fill(LUA_NOREF); }
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  std::unordered_map<std::string, Entry, Hash, std::equal_to<>> map;
  std::array<int, memcache::cmd::kCmdEndStorage> cmap;
  int def = LUA_NOREF;
  RouterConf() { cmap.fill(LUA_NOREF); }

  // The registry ref of the funcgen for (key, cmd), or LUA_NOREF.
  int Route(std::string_view key, int cmd) const;
  // Drops every reference (the router is being collected).
  void Unref(lua_State* L);
  // Calls f(ref) for every funcgen reference it holds (LUA_NOREF skipped).
  template <class F>
  void ForEachRef(F&& f) const {
    auto one = [&f](int r) {
      if (r != LUA_NOREF) f(r);
    };
    for (const auto& [k, e] : map) {
      one(e.any);
      for (int r : e.by_cmd) one(r);
    }
    for (int r : cmap) one(r);
    one(def);
  }
};

// mcp.router_new{...}: pushes the router (a funcgen userdata).
int RouterNew(lua_State* L);

}  // namespace trove::proxy
