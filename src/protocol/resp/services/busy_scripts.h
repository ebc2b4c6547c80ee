// BusyScripts: the scripts and functions that have run longer than
// busy-reply-threshold (Redis's lua-time-limit), one per worker at most,
// shared by every worker: SCRIPT KILL and FUNCTION KILL from any worker stop
// one, FUNCTION STATS shows it, and a command that needs a stripe it holds
// is answered BUSY instead of waiting (docs/resp.md, "Scripting").
//
// How a long script runs (commands/scripting_lua.cc):
//  1. A Lua count hook (every kHookInstructions) compares the run's age
//     with the threshold. Past it, the run Enters here (its worker, kind,
//     name, command, the stripes it holds) and stays until it ends.
//  2. From then on, at every hook, its worker answers its other RESP
//     connections nested (net::ConnControl::ServeOthersWhileBusy): they get
//     BUSY, bar SCRIPT KILL, FUNCTION KILL, FUNCTION STATS and the
//     connection commands Redis also allows while busy (ThisWorkerBusy
//     tells them). Other workers go on; a command of theirs whose keys
//     share a stripe with the script gets BUSY (Holds), not a wait.
//  3. A kill is granted only before the script's first write (UNKILLABLE
//     after, as Redis); the script's first write after Enter asks MayWrite,
//     so a kill and a write never both happen. The hook then raises the
//     kill error at every line, so pcall cannot catch it for good.
//
// Thread safety: every method takes mu_ (a leaf) except any(), a relaxed
// load for the per-command test.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/mutex.h"

namespace trove::resp {

class BusyScripts {
 public:
  enum class KillResult : uint8_t { kKilled, kNotBusy, kUnkillable, kBusyEval, kBusyFunction };

  struct Entry {
    int worker = -1;
    bool is_eval = true;
    std::string name;                  // a script's SHA-1, a function's name
    std::vector<std::string> command;  // as sent (FUNCTION STATS)
    int64_t start_ns = 0;              // Clock::MonoNanos at the run's start
    std::vector<uint32_t> stripes;     // the item-lock stripes it holds
    bool all_stripes = false;          // exclusive: every stripe
    bool wrote = false;                // a write ran: not killable
    bool kill = false;                 // a kill was granted
  };

  // The script's worker, once past the threshold / at its end.
  void Enter(Entry e) EXCLUDES(mu_);
  void Leave(int worker) EXCLUDES(mu_);
  // A stripe the busy script of `worker` locked after it entered.
  void AddStripe(int worker, uint32_t stripe) EXCLUDES(mu_);
  // Was a kill granted for the script of `worker` (or is the server stopping)?
  bool KillRequested(int worker) const EXCLUDES(mu_);
  // Before a busy script's first write: false if a kill came first (the
  // script must stop instead); else it is unkillable from now on.
  bool MayWrite(int worker) EXCLUDES(mu_);

  // SCRIPT KILL (is_eval) and FUNCTION KILL, from any worker.
  KillResult Kill(bool is_eval) EXCLUDES(mu_);
  // Stops every busy script, written or not (server stop).
  void KillAll() EXCLUDES(mu_);
  // Does a busy script on another worker than `asking` hold any of these
  // stripes (every stripe, with all_stripes)? *is_eval: its kind.
  bool Holds(int asking, std::span<const uint32_t> stripes, bool all_stripes, bool* is_eval) const
      EXCLUDES(mu_);
  // Is a script busy on another worker than `asking`? *is_eval: its kind.
  bool BusyElsewhere(int asking, bool* is_eval) const EXCLUDES(mu_);
  // FUNCTION STATS' running_script: the busy function (any worker), if any.
  bool RunningFunction(std::string* name, std::vector<std::string>* command,
                       int64_t* start_ns) const EXCLUDES(mu_);

  bool any() const { return count_.load(std::memory_order_relaxed) > 0; }
  // KillAll was called: every run stops at its next hook, busy or not.
  bool stopping() const { return stop_.load(std::memory_order_relaxed); }

  // Set on a worker while its script serves the other connections nested
  // (2. above): they answer BUSY. 0: none; 1: a script; 2: a function.
  static int ThisWorkerBusy();
  static void SetThisWorkerBusy(int kind);

  // Redis's BUSY errors, without the leading '-'.
  static const char* BusyError(bool is_eval);

 private:
  mutable Mutex mu_{LockRank::kLeaf};
  std::vector<Entry> busy_ GUARDED_BY(mu_);
  std::atomic<int> count_{0};
  // Set under mu_ (so an Enter after KillAll sees it), read without it.
  std::atomic<bool> stop_{false};
};

}  // namespace trove::resp
