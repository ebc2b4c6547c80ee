// HistogramSlots construction and the bucket bounds; any thread.
#include "protocol/resp/services/latency_histogram.h"

#include "protocol/resp/core/command_table.h"

namespace trove::resp {
namespace {

// Redis 7's container commands among Trove's, with their subcommands
// (src/commands/*.json; CLIENT also has 7.2's NO-TOUCH and SETINFO, which
// Trove accepts). Alphabetical, as invariant 2 wants.
struct Container {
  std::string_view name;
  std::vector<std::string_view> subs;
};

const std::vector<Container>& Containers() {
  static const std::vector<Container> kContainers = {
      {"acl",
       {"cat", "deluser", "dryrun", "genpass", "getuser", "help", "list", "load", "log", "save",
        "setuser", "users", "whoami"}},
      {"client",
       {"caching", "getname", "getredir", "help", "id", "info", "kill", "list", "no-evict",
        "no-touch", "pause", "reply", "setinfo", "setname", "tracking", "trackinginfo", "unblock",
        "unpause"}},
      {"command", {"count", "docs", "getkeys", "getkeysandflags", "help", "info", "list"}},
      {"config", {"get", "help", "resetstat", "rewrite", "set"}},
      {"function",
       {"delete", "dump", "flush", "help", "kill", "list", "load", "restore", "stats"}},
      {"latency", {"doctor", "graph", "help", "histogram", "history", "latest", "reset"}},
      {"memory", {"doctor", "help", "malloc-stats", "purge", "stats", "usage"}},
      {"object", {"encoding", "freq", "help", "idletime", "refcount"}},
      {"pubsub", {"channels", "help", "numpat", "numsub", "shardchannels", "shardnumsub"}},
      {"script", {"exists", "flush", "help", "kill", "load"}},
      {"slowlog", {"get", "help", "len", "reset"}},
  };
  return kContainers;
}

}  // namespace

int64_t LatencyBucketUpperUsec(int k) {
  // The last level (2^30 ns) lies past the histogram's 1 s range, where
  // HdrHistogram reports its last sub-bucket's top, 2^30 - 1 ns.
  if (k >= kLatencyBuckets - 1) return ((int64_t{1} << 30) - 1) / 1000;
  return ((int64_t{129} << (3 + k)) - 1) / 1000;
}

const HistogramSlots& HistogramSlots::Get() {
  static const HistogramSlots* slots = new HistogramSlots();
  return *slots;
}

HistogramSlots::HistogramSlots() {
  const CommandTable& table = CommandTable::Get();
  const size_t n = table.size();
  names_.reserve(n + 64);
  for (const CommandSpec& s : table.all()) names_.emplace_back(s.name);
  sub_begin_.assign(n, -1);
  sub_end_.assign(n, -1);
  for (const Container& c : Containers()) {
    const CommandSpec* spec = table.Find(c.name);
    if (spec == nullptr) continue;
    const size_t id = static_cast<size_t>(spec->id);
    sub_begin_[id] = static_cast<int>(names_.size());
    for (std::string_view sub : c.subs) {
      std::string full(c.name);
      full += '|';
      full += sub;
      names_.push_back(std::move(full));
    }
    sub_end_[id] = static_cast<int>(names_.size());
  }
  mc_begin_ = static_cast<int>(names_.size());
  for (std::string_view c : protocol::kMcCmdNames) {
    std::string full(protocol::kMcContainer);
    full += '|';
    full += c;
    names_.push_back(std::move(full));
  }
}

int HistogramSlots::SubSlot(size_t id, std::string_view sub) const {
  const size_t prefix = std::string_view(names_[id]).size() + 1;
  for (int s = sub_begin_[id]; s < sub_end_[id]; ++s) {
    if (EqualsIgnoreCase(std::string_view(names_[static_cast<size_t>(s)]).substr(prefix), sub)) {
      return s;
    }
  }
  return -1;
}

void HistogramSlots::SlotsNamed(std::string_view name, std::vector<int>* out) const {
  const size_t bar = name.find('|');
  if (EqualsIgnoreCase(name.substr(0, bar), protocol::kMcContainer)) {
    for (int c = 0; c < protocol::kMcCmdCount; ++c) {
      if (bar == std::string_view::npos ||
          EqualsIgnoreCase(name.substr(bar + 1), protocol::kMcCmdNames[c])) {
        out->push_back(mc_begin_ + c);
      }
    }
    return;
  }
  const CommandSpec* spec = CommandTable::Get().Find(name.substr(0, bar));
  if (spec == nullptr) return;
  const size_t id = static_cast<size_t>(spec->id);
  if (bar != std::string_view::npos) {
    if (sub_begin_[id] < 0) return;
    const int s = SubSlot(id, name.substr(bar + 1));
    if (s >= 0) out->push_back(s);
    return;
  }
  out->push_back(spec->id);
  for (int s = sub_begin_[id]; s < sub_end_[id]; ++s) out->push_back(s);
}

void HistogramSlots::AllSlots(std::vector<int>* out) const {
  for (size_t id = 0; id < sub_begin_.size(); ++id) {
    out->push_back(static_cast<int>(id));
    for (int s = sub_begin_[id]; s < sub_end_[id]; ++s) out->push_back(s);
  }
  for (int c = 0; c < protocol::kMcCmdCount; ++c) out->push_back(mc_begin_ + c);
}

}  // namespace trove::resp
