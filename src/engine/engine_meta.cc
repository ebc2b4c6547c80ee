// Engine: meta-protocol get (win/stale/recache tokens) and incr/decr, as
// memcached's proto_text.c and do_add_delta define them. Worker threads.
#include <cctype>

#include "common/str_append.h"
#include "engine/engine_impl.h"

namespace trove::engine {

namespace {
// memcached's safe_strtoull over the value bytes: leading spaces, an
// optional sign, digits, then the end or whitespace. A negative number is
// rejected (strtoull would wrap it).
bool ParseCounter(const char* p, size_t n, uint64_t* out) {
  size_t i = 0;
  while (i < n && std::isspace(static_cast<unsigned char>(p[i]))) ++i;
  bool neg = false;
  if (i < n && (p[i] == '+' || p[i] == '-')) {
    neg = p[i] == '-';
    ++i;
  }
  size_t digits = 0;
  uint64_t v = 0;
  for (; i < n && p[i] >= '0' && p[i] <= '9'; ++i, ++digits) {
    uint64_t d = static_cast<uint64_t>(p[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return false;  // ERANGE
    v = v * 10 + d;
  }
  if (digits == 0) return false;
  if (i < n && !std::isspace(static_cast<unsigned char>(p[i]))) return false;
  if (neg) {
    v = 0 - v;
    if (static_cast<int64_t>(v) < 0) return false;
  }
  *out = v;
  return true;
}
}  // namespace

MetaGetOutput Engine::MetaGet(std::string_view key, const MetaGetArgs& args, ThreadStats* ts) {
  Impl* m = impl_.get();
  const auto [hv, now] = m->StartKeyOp(key, &ts);
  MetaGetOutput out;
  Item* it;
  {
    StripeLock l(&m->locks, m->locks.StripeOf(hv));
    it = m->FindLocked(key, hv, now, ts);
    if (it == nullptr && args.vivify_exptime.has_value()) {
      // N: a miss creates an empty placeholder and this client wins it.
      AllocStatus st;
      it = m->AllocItem(key, 0, m->RelTime(*args.vivify_exptime), 0, ValueType::kString, &st);
      if (it != nullptr) {
        m->LinkLocked(it, hv, ts, args.explicit_cas != 0 ? args.explicit_cas : m->NextCas());
        out.vivified = true;
      }
    }
    if (it != nullptr) {
      // Flags and age as they were before this request (h, l).
      out.hit_before = HasFlag(it, kItemFetched);
      uint32_t t = it->time.load(std::memory_order_relaxed);
      out.last_access_ago = now > t ? now - t : 0;
      const bool token_sent = HasFlag(it, kItemTokenSent);
      bool win = out.vivified;
      out.already_won = token_sent;
      if (HasFlag(it, kItemStale)) {
        out.stale = true;
        if (!token_sent) win = true;
      }
      if (args.touch_exptime.has_value()) {
        TouchExpiry(it, m->RelTime(*args.touch_exptime));
      }
      const uint32_t exp = ExpirySecOf(it);
      if (args.recache_ttl.has_value() && !token_sent && !out.vivified && exp != 0 &&
          exp < m->RelTime(*args.recache_ttl)) {
        win = true;
      }
      if (win) SetFlag(it, kItemTokenSent);
      out.win = win;
      out.ttl = ExpiryTtlSec(it, now);
      if (args.bump) Impl::Bump(it, now);
    }
  }
  ts->meta_cmds.Add();
  if (args.touch_exptime.has_value()) {
    ts->touch_cmds.Add();
    if (it != nullptr) {
      ts->slab[ClassOf(it)].touch_hits.Add();
    } else {
      ts->touch_misses.Add();
    }
  } else {
    ts->get_cmds.Add();
    if (it != nullptr) {
      ts->slab[ClassOf(it)].get_hits.Add();
    } else {
      ts->get_misses.Add();
    }
  }
  m->prefix.RecordGet(key, it != nullptr);
  out.item = ItemRef(this, it);
  return out;
}

ArithOutput Engine::Arith(std::string_view key, const ArithArgs& args, ThreadStats* ts) {
  Impl* m = impl_.get();
  const auto [hv, now] = m->StartKeyOp(key, &ts);
  ArithOutput out;
  char buf[24];
  StripeLock l(&m->locks, m->locks.StripeOf(hv));
  Item* it = m->PeekLocked(key, hv, now, ts);
  Item* result = nullptr;  // referenced for out.item
  if (it == nullptr) {
    if (!args.vivify_exptime.has_value()) {
      (args.incr ? ts->incr_misses : ts->decr_misses).Add();
      out.result = ArithResult::kNotFound;
      return out;
    }
    // ma N: create the counter with J's initial value (no delta applied).
    size_t len = static_cast<size_t>(FormatU64(buf, args.initial) - buf);
    AllocStatus st;
    result = m->AllocItem(key, 0, m->RelTime(*args.vivify_exptime), len, ValueType::kString, &st);
    if (result == nullptr) {
      out.result = ArithResult::kNoMemory;
      return out;
    }
    WritePayload(result, 0, buf, len);
    m->LinkLocked(result, hv, ts, args.explicit_cas != 0 ? args.explicit_cas : m->NextCas());
    out.value = args.initial;
    out.vivified = true;
  } else {
    if (args.compare_cas != 0 && CasOf(it) != args.compare_cas) {
      out.result = ArithResult::kExists;
      return out;
    }
    uint64_t value;
    // Chunked, heap and empty values are never numbers (memcached).
    if (it->nbytes == 0 || HasFlag(it, kItemChunked) || HasFlag(it, kItemHeap) ||
        it->type != static_cast<uint8_t>(ValueType::kString) ||
        !ParseCounter(ItemData(it), it->nbytes, &value)) {
      out.result = ArithResult::kNonNumeric;
      return out;
    }
    if (args.incr) {
      value += args.delta;  // wraps at 2^64
      ts->slab[ClassOf(it)].incr_hits.Add();
    } else {
      value = args.delta > value ? 0 : value - args.delta;
      ts->slab[ClassOf(it)].decr_hits.Add();
    }
    size_t len = static_cast<size_t>(FormatU64(buf, value) - buf);
    const uint64_t cas = args.explicit_cas != 0 ? args.explicit_cas : m->NextCas();
    // In place when the number fits and only the link references the item
    // (we hold the stripe, so no new reader can appear): pad with spaces, as
    // memcached does. Otherwise a new item replaces it.
    if (len <= it->nbytes && it->refcount.load(std::memory_order_acquire) == 1) {
      std::memcpy(ItemData(it), buf, len);
      std::memset(ItemData(it) + len, ' ', it->nbytes - len);
      SetCas(it, cas);
      Impl::Bump(it, now);
      it->refcount.fetch_add(1, std::memory_order_relaxed);
      result = it;
    } else {
      AllocStatus st;
      result = m->AllocItem(key, ClientFlagsOf(it), 0, len, ValueType::kString, &st);
      if (result == nullptr) {
        out.result = ArithResult::kNoMemory;
        return out;
      }
      CopyExpiry(result, it);
      WritePayload(result, 0, buf, len);
      m->ReplaceLocked(it, result, hv, ts, cas);
    }
    out.value = value;
  }
  if (args.touch_exptime.has_value()) {
    TouchExpiry(result, m->RelTime(*args.touch_exptime));
  }
  out.result = ArithResult::kOk;
  out.cas = CasOf(result);
  out.ttl = ExpiryTtlSec(result, now);
  out.item = ItemRef(this, result);
  return out;
}

}  // namespace trove::engine
