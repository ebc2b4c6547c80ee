// SORT's BY and GET patterns: their parts, their lookups, and the stripes of
// the keys they name (sort_patterns.h states the locking invariants). Runs
// on the connection's worker inside the SORT handler.
#include "protocol/resp/commands/sort_patterns.h"

#include <chrono>
#include <thread>

#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/services/busy_scripts.h"
#include "protocol/resp/types/keyspace.h"

namespace trove::resp {
namespace {

// How long SORT under EXEC or a script waits for a busy stripe before it
// gives up (a script's undeclared key waits as long: scripting_call.cc).
constexpr auto kWait = std::chrono::milliseconds(100);

}  // namespace

SortPattern::SortPattern(std::string_view text) {
  if (text == "#") {
    self = true;
    return;
  }
  const size_t star = text.find('*');
  if (star == std::string_view::npos) return;
  names_keys = true;
  prefix = text.substr(0, star);
  suffix = text.substr(star + 1);
  // "->" after the '*' with something after it; "x_*->" is a plain key.
  const size_t arrow = suffix.find("->");
  if (arrow != std::string_view::npos && arrow + 2 < suffix.size()) {
    field = suffix.substr(arrow + 2);
    suffix = suffix.substr(0, arrow);
  }
}

SortKeyLocks::~SortKeyLocks() {
  for (const std::string& k : taken_) ctx_.engine->UnlockKeyStripe(k);
}

bool SortKeyLocks::Acquire(std::string_view ekey) {
  if (ctx_.exclusive) return true;  // every stripe is held
  engine::Engine* e = ctx_.engine;
  const uint32_t stripe = e->KeyStripe(ekey);
  if (seen_.count(stripe) != 0) return true;
  if (ctx_.can_go_exclusive && taken_.size() >= kMaxHeld) {
    ctx_.want_exclusive = true;
    return false;
  }
  using Try = engine::Engine::StripeTry;
  Try t = e->TryLockKeyStripe(ekey);
  if (t == Try::kBusy) {
    // A script past busy-reply-threshold holding it: BUSY, as for any
    // command that needs its keys (waiting could take seconds).
    BusyScripts& busy = ctx_.server->busy_scripts();
    bool is_eval = true;
    const uint32_t one[] = {stripe};
    if (busy.any() && busy.Holds(-1, one, false, &is_eval)) {
      error_ = BusyScripts::BusyError(is_eval);
      return false;
    }
    if (ctx_.can_go_exclusive) {
      ctx_.want_exclusive = true;
      return false;
    }
    // One budget for the whole command, however many stripes are busy.
    if (wait_until_ == std::chrono::steady_clock::time_point{})
      wait_until_ = std::chrono::steady_clock::now() + kWait;
    while (t == Try::kBusy && std::chrono::steady_clock::now() < wait_until_) {
      std::this_thread::yield();
      t = e->TryLockKeyStripe(ekey);
    }
    if (t == Try::kBusy) {
      error_ =
          "ERR SORT could not lock a key its BY/GET pattern names: another client held it "
          "while this transaction or script held others; run the SORT outside MULTI/EXEC";
      return false;
    }
  }
  if (t == Try::kLocked) taken_.emplace_back(ekey);
  seen_.insert(stripe);
  return true;
}

PatternValue LookupPattern(CommandContext& ctx, SortKeyLocks& locks, const SortPattern& p,
                           std::string_view elem, std::vector<ScratchEntry>* scratch,
                           std::string* key_buf, std::string* out) {
  if (p.self) {
    out->assign(elem);
    return PatternValue::kFound;
  }
  if (!p.names_keys) return PatternValue::kNone;
  // The engine key of prefix + elem + suffix in the selected database,
  // built in the caller's reused buffer.
  const size_t raw_len = p.prefix.size() + elem.size() + p.suffix.size();
  key_buf->resize(2 + raw_len);
  char* raw = key_buf->data() + 2;
  p.prefix.copy(raw, p.prefix.size());
  elem.copy(raw + p.prefix.size(), elem.size());
  p.suffix.copy(raw + p.prefix.size() + elem.size(), p.suffix.size());
  char db_prefix[2];
  const size_t n = DbKeyPrefix(ctx.db(), std::string_view(raw, raw_len), db_prefix);
  key_buf->replace(0, 2, db_prefix, n);
  const std::string_view ekey = *key_buf;
  if (!locks.Acquire(ekey)) return PatternValue::kLockFailed;
  if (!p.field.empty()) {
    // Decoded into the lookups' own scratch, emptied at once: the value is
    // copied out, and the command's scratch keeps only its own keys.
    std::vector<ScratchEntry>* own = ctx.scratch;
    ctx.scratch = scratch;
    HashValue* h = nullptr;
    PatternValue r = PatternValue::kNone;
    if (LoadCollection<HashValue>(ctx, ekey, &h) == LoadStatus::kOk) {
      if (std::optional<std::string_view> v = h->Find(p.field)) {
        out->assign(*v);
        r = PatternValue::kFound;
      }
    }
    scratch->clear();
    ctx.scratch = own;
    return r;
  }
  engine::ItemRef it = LookupLocked(ctx, ekey);
  if (!it || it.type() != engine::ValueType::kString) return PatternValue::kNone;
  out->clear();
  it.CopyValue(out);
  return PatternValue::kFound;
}

}  // namespace trove::resp
