// Inspectors (mcp.req_inspector_new / mcp.res_inspector_new), with
// memcached's steps, argument checks, error texts and return values
// (proxy_inspector.c), plus the flag helpers mutators share
// (inspect_mutate.h). Worker VMs, on their own thread.
#include <cstdarg>
#include <cstring>
#include <string>
#include <vector>

#include "proxy/inspect_mutate.h"
#include "proxy/lua_vm.h"
#include "proxy/rctx.h"
#include "proxy/request.h"

namespace trove::proxy {

int RaisePlain(lua_State* L, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  return lua_error(L);
}

int StepTableArgs(lua_State* L, const char* what) {
  if (Ctx(L)->worker == nullptr) {
    return luaL_error(L, "%s may only be made in mcp_config_routes (a worker VM)", what);
  }
  const int argc = lua_gettop(L);
  for (int x = 1; x <= argc; ++x) luaL_checktype(L, x, LUA_TTABLE);
  return argc;
}

char StepFlagField(lua_State* L, int t, const char* what, const char* what_alnum) {
  if (lua_getfield(L, t, "flag") == LUA_TNIL) {
    RaisePlain(L, "%s step %d: must provide 'flag' argument", what, t);
  }
  size_t len = 0;
  const char* f = lua_tolstring(L, -1, &len);
  if (f == nullptr || len != 1) {
    RaisePlain(L, "%s step %d: 'flag' must be a single character", what, t);
  }
  if (f[0] < 'A' || f[0] > 'z') {
    RaisePlain(L, "%s step %d: 'flag' must be alphanumeric", what_alnum, t);
  }
  const char c = f[0];
  lua_pop(L, 1);
  return c;
}

bool IsMetaReply(const ResponseUd& r) {
  return !r.failed && r.parsed.type == memcache::kTypeMeta && r.parsed.line_len <= r.bytes.size();
}

std::string_view ReplyMetaFlags(const ResponseUd& r) {
  if (!IsMetaReply(r)) return {};
  std::string_view line = std::string_view(r.bytes).substr(0, r.parsed.line_len);
  if (line.size() < 2) return {};
  const bool va = line[0] == 'V' && line[1] == 'A';
  line.remove_prefix(2);
  size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  if (va) {
    while (i < line.size() && line[i] != ' ') ++i;
    while (i < line.size() && line[i] == ' ') ++i;
  }
  return line.substr(i);
}

std::string_view FlagTokenIn(std::string_view flags, char f, bool* found) {
  size_t i = 0;
  while (i < flags.size()) {
    while (i < flags.size() && flags[i] == ' ') ++i;
    const size_t s = i;
    while (i < flags.size() && flags[i] != ' ') ++i;
    if (i > s && flags[s] == f) {
      *found = true;
      return flags.substr(s + 1, i - s - 1);
    }
  }
  *found = false;
  return {};
}

std::string_view RequestFlagToken(const RequestUd& r, char f, bool* found) {
  *found = false;
  if (!r.info.meta || !r.info.HasFlag(f)) return {};
  // The flags follow the key (and an ms's length): skip that many tokens.
  const std::string_view line = r.line();
  size_t skip = r.info.cmd == kCmdMs ? 3 : 2;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    const size_t s = i;
    while (i < line.size() && line[i] != ' ') ++i;
    if (i == s) break;
    if (skip > 0) {
      --skip;
    } else if (line[s] == f) {
      *found = true;
      return line.substr(s + 1, i - s - 1);
    }
  }
  return {};
}

bool TokenToInt64(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 22) return false;
  size_t i = 0;
  const bool neg = s[0] == '-';
  if (neg) ++i;
  int64_t sum = 0;
  for (; i < s.size(); ++i) {
    const int d = s[i] - '0';
    if (d < 0 || d > 9) return false;
    if (neg) {
      if (sum < (INT64_MIN + d) / 10) return false;
      sum = sum * 10 - d;
    } else {
      if (sum > (INT64_MAX - d) / 10) return false;
      sum = sum * 10 + d;
    }
  }
  *out = sum;
  return true;
}

namespace {

enum class InsOp : uint8_t { kSepKey, kKeyBegin, kKeyIs, kHasFlag, kFlagToken, kFlagInt, kFlagIs };

// One compiled step. Strings live in the inspector's arena.
struct InsStep {
  InsOp op = InsOp::kHasFlag;
  char c = 0;        // the flag, or sepkey's separator
  int pos = 0;       // sepkey: which separated part (1 is the first)
  int map = 0;       // sepkey: its map's index in uservalue 1, 0 for none
  uint32_t off = 0;  // keybegin, keyis, flagis: the string in the arena
  uint32_t len = 0;
};

// The userdata body of an mcp.inspector. Uservalue 1: the sepkey maps
// ({[map] = table}), kept as Lua tables so a lookup is one rawget.
struct Inspector {
  bool response = false;
  int nresults = 0;  // values one call pushes (checkstack'd up front)
  std::vector<InsStep> steps;
  std::string arena;
};

struct InsKind {
  const char* name;
  InsOp op;
  bool req, res;  // usable on requests / responses
  int nresults;
};

constexpr InsKind kInsKinds[] = {
    {"sepkey", InsOp::kSepKey, true, false, 1},      {"keybegin", InsOp::kKeyBegin, true, false, 1},
    {"keyis", InsOp::kKeyIs, true, false, 1},        {"hasflag", InsOp::kHasFlag, true, true, 1},
    {"flagtoken", InsOp::kFlagToken, true, true, 2}, {"flagint", InsOp::kFlagInt, true, true, 2},
    {"flagis", InsOp::kFlagIs, true, true, 2},
};

// --- compiling --------------------------------------------------------------

char FlagField(lua_State* L, int t) { return StepFlagField(L, t, "inspector", "inspect"); }

// The 'str' field of step table `t`, copied into the arena.
void StrField(lua_State* L, int t, Inspector* ins, InsStep* s) {
  if (lua_getfield(L, t, "str") == LUA_TNIL) {
    RaisePlain(L, "inspector step %d: must provide 'str' argument", t);
  }
  size_t len = 0;
  const char* v = lua_tolstring(L, -1, &len);
  if (v == nullptr || len < 1)
    RaisePlain(L, "inspector step %d: 'str' must have nonzero length", t);
  s->off = static_cast<uint32_t>(ins->arena.size());
  s->len = static_cast<uint32_t>(len);
  ins->arena.append(v, len);
  lua_pop(L, 1);
}

// sepkey {sep = "/", pos = 1, map = nil}; a map goes into `maps` (stack index).
void SepKeyFields(lua_State* L, int t, InsStep* s, int maps) {
  s->c = '/';
  if (lua_getfield(L, t, "sep") != LUA_TNIL) {
    size_t len = 0;
    const char* sep = lua_tolstring(L, -1, &len);
    if (sep == nullptr || len != 1)
      RaisePlain(L, "inspector step %d: separator must be one character", t);
    s->c = sep[0];
  }
  lua_pop(L, 1);
  s->pos = 1;
  if (lua_getfield(L, t, "pos") != LUA_TNIL) {
    luaL_checktype(L, -1, LUA_TNUMBER);
    s->pos = static_cast<int>(lua_tointeger(L, -1));
  }
  lua_pop(L, 1);
  if (lua_getfield(L, t, "map") != LUA_TNIL) {
    luaL_checktype(L, -1, LUA_TTABLE);
    s->map = static_cast<int>(lua_rawlen(L, maps)) + 1;
    lua_rawseti(L, maps, s->map);
  } else {
    lua_pop(L, 1);
  }
}

// mcp.req_inspector_new / res_inspector_new({t = "step", ...}, ...)
int NewInspector(lua_State* L, bool response) {
  const int argc = StepTableArgs(L, "inspectors");
  auto* ins = new (lua_newuserdatauv(L, sizeof(Inspector), 1)) Inspector{};
  luaL_setmetatable(L, kInspectorMt);
  const int ud = lua_gettop(L);
  lua_newtable(L);  // the maps
  const int maps = ud + 1;
  ins->response = response;
  ins->steps.reserve(static_cast<size_t>(argc));
  for (int x = 1; x <= argc; ++x) {
    const InsKind* kind = StepKindArg(L, x, kInsKinds, response, "inspector");
    InsStep s;
    s.op = kind->op;
    switch (s.op) {
      case InsOp::kSepKey:
        SepKeyFields(L, x, &s, maps);
        break;
      case InsOp::kKeyBegin:
      case InsOp::kKeyIs:
        StrField(L, x, ins, &s);
        break;
      case InsOp::kHasFlag:
      case InsOp::kFlagToken:
      case InsOp::kFlagInt:
        s.c = FlagField(L, x);
        break;
      case InsOp::kFlagIs:
        s.c = FlagField(L, x);
        StrField(L, x, ins, &s);
        break;
    }
    ins->steps.push_back(s);
    ins->nresults += kind->nresults;
  }
  lua_setiuservalue(L, ud, 1);
  return 1;
}

int ReqInspectorNew(lua_State* L) { return NewInspector(L, false); }
int ResInspectorNew(lua_State* L) { return NewInspector(L, true); }

// --- running ----------------------------------------------------------------

void PushSv(lua_State* L, std::string_view s) { lua_pushlstring(L, s.data(), s.size()); }

// sepkey: part `pos` of the key split on `sep` (leading separators
// skipped; an empty part is nil), looked up in the map when there is one.
int RunSepKey(lua_State* L, const InsStep& s, std::string_view key) {
  size_t i = 0;
  while (i < key.size() && key[i] == s.c) ++i;
  size_t tok = i, tlen = 0;
  int pos = s.pos;
  for (; i < key.size(); ++i) {
    if (key[i] != s.c) continue;
    if (--pos == 0) {
      tlen = i - tok;
      break;
    }
    tok = i + 1;
  }
  if (pos == 1) tlen = i - tok;  // the last part
  if (tlen == 0) {
    lua_pushnil(L);
    return 1;
  }
  const std::string_view part = key.substr(tok, tlen);
  if (s.map == 0) {
    PushSv(L, part);
    return 1;
  }
  lua_getiuservalue(L, 1, 1);
  lua_rawgeti(L, -1, s.map);
  PushSv(L, part);
  lua_rawget(L, -2);
  lua_replace(L, -3);
  lua_pop(L, 1);
  return 1;
}

// The flag steps over a token that was (found) or was not there.
int PushFlagResult(lua_State* L, const Inspector& ins, const InsStep& s, bool found,
                   std::string_view tok) {
  if (s.op == InsOp::kHasFlag) {
    lua_pushboolean(L, found);
    return 1;
  }
  if (!found) {
    lua_pushboolean(L, 0);
    lua_pushnil(L);
    return 2;
  }
  lua_pushboolean(L, 1);
  switch (s.op) {
    case InsOp::kFlagToken:
      PushSv(L, tok);
      break;
    case InsOp::kFlagInt: {
      int64_t v = 0;
      if (TokenToInt64(tok, &v)) {
        lua_pushinteger(L, v);
      } else {
        lua_pushnil(L);
      }
      break;
    }
    default:  // kFlagIs
      lua_pushboolean(L, tok == std::string_view(ins.arena).substr(s.off, s.len));
      break;
  }
  return 2;
}

int RunOnRequest(lua_State* L, const Inspector& ins, const InsStep& s, const RequestUd& r) {
  const std::string_view key = r.key();
  switch (s.op) {
    case InsOp::kSepKey:
      return RunSepKey(L, s, key);
    case InsOp::kKeyBegin:
      lua_pushboolean(L,
                      s.len < key.size() &&
                          key.substr(0, s.len) == std::string_view(ins.arena).substr(s.off, s.len));
      return 1;
    case InsOp::kKeyIs:
      lua_pushboolean(L, key == std::string_view(ins.arena).substr(s.off, s.len));
      return 1;
    default: {
      bool found = false;
      const std::string_view tok = RequestFlagToken(r, s.c, &found);
      return PushFlagResult(L, ins, s, found, tok);
    }
  }
}

int RunOnResponse(lua_State* L, const Inspector& ins, const InsStep& s, const ResponseUd& r) {
  if (!IsMetaReply(r)) {
    if (s.op == InsOp::kHasFlag)
      return RaisePlain(L, "inspector error: response is not meta protocol");
    return PushFlagResult(L, ins, s, false, {});
  }
  bool found = false;
  const std::string_view tok = FlagTokenIn(ReplyMetaFlags(r), s.c, &found);
  return PushFlagResult(L, ins, s, found, tok);
}

// inspector(obj) -> one or two values per step, in step order.
int InspectorCall(lua_State* L) {
  const VmContext* ctx = Ctx(L);
  const auto* ins = static_cast<const Inspector*>(CheckUd(L, 1, ctx->inspector_mt, kInspectorMt));
  luaL_checktype(L, 2, LUA_TUSERDATA);
  if (!lua_checkstack(L, ins->nresults))
    return RaisePlain(L, "inspector ran out of stack space for results");
  void* obj = TestUd(L, 2, ins->response ? ctx->response_mt : ctx->request_mt);
  luaL_argcheck(L, obj != nullptr, 2, "invalid argument to inspector object");
  int n = 0;
  if (ins->response) {
    const auto& r = *static_cast<const ResponseUd*>(obj);
    for (const InsStep& s : ins->steps) n += RunOnResponse(L, *ins, s, r);
  } else {
    const auto& r = *static_cast<const RequestUd*>(obj);
    for (const InsStep& s : ins->steps) n += RunOnRequest(L, *ins, s, r);
  }
  return n;
}

}  // namespace

void OpenInspectorFunctions(lua_State* L) {
  Ctx(L)->inspector_mt = NewUdMetatable(L, kInspectorMt, GcUd<Inspector>, InspectorCall);
  static const luaL_Reg kFns[] = {{"req_inspector_new", ReqInspectorNew},
                                  {"res_inspector_new", ResInspectorNew},
                                  {nullptr, nullptr}};
  luaL_setfuncs(L, kFns, 0);
}

}  // namespace trove::proxy
