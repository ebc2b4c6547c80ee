// client-output-buffer-limit: the rule and the CONFIG syntax (the connection
// enforces it: connection/session_output.cc). ObufLimits: any thread.
#include "protocol/resp/services/output_limits.h"

#include <cstring>
#include <utility>
#include <vector>

#include "common/str_append.h"
#include "common/str_split.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/resp_parser.h"

namespace trove::resp {

bool ObufOverLimit(const ObufLimit& l, uint64_t used, int64_t now_ns, ObufSoftState* st) {
  if (l.hard > 0 && used >= static_cast<uint64_t>(l.hard)) return true;
  if (l.soft > 0 && used >= static_cast<uint64_t>(l.soft)) {
    if (!st->reached) {
      st->reached = true;
      st->since_ns = now_ns;
      return false;
    }
    return now_ns - st->since_ns > l.soft_seconds * 1000000000;
  }
  st->reached = false;
  return false;
}

bool ParseMemoryUnits(std::string_view s, int64_t* out) {
  std::string l = ToLower(s);
  int64_t mul = 1;
  auto ends = [&l](std::string_view suf) {
    return l.size() > suf.size() && l.compare(l.size() - suf.size(), suf.size(), suf) == 0;
  };
  const std::pair<const char*, int64_t> units[] = {{"kb", 1024},       {"mb", 1024 * 1024},
                                                   {"gb", 1ll << 30},  {"k", 1000},
                                                   {"m", 1000 * 1000}, {"g", 1000 * 1000 * 1000}};
  for (const auto& [suf, m] : units) {
    if (ends(suf)) {
      l.resize(l.size() - std::strlen(suf));
      mul = m;
      break;
    }
  }
  int64_t v;
  if (!ParseStrictInt64(l, &v) || v < 0 || v > INT64_MAX / mul) return false;
  *out = v * mul;
  return true;
}

ObufLimits::ObufLimits() {
  Set(ClientClass::kReplica, {256ll << 20, 64ll << 20, 60});
  Set(ClientClass::kPubSub, {32ll << 20, 8ll << 20, 60});
}

void ObufLimits::Set(ClientClass c, const ObufLimit& l) {
  Slot& s = slots_[static_cast<size_t>(c)];
  s.hard.store(l.hard, std::memory_order_relaxed);
  s.soft.store(l.soft, std::memory_order_relaxed);
  s.soft_seconds.store(l.soft_seconds, std::memory_order_relaxed);
  // Recomputed from every slot after each store (sequentially consistent),
  // so the last of concurrent Sets leaves the floor of the final values.
  uint64_t f = UINT64_MAX;
  for (const Slot& x : slots_) {
    for (int64_t v : {x.hard.load(), x.soft.load()}) {
      if (v > 0 && static_cast<uint64_t>(v) < f) f = static_cast<uint64_t>(v);
    }
  }
  floor_.store(f);
}

std::string ObufLimits::ToString() const {
  static const char* const kNames[kClientClasses] = {"normal", "slave", "pubsub"};
  std::string v;
  for (size_t c = 0; c < kClientClasses; ++c) {
    const ObufLimit l = Get(static_cast<ClientClass>(c));
    if (c > 0) v.push_back(' ');
    v += kNames[c];
    v.push_back(' ');
    AppendI64(v, l.hard);
    v.push_back(' ');
    AppendI64(v, l.soft);
    v.push_back(' ');
    AppendI64(v, l.soft_seconds);
  }
  return v;
}

bool ObufLimits::Apply(std::string_view value, std::string* err) {
  const std::vector<std::string_view> t = SplitSpaces(value);
  // Redis (updateClientOutputBufferLimit) accepts an empty list as a no-op.
  if (t.size() % 4 != 0) {
    *err = "Wrong number of arguments in buffer limit configuration.";
    return false;
  }
  ObufLimit values[kClientClasses];
  bool given[kClientClasses] = {false, false, false};
  for (size_t j = 0; j < t.size(); j += 4) {
    const std::string cls = ToLower(t[j]);
    ClientClass c;
    if (cls == "normal") {
      c = ClientClass::kNormal;
    } else if (cls == "slave" || cls == "replica") {
      c = ClientClass::kReplica;
    } else if (cls == "pubsub") {
      c = ClientClass::kPubSub;
    } else {  // "master" too: Redis refuses a limit for it
      *err = "Invalid client class specified in buffer limit configuration.";
      return false;
    }
    ObufLimit l;
    if (!ParseMemoryUnits(t[j + 1], &l.hard) || !ParseMemoryUnits(t[j + 2], &l.soft) ||
        !ParseStrictInt64(t[j + 3], &l.soft_seconds) || l.soft_seconds < 0 ||
        l.soft_seconds > INT64_MAX / 1000000000) {
      *err = "Error in hard, soft or soft_seconds setting in buffer limit configuration.";
      return false;
    }
    values[static_cast<size_t>(c)] = l;
    given[static_cast<size_t>(c)] = true;
  }
  for (size_t c = 0; c < kClientClasses; ++c) {
    if (given[c]) Set(static_cast<ClientClass>(c), values[c]);
  }
  return true;
}

}  // namespace trove::resp
