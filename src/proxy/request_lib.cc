// The Lua methods of request and response objects, mcp.request, and the
// request log functions (mcp.log_req, mcp.log_reqsample), with memcached's
// semantics (proxy_request.c, proxy_result.c, proxy_lua.c).
#include <charconv>
#include <cstring>

#include "proxy/inspect_mutate.h"
#include "proxy/lua_vm.h"
#include "proxy/rctx.h"
#include "proxy/request.h"
#include "proxy/runtime.h"
#include "proxy/worker.h"

namespace trove::proxy {
namespace {

RequestUd* Req(lua_State* L, int idx = 1) {
  return static_cast<RequestUd*>(CheckUd(L, idx, Ctx(L)->request_mt, kRequestMt));
}
ResponseUd* Res(lua_State* L, int idx = 1) {
  return static_cast<ResponseUd*>(CheckUd(L, idx, Ctx(L)->response_mt, kResponseMt));
}

void PushSv(lua_State* L, std::string_view s) { lua_pushlstring(L, s.data(), s.size()); }

// --- requests -----------------------------------------------------------------

int ReqKey(lua_State* L) {
  PushSv(L, Req(L)->key());
  return 1;
}

int ReqCommand(lua_State* L) {
  lua_pushinteger(L, Req(L)->info.cmd);
  return 1;
}

int ReqNtokens(lua_State* L) {
  lua_pushinteger(L, Req(L)->info.ntokens);
  return 1;
}

// ltrimkey(n) / rtrimkey(n): blank n bytes of the key in place.
int TrimKey(lua_State* L, bool left) {
  RequestUd* r = Req(L);
  const lua_Integer n = luaL_checkinteger(L, 2);
  if (n < 0 || static_cast<size_t>(n) > r->info.key_len) {
    return luaL_error(L, left ? "ltrimkey cannot zero out key" : "rtrimkey cannot zero out key");
  }
  const auto k = static_cast<size_t>(n);
  if (left) {
    std::memset(r->bytes.data() + r->info.key_off, ' ', k);
    r->info.key_off += k;
  } else {
    std::memset(r->bytes.data() + r->info.key_off + r->info.key_len - k, ' ', k);
  }
  r->info.key_len -= k;
  return 0;
}
int ReqLtrimkey(lua_State* L) { return TrimKey(L, true); }
int ReqRtrimkey(lua_State* L) { return TrimKey(L, false); }

int ReqRawLine(lua_State* L) {
  PushSv(L, Req(L)->line());
  return 1;
}

int ReqRawValue(lua_State* L) {
  RequestUd* r = Req(L);
  if (r->info.has_value) {
    PushSv(L, r->value());
  } else {
    lua_pushnil(L);
  }
  return 1;
}

// token(n) fetches token n (1-based); token(n, v) replaces it ("" removes it).
int ReqToken(lua_State* L) {
  RequestUd* r = Req(L);
  if (lua_gettop(L) < 2) {
    lua_pushnil(L);
    return 1;
  }
  const lua_Integer n = luaL_checkinteger(L, 2);
  if (n < 1 || n > r->info.ntokens) {
    lua_pushnil(L);
    return 1;
  }
  if (lua_gettop(L) > 2) {
    size_t len = 0;
    const char* v = lua_tolstring(L, 3, &len);
    if (v == nullptr) return luaL_error(L, "token(): the new token must be a string or a number");
    if (!r->Render(static_cast<size_t>(n - 1), 0, std::string_view(v, len))) {
      return luaL_error(L, "token(): request malformed after edit");
    }
    return 0;
  }
  PushSv(L, r->Token(static_cast<size_t>(n - 1)));
  return 1;
}

bool ToInt(std::string_view s, int64_t* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size();
}

int ReqTokenInt(lua_State* L) {
  RequestUd* r = Req(L);
  const lua_Integer n = luaL_optinteger(L, 2, 0);
  int64_t v = 0;
  if (n < 1 || n > r->info.ntokens || !ToInt(r->Token(static_cast<size_t>(n - 1)), &v)) {
    lua_pushnil(L);
  } else {
    lua_pushinteger(L, v);
  }
  return 1;
}

char FlagArg(lua_State* L, int idx, const char* fn) {
  size_t len = 0;
  const char* f = luaL_checklstring(L, idx, &len);
  if (len != 1) luaL_error(L, "%s: meta flag must be a single character", fn);
  if (f[0] < 'A' || f[0] > 'z') luaL_error(L, "%s: invalid flag, must be A-Z,a-z", fn);
  return f[0];
}

int ReqHasFlag(lua_State* L) {
  RequestUd* r = Req(L);
  const char f = FlagArg(L, 2, "has_flag()");
  lua_pushboolean(L, r->info.meta && r->info.HasFlag(f));
  return 1;
}

// Pushes whether the request has flag f; returns its token's index (0: none).
size_t PushHasFlag(lua_State* L, const RequestUd& r, char f) {
  const size_t idx = r.FlagIndex(f);
  lua_pushboolean(L, idx != 0);
  return idx;
}

// flag_token(f[, new]) -> found[, old token without the flag]
int ReqFlagToken(lua_State* L) {
  RequestUd* r = Req(L);
  const size_t idx = PushHasFlag(L, *r, FlagArg(L, 2, "flag_token()"));
  if (idx == 0) return 1;
  // The old value is copied into a Lua string before the edit below (which
  // rewrites the request's bytes); no C++ object may live across luaL_error.
  const std::string_view tok = r->Token(idx);
  int ret = 1;
  if (tok.size() > 1) {
    PushSv(L, tok.substr(1));
    ret = 2;
  }
  if (lua_type(L, 3) == LUA_TSTRING || lua_type(L, 3) == LUA_TNUMBER) {
    size_t len = 0;
    const char* v = lua_tolstring(L, 3, &len);
    if (!r->Render(idx, 0, std::string_view(v, len))) {
      return luaL_error(L, "token(): request malformed after edit");
    }
  }
  return ret;
}

int ReqFlagTokenInt(lua_State* L) {
  RequestUd* r = Req(L);
  const size_t idx = PushHasFlag(L, *r, FlagArg(L, 2, "flag_token_int()"));
  if (idx == 0) return 1;
  int64_t v = 0;
  if (ToInt(r->Token(idx).substr(1), &v)) {
    lua_pushinteger(L, v);
    return 2;
  }
  return 1;
}

// The token argument of the flag edits: a string, an integer, or none.
std::string_view FlagTokenArg(lua_State* L, int idx, char* buf, size_t cap) {
  if (lua_type(L, idx) == LUA_TSTRING) {
    size_t len = 0;
    const char* s = lua_tolstring(L, idx, &len);
    return {s, len};
  }
  if (lua_type(L, idx) == LUA_TNUMBER) {
    int isnum = 0;
    const lua_Integer n = lua_tointegerx(L, idx, &isnum);
    if (!isnum) luaL_error(L, "request: invalid flag argument");
    auto [p, ec] = std::to_chars(buf, buf + cap, n);
    (void)ec;
    return {buf, static_cast<size_t>(p - buf)};
  }
  if (!lua_isnoneornil(L, idx)) luaL_error(L, "request: invalid flag argument");
  return {};
}

int ReqFlagAdd(lua_State* L) {
  RequestUd* r = Req(L);
  const char f = FlagArg(L, 2, "request");
  char buf[32];
  if (r->FlagIndex(f) != 0) {
    lua_pushboolean(L, 0);
    return 1;
  }
  lua_pushboolean(L, r->Append(f, FlagTokenArg(L, 3, buf, sizeof(buf))));
  return 1;
}

// flag_set and flag_replace: flag f becomes nf with the token at argument
// tok_arg, rendered in f's place, or appended when f is absent.
int PutFlag(lua_State* L, RequestUd* r, char f, char nf, int tok_arg) {
  char buf[32];
  const std::string_view tok = FlagTokenArg(L, tok_arg, buf, sizeof(buf));
  const size_t idx = r->FlagIndex(f);
  lua_pushboolean(L, idx != 0 ? r->Render(idx, nf, tok) : r->Append(nf, tok));
  return 1;
}

int ReqFlagSet(lua_State* L) {
  RequestUd* r = Req(L);
  const char f = FlagArg(L, 2, "request");
  return PutFlag(L, r, f, f, 3);
}

int ReqFlagReplace(lua_State* L) {
  RequestUd* r = Req(L);
  const char f = FlagArg(L, 2, "request");
  const char nf = FlagArg(L, 3, "request");
  return PutFlag(L, r, f, nf, 4);
}

int ReqFlagDel(lua_State* L) {
  RequestUd* r = Req(L);
  const char f = FlagArg(L, 2, "request");
  const size_t idx = r->FlagIndex(f);
  lua_pushboolean(L, idx != 0 && r->Render(idx, 0, {}));
  return 1;
}

// match_res(res) -> matched, error text
int ReqMatchRes(lua_State* L) {
  RequestUd* r = Req(L);
  ResponseUd* res = Res(L, 2);
  if (res->failed) {
    lua_pushboolean(L, 0);
    lua_pushstring(L, "failed to parse response");
    return 2;
  }
  const std::string_view flags = ReplyMetaFlags(*res);
  bool matched = false, found = false;
  const std::string_view rk = FlagTokenIn(flags, 'k', &found);
  if (found) {
    matched = rk == r->key();
    if (!matched) {
      lua_pushboolean(L, 0);
      lua_pushstring(L, "key in response does not match request key");
      return 2;
    }
  }
  const size_t oi = r->FlagIndex('O');
  if (oi != 0 && r->Token(oi).size() > 1) {  // an empty O is no opaque
    const std::string_view ro = r->Token(oi).substr(1);
    const std::string_view so = FlagTokenIn(flags, 'O', &found);
    if (!found) {
      lua_pushboolean(L, 0);
      lua_pushstring(L, "opaque in request but not in response");
      return 2;
    }
    matched = ro == so;
    if (!matched) {
      lua_pushboolean(L, 0);
      lua_pushstring(L, "request opaque does not match response opaque");
      return 2;
    }
  }
  lua_pushboolean(L, matched);
  lua_pushnil(L);
  return 2;
}

// mcp.request(line[, value | response | request])
int NewRequest(lua_State* L) {
  size_t len = 0;
  const char* cmd = luaL_checklstring(L, 1, &len);
  std::string_view val;
  if (lua_type(L, 2) == LUA_TSTRING) {
    size_t vl = 0;
    const char* v = lua_tolstring(L, 2, &vl);
    if (vl < 2 || std::memcmp(v + vl - 2, "\r\n", 2) != 0) {
      return luaL_error(L, "value passed to mcp.request must end with \\r\\n");
    }
    val = {v, vl};
  } else if (auto* res = static_cast<ResponseUd*>(TestUd(L, 2, Ctx(L)->response_mt))) {
    if (!res->failed && res->parsed.value_off > 0 &&
        res->parsed.value_off + res->parsed.vlen + 2 <= res->bytes.size()) {
      val = std::string_view(res->bytes).substr(res->parsed.value_off, res->parsed.vlen + 2);
    }
  } else if (auto* rq = static_cast<RequestUd*>(TestUd(L, 2, Ctx(L)->request_mt))) {
    if (rq->info.has_value) val = rq->value();
  }
  if (len > kRequestMaxLen) return luaL_error(L, "request length too long");
  if (len < 2 || std::memcmp(cmd + len - 2, "\r\n", 2) != 0) {
    return luaL_error(L, "request must end with \\r\\n");
  }
  ReqInfo info;
  const std::string_view line(cmd, len - 2);
  if (ParseRequest(line, len, &info) != 0) return luaL_error(L, "failed to parse request");
  auto* r = new (lua_newuserdatauv(L, sizeof(RequestUd), 0)) RequestUd{};
  luaL_setmetatable(L, kRequestMt);
  r->bytes.reserve(len + val.size());
  r->bytes.assign(cmd, len).append(val);
  r->line_len = len - 2;
  r->eol_len = 2;
  r->info = info;
  if (!val.empty()) {
    r->info.has_value = true;
    r->info.vlen = val.size() - 2;
  }
  return 1;
}

// --- responses ----------------------------------------------------------------

int ResOk(lua_State* L) {
  lua_pushboolean(L, Res(L)->ok());
  return 1;
}

int ResHit(lua_State* L) {
  ResponseUd* r = Res(L);
  lua_pushboolean(L, r->ok() && r->parsed.code != memcache::kCodeEnd);
  return 1;
}

int ResVlen(lua_State* L) {
  ResponseUd* r = Res(L);
  lua_pushinteger(L, r->failed ? 0 : static_cast<lua_Integer>(r->parsed.vlen));
  return 1;
}

int ResCode(lua_State* L) {
  lua_pushinteger(L, Res(L)->code());
  return 1;
}

int ResLine(lua_State* L) {
  const std::string_view f = ReplyMetaFlags(*Res(L));
  if (f.empty()) {
    lua_pushnil(L);
  } else {
    PushSv(L, f);
  }
  return 1;
}

int ResElapsed(lua_State* L) {
  lua_pushinteger(L, Res(L)->elapsed_us);
  return 1;
}

int ResRawString(lua_State* L) {
  ResponseUd* r = Res(L);
  // No reply held (a failure, a blank or closed object): nil, as memcached's
  // NULL buffer.
  if (r->failed || r->bytes.empty()) {
    lua_pushnil(L);
  } else {
    PushSv(L, r->bytes);
  }
  return 1;
}

// flag_blank(f): the flag and its token become spaces in the reply line.
int ResFlagBlank(lua_State* L) {
  ResponseUd* r = Res(L);
  const char f = FlagArg(L, 2, "request");
  const std::string_view flags = ReplyMetaFlags(*r);
  if (!flags.empty()) {
    const size_t base = static_cast<size_t>(flags.data() - r->bytes.data());
    for (size_t i = 0; i < flags.size(); ++i) {
      if (flags[i] == f && (i == 0 || flags[i - 1] == ' ')) {
        for (size_t j = base + i; j < base + flags.size() && r->bytes[j] != ' '; ++j) r->bytes[j] = ' ';
        lua_pushboolean(L, 1);
        return 1;
      }
    }
  }
  lua_pushboolean(L, 0);
  return 1;
}

// res:close() and __close (`local res <close> = ...`): memcached frees the
// reply buffer and blanks the parsed reply, keeping the status. So a closed
// reply is still ok() (and hit(): its code is 0) or not, has no line, value
// or raw string, and written to the client is nothing, or `SERVER_ERROR
// backend failure` when it was not ok. Closing twice is harmless.
int ResClose(lua_State* L) {
  ResponseUd* r = Res(L);
  const bool ok = r->ok();
  std::string().swap(r->bytes);
  r->parsed = memcache::ParsedReply{};
  r->failed = !ok;
  return 0;
}

// --- request logs -------------------------------------------------------------

void LogReq(lua_State* L, int req_idx, int res_idx, int detail_idx, int cfd_idx) {
  RequestUd* rq = Req(L, req_idx);
  auto* res = static_cast<ResponseUd*>(TestUd(L, res_idx, Ctx(L)->response_mt));
  size_t dl = 0;
  const char* d = luaL_optlstring(L, detail_idx, "", &dl);
  const int cfd = static_cast<int>(luaL_optinteger(L, cfd_idx, 0));
  std::string_view host = "internal", port = "0";
  if (res != nullptr && res->be) {
    host = res->be->host;
    port = res->be->port;
  }
  const uint8_t flags = res != nullptr ? res->Class() : kResAny;
  Ctx(L)->runtime->shared()->Log(net::kLogProxyreqs,
                                 ProxyReqLine(*rq, res, flags, cfd, {d, dl}, host, port));
}

// mcp.log_req(req, res[, detail[, cfd]])
int LogReqFn(lua_State* L) {
  if (!Ctx(L)->runtime->shared()->Watching(net::kLogProxyreqs)) return 0;
  LogReq(L, 1, 2, 3, 4);
  return 0;
}

// mcp.log_reqsample(ms, rate, allerrors, req, res[, detail[, cfd]])
int LogReqSample(lua_State* L) {
  if (!Ctx(L)->runtime->shared()->Watching(net::kLogProxyreqs)) return 0;
  const lua_Integer ms = luaL_checkinteger(L, 1);
  const lua_Integer rate = luaL_checkinteger(L, 2);
  const bool allerr = lua_toboolean(L, 3) != 0;
  (void)Req(L, 4);
  auto* res = static_cast<ResponseUd*>(TestUd(L, 5, Ctx(L)->response_mt));
  bool log = false;
  if (allerr && res != nullptr && !res->ok()) {
    log = true;
  } else if (ms > 0 && res != nullptr && res->elapsed_us > ms * 1000) {
    log = true;
  } else if (rate > 0) {
    static thread_local uint64_t seed = 0x2545F4914F6CDD1DULL;
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    log = seed % static_cast<uint64_t>(rate) == 0;
  }
  if (log) LogReq(L, 4, 5, 6, 7);
  return 0;
}



}  // namespace

void OpenRequestFunctions(lua_State* L) {
  static const luaL_Reg kReq[] = {
      {"key", ReqKey},           {"command", ReqCommand},
      {"ntokens", ReqNtokens},   {"token", ReqToken},
      {"token_int", ReqTokenInt}, {"ltrimkey", ReqLtrimkey},
      {"rtrimkey", ReqRtrimkey}, {"raw_line", ReqRawLine},
      {"raw_value", ReqRawValue}, {"has_flag", ReqHasFlag},
      {"flag_token", ReqFlagToken}, {"flag_token_int", ReqFlagTokenInt},
      {"flag_add", ReqFlagAdd},  {"flag_set", ReqFlagSet},
      {"flag_replace", ReqFlagReplace}, {"flag_del", ReqFlagDel},
      {"match_res", ReqMatchRes}, {nullptr, nullptr}};
  RegisterMethods(L, kRequestMt, kReq, GcUd<RequestUd>);
  static const luaL_Reg kRes[] = {
      {"ok", ResOk},         {"hit", ResHit},         {"vlen", ResVlen},
      {"code", ResCode},     {"line", ResLine},       {"elapsed", ResElapsed},
      {"raw_string", ResRawString}, {"flag_blank", ResFlagBlank}, {"close", ResClose},
      {nullptr, nullptr}};
  RegisterMethods(L, kResponseMt, kRes, GcUd<ResponseUd>);
  luaL_getmetatable(L, kResponseMt);  // __close belongs on the metatable itself
  lua_pushcfunction(L, ResClose);
  lua_setfield(L, -2, "__close");
  lua_pop(L, 1);
  static const luaL_Reg kFns[] = {{"request", NewRequest},
                                  {"log_req", LogReqFn},
                                  {"log_reqsample", LogReqSample},
                                  {nullptr, nullptr}};
  luaL_setfuncs(L, kFns, 0);
}

}  // namespace trove::proxy
