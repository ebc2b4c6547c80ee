// Function libraries on the worker's Lua VM (Redis 7 functions): a
// library's load run (its code runs once with only the load API in reach:
// redis.register_function, redis.log and the version fields), the VM's
// table of registered functions rebuilt from the server's libraries when
// they change, and FCALL. Runs on the connection's worker. Lua errors
// longjmp: no C++ object with a destructor lives in a frame that lua_error
// or luaL_error leaves.
//
// Why every worker runs every library: a function is a Lua closure, and a
// closure lives in one VM. Each worker's VM runs the libraries' code when it
// first calls a function after a change (FUNCTION LOAD/DELETE/FLUSH/
// RESTORE raise the libraries' epoch), so a library's top-level state is per
// worker; a library's code may not touch the keyspace, so nothing but that
// state differs.
#include <strings.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "protocol/resp/commands/scripting_internal.h"
#include "protocol/resp/commands/server_commands.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"

namespace trove::resp {

// A load run in progress: what register_function collected.
struct LibraryLoad {
  std::vector<FunctionInfo> functions;
  std::chrono::steady_clock::time_point start;
  bool timed_out = false;
};

namespace {

constexpr char kLoadApiKey[] = "trove.load_api";    // registry: the load run's globals
constexpr char kLoadingKey[] = "trove.loading";     // registry: name -> closure, this run
constexpr char kFunctionsKey[] = "trove.functions";  // registry: lower name -> closure
constexpr auto kLoadTimeout = std::chrono::milliseconds(500);  // Redis's LOAD_TIMEOUT_MS

// The load run's globals: a read-only table whose only name is `redis`, a
// read-only table of the load API; reading any other name raises Redis's
// nonexistent-global error (so redis.call, math and getmetatable are out
// of reach while a library loads). Built once per VM.
constexpr char kLoadApi[] = R"(
local register, log, version, version_num = ...
local raw_error, raw_setmetatable, raw_rawget, raw_tostring = error, setmetatable, rawget, tostring
local function deny() raw_error('Attempt to modify a readonly table', 2) end
local function view(t)
  return raw_setmetatable({}, {
    __index = function(_, k)
      local v = raw_rawget(t, k)
      if v == nil then
        raw_error("Script attempted to access nonexistent global variable '" .. raw_tostring(k) .. "'", 2)
      end
      return v
    end,
    __newindex = deny,
    __metatable = false})
end
return view({redis = view({register_function = register, log = log,
                           LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
                           REDIS_VERSION = version, REDIS_VERSION_NUM = version_num})})
)";

bool ValidName(std::string_view n) {
  if (n.empty()) return false;
  for (char c : n) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_';
    if (!ok) return false;
  }
  return true;
}

constexpr char kBadName[] =
    "Library names can only contain letters, numbers, or underscores(_) and must be at least one "
    "character long";

// The flag table at idx; false on a value that is not a known flag name.
bool ReadFlags(lua_State* L, int idx, uint32_t* flags) {
  idx = lua_absindex(L, idx);
  const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, idx));
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_rawgeti(L, idx, i);
    uint32_t flag = 0;
    if (lua_type(L, -1) == LUA_TSTRING) {
      size_t len;
      const char* s = lua_tolstring(L, -1, &len);
      flag = FunctionFlagNamed(std::string_view(s, len));
    }
    lua_pop(L, 1);
    if (flag == 0) return false;
    *flags |= flag;
  }
  return true;
}

// register_function's arguments into *f and the callback at the top of
// the stack; an error message (a literal) or null.
const char* ReadRegisterArgs(lua_State* L, FunctionInfo* f) {
  const int argc = lua_gettop(L);
  if (argc < 1 || argc > 2) return "wrong number of arguments to redis.register_function";
  if (argc == 2) {
    if (lua_type(L, 1) != LUA_TSTRING) return "first argument to redis.register_function must be a string";
    if (!lua_isfunction(L, 2)) return "second argument to redis.register_function must be a function";
    size_t n;
    const char* s = lua_tolstring(L, 1, &n);
    f->name.assign(s, n);
    lua_pushvalue(L, 2);
    return nullptr;
  }
  if (!lua_istable(L, 1)) {
    return "calling redis.register_function with a single argument is only applicable to Lua "
           "table (representing named arguments).";
  }
  bool have_name = false;
  int callback = 0;
  lua_pushnil(L);
  while (lua_next(L, 1) != 0) {  // stack: table, [callback], key, value
    if (lua_type(L, -2) != LUA_TSTRING) return "named argument key given to redis.register_function is not a string";
    const char* key = lua_tostring(L, -2);
    if (strcasecmp(key, "function_name") == 0) {
      if (lua_type(L, -1) != LUA_TSTRING) return "function_name argument given to redis.register_function must be a string";
      size_t n;
      const char* s = lua_tolstring(L, -1, &n);
      f->name.assign(s, n);
      have_name = true;
    } else if (strcasecmp(key, "description") == 0) {
      if (lua_type(L, -1) != LUA_TSTRING) return "description argument given to redis.register_function must be a string";
      size_t n;
      const char* s = lua_tolstring(L, -1, &n);
      f->description.emplace(s, n);
    } else if (strcasecmp(key, "callback") == 0) {
      if (!lua_isfunction(L, -1)) return "callback argument given to redis.register_function must be a function";
      lua_pushvalue(L, -1);
      lua_rawsetp(L, LUA_REGISTRYINDEX, &kLoadingKey);  // the callback, until the loop ends
      callback = 1;
    } else if (strcasecmp(key, "flags") == 0) {
      if (!lua_istable(L, -1)) return "flags argument to redis.register_function must be a table representing function flags";
      if (!ReadFlags(L, -1, &f->flags)) return "unknown flag given";
    } else {
      return "unknown argument given to redis.register_function";
    }
    lua_pop(L, 1);
  }
  if (!have_name) return "redis.register_function must get a function name argument";
  if (callback == 0) return "redis.register_function must get a callback argument";
  lua_rawgetp(L, LUA_REGISTRYINDEX, &kLoadingKey);
  lua_pushnil(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &kLoadingKey);
  return nullptr;
}

// Records the function whose callback is at the top of the stack; an
// error message or null.
const char* Register(lua_State* L, LibraryLoad* load, FunctionInfo* f) {
  if (!ValidName(f->name)) return kBadName;
  const std::string lower = ToLower(f->name);
  for (const FunctionInfo& g : load->functions)
    if (ToLower(g.name) == lower) return "Function already exists in the library";
  lua_getfield(L, LUA_REGISTRYINDEX, kLoadingKey);
  lua_insert(L, -2);
  lua_setfield(L, -2, lower.c_str());
  lua_pop(L, 1);
  load->functions.push_back(std::move(*f));
  return nullptr;
}

int LuaRegisterFunction(lua_State* L) {
  LibraryLoad* load = VmOf(L).load;
  if (load == nullptr)
    return luaL_error(L, "redis.register_function can only be called on FUNCTION LOAD command");
  const char* err;
  {
    FunctionInfo f;
    err = ReadRegisterArgs(L, &f);
    if (err == nullptr) err = Register(L, load, &f);
  }
  if (err != nullptr) return luaL_error(L, "%s", err);
  return 0;
}

// Stops a load run that takes longer than kLoadTimeout; once raised, the
// error repeats at every line, so a pcall in the library cannot outlast it.
void LoadHook(lua_State* L, lua_Debug*) {
  LibraryLoad* load = VmOf(L).load;
  if (load == nullptr) return;
  if (!load->timed_out && std::chrono::steady_clock::now() - load->start <= kLoadTimeout) return;
  load->timed_out = true;
  lua_sethook(L, LoadHook, LUA_MASKLINE | LUA_MASKCOUNT, 1);
  luaL_error(L, "FUNCTION LOAD timeout");
}

// Points _G's metatable at the load API (load) or back at the globals.
void SwapGlobals(lua_State* L, bool load) {
  lua_pushglobaltable(L);
  if (lua_getmetatable(L, -1) == 0) {  // an unprotected VM (a bug in kProtect)
    lua_pop(L, 1);
    return;
  }
  lua_getfield(L, LUA_REGISTRYINDEX, load ? kLoadApiKey : kGlobalsKey);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 2);
}

// The text of the error at the top of the stack (a string or {err=...}).
std::string ErrorText(lua_State* L) {
  std::string msg;
  if (lua_istable(L, -1)) {
    lua_pushliteral(L, "err");
    lua_rawget(L, -2);
    if (lua_isstring(L, -1)) msg = lua_tostring(L, -1);
    lua_pop(L, 1);
  } else if (lua_isstring(L, -1)) {
    msg = lua_tostring(L, -1);
  }
  if (msg.compare(0, 4, "ERR ") == 0) msg.erase(0, 4);
  return msg;
}

// Runs a library's code (shebang line blanked) in load mode; on success
// its closures are in the registry's kLoadingKey table by lower-cased name.
bool LoadRun(ScriptVm& vm, std::string_view code, LibraryLoad* load, std::string* err) {
  lua_State* L = vm.L;
  lua_settop(L, 0);
  PushErrorHandler(L);
  if (luaL_loadbuffer(L, code.data(), code.size(), "@user_function") != LUA_OK) {
    *err = "ERR Error compiling function: " + ErrorText(L);
    lua_settop(L, 0);
    return false;
  }
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, kLoadingKey);
  SwapGlobals(L, true);
  vm.load = load;
  load->start = std::chrono::steady_clock::now();
  lua_sethook(L, LoadHook, LUA_MASKCOUNT, 100000);
  const int rc = lua_pcall(L, 0, 0, 1);
  SetTimeLimitHook(L);  // the scripts' hook again
  vm.load = nullptr;
  SwapGlobals(L, false);
  if (rc != LUA_OK) {
    *err = "ERR Error registering functions: " + ErrorText(L);
    lua_settop(L, 0);
    return false;
  }
  lua_settop(L, 0);
  if (load->functions.empty()) {
    *err = "ERR No functions registered";
    return false;
  }
  return true;
}

// The library code with its first line blanked (line numbers stay).
std::string Body(std::string_view code) {
  const size_t eol = code.find('\n');
  if (eol == std::string_view::npos) return std::string();
  return std::string(code.substr(eol));
}

// Brings the VM's functions up to date with libs.
void SyncFunctions(ScriptVm& vm, const FunctionLibraries& libs) {
  const uint64_t epoch = libs.epoch();
  if (vm.functions_of == &libs && vm.functions_epoch == epoch) return;
  lua_State* L = vm.L;
  vm.functions.clear();
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, kFunctionsKey);
  for (const FunctionLibrary& lib : libs.Snapshot()) {
    LibraryLoad load;
    std::string err;
    if (!LoadRun(vm, Body(lib.code), &load, &err)) continue;  // loaded once: fails only on time
    lua_getfield(L, LUA_REGISTRYINDEX, kFunctionsKey);
    lua_getfield(L, LUA_REGISTRYINDEX, kLoadingKey);
    for (const FunctionInfo& f : lib.functions) {
      const std::string lower = ToLower(f.name);
      lua_getfield(L, -1, lower.c_str());
      lua_setfield(L, -3, lower.c_str());
      vm.functions[lower] = f;
    }
    lua_settop(L, 0);
  }
  lua_pushnil(L);
  lua_setfield(L, LUA_REGISTRYINDEX, kLoadingKey);
  vm.functions_of = &libs;
  vm.functions_epoch = epoch;
}

}  // namespace

void OpenLoadApi(lua_State* L) {
  if (luaL_loadbuffer(L, kLoadApi, sizeof kLoadApi - 1, "=trove_load_api") != LUA_OK) {
    lua_pop(L, 1);
    return;  // a bug in kLoadApi: FUNCTION LOAD finds no globals at all
  }
  lua_pushcfunction(L, LuaRegisterFunction);
  lua_pushcfunction(L, LuaLog);
  lua_pushstring(L, kRedisVersion);
  int major = 0, minor = 0, patch = 0;
  std::sscanf(kRedisVersion, "%d.%d.%d", &major, &minor, &patch);
  lua_pushinteger(L, (major << 16) | (minor << 8) | patch);
  if (lua_pcall(L, 4, 1, 0) != LUA_OK) {
    lua_pop(L, 1);
    return;
  }
  lua_setfield(L, LUA_REGISTRYINDEX, kLoadApiKey);
}

bool LoadLibrary(CommandContext& ctx, std::string_view code, FunctionLibrary* lib,
                 std::string* err) {
  if (code.compare(0, 2, "#!") != 0) {
    *err = "ERR Missing library metadata";
    return false;
  }
  const size_t eol = code.find('\n');
  if (eol == std::string_view::npos) {
    *err = "ERR Invalid library metadata";
    return false;
  }
  std::vector<std::string> parts;
  if (!SplitInlineArgs(code.substr(0, eol), &parts) || parts.empty()) {
    *err = "ERR Invalid library metadata";
    return false;
  }
  const std::string engine = parts[0].substr(2);
  bool have_name = false;
  for (size_t i = 1; i < parts.size(); ++i) {
    if (strncasecmp(parts[i].c_str(), "name=", 5) != 0) {
      *err = "ERR Invalid metadata value given: " + parts[i];
      return false;
    }
    if (have_name) {
      *err = "ERR Invalid metadata value, name argument was given multiple times";
      return false;
    }
    lib->name = parts[i].substr(5);
    have_name = true;
  }
  if (!have_name) {
    *err = "ERR Library name was not given";
    return false;
  }
  if (!ValidName(lib->name)) {
    *err = std::string("ERR ") + kBadName;
    return false;
  }
  if (strcasecmp(engine.c_str(), "lua") != 0) {
    *err = "ERR Engine '" + engine + "' not found";
    return false;
  }
  ScriptVm& vm = VmFor(ctx.server->scripts());
  LibraryLoad load;
  if (!LoadRun(vm, Body(code), &load, err)) return false;
  lua_pushnil(vm.L);
  lua_setfield(vm.L, LUA_REGISTRYINDEX, kLoadingKey);
  lib->code.assign(code);
  lib->functions = std::move(load.functions);
  return true;
}

void RunFunction(CommandContext& ctx, size_t numkeys, bool read_only) {
  ScriptVm& vm = VmFor(ctx.server->scripts());
  SyncFunctions(vm, ctx.server->functions());
  // Reused: FCALL cannot nest (scripts may not call it).
  thread_local std::string lower;
  lower.assign(ctx.argv[1]);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto it = vm.functions.find(lower);
  if (it == vm.functions.end()) {
    ctx.Error("ERR Function not found");
    return;
  }
  const FunctionInfo& f = it->second;
  ScriptRun run;
  if (!StartRun(vm, ctx, numkeys, read_only, /*flagged=*/true, f.flags, &run)) return;
  run.is_function = true;
  lua_State* L = vm.L;
  lua_settop(L, 0);
  PushErrorHandler(L);
  lua_getfield(L, LUA_REGISTRYINDEX, kFunctionsKey);
  lua_getfield(L, -1, lower.c_str());
  lua_remove(L, -2);
  PushStringArray(L, ctx.argv.subspan(3, numkeys));
  PushStringArray(L, ctx.argv.subspan(3 + numkeys));
  InvokeScript(vm, run, 2, f.name);
}

}  // namespace trove::resp
