// The worker's Lua VM for server-side scripts: created on first use on each
// worker (thread_local), with the base, table, string and math libraries,
// the redis table and protected globals; scripts compiled once per VM by
// SHA-1; a script's run and its error reply. Runs on the connection's
// worker. Lua errors longjmp: no C++ object with a
// destructor lives in a frame that lua_error or luaL_error leaves.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>

#include "common/sha1.h"
#include "protocol/resp/commands/scripting_internal.h"

extern "C" {
#include <lua5.4/lua-cjson.h>  // Debian's lua-cjson: luaopen_cjson
}
#include "protocol/resp/commands/server_commands.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/services/script_cache.h"

namespace trove::resp {
namespace {

constexpr char kScriptsKey[] = "trove.scripts";  // registry: ref -> compiled function

thread_local ScriptVm tls_vm;

// The sum of every VM's reported_bytes; relaxed: a statistic.
std::atomic<int64_t> g_vm_bytes{0};

// Brings vm's share of g_vm_bytes up to date (one atomic add when it moved).
void ReportVmBytes(ScriptVm& vm) {
  const int64_t now = static_cast<int64_t>(lua_gc(vm.L, LUA_GCCOUNT, 0)) * 1024 +
                      lua_gc(vm.L, LUA_GCCOUNTB, 0);
  if (now == vm.reported_bytes) return;
  g_vm_bytes.fetch_add(now - vm.reported_bytes, std::memory_order_relaxed);
  vm.reported_bytes = now;
}

// Lua setup run once per VM, before the globals are protected: Lua 5.1
// names scripts written for Redis use, and load restricted to source text.
constexpr char kSetup[] = R"(
local raw_load = load
load = function(chunk, name, mode, ...)
  if select('#', ...) > 0 then return raw_load(chunk, name, 't', ...) end
  return raw_load(chunk, name, 't')
end
loadstring = load
unpack = table.unpack
table.getn = function(t) return #t end
math.mod = math.fmod
dofile = nil
loadfile = nil
print = nil
)";

// Run once per VM after kSetup: the globals move to a table of their own,
// the libraries are replaced by read-only views, and setmetatable/rawset
// refuse protected tables, so no script can change what the next script
// (of any client on this worker) sees. Returns the globals and the set of
// protected tables; "__trove_guard" (removed by the caller) is the value
// getmetatable answers for a protected table: writing to it raises too.
constexpr char kProtect[] = R"(
local G0 = {}
for k, v in next, _G do G0[k] = v end
local raw_setmetatable, raw_rawset, raw_error, raw_next = setmetatable, rawset, error, next
local guarded = raw_setmetatable({}, {__mode = 'k'})
local function deny() raw_error('Attempt to modify a readonly table', 2) end
local guard = raw_setmetatable({}, {__newindex = deny, __metatable = false})
local function readonly(t)
  local p = raw_setmetatable({}, {__index = t, __newindex = deny, __metatable = guard,
                                  __pairs = function() return raw_next, t, nil end,
                                  __len = function() return #t end})
  guarded[p] = true
  return p
end
for _, name in ipairs({'redis', 'string', 'table', 'math', 'bit', 'cjson', 'cmsgpack', 'struct'}) do G0[name] = readonly(G0[name]) end
local smt = getmetatable('')
smt.__index = G0.string
smt.__metatable = guard
G0.setmetatable = function(t, mt)
  if guarded[t] then deny() end
  return raw_setmetatable(t, mt)
end
G0.rawset = function(t, k, v)
  if guarded[t] then deny() end
  return raw_rawset(t, k, v)
end
G0.__trove_guard = guard
return G0, guarded
)";

int GlobalIndex(lua_State* L) {
  return luaL_error(L, "Script attempted to access nonexistent global variable '%s'",
                    luaL_tolstring(L, 2, nullptr));
}

int GlobalNewIndex(lua_State* L) { return luaL_error(L, "Attempt to modify a readonly table"); }

lua_State* NewScriptVm(ScriptVm* vm) {
  lua_State* L = luaL_newstate();
  *static_cast<ScriptVm**>(lua_getextraspace(L)) = vm;
  luaL_requiref(L, "_G", luaopen_base, 1);
  luaL_requiref(L, LUA_TABLIBNAME, luaopen_table, 1);
  luaL_requiref(L, LUA_STRLIBNAME, luaopen_string, 1);
  luaL_requiref(L, LUA_MATHLIBNAME, luaopen_math, 1);
  luaL_requiref(L, "bit", OpenBitLib, 1);
  luaL_requiref(L, "cjson", luaopen_cjson, 1);
  luaL_requiref(L, "cmsgpack", OpenMsgpackLib, 1);
  luaL_requiref(L, "struct", OpenStructLib, 1);
  lua_settop(L, 0);
  OpenRedisTable(L);
  OpenLoadApi(L);
  SetTimeLimitHook(L);
  if (luaL_loadbuffer(L, kSetup, sizeof kSetup - 1, "=trove_setup") != LUA_OK ||
      lua_pcall(L, 0, 0, 0) != LUA_OK)
    lua_settop(L, 0);  // a bug here: the names stay unset
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, kScriptsKey);
  // Read-only globals and libraries: kProtect returns the table that now
  // holds the globals and the set of protected tables; _G keeps no field of
  // its own (every read goes to that table, every write raises).
  if (luaL_loadbuffer(L, kProtect, sizeof kProtect - 1, "=trove_protect") != LUA_OK || lua_pcall(L, 0, 2, 0) != LUA_OK) {
    lua_settop(L, 0);  // a bug in kProtect: the VM runs unprotected
    return L;
  }
  const int globals = lua_absindex(L, -2);
  const int guarded = lua_absindex(L, -1);
  lua_pushvalue(L, globals);
  lua_setfield(L, LUA_REGISTRYINDEX, kGlobalsKey);
  lua_pushglobaltable(L);
  const int g = lua_gettop(L);
  for (;;) {  // empty _G (its fields live on in `globals`)
    lua_pushnil(L);
    if (lua_next(L, g) == 0) break;
    lua_pop(L, 1);
    lua_pushnil(L);
    lua_rawset(L, g);
  }
  lua_pushvalue(L, g);
  lua_pushboolean(L, 1);
  lua_rawset(L, guarded);  // setmetatable and rawset refuse _G
  lua_newtable(L);         // _G's metatable
  lua_pushvalue(L, globals);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, GlobalNewIndex);
  lua_setfield(L, -2, "__newindex");
  lua_getfield(L, globals, "__trove_guard");
  lua_setfield(L, -2, "__metatable");  // getmetatable(_G) answers a read-only guard
  lua_setmetatable(L, g);
  lua_pushnil(L);
  lua_setfield(L, globals, "__trove_guard");
  lua_newtable(L);  // the globals' metatable: an unknown name is an error
  lua_pushcfunction(L, GlobalIndex);
  lua_setfield(L, -2, "__index");
  lua_setmetatable(L, globals);
  lua_settop(L, 0);
  return L;
}

// Pushes the compiled function c.
void PushCompiled(lua_State* L, const ScriptVm::Compiled& c) {
  lua_getfield(L, LUA_REGISTRYINDEX, kScriptsKey);
  lua_rawgeti(L, -1, c.ref);
  lua_remove(L, -2);
}

// Reads a "#!lua [flags=a,b]" first line: false with *err on another engine
// or an unknown flag; the line is blanked in *src so line numbers stay.
bool ReadShebang(std::string* src, bool* flagged, uint32_t* flags, std::string* err) {
  if (src->compare(0, 2, "#!") != 0) return true;
  *flagged = true;
  const size_t eol = std::min(src->find('\n'), src->size());
  const std::string line = src->substr(2, eol - 2);
  size_t sp = line.find(' ');
  const std::string engine = line.substr(0, sp);
  if (engine != "lua") {
    *err = "ERR Unexpected engine in script shebang: " + engine;
    return false;
  }
  while (sp != std::string::npos) {
    const size_t start = sp + 1;
    sp = line.find(' ', start);
    const std::string arg = line.substr(start, sp == std::string::npos ? sp : sp - start);
    if (arg.empty()) continue;
    if (arg.compare(0, 6, "flags=") != 0) {
      *err = "ERR Unknown lua shebang option: " + arg;
      return false;
    }
    size_t p = 6;
    while (p < arg.size()) {
      size_t comma = std::min(arg.find(',', p), arg.size());
      const std::string flag = arg.substr(p, comma - p);
      const uint32_t bit = FunctionFlagNamed(flag);
      if (bit == 0) {
        *err = "ERR Unexpected flag in script shebang: " + flag;
        return false;
      }
      *flags |= bit;
      p = comma + 1;
    }
  }
  src->replace(0, eol, "");
  return true;
}

bool Compile(ScriptVm& vm, const std::string& sha, std::string_view body, std::string* err) {
  std::string src(body);
  bool flagged = false;
  uint32_t flags = 0;
  if (!ReadShebang(&src, &flagged, &flags, err)) return false;
  lua_State* L = vm.L;
  if (luaL_loadbuffer(L, src.data(), src.size(), "@user_script") != LUA_OK) {
    *err = std::string("ERR Error compiling script (new function): ") +
           (lua_tostring(L, -1) != nullptr ? lua_tostring(L, -1) : "?");
    lua_pop(L, 1);
    return false;
  }
  lua_getfield(L, LUA_REGISTRYINDEX, kScriptsKey);
  lua_insert(L, -2);
  ScriptVm::Compiled c;
  c.ref = luaL_ref(L, -2);
  lua_pop(L, 1);
  c.flagged = flagged;
  c.flags = flags;
  vm.compiled[sha] = c;
  return true;
}

}  // namespace

ScriptVm::~ScriptVm() {
  if (L == nullptr) return;
  g_vm_bytes.fetch_sub(reported_bytes, std::memory_order_relaxed);
  lua_close(L);
}

int64_t ScriptVmBytes() { return g_vm_bytes.load(std::memory_order_relaxed); }

ScriptVm& VmFor(const ScriptCache& cache) {
  ScriptVm& vm = tls_vm;
  if (vm.L == nullptr) {
    vm.L = NewScriptVm(&vm);
    ReportVmBytes(vm);
  }
  const uint64_t epoch = cache.epoch();
  auto [it, added] = vm.epochs.try_emplace(&cache, epoch);
  if (!added && it->second != epoch) {
    it->second = epoch;
    lua_newtable(vm.L);
    lua_setfield(vm.L, LUA_REGISTRYINDEX, kScriptsKey);
    vm.compiled.clear();
    lua_gc(vm.L, LUA_GCCOLLECT, 0);  // the dropped functions' memory, now
    ReportVmBytes(vm);
  }
  return vm;
}

ScriptVm& VmOf(lua_State* L) { return **static_cast<ScriptVm**>(lua_getextraspace(L)); }

namespace {

int ErrorHandler(lua_State* L) {
  if (!lua_istable(L, 1)) {
    const char* msg = luaL_tolstring(L, 1, nullptr);
    lua_newtable(L);
    lua_pushliteral(L, "ERR ");
    lua_pushstring(L, msg);
    lua_concat(L, 2);
    lua_setfield(L, -2, "err");
    lua_replace(L, 1);
    lua_settop(L, 1);
  }
  // The innermost frame of the user's code: past C functions (error,
  // redis.call) and Trove's own Lua (the read-only guards' handlers).
  lua_Debug ar;
  bool have = false;
  for (int level = 1; !have && lua_getstack(L, level, &ar) != 0; ++level) {
    have = lua_getinfo(L, "Sl", &ar) != 0 && std::strncmp(ar.source, "@user_", 6) == 0;
  }
  if (have && ar.currentline > 0) {  // raw: the script's own table may guard its fields
    lua_pushliteral(L, "source");
    lua_pushstring(L, ar.source);
    lua_rawset(L, 1);
    lua_pushliteral(L, "line");
    lua_pushinteger(L, ar.currentline);
    lua_rawset(L, 1);
  }
  return 1;
}

}  // namespace

void PushErrorHandler(lua_State* L) { lua_pushcfunction(L, ErrorHandler); }

// The error at the top of the stack after a failed run, as the reply's text.
std::string RunErrorText(lua_State* L, const std::string& sha) {
  if (!lua_istable(L, -1)) {
    const char* m = lua_tostring(L, -1);
    return std::string("ERR Error running script ") + sha + ", " + (m != nullptr ? m : "?");
  }
  // Raw reads: the table may be the script's own, with metamethods that raise.
  const int t = lua_gettop(L);
  lua_pushliteral(L, "err");
  lua_rawget(L, t);
  std::string msg = lua_tostring(L, -1) != nullptr ? lua_tostring(L, -1) : "ERR unknown error";
  lua_pop(L, 1);
  lua_pushliteral(L, "source");
  lua_rawget(L, t);
  lua_pushliteral(L, "line");
  lua_rawget(L, t);
  if (lua_isstring(L, -2) && lua_isinteger(L, -1)) {
    msg += " script: " + sha + ", on " + lua_tostring(L, -2) + ":" +
           std::to_string(lua_tointeger(L, -1)) + ".";
  }
  lua_pop(L, 2);
  return msg;
}

void PushStringArray(lua_State* L, std::span<const std::string_view> args) {
  lua_createtable(L, static_cast<int>(args.size()), 0);
  for (size_t i = 0; i < args.size(); ++i) {
    lua_pushlstring(L, args[i].data(), args[i].size());
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
}

namespace {

void SetArgs(lua_State* L, const char* name, std::span<const std::string_view> args) {
  lua_getfield(L, LUA_REGISTRYINDEX, kGlobalsKey);
  if (!lua_istable(L, -1)) {  // unprotected VM (see NewScriptVm)
    lua_pop(L, 1);
    lua_pushglobaltable(L);
  }
  lua_pushstring(L, name);
  PushStringArray(L, args);
  lua_rawset(L, -3);  // past the read-only guard
  lua_pop(L, 1);
}

}  // namespace


ScriptRun* CurrentRun(lua_State* L) { return VmOf(L).run; }

bool CompileScript(CommandContext& ctx, const std::string& sha, std::string_view body,
                   std::string* err) {
  ScriptVm& vm = VmFor(ctx.server->scripts());
  if (vm.compiled.count(sha) != 0) return true;  // the same body: compiled already
  lua_settop(vm.L, 0);
  return Compile(vm, sha, body, err);
}

void RunScript(CommandContext& ctx, const std::string& sha, const std::string* body,
               size_t numkeys, bool read_only) {
  ScriptCache& cache = ctx.server->scripts();
  ScriptVm& vm = VmFor(cache);
  lua_State* L = vm.L;
  lua_settop(L, 0);
  auto it = vm.compiled.find(sha);
  if (it == vm.compiled.end()) {
    std::string src, err;
    if (body != nullptr) {
      src = *body;
    } else if (!cache.Get(sha, &src)) {
      ctx.Error("NOSCRIPT No matching script. Please use EVAL.");
      return;
    }
    if (!Compile(vm, sha, src, &err)) {
      ctx.Error(err);
      return;
    }
    if (body != nullptr) cache.Add(sha, *body, ScriptCache::Origin::kEval);
    it = vm.compiled.find(sha);
  }
  const ScriptVm::Compiled script = it->second;
  ScriptRun run;
  if (!StartRun(vm, ctx, numkeys, read_only, script.flagged, script.flags, &run)) return;
  SetArgs(L, "KEYS", ctx.argv.subspan(3, numkeys));
  SetArgs(L, "ARGV", ctx.argv.subspan(3 + numkeys));
  PushErrorHandler(L);
  PushCompiled(L, script);
  InvokeScript(vm, run, 0, sha);
}

bool StartRun(ScriptVm& vm, CommandContext& ctx, size_t numkeys, bool read_only, bool flagged,
              uint32_t flags, ScriptRun* run) {
  const bool no_writes = (flags & kFnNoWrites) != 0;
  const bool allow_oom = (flags & kFnAllowOom) != 0;
  if (flagged) {  // Redis 7's checks of a script that declares its flags
    if (read_only && !no_writes) {
      ctx.Error("ERR Can not execute a script with write flag using *_ro command.");
      return false;
    }
    if (!no_writes && !allow_oom && ctx.engine->over_mem_limit()) {
      ctx.Error("OOM command not allowed when used memory > 'maxmemory'.");
      return false;
    }
  }
  run->ctx = &ctx;
  run->start_ns = ctx.engine->clock()->MonoNanos();
  run->read_only = read_only || no_writes;
  run->allow_oom = allow_oom;
  run->exclusive = ctx.exclusive;
  run->keys = std::move(vm.keys_buf);  // its capacity, reused (InvokeScript gives it back)
  run->keys.clear();
  for (size_t i = 0; i < numkeys; ++i) run->keys.push_back(ctx.Key(3 + i));
  std::sort(run->keys.begin(), run->keys.end());
  return true;
}

namespace {

// The message of a killed run (Redis's words for scripts and functions).
void PushKilled(lua_State* L) { PushErrTable(L, kScriptKilledError); }

// A run past busy-reply-threshold: its entry in BusyScripts (busy_scripts.h).
void EnterBusy(ScriptRun& run, int worker) {
  const std::string& name = *run.name;
  CommandContext& ctx = *run.ctx;
  BusyScripts::Entry e;
  e.worker = worker;
  e.is_eval = !run.is_function;
  e.name = name;
  e.command.assign(ctx.argv.begin(), ctx.argv.end());
  e.start_ns = run.start_ns;
  e.all_stripes = run.exclusive;
  if (!run.exclusive) {
    for (const std::string& k : run.keys) e.stripes.push_back(ctx.engine->KeyStripe(k));
    for (const std::string& k : run.extra_locked) e.stripes.push_back(ctx.engine->KeyStripe(k));
  }
  e.wrote = run.wrote;
  ctx.server->busy_scripts().Enter(std::move(e));
  run.busy_worker = worker;
  std::fprintf(stderr,
               "Slow script detected: still in execution after %lld milliseconds. You can try "
               "killing the script using the %s command. Script name is: %s.\n",
               static_cast<long long>((ctx.engine->clock()->MonoNanos() - run.start_ns) / 1000000),
               run.is_function ? "FUNCTION KILL" : "SCRIPT KILL", name.c_str());
}

// Every kHookInstructions: past the threshold, the run becomes busy; a busy
// run serves its worker's other clients (BUSY for most) and stops when
// killed, raising at every line from then on so that pcall cannot hold it.
void TimeLimitHook(lua_State* L, lua_Debug*) {
  ScriptVm& vm = VmOf(L);
  ScriptRun* run = vm.run;
  if (run == nullptr) return;
  CommandContext& ctx = *run->ctx;
  BusyScripts& busy = ctx.server->busy_scripts();
  const bool stopping = busy.stopping();
  if (run->busy_worker < 0 && !stopping) {
    const int64_t limit_ms = ctx.server->busy_reply_threshold.load(std::memory_order_relaxed);
    if (limit_ms <= 0 || ctx.client == nullptr || ctx.client->control() == nullptr) return;
    if (ctx.engine->clock()->MonoNanos() - run->start_ns < limit_ms * 1000000) return;
    EnterBusy(*run, ctx.client->control()->worker_id());
  }
  if (run->busy_worker >= 0) {
    BusyScripts::SetThisWorkerBusy(run->is_function ? 2 : 1);
    ctx.client->control()->ServeOthersWhileBusy();
    BusyScripts::SetThisWorkerBusy(0);
  }
  if (!stopping && !busy.KillRequested(run->busy_worker)) return;
  lua_sethook(L, TimeLimitHook, LUA_MASKLINE, 0);
  PushKilled(L);
  lua_error(L);
}

}  // namespace

void SetTimeLimitHook(lua_State* L) { lua_sethook(L, TimeLimitHook, LUA_MASKCOUNT, kHookInstructions); }

namespace {

// The end of a busy run: out of BusyScripts, the hook back to its period.
void EndBusy(lua_State* L, ScriptRun& run) {
  run.ctx->server->busy_scripts().Leave(run.busy_worker);
  run.busy_worker = -1;
  SetTimeLimitHook(L);
}

}  // namespace

void InvokeScript(ScriptVm& vm, ScriptRun& run, int nargs, const std::string& name) {
  lua_State* L = vm.L;
  const int handler = lua_gettop(L) - nargs - 1;
  run.name = &name;
  vm.run = &run;
  const int rc = lua_pcall(L, nargs, 1, handler);
  vm.run = nullptr;
  if (run.busy_worker >= 0) EndBusy(L, run);
  // As Redis: a small incremental GC step every 50 runs keeps the garbage
  // of many short scripts (their KEYS/ARGV tables, strings) from piling up
  // until a full cycle, which would add latency to one unlucky script.
  constexpr int kGcStepPeriod = 50;
  if (++vm.runs_since_gc_step == kGcStepPeriod) {
    lua_gc(L, LUA_GCSTEP, kGcStepPeriod);
    vm.runs_since_gc_step = 0;
  }
  ReportVmBytes(vm);
  run.ctx->script_read = run.read_called;
  for (const std::string& k : run.extra_locked) run.ctx->engine->UnlockKeyStripe(k);
  run.extra_locked.clear();
  if (run.want_exclusive) {
    run.ctx->want_exclusive = true;  // no reply: the seam runs the script again
  } else if (rc != LUA_OK) {
    bool counted = false;  // a called command's error, counted where it arose
    if (lua_istable(L, -1)) {
      lua_pushliteral(L, "ignore_error_stats_update");
      lua_rawget(L, -2);
      counted = lua_toboolean(L, -1) != 0;
      lua_pop(L, 1);
    }
    const std::string msg = RunErrorText(L, name);
    if (counted) {
      run.ctx->w->ErrorCounted(msg);
    } else {
      run.ctx->Error(msg);
    }
  } else {
    ReplyFromLua(L, -1, run.ctx->w, run.resp, 0);
  }
  lua_settop(L, 0);
  vm.keys_buf = std::move(run.keys);
}

}  // namespace trove::resp
