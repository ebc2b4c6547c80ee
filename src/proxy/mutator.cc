// Mutators (mcp.req_mutator_new / mcp.res_mutator_new), with memcached's
// steps, argument checks, error texts and return values (proxy_mutator.c).
// The per-slot objects they usually write into are in user_objects.cc.
// Worker VMs, on their own thread.
#include <algorithm>
#include <charconv>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "proxy/inspect_mutate.h"
#include "proxy/lua_vm.h"
#include "proxy/rctx.h"
#include "proxy/request.h"

namespace trove::proxy {
namespace {

enum class MutOp : uint8_t {
  kCmdSet,
  kCmdCopy,
  kKeyCopy,
  kKeySet,
  kResNull,
  kResCodeSet,
  kResCodeCopy,
  kResErr,
  kFlagSet,
  kFlagCopy,
  kFlagCopyAll,
  kValCopy,
};

// One compiled step. `arg` is the stack index of its source in a call:
// the user's idx + 2 (the mutator itself and the destination come first).
struct MutStep {
  MutOp op = MutOp::kCmdSet;
  char flag = 0;
  int arg = 0;
  uint32_t off = 0;  // its fixed string in the arena
  uint32_t len = 0;
};

// What one step writes in a call (a view into the arena, a Lua string or
// a source object, all alive for the call).
struct Part {
  const char* p = nullptr;
  size_t n = 0;
  bool skip = false;  // flagcopy with no flag to copy: writes nothing
};

// The userdata body of an mcp.mutator.
struct Mutator {
  bool response = false;
  std::vector<MutStep> steps;
  std::string arena;
  std::vector<Part> parts;  // one per step, rewritten by every call
  std::string scratch;      // the new line when a source is the destination itself
};

struct MutKind {
  const char* name;
  MutOp op;
  bool req, res;  // usable in request / response mutators
};

constexpr MutKind kMutKinds[] = {
    {"cmdset", MutOp::kCmdSet, true, false},
    {"cmdcopy", MutOp::kCmdCopy, true, false},
    {"keycopy", MutOp::kKeyCopy, true, false},
    {"keyset", MutOp::kKeySet, true, false},
    {"resnull", MutOp::kResNull, false, true},
    {"rescodeset", MutOp::kResCodeSet, false, true},
    {"rescodecopy", MutOp::kResCodeCopy, false, true},
    {"reserr", MutOp::kResErr, false, true},
    {"flagset", MutOp::kFlagSet, true, true},
    {"flagcopy", MutOp::kFlagCopy, true, true},
    {"flagcopyall", MutOp::kFlagCopyAll, true, true},
    {"valcopy", MutOp::kValCopy, true, true},
};

// Sources past this index cannot exist (a call has far fewer arguments).
constexpr lua_Integer kMaxIdx = 1 << 20;

// --- compiling --------------------------------------------------------------

// A required idx: an integer of at least 1.
int IdxField(lua_State* L, int t) {
  if (lua_getfield(L, t, "idx") == LUA_TNIL) {
    RaisePlain(L, "mutator step %d: must provide 'idx' argument", t);
  }
  luaL_checktype(L, -1, LUA_TNUMBER);
  int isnum = 0;
  const lua_Integer i = lua_tointegerx(L, -1, &isnum);
  if (!isnum) RaisePlain(L, "mutator step %d: must provide 'idx' argument as an integer", t);
  if (i < 1) RaisePlain(L, "mutator step %d: 'idx' argument must be greater than 0", t);
  lua_pop(L, 1);
  return static_cast<int>(std::min(i, kMaxIdx)) + 2;
}

// An optional idx (resnull, flagcopyall): whatever converts, 0 otherwise.
int OptIdxField(lua_State* L, int t) {
  lua_getfield(L, t, "idx");
  const lua_Integer i = lua_tointeger(L, -1);
  lua_pop(L, 1);
  return static_cast<int>(std::clamp<lua_Integer>(i, 0, kMaxIdx)) + 2;
}

char FlagField(lua_State* L, int t) { return StepFlagField(L, t, "mutator", "mutator"); }

void ToArena(Mutator* mut, MutStep* s, std::string_view v) {
  s->off = static_cast<uint32_t>(mut->arena.size());
  s->len = static_cast<uint32_t>(v.size());
  mut->arena.append(v);
}

// A string field (a number converts) that must be there. It stays on the
// stack top, alive while the caller copies it; the caller pops it.
std::string_view StringField(lua_State* L, int t, const char* field) {
  size_t len = 0;
  const char* v = nullptr;
  if (lua_getfield(L, t, field) != LUA_TNIL) v = lua_tolstring(L, -1, &len);
  if (v == nullptr) RaisePlain(L, "mutator step %d: must provide '%s' argument", t, field);
  return {v, len};
}

// reserr: "ERROR", "CLIENT_ERROR" or "SERVER_ERROR", a space and msg.
void ResErrFields(lua_State* L, int t, Mutator* mut, MutStep* s) {
  if (lua_getfield(L, t, "code") == LUA_TNIL) {
    RaisePlain(L, "mutator step %d: must provide 'code' argument", t);
  }
  const char* code = lua_tostring(L, -1);
  const char* text = nullptr;
  if (code != nullptr && std::strcmp(code, "error") == 0) {
    text = "ERROR";
  } else if (code != nullptr && std::strcmp(code, "server") == 0) {
    text = "SERVER_ERROR";
  } else if (code != nullptr && std::strcmp(code, "client") == 0) {
    text = "CLIENT_ERROR";
  } else {
    RaisePlain(L, "mutator step %d: code must be 'error', server', or 'client'", t);
  }
  lua_pop(L, 1);
  s->off = static_cast<uint32_t>(mut->arena.size());
  mut->arena.append(text);
  if (lua_getfield(L, t, "msg") != LUA_TNIL) {
    size_t len = 0;
    const char* m = lua_tolstring(L, -1, &len);
    if (m == nullptr || len < 1)
      RaisePlain(L, "mutator step %d: 'msg' must be a nonzero length string", t);
    mut->arena.append(" ").append(m, len);
  }
  lua_pop(L, 1);
  s->len = static_cast<uint32_t>(mut->arena.size() - s->off);
}

void StepFields(lua_State* L, int t, Mutator* mut, MutStep* s) {
  switch (s->op) {
    case MutOp::kCmdSet: {
      const std::string_view cmd = StringField(L, t, "cmd");
      if (cmd.size() > 20) RaisePlain(L, "mutator step %d: 'cmd' too long", t);
      ToArena(mut, s, cmd);
      lua_pop(L, 1);
      break;
    }
    case MutOp::kKeySet: {
      const std::string_view v = StringField(L, t, "val");
      if (v.empty()) RaisePlain(L, "mutator step %d: 'val' must have nonzero length", t);
      ToArena(mut, s, v);
      lua_pop(L, 1);
      break;
    }
    case MutOp::kResCodeSet:
      ToArena(mut, s, StringField(L, t, "val"));
      lua_pop(L, 1);
      break;
    case MutOp::kResErr:
      ResErrFields(L, t, mut, s);
      break;
    case MutOp::kCmdCopy:
    case MutOp::kKeyCopy:
    case MutOp::kResCodeCopy:
    case MutOp::kValCopy:
      s->arg = IdxField(L, t);
      break;
    case MutOp::kResNull:
    case MutOp::kFlagCopyAll:
      s->arg = OptIdxField(L, t);
      break;
    case MutOp::kFlagSet: {
      s->flag = FlagField(L, t);
      const int vt = lua_getfield(L, t, "val");
      if (vt == LUA_TNUMBER || vt == LUA_TSTRING) {
        size_t len = 0;
        const char* v = lua_tolstring(L, -1, &len);
        ToArena(mut, s, {v, len});
      } else if (vt != LUA_TNIL) {
        RaisePlain(L, "mutator step %d: unsupported type for 'val'", t);
      }
      lua_pop(L, 1);
      break;
    }
    case MutOp::kFlagCopy:
      s->flag = FlagField(L, t);
      s->arg = IdxField(L, t);
      break;
  }
}

// mcp.req_mutator_new / res_mutator_new({t = "step", ...}, ...)
int NewMutator(lua_State* L, bool response) {
  const int argc = StepTableArgs(L, "mutators");
  if (argc == 0) return RaisePlain(L, "mutator failed to initialize, no steps given");
  auto* mut = new (lua_newuserdatauv(L, sizeof(Mutator), 0)) Mutator{};
  luaL_setmetatable(L, kMutatorMt);
  mut->response = response;
  mut->steps.reserve(static_cast<size_t>(argc));
  for (int x = 1; x <= argc; ++x) {
    const MutKind* kind = StepKindArg(L, x, kMutKinds, response, "mutator");
    MutStep s;
    s.op = kind->op;
    StepFields(L, x, mut, &s);
    mut->steps.push_back(s);
  }
  mut->parts.resize(mut->steps.size());
  return 1;
}

int ReqMutatorNew(lua_State* L) { return NewMutator(L, false); }
int ResMutatorNew(lua_State* L) { return NewMutator(L, true); }

// --- running ----------------------------------------------------------------

// The value a call attaches (valcopy), with its CRLF.
struct Value {
  const char* p = nullptr;
  size_t n = 0;
};

size_t Digits(size_t v) {
  size_t d = 1;
  while (v >= 10) {
    v /= 10;
    ++d;
  }
  return d;
}

Part PartOf(std::string_view s) { return {s.data(), s.size(), false}; }

std::string_view ArgString(lua_State* L, int idx) {
  size_t len = 0;
  const char* s = lua_tolstring(L, idx, &len);
  return {s, len};
}

// memcached's resnull: the miss / not-stored / not-found reply of a command.
std::string_view NullReply(int cmd) {
  switch (cmd) {
    case kCmdMg:
      return "EN";
    case kCmdMs:
      return "NS";
    case kCmdMd:
    case kCmdMa:
      return "NF";
    case kCmdGet:
    case kCmdGat:
    case kCmdGets:
    case kCmdGats:
      return "END";
    case kCmdSet:
    case kCmdCas:
    case kCmdAdd:
    case kCmdReplace:
    case kCmdAppend:
    case kCmdPrepend:
      return "NOT_STORED";
    case kCmdIncr:
    case kCmdDecr:
    case kCmdTouch:
    case kCmdDelete:
      return "NOT_FOUND";
    default:
      return {};
  }
}

std::string_view FirstToken(std::string_view line) {
  size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  const size_t s = i;
  while (i < line.size() && line[i] != ' ') ++i;
  return line.substr(s, i - s);
}

// memcached's totalling pass: each step's part from its source; false when
// a source cannot give what the step needs (the call then returns false).
// *total is memcached's length estimate (parts, a space per step, CRLF).
bool Gather(lua_State* L, Mutator* mut, size_t* total, Value* val) {
  const VmContext* ctx = Ctx(L);
  const int top = lua_gettop(L);
  size_t sum = 0;
  for (size_t i = 0; i < mut->steps.size(); ++i) {
    const MutStep& s = mut->steps[i];
    Part& p = mut->parts[i];
    p = {};
    const int t = s.arg > 0 && s.arg <= top ? lua_type(L, s.arg) : LUA_TNONE;
    const RequestUd* rq = nullptr;
    const ResponseUd* rs = nullptr;
    if (t == LUA_TUSERDATA) {
      rq = static_cast<const RequestUd*>(TestUd(L, s.arg, ctx->request_mt));
      if (rq == nullptr) rs = static_cast<const ResponseUd*>(TestUd(L, s.arg, ctx->response_mt));
    }
    switch (s.op) {
      case MutOp::kCmdSet:
      case MutOp::kKeySet:
      case MutOp::kResCodeSet:
      case MutOp::kResErr:
        p = PartOf(std::string_view(mut->arena).substr(s.off, s.len));
        break;
      case MutOp::kFlagSet:
        p = PartOf(std::string_view(mut->arena).substr(s.off, s.len));
        ++sum;  // the flag
        break;
      case MutOp::kCmdCopy:
        if (t == LUA_TSTRING) {
          p = PartOf(ArgString(L, s.arg));
        } else if (rq != nullptr) {
          p = PartOf(FirstToken(rq->line()));
        } else {
          return false;
        }
        break;
      case MutOp::kKeyCopy:
        if (t == LUA_TSTRING) {
          p = PartOf(ArgString(L, s.arg));
        } else if (rq != nullptr) {
          p = PartOf(rq->key());
        } else {
          return false;
        }
        break;
      case MutOp::kResNull:
        if (rq == nullptr) return false;
        p = PartOf(NullReply(rq->info.cmd));
        if (p.n == 0) return false;
        break;
      case MutOp::kResCodeCopy:
        if (t == LUA_TSTRING) {
          p = PartOf(ArgString(L, s.arg));
        } else if (rs != nullptr && IsMetaReply(*rs)) {
          p = PartOf(FirstToken(std::string_view(rs->bytes).substr(0, rs->parsed.line_len)));
          if (p.n < 2) return false;
        } else {
          return false;
        }
        break;
      case MutOp::kFlagCopy: {
        bool found = false;
        std::string_view tok;
        if (t == LUA_TNIL) {
          found = false;
        } else if (t == LUA_TBOOLEAN) {
          found = lua_toboolean(L, s.arg) != 0;
        } else if (t == LUA_TSTRING) {
          found = true;
          tok = ArgString(L, s.arg);
        } else if (rq != nullptr) {
          if (!rq->info.meta) return false;
          tok = RequestFlagToken(*rq, s.flag, &found);
        } else if (rs != nullptr) {
          if (!IsMetaReply(*rs)) return false;
          tok = FlagTokenIn(ReplyMetaFlags(*rs), s.flag, &found);
        } else {
          return false;  // numbers, tables, other objects
        }
        p = PartOf(tok);
        p.skip = !found;
        if (found) ++sum;
        break;
      }
      case MutOp::kFlagCopyAll:
        if (t == LUA_TSTRING) {
          p = PartOf(ArgString(L, s.arg));
        } else if (rs != nullptr && IsMetaReply(*rs) && !ReplyMetaFlags(*rs).empty()) {
          p = PartOf(ReplyMetaFlags(*rs));
        } else {
          return false;
        }
        break;
      case MutOp::kValCopy: {
        std::string_view v;
        if (t == LUA_TSTRING) {
          v = ArgString(L, s.arg);
        } else if (rq != nullptr) {
          if (rq->info.has_value) v = rq->value();
        } else if (rs != nullptr) {
          // A reply's value block (memcached 1.6.45 leaves this a TODO).
          const memcache::ParsedReply& pr = rs->parsed;
          if (!rs->failed && pr.value_off > 0 && pr.value_off + pr.vlen + 2 <= rs->bytes.size()) {
            v = std::string_view(rs->bytes).substr(pr.value_off, pr.vlen + 2);
          }
        } else if (t != LUA_TNUMBER) {
          return false;
        }
        if (v.size() < 2 || v.substr(v.size() - 2) != "\r\n") return false;
        *val = {v.data(), v.size()};
        sum += Digits(v.size());
        break;
      }
    }
    sum += p.n;
  }
  *total = sum + mut->steps.size() + 2;
  return true;
}

// memcached's assembly pass: each step's part and a space, the last space
// becoming CRLF. `out` keeps its capacity.
void Assemble(const Mutator& mut, const Value& val, size_t total, std::string* out) {
  out->clear();
  out->reserve(total + val.n);
  for (size_t i = 0; i < mut.steps.size(); ++i) {
    const MutStep& s = mut.steps[i];
    const Part& p = mut.parts[i];
    if (p.skip) continue;
    if (s.op == MutOp::kFlagSet || s.op == MutOp::kFlagCopy) out->push_back(s.flag);
    if (s.op == MutOp::kValCopy) {
      char buf[24];
      const auto r = std::to_chars(buf, buf + sizeof(buf), val.n - 2);
      out->append(buf, static_cast<size_t>(r.ptr - buf));
    } else {
      out->append(p.p, p.n);
    }
    out->push_back(' ');
  }
  if (out->empty()) {
    out->append("\r\n");  // nothing written: a line that parses as nothing
  } else {
    out->back() = '\r';
    out->push_back('\n');
  }
}

int WriteRequest(lua_State* L, Mutator* mut, RequestUd* dst, size_t total, const Value& val) {
  // memcached refuses a request that holds a value (it would leak it).
  if (dst->info.has_value) return RaisePlain(L, "mutator: request has already been rendered");
  if (total > kRequestMaxLen) return RaisePlain(L, "mutator: new request is too long");
  // A step may copy from the destination itself (its key, its command):
  // then the line is built aside.
  bool aliased = false;
  const char* b = dst->bytes.data();
  for (const Part& p : mut->parts) {
    if (p.n > 0 && p.p >= b && p.p < b + dst->bytes.size()) aliased = true;
  }
  std::string* out = aliased ? &mut->scratch : &dst->bytes;
  Assemble(*mut, val, total, out);
  ReqInfo info;
  const std::string_view line = std::string_view(*out).substr(0, out->size() - 2);
  if (ParseRequest(line, out->size(), &info) != 0) {
    BlankRequest(dst);
    return RaisePlain(L, "mutator: failed to parse new request");
  }
  // The value must be the one the line announces (memcached would send a
  // line whose value never comes, or a value nobody asked for).
  const bool has = val.p != nullptr;
  if (info.has_value != has || (has && info.vlen + 2 != val.n)) {
    BlankRequest(dst);
    return RaisePlain(L, "mutator: new request's value does not match its line");
  }
  if (aliased) dst->bytes.assign(*out);
  dst->line_len = line.size();
  dst->eol_len = 2;
  dst->info = info;
  if (has) dst->bytes.append(val.p, val.n);
  return 0;
}

int WriteResponse(lua_State* L, const Mutator& mut, ResponseUd* dst, size_t total,
                  const Value& val) {
  if (!dst->bytes.empty()) return RaisePlain(L, "mutator: result has already been rendered");
  Assemble(mut, val, total, &dst->bytes);
  if (val.p != nullptr) dst->bytes.append(val.p, val.n);
  memcache::ParsedReply pr;
  const auto st = memcache::ParseReply(dst->bytes.data(), dst->bytes.size(), &pr);
  if (st != memcache::ReplyStatus::kOk || pr.len != dst->bytes.size()) {
    BlankResponse(dst);
    return RaisePlain(L, "mutator: failed to parse new result");
  }
  dst->parsed = pr;
  dst->failed = false;
  dst->elapsed_us = 0;
  dst->be.reset();
  return 0;
}

// mutator(dst, ...) -> nothing when dst was rewritten, false when a source
// could not give what a step needs (dst unchanged).
int MutatorCall(lua_State* L) {
  const VmContext* ctx = Ctx(L);
  auto* mut = static_cast<Mutator*>(CheckUd(L, 1, ctx->mutator_mt, kMutatorMt));
  luaL_checktype(L, 2, LUA_TUSERDATA);
  void* dst = TestUd(L, 2, mut->response ? ctx->response_mt : ctx->request_mt);
  luaL_argcheck(L, dst != nullptr, 2, "invalid argument to mutator object");
  size_t total = 0;
  Value val;
  if (!Gather(L, mut, &total, &val)) {
    lua_pushboolean(L, 0);
    return 1;
  }
  if (mut->response) return WriteResponse(L, *mut, static_cast<ResponseUd*>(dst), total, val);
  return WriteRequest(L, mut, static_cast<RequestUd*>(dst), total, val);
}

}  // namespace

void BlankRequest(RequestUd* r) {
  r->bytes.clear();
  r->line_len = 0;
  r->eol_len = 2;
  r->info = ReqInfo{};
  r->cfd = 0;
}

void BlankResponse(ResponseUd* r) {
  r->bytes.clear();
  r->parsed = memcache::ParsedReply{};
  r->failed = false;
  r->cmd = 0;
  r->elapsed_us = 0;
  r->be.reset();
}

void OpenInspectMutateFunctions(lua_State* L) {
  Ctx(L)->mutator_mt = NewUdMetatable(L, kMutatorMt, GcUd<Mutator>, MutatorCall);
  OpenUserObjectFunctions(L);
  OpenInspectorFunctions(L);
  static const luaL_Reg kFns[] = {
      {"req_mutator_new", ReqMutatorNew}, {"res_mutator_new", ResMutatorNew}, {nullptr, nullptr}};
  luaL_setfuncs(L, kFns, 0);
}

}  // namespace trove::proxy
