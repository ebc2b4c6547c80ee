// Command numbers and backend identity (proxy_types.h).
#include "proxy/proxy_types.h"

#include <cstdio>

namespace trove::proxy {

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

std::string BackendSpec::Key() const {
  const BackendOptions& o = opts;
  char buf[256];
  std::snprintf(buf, sizeof(buf), "|%g|%g|%g|%g|%g|%u|%d|%d|%d|%d|%d|%d|%d|%d|%d|%lld|", o.connect_timeout,
                o.retry_waittime, o.read_timeout, o.flap_time, o.flap_backoff_ramp,
                o.flap_backoff_max, o.failure_limit, o.depth_limit, o.connections, o.down ? 1 : 0,
                o.tcp_keepalive ? 1 : 0, o.use_iothread ? 1 : 0, o.log ? 1 : 0, o.log_rate,
                o.log_errors ? 1 : 0, static_cast<long long>(o.log_deadline_ms));
  return label + "\n" + host + "\n" + port + buf + o.log_tag;
}

}  // namespace trove::proxy
