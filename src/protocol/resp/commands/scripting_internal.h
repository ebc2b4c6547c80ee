// What the scripting family's files share (scripting.cc: EVAL and SCRIPT;
// functions.cc: FUNCTION and FCALL; scripting_lua.cc: the worker's Lua VM
// and a script's run; scripting_redis_api.cc: the `redis` table;
// scripting_library.cc: a library's load run and the VM's functions;
// scripting_bitlib.cc, scripting_msgpack.cc, scripting_structlib.cc: the
// bit, cmsgpack and struct libraries;
// scripting_call.cc: redis.call through the command seam;
// scripting_convert.cc: RESP to Lua and back). Runs on the connection's
// worker.
#pragma once

#include <lua5.4/lua.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "net/io_buffer.h"
#include "protocol/resp/core/command.h"
#include "protocol/resp/services/function_library.h"
#include "protocol/resp/services/script_cache.h"

namespace trove::resp {

// One script's run, reached from Lua (redis.call) through the VM's extra
// space. Owner: the EVAL handler's stack frame; owner thread only.
struct ScriptRun {
  CommandContext* ctx = nullptr;  // the EVAL's context (its caller, writer, effects)
  std::vector<std::string> keys;  // the declared KEYS, as engine keys (sorted)
  bool read_only = false;         // EVAL_RO, EVALSHA_RO or a no-writes shebang
  bool allow_oom = false;         // an allow-oom shebang: writes run over maxmemory
  int resp = 2;                   // redis.setresp: the protocol of redis.call's replies
  bool wrote = false;             // a write ran: later writes skip the OOM check
  int db = -1;                    // the script's SELECT, -1: the caller's database
  bool read_called = false;       // a read-only command ran (client tracking)
  // Undeclared keys: with exclusive, every stripe is held (the seam ran the
  // script again so); else the keys whose stripes the run try-locked, to
  // unlock at its end; want_exclusive once one was busy before any write
  // (every later call fails, and the seam runs the script again).
  bool exclusive = false;
  std::vector<std::string> extra_locked;
  bool want_exclusive = false;
  // The time limit (busy_scripts.h): when the run began, whether it is a
  // function (FUNCTION KILL) and, past busy-reply-threshold, its worker's
  // entry in BusyScripts (busy_worker >= 0; -1: not busy).
  int64_t start_ns = 0;
  const std::string* name = nullptr;  // its SHA-1 or function name (InvokeScript)
  bool is_function = false;
  int busy_worker = -1;
  bool killed = false;  // a kill came before its first write (redis.call raises)
};

// The count hook's period, in Lua instructions (Redis's): how often a run
// checks its age, and once busy, serves its worker's other clients.
inline constexpr int kHookInstructions = 100000;

// Installs the time-limit hook on L (a new VM, or after a library load or
// a killed run changed it).
void SetTimeLimitHook(lua_State* L);
// The error of a killed run (Redis's words, for scripts and functions).
inline constexpr char kScriptKilledError[] = "ERR Script killed by user with SCRIPT KILL...";

// Registry keys of a VM: the scripts' globals (read-only, behind _G).
inline constexpr char kGlobalsKey[] = "trove.globals";

struct LibraryLoad;  // scripting_library.cc: a library's load run in progress

// One worker's VM, created on its first script (thread_local). Owner thread
// only.
struct ScriptVm {
  lua_State* L = nullptr;
  ScriptRun* run = nullptr;      // the script or function running, if any
  LibraryLoad* load = nullptr;   // the library whose code is running, if any
  // The epoch of each port's ScriptCache when this VM last saw it: a newer
  // one (SCRIPT FLUSH) drops every compiled script.
  std::unordered_map<const ScriptCache*, uint64_t> epochs;
  // The scripts compiled into this VM, by SHA-1 (one lookup a run): the
  // function's reference in the registry's scripts table, whether it has a
  // shebang and the flags (FunctionFlag bits) it declares.
  struct Compiled {
    int ref = 0;
    bool flagged = false;
    uint32_t flags = 0;
  };
  std::unordered_map<std::string, Compiled> compiled;
  std::vector<std::string> keys_buf;  // a run's declared keys, reused
  int64_t reported_bytes = 0;         // this VM's share of ScriptVmBytes()
  int runs_since_gc_step = 0;         // InvokeScript: a GC step every kGcStepPeriod runs
  // The libraries (and their epoch) the VM's functions were built from,
  // and each function's flags by lower-cased name.
  const FunctionLibraries* functions_of = nullptr;
  uint64_t functions_epoch = 0;
  std::unordered_map<std::string, FunctionInfo> functions;
  // Reused by every redis.call of this VM (calls never nest: a script
  // cannot call EVAL or FCALL), so a call allocates nothing once warm.
  struct CallScratch {
    std::vector<std::string_view> argv;
    std::vector<std::string> numbers;  // float arguments, formatted (reserved per call)
    std::vector<size_t> key_idx;
    net::OutputBuffer out;  // the called command's reply, drained after each call
    std::string reply;      // its bytes (or the refusal's text)
  } call;
  ScriptVm() = default;
  ScriptVm(const ScriptVm&) = delete;
  ScriptVm& operator=(const ScriptVm&) = delete;
  ~ScriptVm();
};

// The memory of every worker's Lua VM (INFO memory), as each VM last
// reported it after a script, a function or a library load.
int64_t ScriptVmBytes();

// This worker's VM, its compiled scripts dropped if `cache` was flushed
// since it last looked.
ScriptVm& VmFor(const ScriptCache& cache);
ScriptVm& VmOf(lua_State* L);

// The run in progress on L's VM; null outside a script.
ScriptRun* CurrentRun(lua_State* L);

// Fills *run for a script or function with `flags` (FunctionFlag bits) run
// by ctx, its declared keys at argv[3 .. 3+numkeys). A script that declares
// flags (a shebang, or any function) gets Redis 7's checks first: *_RO needs
// no-writes, and one that may write is refused over maxmemory unless
// allow-oom. False after replying the error.
bool StartRun(ScriptVm& vm, CommandContext& ctx, size_t numkeys, bool read_only, bool flagged,
              uint32_t flags, ScriptRun* run);

// Calls the function below the top nargs values of vm.L's stack as `run`
// (errors named after `name`: a script's SHA-1 or a function's name) and
// writes its reply to run.ctx; leaves the stack empty.
void InvokeScript(ScriptVm& vm, ScriptRun& run, int nargs, const std::string& name);
// Pushes a table of the strings args (KEYS, ARGV).
void PushStringArray(lua_State* L, std::span<const std::string_view> args);
// Pushes the message handler of a script's pcall (errors as {err, source, line}).
void PushErrorHandler(lua_State* L);
// The error at the top of the stack after a failed run, as the reply's text.
std::string RunErrorText(lua_State* L, const std::string& name);

// Registers the load-run API (redis.register_function, log, version) in
// the registry of a new VM; scripting_library.cc.
void OpenLoadApi(lua_State* L);
// luaopen for the `bit` library (scripting_bitlib.cc).
int OpenBitLib(lua_State* L);
// luaopen for the `cmsgpack` library (scripting_msgpack.cc).
int OpenMsgpackLib(lua_State* L);
// luaopen for the `struct` library (scripting_structlib.cc).
int OpenStructLib(lua_State* L);
// Sets the global `redis` table of a new VM (scripting_redis_api.cc).
void OpenRedisTable(lua_State* L);
// redis.log, shared by scripts and library loads.
int LuaLog(lua_State* L);

// FUNCTION LOAD: checks code's metadata, runs it in this worker's VM and
// fills *lib; false with the error reply's text.
bool LoadLibrary(CommandContext& ctx, std::string_view code, FunctionLibrary* lib,
                 std::string* err);
// FCALL and FCALL_RO: calls the function named argv[1] with the keys at
// argv[3 .. 3+numkeys). REQUIRES: the keys' stripes held, numkeys checked.
void RunFunction(CommandContext& ctx, size_t numkeys, bool read_only);

// EVAL's and FCALL's numkeys at argv[2], checked against the arguments
// (Redis's words); false after replying the error, not_integer for one that
// is no integer (EVAL and FCALL word it differently).
bool ParseNumKeys(CommandContext& ctx, std::string_view not_integer, size_t* nk);

// SCRIPT KILL (is_eval) and FUNCTION KILL: stops the busy script of its
// kind, with Redis's replies (OK, NOTBUSY, UNKILLABLE, BUSY of the other kind).
void KillBusyScript(CommandContext& ctx, bool is_eval);

// Runs the script named sha on this worker's VM for ctx (EVAL and EVALSHA),
// its keys at argv[3 .. 3+numkeys) and arguments after them, and replies.
// body: the source when known (EVAL), else taken from the server's cache
// (EVALSHA: NOSCRIPT when absent). REQUIRES: the declared keys' stripes
// held (the seam locks EVAL's keys), numkeys checked.
void RunScript(CommandContext& ctx, const std::string& sha, const std::string* body,
               size_t numkeys, bool read_only);
// Compiles body into this worker's VM (SCRIPT LOAD); false with the error
// reply's text on a syntax error.
bool CompileScript(CommandContext& ctx, const std::string& sha, std::string_view body,
                   std::string* err);

// redis.call (raises a command's error) and redis.pcall (returns it as
// {err=...}); scripting_call.cc.
int LuaRedisCall(lua_State* L);
int LuaRedisPCall(lua_State* L);
// redis.acl_check_cmd: may the script's user run this command?
int LuaAclCheckCmd(lua_State* L);

// {err=msg}, pushed.
void PushErrTable(lua_State* L, std::string_view msg);
// Pushes the RESP value at s[*pos] as Redis converts a reply for Lua
// (RESP2 and RESP3 types), advancing *pos past it.
void PushReply(lua_State* L, std::string_view s, size_t* pos);
// Writes the Lua value at idx as a reply, as Redis converts a script's
// return value; resp is the script's redis.setresp (it decides booleans),
// and w's protocol gives a RESP2 caller the RESP2 forms.
void ReplyFromLua(lua_State* L, int idx, RespWriter* w, int resp, int depth = 0);

}  // namespace trove::resp
