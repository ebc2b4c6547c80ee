// FunctionLibraries: the Lua libraries of FUNCTION LOAD and the functions
// they register, shared by every worker of a RESP port (Redis 7 functions).
// Each worker runs the libraries' code in its own Lua VM to get the
// functions' closures (commands/scripting_library.cc); the epoch tells a VM
// that the set changed. Library names are case-sensitive, function names
// case-insensitive (FCALL TEST finds "test"), as in Redis.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/mutex.h"
#include "common/thread_annotations.h"

namespace trove::resp {

// A function's flags (redis.register_function's `flags`).
enum FunctionFlag : uint32_t {
  kFnNoWrites = 1u << 0,
  kFnAllowOom = 1u << 1,
  kFnAllowStale = 1u << 2,
  kFnNoCluster = 1u << 3,
  kFnAllowCrossSlotKeys = 1u << 4,
};
// Flag names in bit order, for FUNCTION LIST and the shebang of EVAL.
inline constexpr std::string_view kFunctionFlagNames[] = {"no-writes", "allow-oom", "allow-stale",
                                                          "no-cluster", "allow-cross-slot-keys"};

// The FunctionFlag named (a script shebang's or register_function's flag),
// 0 for an unknown name.
uint32_t FunctionFlagNamed(std::string_view name);

struct FunctionInfo {
  std::string name;                        // as registered
  std::optional<std::string> description;  // absent: FUNCTION LIST's null
  uint32_t flags = 0;                      // FunctionFlag bits
};

struct FunctionLibrary {
  std::string name;
  std::string code;  // the whole FUNCTION LOAD body, shebang included
  std::vector<FunctionInfo> functions;
};

// Thread safety: every method may be called from any worker; the maps are
// guarded by mu_ (a leaf: nothing is locked under it), the epoch is atomic.
// Invariants:
//  1. every function name (lower-cased) in by_function_ names a function of
//     exactly one library in libraries_, and every function is there;
//  2. epoch_ rises on every change to libraries_.
class FunctionLibraries {
 public:
  enum class RestorePolicy { kAppend, kReplace, kFlush };

  // Adds lib (FUNCTION LOAD); with replace, a library of the same name is
  // replaced. False with Redis's error text (no "ERR ") when the library
  // exists without replace or a function name is another library's.
  bool Add(FunctionLibrary lib, bool replace, std::string* err) EXCLUDES(mu_);
  // FUNCTION RESTORE: all of libs or nothing, by policy.
  bool Restore(std::vector<FunctionLibrary> libs, RestorePolicy policy, std::string* err)
      EXCLUDES(mu_);
  bool Delete(std::string_view name) EXCLUDES(mu_);
  void Flush() EXCLUDES(mu_);

  // Every library, by name.
  std::vector<FunctionLibrary> Snapshot() const EXCLUDES(mu_);

  uint64_t epoch() const { return epoch_.load(std::memory_order_acquire); }
  size_t library_count() const EXCLUDES(mu_);
  size_t function_count() const EXCLUDES(mu_);
  // The libraries' code and names, for INFO's used_memory_functions.
  size_t bytes() const EXCLUDES(mu_);

 private:
  // Checks that lib's functions collide with no library but `except`.
  bool FunctionsFree(const FunctionLibrary& lib, std::string_view except, std::string* err) const
      REQUIRES(mu_);
  void Insert(FunctionLibrary lib) REQUIRES(mu_);
  void Erase(std::map<std::string, FunctionLibrary, std::less<>>::iterator it) REQUIRES(mu_);

  mutable Mutex mu_{LockRank::kLeaf};
  std::map<std::string, FunctionLibrary, std::less<>> libraries_ GUARDED_BY(mu_);
  // lower-cased function name -> its library's name
  std::map<std::string, std::string, std::less<>> by_function_ GUARDED_BY(mu_);
  std::atomic<uint64_t> epoch_{1};
};

}  // namespace trove::resp
