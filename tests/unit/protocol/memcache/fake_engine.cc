// A small stand-in for engine::Engine (a map under one mutex) so the memcache
// handler can be tested before, and independently of, the real engine. It
// implements the engine.h contract as the protocol relies on it, including
// the meta stale/win token rules and memcached's exptime meaning.
#include <cstring>
#include <map>
#include <string>

#include "common/limits.h"
#include "common/mutex.h"
#include "engine/engine.h"

namespace trove::engine {

struct Item {
  std::string key;
  std::string value;  // with the trailing CRLF, as the engine stores values
  uint32_t flags = 0;
  uint64_t cas = 0;
  int64_t exptime = 0;  // absolute unix seconds, 0 = never
  int64_t last_access = 0;
  int64_t stored_at = 0;
  bool fetched = false;
  bool stale = false;
  bool token_sent = false;
  bool linked = true;
  bool key_binary = false;  // stored through a base64 key (ms b)
  int refs = 0;
};

struct ThreadStats {
  int unused = 0;
};

struct Engine::Impl {
  Mutex mu{LockRank::kLeaf};
  std::map<std::string, Item*, std::less<>> items;
  uint64_t next_cas = 0;
  int64_t flushed_before = 0;  // items stored before this are invalid
  bool detail = false;
  bool crawler = true;
  std::map<int, ThreadStats> stats;

  int64_t Now(const Clock* c) const { return c->UnixSeconds(); }
  int64_t Abs(const Clock* c, int64_t e) const {
    if (e == 0) return 0;
    if (e < 0) return Now(c) - 1;
    if (e <= limits::kRealtimeMaxDelta) return Now(c) + e;
    return e;
  }
  void Unref(Item* it) {
    if (--it->refs == 0 && !it->linked) delete it;
  }
  void Unlink(Item* it) {
    items.erase(it->key);
    it->linked = false;
    if (it->refs == 0) delete it;
  }
  Item* Find(const Clock* c, std::string_view key) {
    auto i = items.find(key);
    if (i == items.end()) return nullptr;
    Item* it = i->second;
    if ((it->exptime != 0 && it->exptime <= Now(c)) || it->stored_at <= flushed_before) {
      Unlink(it);
      return nullptr;
    }
    return it;
  }
  StoreResult StoreAbs(const Clock* clock_, std::string_view key, uint32_t flags, int64_t abs,
                       std::string_view value, const StoreArgs& args, uint64_t* cas_out,
                       Item** stored);
  ItemRef Ref(Engine* e, Item* it) {
    ++it->refs;
    return ItemRef(e, it);
  }
  Item* Link(const Clock* c, std::string_view key, std::string_view value, uint32_t flags,
             int64_t exptime) {
    if (auto i = items.find(key); i != items.end()) Unlink(i->second);
    Item* it = new Item;
    it->key = std::string(key);
    it->value = std::string(value) + "\r\n";
    it->flags = flags;
    it->cas = ++next_cas;
    it->exptime = exptime;
    it->last_access = Now(c);
    it->stored_at = Now(c);
    items.emplace(it->key, it);
    return it;
  }
};

void ItemRef::Reset() {
  if (item_ != nullptr) Engine::ReleaseRaw(engine_, item_);
  item_ = nullptr;
}
std::string_view ItemRef::key() const { return item_->key; }
uint32_t ItemRef::client_flags() const { return item_->flags; }
uint64_t ItemRef::cas() const { return item_->cas; }
int64_t ItemRef::expires_at_unix() const { return 0; }
// The stand-in holds strings only.
ValueType ItemRef::type() const { return ValueType::kString; }
int ItemRef::slab_class() const { return 1; }
bool ItemRef::key_is_binary() const { return item_->key_binary; }
uint32_t ItemRef::value_length() const { return static_cast<uint32_t>(item_->value.size() - 2); }
std::string_view ItemRef::value() const {
  return std::string_view(item_->value).substr(0, item_->value.size() - 2);
}
int ItemRef::ValueSpans(iovec* out, int max, bool with_crlf, size_t skip) const {
  if (max < 1 || skip > 0) return 0;
  out[0].iov_base = item_->value.data();
  out[0].iov_len = item_->value.size() - (with_crlf ? 0 : 2);
  return 1;
}

Engine::Engine(const EngineOptions& opts)
    : opts_(opts), clock_(opts.clock), impl_(std::make_unique<Impl>()) {}
Engine::~Engine() {
  for (auto& [k, it] : impl_->items) {
    it->linked = false;
    if (it->refs == 0) delete it;
  }
}
Result<std::unique_ptr<Engine>> Engine::Create(const EngineOptions& opts) {
  return std::unique_ptr<Engine>(new Engine(opts));
}
void Engine::ReleaseRaw(void* engine, void* item) {
  auto* e = static_cast<Engine*>(engine);
  MutexLock l(&e->impl_->mu);
  e->impl_->Unref(static_cast<Item*>(item));
}
ThreadStats* Engine::NewThreadStats() {
  MutexLock l(&impl_->mu);
  return &impl_->stats[static_cast<int>(impl_->stats.size())];
}

uint64_t Engine::KeyHash(std::string_view key) { return std::hash<std::string_view>{}(key); }
void Engine::PrefetchKey(uint64_t) const {}
void Engine::PrefetchItem(uint64_t) const {}

ItemRef Engine::Get(std::string_view key, ThreadStats*, bool bump) {
  MutexLock l(&impl_->mu);
  Item* it = impl_->Find(clock_, key);
  if (it == nullptr) return {};
  if (bump) {
    it->fetched = true;
    it->last_access = impl_->Now(clock_);
  }
  return impl_->Ref(this, it);
}
ItemRef Engine::Peek(std::string_view key, ThreadStats* ts) { return Get(key, ts, false); }
ItemRef Engine::GetAndTouch(std::string_view key, int64_t exptime, ThreadStats* ts) {
  ItemRef r = Get(key, ts);
  if (r) {
    MutexLock l(&impl_->mu);
    r.raw()->exptime = impl_->Abs(clock_, exptime);
  }
  return r;
}
bool Engine::Touch(std::string_view key, int64_t exptime, ThreadStats* ts) {
  return static_cast<bool>(GetAndTouch(key, exptime, ts));
}

StoreResult Engine::Store(std::string_view key, uint32_t flags, int64_t exptime,
                          std::string_view value, const StoreArgs& args, ThreadStats*,
                          uint64_t* cas_out) {
  MutexLock l(&impl_->mu);
  if (value.size() + key.size() + 60 > opts_.item_size_max) return StoreResult::kTooLarge;
  return impl_->StoreAbs(clock_, key, flags, impl_->Abs(clock_, exptime), value, args, cas_out,
                         nullptr);
}

StoreResult Engine::Impl::StoreAbs(const Clock* clock_, std::string_view key, uint32_t flags,
                                   int64_t abs, std::string_view value, const StoreArgs& args,
                                   uint64_t* cas_out, Item** stored) {
  Impl* impl_ = this;
  Item* old = impl_->Find(clock_, key);
  std::string v(value);
  bool mark_stale = false;
  // As the engine: a compared set or replace is a cas, and 0 never matches.
  StoreMode mode = args.mode;
  if (args.compare_cas && (mode == StoreMode::kSet || mode == StoreMode::kReplace)) {
    mode = StoreMode::kCas;
  }
  const uint64_t want = args.compare_cas.value_or(0);
  switch (mode) {
    case StoreMode::kSet:
      break;
    case StoreMode::kAdd:
      if (old) return StoreResult::kNotStored;
      break;
    case StoreMode::kReplace:
      if (!old) return StoreResult::kNotStored;
      break;
    case StoreMode::kCas:
      if (!old) return StoreResult::kNotFound;
      if (want == 0 || old->cas != want) {
        if (!(args.invalidate && want != 0 && want < old->cas)) return StoreResult::kExists;
        mark_stale = true;
      }
      break;
    case StoreMode::kAppend:
    case StoreMode::kPrepend: {
      if (!old) {
        if (!args.vivify_exptime) return StoreResult::kNotStored;
        abs = impl_->Abs(clock_, *args.vivify_exptime);
        break;
      }
      if (args.compare_cas && (want == 0 || old->cas != want)) return StoreResult::kExists;
      std::string cur = old->value.substr(0, old->value.size() - 2);
      v = args.mode == StoreMode::kAppend ? cur + v : v + cur;
      flags = old->flags;
      abs = old->exptime;
      break;
    }
  }
  Item* it = impl_->Link(clock_, key, v, flags, abs);
  if (args.explicit_cas) it->cas = args.explicit_cas;
  it->stale = mark_stale;
  it->key_binary = args.key_binary;
  if (cas_out) *cas_out = it->cas;
  if (stored) *stored = it;
  return StoreResult::kStored;
}

AllocOutput Engine::Allocate(std::string_view key, uint32_t flags, int64_t exptime,
                             size_t value_len, ThreadStats*, ValueType, size_t max_value) {
  MutexLock l(&impl_->mu);
  AllocOutput o;
  if (max_value == 0 ? value_len + key.size() + 60 > opts_.item_size_max : value_len > max_value) {
    o.status = AllocStatus::kTooLarge;
    return o;
  }
  Item* it = new Item;
  it->key = std::string(key);
  it->value = std::string(value_len, '\0') + "\r\n";
  it->flags = flags;
  it->exptime = impl_->Abs(clock_, exptime);
  it->linked = false;
  it->refs = 1;
  o.status = AllocStatus::kOk;
  o.item = ItemRef(this, it);
  return o;
}

StoreResult Engine::StoreItem(ItemRef& item, const StoreArgs& args, ThreadStats*,
                              uint64_t* cas_out) {
  MutexLock l(&impl_->mu);
  Item* src = item.raw();
  Item* stored = nullptr;
  StoreResult r = impl_->StoreAbs(clock_, src->key, src->flags, src->exptime,
                                  std::string_view(src->value).substr(0, src->value.size() - 2),
                                  args, cas_out, &stored);
  if (stored != nullptr) {
    impl_->Unref(src);
    ++stored->refs;
    item.Detach();
    item = ItemRef(this, stored);
  }
  return r;
}

size_t ItemRef::SpanCount(bool) const { return 1; }
void ItemRef::WriteValue(size_t off, const char* src, size_t len) {
  std::memcpy(item_->value.data() + off, src, len);
}

ArithOutput Engine::Arith(std::string_view key, const ArithArgs& args, ThreadStats*) {
  MutexLock l(&impl_->mu);
  ArithOutput o;
  Item* it = impl_->Find(clock_, key);
  if (it == nullptr) {
    if (!args.vivify_exptime) return o;
    it = impl_->Link(clock_, key, std::to_string(args.initial), 0,
                     impl_->Abs(clock_, *args.vivify_exptime));
    o.value = args.initial;
    o.vivified = true;
  } else {
    if (args.compare_cas && it->cas != args.compare_cas) {
      o.result = ArithResult::kExists;
      return o;
    }
    std::string digits = it->value.substr(0, it->value.size() - 2);
    while (!digits.empty() && digits.back() == ' ') digits.pop_back();
    uint64_t v = 0;
    if (digits.empty() || digits.size() > 20) {
      o.result = ArithResult::kNonNumeric;
      return o;
    }
    for (char c : digits) {
      if (c < '0' || c > '9') {
        o.result = ArithResult::kNonNumeric;
        return o;
      }
      v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    v = args.incr ? v + args.delta : (v < args.delta ? 0 : v - args.delta);
    it->value = std::to_string(v) + "\r\n";
    it->cas = args.explicit_cas ? args.explicit_cas : ++impl_->next_cas;
    if (args.touch_exptime) it->exptime = impl_->Abs(clock_, *args.touch_exptime);
    o.value = v;
  }
  o.result = ArithResult::kOk;
  o.cas = it->cas;
  o.ttl = it->exptime == 0 ? -1 : it->exptime - impl_->Now(clock_);
  o.item = impl_->Ref(this, it);
  return o;
}

DeleteResult Engine::Delete(std::string_view key, const DeleteArgs& args, ThreadStats*) {
  MutexLock l(&impl_->mu);
  Item* it = impl_->Find(clock_, key);
  if (it == nullptr) return DeleteResult::kNotFound;
  if (args.compare_cas && it->cas != *args.compare_cas) return DeleteResult::kExists;
  if (args.invalidate) {
    it->stale = true;
    it->token_sent = false;
    it->cas = args.explicit_cas ? args.explicit_cas : ++impl_->next_cas;
    if (args.stale_exptime) it->exptime = impl_->Abs(clock_, *args.stale_exptime);
    return DeleteResult::kDeleted;
  }
  if (args.remove_value) {
    it->value = "\r\n";
    it->flags = 0;
    return DeleteResult::kDeleted;
  }
  impl_->Unlink(it);
  return DeleteResult::kDeleted;
}

void Engine::FlushAll(int64_t delay_seconds) {
  MutexLock l(&impl_->mu);
  impl_->flushed_before = impl_->Now(clock_) + delay_seconds;
}

MetaGetOutput Engine::MetaGet(std::string_view key, const MetaGetArgs& args, ThreadStats*) {
  MutexLock l(&impl_->mu);
  MetaGetOutput o;
  const int64_t now = impl_->Now(clock_);
  Item* it = impl_->Find(clock_, key);
  if (it == nullptr) {
    if (!args.vivify_exptime) return o;
    it = impl_->Link(clock_, key, "", 0, impl_->Abs(clock_, *args.vivify_exptime));
    o.vivified = true;
    o.win = true;
  } else {
    o.hit_before = it->fetched;
    o.last_access_ago = static_cast<uint32_t>(now - it->last_access);
    if (args.touch_exptime) it->exptime = impl_->Abs(clock_, *args.touch_exptime);
    o.already_won = it->token_sent;
    if (args.recache_ttl && !it->token_sent && it->exptime != 0 &&
        it->exptime - now < static_cast<int64_t>(*args.recache_ttl)) {
      o.win = true;
    }
    o.stale = it->stale;
    if (it->stale && !it->token_sent) o.win = true;
    if (args.bump) {
      it->fetched = true;
      it->last_access = now;
    }
  }
  if (o.win) it->token_sent = true;
  o.ttl = it->exptime == 0 ? -1 : it->exptime - now;
  o.item = impl_->Ref(this, it);
  return o;
}

int64_t Engine::TtlSeconds(const ItemRef& ref) const {
  return ref.raw()->exptime == 0 ? -1 : ref.raw()->exptime - clock_->UnixSeconds();
}
uint64_t Engine::curr_items() const {
  MutexLock l(&impl_->mu);
  return impl_->items.size();
}

StatList Engine::Stats() const { return {{"curr_items", std::to_string(curr_items())}}; }
StatList Engine::SettingsStats() const {
  MutexLock l(&impl_->mu);
  return {{"maxbytes", std::to_string(opts_.mem_limit)},
          {"lru_crawler", impl_->crawler ? "yes" : "no"}};
}
StatList Engine::ItemStats() const { return {{"items:1:number", std::to_string(curr_items())}}; }
StatList Engine::SlabStats() const { return {{"active_slabs", "1"}}; }
StatList Engine::SizeStats() const { return {{"sizes_status", "disabled"}}; }
void Engine::ResetStats() {}
void Engine::SetDetailEnabled(bool on) { impl_->detail = on; }
std::string Engine::DetailDump() const {
  return impl_->detail ? "PREFIX a get 1 hit 1 set 0 del 0\r\nEND\r\n" : "END\r\n";
}
bool Engine::SetMemLimit(size_t bytes) { return bytes >= (16u << 20); }
std::string Engine::SlabsReassign(int src, int dst) { return src == dst ? "SAME" : "NOSPARE"; }
void Engine::SetSlabAutomove(int) {}
void Engine::SetSlabAutomoveRatio(double) {}
void Engine::SetSlabAutomoveWindow(uint32_t) {}
void Engine::SetSlabAutomoveFreeratio(double) {}
std::string Engine::CrawlerCrawl(std::string_view classes) {
  return classes == "all" ? "OK" : "BADCLASS";
}
bool Engine::CrawlerEnable(bool on) {
  MutexLock l(&impl_->mu);
  if (on && impl_->crawler) return false;  // memcached: the thread already runs
  impl_->crawler = on;
  return true;
}
void Engine::CrawlerSetSleep(uint32_t) {}
void Engine::CrawlerSetToCrawl(uint32_t) {}
std::vector<DumpEntry> Engine::MetaDump(std::string_view) {
  MutexLock l(&impl_->mu);
  std::vector<DumpEntry> out;
  for (auto& [k, it] : impl_->items) {
    out.push_back(DumpEntry{it->key, it->exptime ? it->exptime : -1, it->last_access, it->cas,
                            it->fetched, 1, static_cast<uint32_t>(it->value.size()), it->flags,
                            false});
  }
  return out;
}
void Engine::CountTooLarge(ThreadStats*) {}
bool Engine::ValidCrawlClasses(std::string_view classes) const {
  return classes == "all" || classes == "1";
}
std::vector<CacheDumpEntry> Engine::CacheDump(int cls, uint32_t limit) {
  MutexLock l(&impl_->mu);
  std::vector<CacheDumpEntry> out;
  if (cls != 1) return out;
  for (auto& [k, it] : impl_->items) {
    if (limit != 0 && out.size() >= limit) break;
    out.push_back(CacheDumpEntry{it->key, static_cast<uint32_t>(it->value.size()),
                                 it->exptime > 0 ? it->exptime : 0});
  }
  return out;
}

}  // namespace trove::engine
