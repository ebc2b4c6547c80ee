// The request classifier (request_classify.h).
#include "protocol/memcache/request_classify.h"

namespace trove::memcache::cmd {

int CmdOf(std::string_view w) {
  struct Entry {
    std::string_view name;
    int cmd;
  };
  static constexpr Entry kTable[] = {
      {"mg", kCmdMg}, {"ms", kCmdMs}, {"md", kCmdMd}, {"mn", kCmdMn}, {"ma", kCmdMa},
      {"me", kCmdMe}, {"get", kCmdGet}, {"gat", kCmdGat}, {"set", kCmdSet}, {"add", kCmdAdd},
      {"cas", kCmdCas}, {"gets", kCmdGets}, {"gats", kCmdGats}, {"incr", kCmdIncr},
      {"decr", kCmdDecr}, {"touch", kCmdTouch}, {"append", kCmdAppend},
      {"delete", kCmdDelete}, {"replace", kCmdReplace}, {"prepend", kCmdPrepend},
      {"quit", kCmdQuit}, {"stats", kCmdStats}, {"slabs", kCmdSlabs}, {"watch", kCmdWatch},
      {"lru", kCmdLru}, {"version", kCmdVersion}, {"shutdown", kCmdShutdown},
      {"extstore", kCmdExtstore}, {"flush_all", kCmdFlushAll}, {"verbosity", kCmdVerbosity},
      {"lru_crawler", kCmdLruCrawler}, {"refresh_certs", kCmdRefreshCerts},
      {"cache_memlimit", kCmdCacheMemlimit},
  };
  // The hot words first: two-letter meta commands and get/set, without the
  // table walk (this runs once per pipelined request in the prefetch scan).
  if (w.size() == 2 && w[0] == 'm') {
    switch (w[1]) {
      case 'g': return kCmdMg;
      case 's': return kCmdMs;
      case 'd': return kCmdMd;
      case 'n': return kCmdMn;
      case 'a': return kCmdMa;
      case 'e': return kCmdMe;
      default: return 0;
    }
  }
  if (w.size() == 3) {
    if (w == "get") return kCmdGet;
    if (w == "set") return kCmdSet;
  }
  for (const Entry& e : kTable) {
    if (e.name.size() == w.size() && e.name == w) return e.cmd;
  }
  return 0;
}

int ValueLengthToken(int cmd) {
  switch (cmd) {
    case kCmdSet:
    case kCmdAdd:
    case kCmdReplace:
    case kCmdAppend:
    case kCmdPrepend:
    case kCmdCas: return 4;
    case kCmdMs: return 2;
    default: return -1;
  }
}

}  // namespace trove::memcache::cmd
