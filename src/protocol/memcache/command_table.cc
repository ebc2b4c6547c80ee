// The memcached command table (command_table.h) and the handlers too small
// for a family file: version, quit, mn. The table is immutable; the
// handlers run on the connection's worker thread.
#include <array>
#include <string>

#include "protocol/memcache/dispatch.h"
#include "protocol/memcache/request_classify.h"

namespace trove::memcache {

const McCommand* MemcacheHandler::FindCommand(std::string_view word) {
  // Indexed by the classifier the proxy and the prefetch scan use
  // (cmd::CmdOf), so the command names are spelled in one place. A word it
  // knows that this table leaves empty (lru, extstore, refresh_certs) is an
  // unknown command here.
  static constexpr std::array<McCommand, cmd::kCmdSize> kTable = [] {
    using H = MemcacheHandler;
    using engine::StoreMode;
    using protocol::McCmd;
    std::array<McCommand, cmd::kCmdSize> t{};
    auto get = [](McCmd id, Access a, uint8_t flags) {
      return McCommand{&H::Retrieve, id, a, 0, static_cast<uint8_t>(kUntokenized | flags)};
    };
    auto store = [](McCmd id, StoreMode mode) {
      return McCommand{&H::Storage, id, Access::kWrite, 0, 0, mode};
    };
    auto admin = [](McCommand::Handler run, uint8_t min_tokens, uint8_t flags) {
      return McCommand{run, protocol::kMcOther, Access::kCommand, min_tokens, flags};
    };
    constexpr uint8_t kKeyed = kNoreply | kTextKey;
    t[cmd::kCmdGet] = get(protocol::kMcGet, Access::kRead, 0);
    t[cmd::kCmdGets] = get(protocol::kMcGets, Access::kRead, kWithCas);
    t[cmd::kCmdGat] = get(protocol::kMcGat, Access::kReadWrite, kTouch);
    t[cmd::kCmdGats] = get(protocol::kMcGats, Access::kReadWrite, kTouch | kWithCas);
    t[cmd::kCmdSet] = store(protocol::kMcSet, StoreMode::kSet);
    t[cmd::kCmdAdd] = store(protocol::kMcAdd, StoreMode::kAdd);
    t[cmd::kCmdReplace] = store(protocol::kMcReplace, StoreMode::kReplace);
    t[cmd::kCmdAppend] = store(protocol::kMcAppend, StoreMode::kAppend);
    t[cmd::kCmdPrepend] = store(protocol::kMcPrepend, StoreMode::kPrepend);
    t[cmd::kCmdCas] = store(protocol::kMcCas, StoreMode::kCas);
    t[cmd::kCmdIncr] = {&H::Arith, protocol::kMcIncr, Access::kReadWrite, 4, kKeyed};
    t[cmd::kCmdDecr] = {&H::Arith, protocol::kMcDecr, Access::kReadWrite, 4, kKeyed};
    t[cmd::kCmdDelete] = {&H::Delete, protocol::kMcDelete, Access::kWrite, 3, kKeyed};
    t[cmd::kCmdTouch] = {&H::Touch, protocol::kMcTouch, Access::kWrite, 4, kKeyed};
    t[cmd::kCmdMg] = {&H::MetaGet, protocol::kMcMg, Access::kRead};
    t[cmd::kCmdMs] = {&H::MetaSet, protocol::kMcMs, Access::kWrite};
    t[cmd::kCmdMd] = {&H::MetaDelete, protocol::kMcMd, Access::kWrite};
    t[cmd::kCmdMa] = {&H::MetaArith, protocol::kMcMa, Access::kReadWrite};
    t[cmd::kCmdMe] = {&H::MetaDebug, protocol::kMcMe, Access::kOpen};
    t[cmd::kCmdMn] = {&H::MetaNoop, protocol::kMcMn, Access::kOpen};
    t[cmd::kCmdFlushAll] = {&H::FlushAll, protocol::kMcFlushAll, Access::kCommand, 0,
                            kNoreplyFirst};
    t[cmd::kCmdStats] = {&H::Stats, protocol::kMcStats, Access::kCommand};
    t[cmd::kCmdVersion] = {&H::Version, protocol::kMcVersion, Access::kOpen};
    t[cmd::kCmdQuit] = {&H::Quit, protocol::kMcOther, Access::kOpen};
    t[cmd::kCmdVerbosity] = admin(&H::Verbosity, 3, kNoreply);
    t[cmd::kCmdCacheMemlimit] = admin(&H::CacheMemlimit, 0, 0);
    t[cmd::kCmdRefreshCerts] = admin(&H::RefreshCerts, 0, 0);
    t[cmd::kCmdShutdown] = admin(&H::Shutdown, 0, 0);
    t[cmd::kCmdSlabs] = admin(&H::Slabs, 0, 0);
    t[cmd::kCmdLruCrawler] = admin(&H::LruCrawler, 0, 0);
    t[cmd::kCmdWatch] = admin(&H::Watch, 0, 0);
    return t;
  }();
  const McCommand& c = kTable[static_cast<size_t>(cmd::CmdOf(word))];
  return c.run != nullptr ? &c : nullptr;
}

size_t MemcacheHandler::Version(const Request& r, ReplyWriter& w) {
  w.Status(std::string("VERSION ") + ctx_->opts.version);
  return r.line_len;
}

size_t MemcacheHandler::Quit(const Request& r, ReplyWriter&) {
  close_ = true;
  return r.line_len;
}

size_t MemcacheHandler::MetaNoop(const Request& r, ReplyWriter& w) {
  w.Word("MN");
  return r.line_len;
}

void MemcacheHandler::Unknown(const ParsedLine& pl, ReplyWriter& w) {
  if (pl.count > 1 && pl.tokens[pl.count - 1].substr(0, 5) == "HTTP/") {
    close_ = true;
    close_error_ = true;
    return;
  }
  w.Error();
}

}  // namespace trove::memcache
