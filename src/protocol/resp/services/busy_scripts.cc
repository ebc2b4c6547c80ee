// BusyScripts (busy_scripts.h).
#include "protocol/resp/services/busy_scripts.h"

#include <algorithm>

namespace trove::resp {
namespace {

thread_local int tls_busy_kind = 0;

}  // namespace

int BusyScripts::ThisWorkerBusy() { return tls_busy_kind; }
void BusyScripts::SetThisWorkerBusy(int kind) { tls_busy_kind = kind; }

const char* BusyScripts::BusyError(bool is_eval) {
  return is_eval
             ? "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
             : "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN "
               "NOSAVE.";
}

void BusyScripts::Enter(Entry e) {
  MutexLock l(&mu_);
  std::sort(e.stripes.begin(), e.stripes.end());
  e.kill = stop_.load(std::memory_order_relaxed);
  busy_.push_back(std::move(e));
  count_.fetch_add(1, std::memory_order_relaxed);
}

void BusyScripts::Leave(int worker) {
  MutexLock l(&mu_);
  for (auto it = busy_.begin(); it != busy_.end(); ++it) {
    if (it->worker == worker) {
      busy_.erase(it);
      count_.fetch_sub(1, std::memory_order_relaxed);
      return;
    }
  }
}

void BusyScripts::AddStripe(int worker, uint32_t stripe) {
  MutexLock l(&mu_);
  for (Entry& e : busy_) {
    if (e.worker != worker) continue;
    e.stripes.insert(std::upper_bound(e.stripes.begin(), e.stripes.end(), stripe), stripe);
    return;
  }
}

bool BusyScripts::KillRequested(int worker) const {
  MutexLock l(&mu_);
  for (const Entry& e : busy_)
    if (e.worker == worker) return e.kill;
  return stop_.load(std::memory_order_relaxed);
}

bool BusyScripts::MayWrite(int worker) {
  MutexLock l(&mu_);
  for (Entry& e : busy_) {
    if (e.worker != worker) continue;
    if (e.kill) return false;
    e.wrote = true;
    return true;
  }
  return true;
}

BusyScripts::KillResult BusyScripts::Kill(bool is_eval) {
  MutexLock l(&mu_);
  KillResult first = KillResult::kNotBusy;
  for (Entry& e : busy_) {
    KillResult r;
    if (e.is_eval != is_eval) {
      r = e.is_eval ? KillResult::kBusyEval : KillResult::kBusyFunction;
    } else if (e.wrote) {
      r = KillResult::kUnkillable;
    } else {
      e.kill = true;
      return KillResult::kKilled;
    }
    if (first == KillResult::kNotBusy) first = r;
  }
  return first;
}

void BusyScripts::KillAll() {
  MutexLock l(&mu_);
  stop_.store(true, std::memory_order_relaxed);
  for (Entry& e : busy_) e.kill = true;
}

bool BusyScripts::Holds(int asking, std::span<const uint32_t> stripes, bool all_stripes,
                        bool* is_eval) const {
  MutexLock l(&mu_);
  for (const Entry& e : busy_) {
    if (e.worker == asking) continue;
    bool hit = e.all_stripes ? (all_stripes || !stripes.empty())
                             : (all_stripes && !e.stripes.empty());
    for (size_t i = 0; !hit && i < stripes.size(); ++i)
      hit = std::binary_search(e.stripes.begin(), e.stripes.end(), stripes[i]);
    if (hit) {
      *is_eval = e.is_eval;
      return true;
    }
  }
  return false;
}

bool BusyScripts::BusyElsewhere(int asking, bool* is_eval) const {
  MutexLock l(&mu_);
  for (const Entry& e : busy_) {
    if (e.worker == asking) continue;
    *is_eval = e.is_eval;
    return true;
  }
  return false;
}

bool BusyScripts::RunningFunction(std::string* name, std::vector<std::string>* command,
                                  int64_t* start_ns) const {
  MutexLock l(&mu_);
  for (const Entry& e : busy_) {
    if (e.is_eval) continue;
    *name = e.name;
    *command = e.command;
    *start_ns = e.start_ns;
    return true;
  }
  return false;
}

}  // namespace trove::resp
