// How a memcached request line is classified: its command number (memcached
// 1.6's CMD_* numbering, which the proxy's Lua sees as mcp.CMD_*) and where
// its value block's length is. One classifier for the cache's prefetch
// scan, the proxy's framing and its hooks. Pure functions; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace trove::memcache::cmd {

// memcached's CMD_* numbers (proto_parser.h).
enum Cmd : int {
  kCmdMg = 1, kCmdMs, kCmdMd, kCmdMn, kCmdMa, kCmdMe,
  kCmdGet, kCmdGat, kCmdSet, kCmdAdd, kCmdCas, kCmdGets, kCmdGats, kCmdIncr, kCmdDecr,
  kCmdTouch, kCmdAppend, kCmdDelete, kCmdReplace, kCmdPrepend,
  kCmdEndStorage,  // CMD_ANY_STORAGE covers every command below this
  kCmdQuit, kCmdStats, kCmdSlabs, kCmdWatch, kCmdLru, kCmdVersion, kCmdShutdown, kCmdExtstore,
  kCmdFlushAll, kCmdVerbosity, kCmdLruCrawler, kCmdRefreshCerts, kCmdCacheMemlimit,
  kCmdSize,
  kCmdAny = kCmdSize + 1,  // CMD_ANY: every hookable command
  kCmdAnyStorage,          // CMD_ANY_STORAGE
};

// The command number of a request's first word, 0 when not one of them.
int CmdOf(std::string_view word);
// The request carries a value block: its length token is word `idx` (0-based).
int ValueLengthToken(int cmd);

}  // namespace trove::memcache::cmd
