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
  for (const Entry& e : kTable) {
    if (e.name == w) return e.cmd;
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
